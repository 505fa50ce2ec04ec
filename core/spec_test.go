package core_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/core/memnode"
)

const ms = time.Millisecond

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// seqTokens issues distinct tokens deterministically.
type seqTokens struct{ n atomic.Uint64 }

func (s *seqTokens) NewToken() core.Token { return core.TokenFromUint64s(0x5eed, s.n.Add(1)) }

// fixedRand always returns the same bits: jitter becomes deterministic.
type fixedRand uint64

func (f fixedRand) Uint64() uint64 { return uint64(f) }

var modes = []core.FanOut{core.Multiplexed, core.Sequential}

// env is a cluster of n memnodes on a manual clock and a locker over it.
type env struct {
	c     *memnode.Cluster
	clock *memnode.ManualClock
	l     *locker
}

func newEnv(t *testing.T, n int, mode core.FanOut, cfg core.Config) env {
	t.Helper()
	return newEnvOn(t, memnode.NewManualClock(epoch), n, mode, cfg)
}

// newEnvOn is newEnv on a clock of the caller's.
func newEnvOn(t *testing.T, clock *memnode.ManualClock, n int, mode core.FanOut, cfg core.Config) env {
	t.Helper()
	c := memnode.New(n, clock)
	cfg.Tokens, cfg.Jitter, cfg.FanOut = &seqTokens{}, fixedRand(1<<62), mode
	if cfg.TTL == 0 {
		cfg.TTL = time.Second
	}
	if cfg.NodeTimeout == 0 {
		cfg.NodeTimeout = 50 * ms
	}
	if cfg.Retry == (core.RetryPolicy{}) {
		cfg.Retry = core.RandomDelay(1, 0, 0)
	}
	l, err := newLocker(c, clock, cfg)
	if err != nil {
		t.Fatalf("core.NewSpec: %v", err)
	}
	return env{c, clock, l}
}

func forModes(t *testing.T, f func(t *testing.T, mode core.FanOut)) {
	for _, m := range modes {
		t.Run("mode="+m.String(), func(t *testing.T) { f(t, m) })
	}
}

func asError(t *testing.T, err error) *core.Error {
	t.Helper()
	var e *core.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not a *core.Error", err, err)
	}
	return e
}

func TestAcquireReleaseExtend(t *testing.T) {
	forModes(t, func(t *testing.T, mode core.FanOut) {
		for _, n := range []int{1, 3, 5} {
			e := newEnv(t, n, mode, core.Config{})
			ctx := context.Background()
			lock, err := e.l.Acquire(ctx, "k")
			if err != nil {
				t.Fatalf("n=%d: %v", n, err)
			}
			if got := e.c.Holders("k", lock.Token()); got != n {
				t.Errorf("n=%d: %d nodes hold the key, want all", n, got)
			}
			// TTL 1s, drift 10ms+2ms, no time elapsed on the manual clock.
			if core.GrantValidity(lock) != 988*ms || core.RemainingAt(lock, e.clock.Now()) != 988*ms {
				t.Errorf("n=%d: validity %v", n, core.GrantValidity(lock))
			}
			// Late enough to matter, early enough for a round to end before
			// the lease would declare the lock lost (sequential N=5: 250 ms
			// before its validity ends).
			e.clock.Advance(400 * ms)
			ext, err := e.l.extend(ctx, lock)
			if err != nil || core.Extensions(ext) != 1 || core.RemainingAt(ext, e.clock.Now()) != 988*ms {
				t.Fatalf("n=%d: extend: %v, %+v", n, err, ext)
			}
			if _, ttl, _ := e.c.Get(0, "k"); ttl != time.Second {
				t.Errorf("n=%d: extended key has TTL %v", n, ttl)
			}
			if err := e.l.Release(ctx, ext); err != nil {
				t.Fatalf("n=%d: release: %v", n, err)
			}
			if got := e.c.Holders("k", lock.Token()); got != 0 {
				t.Errorf("n=%d: %d nodes still hold the key after release", n, got)
			}
		}
	})
}

func TestSlowNodesExhaustValidity(t *testing.T) {
	t.Run("mode=sequential", func(t *testing.T) {
		// 3×45 ms of a 400 ms TTL leave 259 ms of validity, less than
		// the loss margin of 300 ms (two bounds of 3×50 ms): no grant.
		e := newEnv(t, 3, core.Sequential, core.Config{TTL: 400 * ms})
		for i := 0; i < 3; i++ {
			e.c.SetLatency(i, 45*ms)
		}
		_, err := e.l.Acquire(context.Background(), "k")
		if !errors.Is(err, core.ErrNotHeld) || !strings.Contains(err.Error(), "validity exhausted") {
			t.Fatalf("err = %v, want validity exhausted", err)
		}
		if h := e.c.Holders("k", core.TokenFromUint64s(0x5eed, 1)); h != 0 {
			t.Fatalf("%d nodes still hold the key: cleanup missed them", h)
		}
	})
	t.Run("mode=multiplexed/validity one below the loss margin", func(t *testing.T) {
		// Quorum at 18ms; drift is 1ms+2ms: validity = 100-18-3 = 79ms,
		// one below the loss margin of two 40 ms round bounds.
		e := newEnv(t, 3, core.Multiplexed, core.Config{TTL: 100 * ms, NodeTimeout: 40 * ms})
		for i := 0; i < 3; i++ {
			e.c.SetLatency(i, 18*ms)
		}
		if _, err := e.l.Acquire(context.Background(), "k"); !errors.Is(err, core.ErrNotHeld) {
			t.Fatalf("err = %v, want ErrNotHeld", err)
		}
		if h := e.c.Holders("k", core.TokenFromUint64s(0x5eed, 1)); h != 0 {
			t.Fatalf("%d nodes still hold the key", h)
		}
		e.c.SetLatency(0, 17*ms) // quorum at 17ms: validity exactly the margin
		e.c.SetLatency(1, 17*ms)
		lock, err := e.l.Acquire(context.Background(), "k")
		if err != nil || core.GrantValidity(lock) != 80*ms {
			t.Fatalf("validity 80ms expected: %v %v", core.GrantValidity(lock), err)
		}
	})
}

func TestMinorityDown(t *testing.T) {
	forModes(t, func(t *testing.T, mode core.FanOut) {
		e := newEnv(t, 5, mode, core.Config{})
		e.c.SetDown(1, true)
		e.c.SetHung(3, true)
		lock, err := e.l.Acquire(context.Background(), "k")
		if err != nil {
			t.Fatalf("acquire with 2 of 5 down: %v", err)
		}
		if h := e.c.Holders("k", lock.Token()); h != 3 {
			t.Fatalf("holders %d, want 3", h)
		}
		if err := e.l.Release(context.Background(), lock); err != nil {
			t.Fatalf("release: %v", err)
		}
	})
}

func TestMajorityDown(t *testing.T) {
	forModes(t, func(t *testing.T, mode core.FanOut) {
		e := newEnv(t, 5, mode, core.Config{})
		for _, i := range []int{0, 2, 4} {
			e.c.SetDown(i, true)
		}
		_, err := e.l.Acquire(context.Background(), "k")
		if !errors.Is(err, core.ErrQuorumUnreachable) || !errors.Is(err, memnode.ErrDown) {
			t.Fatalf("err = %v, want ErrQuorumUnreachable wrapping ErrDown", err)
		}
		if got := asError(t, err).Failed(core.StatusError); len(got) < 2 {
			t.Fatalf("failed nodes %v", got)
		}
		if !strings.Contains(err.Error(), "mem:0") {
			t.Fatalf("error does not name the node: %v", err)
		}
		if h := e.c.Holders("k", core.TokenFromUint64s(0x5eed, 1)); h != 0 {
			t.Fatalf("%d nodes hold the key after a failed acquire", h)
		}
	})
}

func TestMajorityHeldFailsFast(t *testing.T) {
	forModes(t, func(t *testing.T, mode core.FanOut) {
		e := newEnv(t, 5, mode, core.Config{})
		other := core.TokenFromUint64s(1, 1)
		for _, i := range []int{0, 1, 2} {
			e.c.Set(i, "k", other, time.Minute)
		}
		_, err := e.l.Acquire(context.Background(), "k")
		if !errors.Is(err, core.ErrTaken) || errors.Is(err, core.ErrQuorumUnreachable) {
			t.Fatalf("err = %v, want ErrTaken only", err)
		}
		if got := asError(t, err).Failed(core.StatusHeld); len(got) != 3 || got[0] != 0 || got[2] != 2 {
			t.Fatalf("held nodes %v, want [0 1 2]", got)
		}
		for _, name := range []string{"mem:0", "mem:1", "mem:2"} {
			if !strings.Contains(err.Error(), name) {
				t.Errorf("error does not name %s: %v", name, err)
			}
		}
		if mode == core.Sequential && e.c.Calls(4) != 1 {
			// Lost after node 2: node 4 sees only the cleanup release.
			t.Errorf("node 4 got %d calls, want 1 (cleanup only)", e.c.Calls(4))
		}
		for _, i := range []int{0, 1, 2} {
			if tok, _, _ := e.c.Get(i, "k"); tok != other {
				t.Errorf("cleanup touched the other holder's key on node %d", i)
			}
		}
	})
}

// cancellingClock cancels a context at its k-th Sleep: a cancel that lands
// in the middle of a round.
type cancellingClock struct {
	*memnode.ManualClock
	cancel func()
	k      int
}

func (c *cancellingClock) Sleep(d time.Duration, cancel <-chan struct{}) bool {
	if c.k--; c.k == 0 {
		c.cancel()
	}
	return c.ManualClock.Sleep(d, cancel)
}

func TestCancelMidAcquireReleasesPartialKeys(t *testing.T) {
	forModes(t, func(t *testing.T, mode core.FanOut) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		clock := &cancellingClock{ManualClock: memnode.NewManualClock(epoch), cancel: cancel, k: 3}
		c := memnode.New(5, clock)
		for i := 0; i < 5; i++ {
			c.SetLatency(i, time.Duration(i+1)*ms) // replies arrive one by one
		}
		l, err := newLocker(c, clock, core.Config{TTL: time.Second, NodeTimeout: 50 * ms, FanOut: mode,
			Tokens: &seqTokens{}, Jitter: fixedRand(0), Retry: core.RandomDelay(5, ms, 2*ms)})
		if err != nil {
			t.Fatal(err)
		}
		_, err = l.Acquire(ctx, "k")
		if !errors.Is(err, core.ErrCancelled) || !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want ErrCancelled and context.Canceled", err)
		}
		if errors.Is(err, core.ErrTaken) || errors.Is(err, core.ErrQuorumUnreachable) {
			t.Fatalf("cancellation reported as a lost vote: %v", err)
		}
		tok := core.TokenFromUint64s(0x5eed, 1)
		if h := c.Holders("k", tok); h != 0 {
			t.Fatalf("%d nodes still hold the key: cleanup ran on the cancelled context", h)
		}
	})
}

func TestReleaseWithCancelledContextStillReleases(t *testing.T) {
	forModes(t, func(t *testing.T, mode core.FanOut) {
		e := newEnv(t, 3, mode, core.Config{})
		lock, err := e.l.Acquire(context.Background(), "k")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := e.l.Release(ctx, lock); err != nil {
			t.Fatalf("release on a cancelled context: %v", err)
		}
		if h := e.c.Holders("k", lock.Token()); h != 0 {
			t.Fatalf("%d holders left", h)
		}
	})
}

func TestExtendAfterExpiry(t *testing.T) {
	forModes(t, func(t *testing.T, mode core.FanOut) {
		e := newEnv(t, 3, mode, core.Config{TTL: 100 * ms, NodeTimeout: 10 * ms})
		ctx := context.Background()
		lock, err := e.l.Acquire(ctx, "k")
		if err != nil {
			t.Fatal(err)
		}
		// Local validity over: refused before anything is sent.
		e.clock.Advance(200 * ms)
		calls := e.c.Calls(0)
		if _, err := e.l.extend(ctx, lock); !errors.Is(err, core.ErrNotHeld) || errors.Is(err, core.ErrTaken) {
			t.Fatalf("extend after expiry: %v", err)
		}
		if e.c.Calls(0) != calls {
			t.Fatal("extend of an expired lock was sent to a node")
		}
		// Keys lost on the nodes while the local validity still runs
		// (redsync #147/#149): refused, nothing re-created.
		lock, err = e.l.Acquire(ctx, "k2")
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 3; i++ {
			e.c.Restart(i)
		}
		if _, err := e.l.extend(ctx, lock); !errors.Is(err, core.ErrNotHeld) {
			t.Fatalf("extend of lost keys: %v", err)
		}
		for i := 0; i < 3; i++ {
			if _, _, ok := e.c.Get(i, "k2"); ok {
				t.Fatalf("extend re-created the key on node %d", i)
			}
		}
	})
}

func TestReleaseExpiredIsNotHeldNotTaken(t *testing.T) {
	// redsync #107/#144/#158 and node-redlock #313: releasing a merely
	// expired lock says "not held", once, with one command per node.
	forModes(t, func(t *testing.T, mode core.FanOut) {
		e := newEnv(t, 3, mode, core.Config{TTL: 100 * ms, NodeTimeout: 10 * ms, Retry: core.RandomDelay(5, ms, 2*ms)})
		lock, err := e.l.Acquire(context.Background(), "k")
		if err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(150 * ms)
		before := e.c.Calls(0) + e.c.Calls(1) + e.c.Calls(2)
		err = e.l.Release(context.Background(), lock)
		if !errors.Is(err, core.ErrNotHeld) || errors.Is(err, core.ErrTaken) {
			t.Fatalf("err = %v, want ErrNotHeld only", err)
		}
		if got := e.c.Calls(0) + e.c.Calls(1) + e.c.Calls(2) - before; got != 3 {
			t.Fatalf("release sent %d commands, want 3 (no retries)", got)
		}
		// Another client took it meanwhile: now "taken", and its keys stay.
		e.clock.Advance(0)
		other := core.TokenFromUint64s(9, 9)
		for i := 0; i < 3; i++ {
			e.c.Set(i, "k", other, time.Minute)
		}
		if err := e.l.Release(context.Background(), lock); !errors.Is(err, core.ErrTaken) {
			t.Fatalf("release of a lock now held by another: %v", err)
		}
		if h := e.c.Holders("k", other); h != 3 {
			t.Fatalf("release deleted the other holder's keys (%d left)", h)
		}
	})
}

func TestAllNodesGetTheKeyAfterQuorum(t *testing.T) {
	// redsync #186: the nodes after the quorum must get the key too.
	forModes(t, func(t *testing.T, mode core.FanOut) {
		e := newEnv(t, 5, mode, core.Config{})
		e.c.SetLatency(4, 10*ms)
		lock, err := e.l.Acquire(context.Background(), "k")
		if err != nil {
			t.Fatal(err)
		}
		if h := e.c.Holders("k", lock.Token()); h != 5 {
			t.Fatalf("%d of 5 nodes hold the key", h)
		}
	})
}

func TestValidityCountsFromTheSuccessfulAttempt(t *testing.T) {
	// node-redlock #168: after retries the lock must not be born expired.
	forModes(t, func(t *testing.T, mode core.FanOut) {
		e := newEnv(t, 3, mode, core.Config{TTL: time.Second, Retry: core.RandomDelay(3, 400*ms, 400*ms)})
		other := core.TokenFromUint64s(1, 1)
		for i := 0; i < 3; i++ {
			e.c.Set(i, "k", other, 700*ms) // expires during the second delay
		}
		// Attempt 2, at 400ms, learns the holder has 300ms left: attempt 3
		// starts at its expiry (plus PTTL's millisecond), not at 800ms.
		lock, err := e.l.Acquire(context.Background(), "k")
		if err != nil {
			t.Fatal(err)
		}
		if core.GrantValidity(lock) != 988*ms {
			t.Fatalf("validity %v, want the full 988ms of the winning attempt", core.GrantValidity(lock))
		}
		if want := epoch.Add(701 * ms).Add(988 * ms); !lock.ValidUntil().Equal(want) {
			t.Fatalf("valid until %v, want %v", lock.ValidUntil(), want)
		}
	})
}

func TestSlowNodeShortensValidity(t *testing.T) {
	// redsync #72: a slow reply must shorten validity; the lock is invalid
	// once it has passed, whatever the nodes say.
	forModes(t, func(t *testing.T, mode core.FanOut) {
		e := newEnv(t, 3, mode, core.Config{TTL: 400 * ms})
		e.c.SetLatency(0, 40*ms)
		e.c.SetLatency(1, 40*ms)
		lock, err := e.l.Acquire(context.Background(), "k")
		if err != nil {
			t.Fatal(err)
		}
		want := 400*ms - 6*ms - 40*ms
		if mode == core.Sequential {
			want -= 40 * ms
		}
		if core.GrantValidity(lock) != want {
			t.Fatalf("validity %v, want %v", core.GrantValidity(lock), want)
		}
		e.clock.Advance(core.GrantValidity(lock))
		if core.RemainingAt(lock, e.clock.Now()) > 0 {
			t.Fatal("lock still valid after its validity")
		}
	})
}

func TestRetriesExhaustedIsNotCancelled(t *testing.T) {
	// redsync #164/#165: exhaustion and cancellation are distinct.
	e := newEnv(t, 3, core.Multiplexed, core.Config{Retry: core.RandomDelay(4, 10*ms, 20*ms)})
	for i := 0; i < 3; i++ {
		e.c.Set(i, "k", core.TokenFromUint64s(1, 1), time.Hour)
	}
	_, err := e.l.Acquire(context.Background(), "k")
	if !errors.Is(err, core.ErrTaken) || errors.Is(err, core.ErrCancelled) {
		t.Fatalf("err = %v", err)
	}
	if got := asError(t, err).Attempts; got != 4 {
		t.Fatalf("attempts %d, want 4", got)
	}
	if e.c.Calls(0) != 8 {
		t.Fatalf("node 0 saw %d calls, want 4 acquires + 4 cleanups", e.c.Calls(0))
	}
}

func TestDeadlineShorterThanRetryDelayReportsWhy(t *testing.T) {
	// bsm/redislock #74: not a bare deadline error when the deadline merely
	// leaves no room for another attempt.
	// The context package reads the real clock: start the manual one at
	// real now and put the deadline a real minute away.
	now := time.Now()
	clock := memnode.NewManualClock(now)
	e := newEnvOn(t, clock, 3, core.Multiplexed, core.Config{Retry: core.RandomDelay(10, 100*ms, 100*ms)})
	for i := 0; i < 3; i++ {
		e.c.Set(i, "k", core.TokenFromUint64s(1, 1), time.Hour)
	}
	clock.Advance(time.Minute - 250*ms)
	ctx, cancel := context.WithDeadline(context.Background(), now.Add(time.Minute))
	defer cancel()
	_, err := e.l.Acquire(ctx, "k")
	if !errors.Is(err, core.ErrTaken) || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want ErrTaken", err)
	}
	if got := asError(t, err).Attempts; got != 3 {
		t.Fatalf("attempts %d, want 3 (at 0, 100ms, 200ms)", got)
	}
}

func TestCancelDuringRetryDelay(t *testing.T) {
	e := newEnv(t, 3, core.Multiplexed, core.Config{Retry: core.RandomDelay(10, 100*ms, 100*ms)})
	e.c.Set(0, "k", core.TokenFromUint64s(1, 1), time.Hour)
	e.c.Set(1, "k", core.TokenFromUint64s(1, 1), time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	clock := &cancellingClock{ManualClock: e.clock, cancel: cancel, k: 1}
	l, err := newLocker(e.c, clock, core.Config{Tokens: &seqTokens{}, Jitter: fixedRand(0),
		Retry: core.RandomDelay(10, 100*ms, 100*ms), NodeTimeout: 50 * ms})
	if err != nil {
		t.Fatal(err)
	}
	_, err = l.Acquire(ctx, "k")
	if !errors.Is(err, core.ErrCancelled) || !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
}

func TestExtensionLimit(t *testing.T) {
	// RedLock.net #68/#92: extension is bounded.
	e := newEnv(t, 3, core.Multiplexed, core.Config{MaxExtensions: 2})
	ctx := context.Background()
	lock, err := e.l.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if lock, err = e.l.extend(ctx, lock); err != nil {
			t.Fatalf("extension %d: %v", i+1, err)
		}
	}
	if _, err := e.l.extend(ctx, lock); !errors.Is(err, core.ErrExtensionLimit) {
		t.Fatalf("third extension: %v", err)
	}
	forbid := newEnv(t, 3, core.Multiplexed, core.Config{MaxExtensions: -1})
	lock, _ = forbid.l.Acquire(ctx, "k")
	if _, err := forbid.l.extend(ctx, lock); !errors.Is(err, core.ErrExtensionLimit) {
		t.Fatalf("negative MaxExtensions must forbid extension: %v", err)
	}
}

// backwardsClock jumps back one second at its k-th reading.
type backwardsClock struct {
	*memnode.ManualClock
	k int
}

func (b *backwardsClock) Now() time.Time {
	if b.k--; b.k == 0 {
		b.Advance(-time.Second)
	}
	return b.ManualClock.Now()
}

func TestClockRunningBackwardsFailsSafe(t *testing.T) {
	forModes(t, func(t *testing.T, mode core.FanOut) {
		mc := memnode.NewManualClock(epoch)
		c := memnode.New(3, memnode.NewManualClock(epoch))
		// Readings: start of round, per-send in sequential mode, end of round.
		k := 2
		if mode == core.Sequential {
			k = 5
		}
		l, err := newLocker(c, &backwardsClock{mc, k}, core.Config{FanOut: mode,
			Tokens: &seqTokens{}, Jitter: fixedRand(0), Retry: core.RandomDelay(1, 0, 0)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Acquire(context.Background(), "k"); !errors.Is(err, core.ErrNotHeld) {
			t.Fatalf("acquire across a backwards clock jump: %v", err)
		}
		lock := core.Grant{}
		if core.RemainingAt(lock, epoch) != 0 {
			t.Fatal("zero Grant has time remaining")
		}
	})
}

func TestRemainingAtBeforeStartIsZero(t *testing.T) {
	e := newEnv(t, 1, core.Multiplexed, core.Config{})
	lock, err := e.l.Acquire(context.Background(), "k")
	if err != nil {
		t.Fatal(err)
	}
	if got := core.RemainingAt(lock, epoch.Add(-ms)); got != 0 {
		t.Fatalf("RemainingAt before the round = %v, want 0", got)
	}
}

func TestInvalidConfig(t *testing.T) {
	clock := memnode.NewManualClock(epoch)
	good := core.Config{Tokens: &seqTokens{}, Jitter: fixedRand(0)}
	c3 := memnode.New(3, clock)
	for _, tc := range []struct {
		name string
		d    core.Driver
		mut  func(*core.Config)
		want string
	}{
		{"nil driver", nil, nil, "driver is nil"},
		{"no nodes", memnode.New(0, clock), nil, "no nodes"},
		{"too many nodes", memnode.New(core.MaxNodes+1, clock), nil, "more than MaxNodes"},
		{"duplicate nodes", dupDriver{c3}, nil, "same node"},
		{"nil node", nilNameDriver{c3}, nil, "is nil"},
		{"ttl below drift", c3, func(c *core.Config) { c.TTL = 2 * ms }, "consumed entirely by the clock-drift allowance"},
		{"ttl not whole ms", c3, func(c *core.Config) { c.TTL = 1500 * time.Microsecond }, "whole number of milliseconds"},
		{"negative ttl", c3, func(c *core.Config) { c.TTL = -time.Second }, "negative"},
		{"drift ppm", c3, func(c *core.Config) { c.DriftPPM = 1_000_000 }, "DriftPPM"},
		{"node timeout >= ttl", c3, func(c *core.Config) { c.TTL = 100 * ms; c.NodeTimeout = 100 * ms }, "not below TTL"},
		{"empty timeout bounds", c3, func(c *core.Config) { c.MinNodeTimeout = 2 * time.Second }, "bounds"},
		{"bad retry", c3, func(c *core.Config) { c.Retry = core.RandomDelay(2, 5*ms, ms) }, "range is empty"},
		{"zero tries", c3, func(c *core.Config) { c.Retry = core.RandomDelay(0, ms, ms) }, "at least 1 try"},
		{"no tokens", c3, func(c *core.Config) { c.Tokens = nil }, "Tokens is nil"},
		{"no jitter", c3, func(c *core.Config) { c.Jitter = nil }, "Jitter is nil"},
		{"bad fanout", c3, func(c *core.Config) { c.FanOut = 9 }, "FanOut"},
		{"lease fraction 1", c3, func(c *core.Config) { c.LeaseFraction = 1 }, "LeaseFraction"},
		{"negative lease fraction", c3, func(c *core.Config) { c.LeaseFraction = -0.5 }, "LeaseFraction"},
		{"NaN lease fraction", c3, func(c *core.Config) { c.LeaseFraction = math.NaN() }, "LeaseFraction"},
		{"lease with extension forbidden", c3, func(c *core.Config) { c.LeaseFraction = 0.5; c.MaxExtensions = -1 }, "extension is forbidden"},
		{"negative max hold", c3, func(c *core.Config) { c.MaxHold = -time.Second }, "MaxHold"},
		{"max hold below ttl", c3, func(c *core.Config) { c.TTL = time.Second; c.MaxHold = 999 * ms }, "below the TTL"},
	} {
		cfg := good
		if tc.mut != nil {
			tc.mut(&cfg)
		}
		_, err := core.NewSpec(tc.d, cfg)
		if !errors.Is(err, core.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want ErrInvalidConfig containing %q", tc.name, err, tc.want)
		}
	}
	l, err := newLocker(c3, clock, good)
	if err != nil {
		t.Fatal(err)
	}
	got := l.Config()
	if got.TTL != core.DefaultTTL || got.NodeTimeout != 50*ms || got.Retry != core.DefaultRetry ||
		got.MaxExtensions != 10 || got.LeaseFraction != 0 || got.MaxHold != 0 || core.RoundBound(l.spec) != 50*ms {
		t.Fatalf("defaults not applied: %+v", got)
	}
	calls := c3.Calls(0)
	ctx := context.Background()
	if _, err := l.Acquire(ctx, ""); !errors.Is(err, core.ErrInvalidConfig) {
		t.Errorf("empty key: %v", err)
	}
	if err := l.Release(ctx, core.Grant{}); !errors.Is(err, core.ErrInvalidConfig) {
		t.Errorf("zero grant release: %v", err)
	}
	if _, err := l.extend(ctx, core.Grant{}); !errors.Is(err, core.ErrInvalidConfig) {
		t.Errorf("zero grant extend: %v", err)
	}
	if c3.Calls(0) != calls {
		t.Error("bad input reached a node")
	}
}

type dupDriver struct{ *memnode.Cluster }

func (dupDriver) NodeName(i int) string { return "same:6379" }

type nilNameDriver struct{ *memnode.Cluster }

func (nilNameDriver) NodeName(i int) string { return "" }

func TestRetryWindowIsNotCappedAtTheTTL(t *testing.T) {
	// bsm/redislock #79: the retries run for as long as the policy says,
	// even past the TTL; only the policy and ctx bound them.
	e := newEnv(t, 3, core.Multiplexed, core.Config{TTL: 100 * ms, NodeTimeout: 10 * ms, Retry: core.RandomDelay(6, 50*ms, 50*ms)})
	for i := 0; i < 3; i++ {
		e.c.Set(i, "k", core.TokenFromUint64s(1, 1), time.Hour)
	}
	start := e.clock.Now()
	_, err := e.l.Acquire(context.Background(), "k")
	if got := asError(t, err).Attempts; got != 6 {
		t.Fatalf("attempts %d, want all 6", got)
	}
	if spent := e.clock.Now().Sub(start); spent != 250*ms {
		t.Fatalf("retries spanned %v on the manual clock, want 5 delays of 50ms", spent)
	}
}
