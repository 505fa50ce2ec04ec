package core_test

import (
	"context"
	"testing"
	"time"

	"github.com/redlock-go/redlock/core"
)

// waitAfterFailure starts an acquisition of "k" and drives it to its first
// wait, on env e's manual clock.
func waitAfterFailure(t *testing.T, e env) *core.Acquisition {
	t.Helper()
	a, err := e.l.spec.Acquire("k", core.Token{}, e.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	toWait(t, e, &a)
	return &a
}

// toWait drives a's rounds until it waits (or is done).
func toWait(t *testing.T, e env, a *core.Acquisition) {
	t.Helper()
	for a.Phase() == core.PhaseRound {
		e.l.advance(context.Background(), a)
	}
}

func holdAll(e env, n int, ttls ...time.Duration) core.Token {
	other := core.TokenFromUint64s(7, 7)
	for i := 0; i < n; i++ {
		e.c.Set(i, "k", other, ttls[i])
	}
	return other
}

func TestProbeTeachesTheHoldersExpiry(t *testing.T) {
	e := newEnv(t, 5, core.Multiplexed, core.Config{TTL: time.Second, Retry: core.RandomDelay(5, 400*ms, 400*ms)})
	holdAll(e, 3, 300*ms, 500*ms, 700*ms) // nodes 3 and 4 are free: one more must free up
	a := waitAfterFailure(t, e)
	if !core.HolderExpiry(a).IsZero() {
		t.Fatalf("attempt 1 is a plain SET NX, yet the expiry is known: %v", core.HolderExpiry(a))
	}
	if got, want := a.WakeAt(), epoch.Add(400*ms); !got.Equal(want) {
		t.Fatalf("wake at %v, want the retry delay's end %v", got, want)
	}
	e.clock.Advance(10 * ms)
	a.Wake(e.clock.Now()) // early: an attempt is always safe
	toWait(t, e, a)
	// Attempt 2 saw 290, 490 and 690 ms left, and took nodes 3 and 4: the
	// first key to expire frees the quorum.
	if got, want := core.HolderExpiry(a), epoch.Add(10*ms+290*ms+ms); !got.Equal(want) {
		t.Fatalf("holder expiry %v, want %v", got, want)
	}
	if got, want := a.WakeAt(), core.HolderExpiry(a); !got.Equal(want) {
		t.Fatalf("wake at %v, want the expiry %v (before the delay)", got, want)
	}
	e.clock.Advance(a.WakeAt().Sub(e.clock.Now()))
	a.Wake(e.clock.Now())
	toWait(t, e, a)
	if _, err := a.Result(); err != nil {
		t.Fatalf("at the holder's expiry: %v", err)
	}
}

func TestListeningWaitsForTheExpiryNotTheDelay(t *testing.T) {
	e := newEnv(t, 5, core.Multiplexed, core.Config{TTL: 5 * time.Second, Retry: core.RandomDelay(5, 100*ms, 100*ms)})
	holdAll(e, 5, 3*time.Second, 3*time.Second, 3*time.Second, 3*time.Second, 3*time.Second)
	a := waitAfterFailure(t, e)
	a.Wake(e.clock.Now())
	toWait(t, e, a)
	expiry := core.HolderExpiry(a)
	if got := a.WakeAt(); !got.Equal(epoch.Add(100 * ms)) {
		t.Fatalf("not listening: wake at %v, want the delay", got)
	}
	a.SetListening(0b11111)
	if got := a.WakeAt(); !got.Equal(expiry) {
		t.Fatalf("listening: wake at %v, want the expiry %v", got, expiry)
	}
	// The round was decided by the first three held replies; listening to
	// the other two only, announcements could never suffice.
	var others uint32
	for i := 0; i < 5; i++ {
		if core.NodeStatus(a.Round(), i) == 0 {
			others |= 1 << i
		}
	}
	a.SetListening(others)
	if got := a.WakeAt(); !got.Equal(epoch.Add(100 * ms)) {
		t.Fatalf("listening to too few: wake at %v, want the delay", got)
	}
}

func TestAnnouncementsFromEnoughHeldNodesWake(t *testing.T) {
	e := newEnv(t, 5, core.Multiplexed, core.Config{Retry: core.RandomDelay(5, 100*ms, 100*ms)})
	holdAll(e, 4, time.Second, time.Second, time.Second, time.Second) // node 4 free: 2 must free up
	for i := 0; i < 4; i++ {
		e.c.SetLatency(i, time.Duration(i+1)*ms) // held replies in node order
	}
	a := waitAfterFailure(t, e)
	a.SetListening(0b11111)
	e.clock.Advance(ms)
	now := e.clock.Now()
	a.Announce(4, now) // not held: its announcement is our own cleanup, or noise
	a.Announce(0, now)
	a.Announce(0, now) // a duplicate
	if a.WakeAt().Equal(now) {
		t.Fatal("woken by one held node, and one that was not held")
	}
	a.Announce(1, now)
	if got := a.WakeAt(); !got.Equal(now) {
		t.Fatalf("two held nodes announced: wake at %v, want now %v", got, now)
	}
}

func TestAnnouncementsDuringTheAttemptCount(t *testing.T) {
	e := newEnv(t, 3, core.Multiplexed, core.Config{Retry: core.RandomDelay(5, 100*ms, 100*ms)})
	holdAll(e, 3, time.Second, time.Second, time.Second)
	a, err := e.l.spec.Acquire("k", core.Token{}, e.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		a.Announce(i, e.clock.Now()) // before the attempt fails
	}
	toWait(t, e, &a)
	if got := a.WakeAt(); !got.Equal(e.clock.Now()) {
		t.Fatalf("wake at %v, want now: the releases came during the attempt", got)
	}
	a.Wake(e.clock.Now()) // a new attempt forgets them
	toWait(t, e, &a)
	if a.WakeAt().Equal(e.clock.Now()) {
		t.Fatal("announcements of an earlier attempt woke a later one")
	}
}

func TestAForgedAnnouncementCostsOneRound(t *testing.T) {
	e := newEnv(t, 3, core.Multiplexed, core.Config{Retry: core.RandomDelay(5, 100*ms, 100*ms)})
	other := holdAll(e, 3, time.Second, time.Second, time.Second)
	a := waitAfterFailure(t, e)
	for i := 0; i < 3; i++ {
		a.Announce(i, e.clock.Now())
	}
	a.Wake(e.clock.Now())
	toWait(t, e, a)
	if a.Phase() != core.PhaseWait || core.Attempts(a) != 2 {
		t.Fatalf("phase %v after %d attempts: want a second failed attempt", a.Phase(), core.Attempts(a))
	}
	if h := e.c.Holders("k", other); h != 3 {
		t.Fatalf("the holder keeps %d of 3 nodes", h)
	}
}

func TestALostRaceSpreadsTheNextWake(t *testing.T) {
	e := newEnv(t, 3, core.Multiplexed, core.Config{Retry: core.RandomDelay(5, 100*ms, 100*ms)})
	for i := 0; i < 3; i++ {
		e.c.SetLatency(i, 2*ms)
	}
	holdAll(e, 3, time.Second, time.Second, time.Second)
	a := waitAfterFailure(t, e)
	for i := 0; i < 3; i++ {
		a.Announce(i, e.clock.Now())
	}
	a.Wake(e.clock.Now()) // woken, and loses: another client took it
	start := e.clock.Now()
	toWait(t, e, a)
	took := e.clock.Now().Sub(start) // the attempt's 2 ms; the cleanup's 2 ms
	for i := 0; i < 3; i++ {
		a.Announce(i, e.clock.Now())
	}
	now := e.clock.Now()
	spread := a.WakeAt().Sub(now)
	if spread <= 0 || spread >= 2*took {
		t.Fatalf("wake %v after the announcements, want in (0, %v): twice the lost attempt", spread, 2*took)
	}
}
