package core_test

import (
	"testing"
	"time"

	"github.com/redlock-go/redlock/core"
)

// answerAll feeds every node's command of r the same status, all at now.
func answerAll(r *core.Round, now time.Time, s core.Status) {
	for !r.Done() {
		node, _, _, ok := r.Next(now)
		if !ok {
			break
		}
		r.Receive(core.Reply{Node: node, Status: s})
	}
}

// TestAWonTooLateAttemptWaitsItsDelay: an attempt that won every node but
// too late for any validity took a quorum itself; with nothing announced,
// that alone must not wake the waiter before its retry delay (it is not
// a quorum announced free: no release was heard).
func TestAWonTooLateAttemptWaitsItsDelay(t *testing.T) {
	a, now := waiting(t, 3)
	now = now.Add(2 * time.Second) // the round took longer than the TTL
	answerAll(a.Round(), now, core.StatusOK)
	a.RoundDone(now)
	answerAll(a.Round(), now, core.StatusOK) // the cleanup
	a.RoundDone(now)
	if a.Phase() != core.PhaseWait {
		t.Fatalf("phase %v, want a wait", a.Phase())
	}
	if got, want := a.WakeAt(), now.Add(100*time.Millisecond); !got.Equal(want) {
		t.Fatalf("wakes %v after the cleanup, want the retry delay (100ms)", got.Sub(now))
	}
}

// TestAnnouncementsFromNoNodeAreIgnored: an announcement naming a node the
// Spec does not have counts for nothing.
func TestAnnouncementsFromNoNodeAreIgnored(t *testing.T) {
	a, now := waiting(t, 3)
	answerAll(a.Round(), now, core.StatusHeld)
	a.RoundDone(now)
	answerAll(a.Round(), now, core.StatusMissing)
	a.RoundDone(now)
	for _, n := range []int{3, 4, 5, 31, -1, 32} {
		a.Announce(n, now)
	}
	if got, want := a.WakeAt(), now.Add(100*time.Millisecond); !got.Equal(want) {
		t.Fatalf("wakes %v after the cleanup, want the retry delay (100ms)", got.Sub(now))
	}
}

// TestWaitAgainStartsAFreshWait: a waiter told to wait afresh (the head
// before it took the lock) waits a retry delay from now, forgets the old
// holder's expiry and its own attempt's nodes, and wakes early only once
// a quorum of nodes is announced free.
func TestWaitAgainStartsAFreshWait(t *testing.T) {
	a, now := waiting(t, 5)
	answerAll(a.Round(), now, core.StatusHeld)
	a.RoundDone(now)
	answerAll(a.Round(), now, core.StatusMissing)
	a.RoundDone(now)
	later := now.Add(time.Second) // its old wait ended long ago
	if !a.WakeAt().Before(later) {
		t.Fatalf("the old wait ends at %v", a.WakeAt())
	}
	a.WaitAgain(later)
	if got, want := a.WakeAt(), later.Add(100*time.Millisecond); !got.Equal(want) {
		t.Fatalf("fresh wait ends %v after now, want the retry delay", got.Sub(later))
	}
	a.Announce(0, later)
	a.Announce(1, later)
	if !a.WakeAt().After(later) {
		t.Fatal("woken by two announcements of five nodes")
	}
	a.Announce(2, later)
	if got := a.WakeAt(); got.After(later) {
		t.Fatalf("a quorum announced free, yet the wait ends %v later", got.Sub(later))
	}
	a.Wake(later)
	if a.Phase() != core.PhaseRound {
		t.Fatalf("phase %v after Wake", a.Phase())
	}
	a.WaitAgain(later) // not waiting: nothing happens
	if a.Phase() != core.PhaseRound {
		t.Fatal("WaitAgain moved an acquisition that was not waiting")
	}
}

// waiting returns an acquisition of "k" over n nodes, just started at
// now: 1 s TTL, retry delays of exactly 100 ms.
func waiting(t *testing.T, n int) (core.Acquisition, time.Time) {
	t.Helper()
	all := names{"a", "b", "c", "d", "e"}
	spec, err := core.NewSpec(all[:n], core.Config{TTL: time.Second, Tokens: &counterTokens{},
		Jitter: fixedRand(0), Retry: core.RandomDelay(3, 100*time.Millisecond, 100*time.Millisecond)})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a, err := spec.Acquire("k", core.Token{}, now)
	if err != nil {
		t.Fatal(err)
	}
	return a, now
}
