package redlock_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/core/memnode"
)

// grantClock is a core.Clock for tests of what a round's latency leaves
// of a grant. Its Sleep, which memnode's replies wait on, moves it at
// once, so that a round takes exactly its nodes' latencies; its timers
// fire only once the clock passes their end, so that a Lock's watcher
// sleeps until a round moves the clock that far, and the test sees the
// Context as a holder would at that reading. With auto set, a timer
// moves the clock to its end at once as well, as memnode.ManualClock's
// do: Lock's waits between attempts then pass without the test.
type grantClock struct {
	mu     sync.Mutex
	now    time.Time
	auto   bool
	timers map[*grantTimer]bool
}

type grantTimer struct {
	c  *grantClock
	at time.Time
	f  func()
}

func newGrantClock() *grantClock {
	return &grantClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), timers: map[*grantTimer]bool{}}
}

func (c *grantClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *grantClock) setAuto(auto bool) {
	c.mu.Lock()
	c.auto = auto
	c.mu.Unlock()
}

// Sleep moves the clock by d at once, firing the timers it passes.
func (c *grantClock) Sleep(d time.Duration, cancel <-chan struct{}) bool {
	select {
	case <-cancel:
		return false
	default:
	}
	c.advance(d)
	return true
}

func (c *grantClock) advance(d time.Duration) {
	if d <= 0 {
		return
	}
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []*grantTimer
	for t := range c.timers {
		if !t.at.After(c.now) {
			due = append(due, t)
			delete(c.timers, t)
		}
	}
	c.mu.Unlock()
	for _, t := range due {
		go t.f()
	}
}

func (c *grantClock) AfterFunc(d time.Duration, f func()) core.Timer {
	t := &grantTimer{c: c, f: f}
	t.Reset(d)
	return t
}

func (t *grantTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := t.c.timers[t]
	delete(t.c.timers, t)
	return was
}

func (t *grantTimer) Reset(d time.Duration) bool {
	c := t.c
	c.mu.Lock()
	was := c.timers[t]
	t.at = c.now.Add(d)
	c.timers[t] = true
	auto := c.auto
	c.mu.Unlock()
	if d <= 0 || auto {
		c.advance(max(d, 0))
		if d <= 0 {
			c.mu.Lock()
			fire := c.timers[t]
			delete(c.timers, t)
			c.mu.Unlock()
			if fire {
				go t.f()
			}
		}
	}
	return was
}

// tryLock and lockKey are TryLock and Lock, returning the handle where it
// lives: the one place this file's tests take locks.
func tryLock(ctx context.Context, c *redlock.Client, key string) (*redlock.Lock, error) {
	return c.TryLock(ctx, key)
}

func lockKey(ctx context.Context, c *redlock.Client, key string) (*redlock.Lock, error) {
	return c.Lock(ctx, key)
}

// grantEnv is a Client over n memnodes on a grantClock.
type grantEnv struct {
	clock  *grantClock
	nodes  *memnode.Cluster
	client *redlock.Client
}

func newGrantEnv(t *testing.T, n int, opts redlock.Options) (grantEnv, error) {
	t.Helper()
	clock := newGrantClock()
	nodes := memnode.New(n, clock)
	opts.Clock = clock
	c, err := redlock.NewClient(nodes, opts)
	return grantEnv{clock, nodes, c}, err
}

// requireUsable fails unless l, just returned without error, is usable:
// valid after now, its Context live, and an Extend succeeds and leaves
// the Context live.
func requireUsable(t *testing.T, e grantEnv, l *redlock.Lock, what string) {
	t.Helper()
	ctx := context.Background()
	require.True(t, l.Until().After(e.clock.Now()), "%s: Until %v is not after now %v", what, l.Until(), e.clock.Now())
	lctx := l.Context()
	require.NoError(t, context.Cause(lctx), "%s: the lock's Context is cancelled at birth", what)
	require.NoError(t, l.Extend(ctx), "%s: the lock cannot be extended", what)
	require.NoError(t, context.Cause(lctx), "%s: the lock's Context is cancelled after an extension", what)
}

// TestTryLockWonTooLateIsNoGrant: a round that wins its quorum with less
// validity than the loss margin (two round bounds: the lock is declared
// lost one before its validity ends, and an extension round must end by
// then) is no grant. TryLock fails with ErrNotHeld alone, the keys it set
// are cleaned up; before, it returned a lock that Extend refused, lost a
// round bound later, or, with less than one bound, already lost.
func TestTryLockWonTooLateIsNoGrant(t *testing.T) {
	for _, tc := range []struct {
		name    string
		fan     core.FanOut
		timeout time.Duration
		latency time.Duration
	}{
		// 100 − 30 − 3 ms leave 67 ms of validity, below two 40 ms bounds.
		{"multiplexed", core.Multiplexed, 40 * ms, 30 * ms},
		// 3×14 ms of 100 ms leave 55 ms, below two 3×15 ms bounds.
		{"sequential", core.Sequential, 15 * ms, 14 * ms},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := newGrantEnv(t, 3, redlock.Options{TTL: 100 * ms, NodeTimeout: tc.timeout, FanOut: tc.fan})
			require.NoError(t, err)
			for i := range 3 {
				e.nodes.SetLatency(i, tc.latency)
			}
			l, err := tryLock(context.Background(), e.client, "k")
			if err == nil {
				requireUsable(t, e, l, "TryLock")
				t.Fatalf("TryLock returned a usable lock valid until %v", l.Until())
			}
			require.ErrorIs(t, err, core.ErrNotHeld)
			assert.Equal(t, []error{core.ErrNotHeld}, kindsOf(err))
			assert.Equal(t, redlock.OutcomeNotHeld, redlock.OutcomeOf(err))
			assert.ErrorContains(t, err, "less than the loss margin")
			for i := range 3 {
				_, _, held := e.nodes.Get(i, "k")
				assert.False(t, held, "node %d still holds the key: no cleanup", i)
			}
		})
	}
}

// TestLockRetriesARoundWonTooLate: Lock takes a round won too late as a
// failed attempt, cleans it up, and tries again: here once the nodes are
// fast again, with a usable lock whose keys are its own.
func TestLockRetriesARoundWonTooLate(t *testing.T) {
	clock := newGrantClock()
	d := &slowingDriver{Cluster: memnode.New(3, clock), slow: 2}
	d.setLatency(30 * ms) // as in TestTryLockWonTooLateIsNoGrant: 67 ms left, not 2×40 ms
	var attempts int
	c, err := redlock.NewClient(d, redlock.Options{TTL: 100 * ms, NodeTimeout: 40 * ms, Clock: clock, Poll: true,
		Observer: redlock.Observer{Acquire: func(ev redlock.AcquireEvent) { attempts = ev.Attempts }}})
	require.NoError(t, err)
	e := grantEnv{clock, d.Cluster, c}
	clock.setAuto(true) // Lock's wait between its attempts passes at once
	l, err := lockKey(context.Background(), c, "k")
	clock.setAuto(false)
	require.NoError(t, err)
	assert.Equal(t, 2, attempts, "the round won too late, then one in time")
	for i := range 3 {
		tok, _, held := e.nodes.Get(i, "k")
		assert.True(t, held && tok == l.Token(), "node %d: the key is not the lock's", i)
	}
	requireUsable(t, e, l, "Lock")
	require.NoError(t, l.Unlock(context.Background()))
}

// slowingDriver gives its nodes latency for the first slow rounds (an
// attempt and its cleanup), and none after.
type slowingDriver struct {
	*memnode.Cluster
	mu   sync.Mutex
	slow int
}

func (d *slowingDriver) setLatency(l time.Duration) {
	for i := range d.Nodes() {
		d.SetLatency(i, l)
	}
}

func (d *slowingDriver) Begin(ctx context.Context) core.Batch {
	d.mu.Lock()
	if d.slow == 0 {
		d.setLatency(0)
	}
	d.slow--
	d.mu.Unlock()
	return d.Cluster.Begin(ctx)
}

// TestNewClientRefusesLocksLostAtBirth: a configuration in which no lock
// could be kept, even one won by a round that took no time, is refused
// with ErrInvalidConfig alone: before, NewClient accepted it and every
// lock it granted was lost at birth, or never extended.
func TestNewClientRefusesLocksLostAtBirth(t *testing.T) {
	for _, tc := range []struct {
		name  string
		n     int
		opts  redlock.Options
		lease *redlock.Lease
	}{
		// 100 − 3 ms of validity; the loss margin is 2×50 ms.
		{"multiplexed", 3, redlock.Options{TTL: 100 * ms, NodeTimeout: 50 * ms}, nil},
		// The loss margin is 2×5×10 ms: the bound exceeds half the TTL.
		{"sequential", 5, redlock.Options{TTL: 100 * ms, NodeTimeout: 10 * ms, FanOut: core.Sequential}, nil},
		// The lease extends at 0.9 of 97 ms: 9.7 ms are left, not the
		// loss margin of 2×10 ms.
		{"a lease that never extends", 3, redlock.Options{TTL: 100 * ms, NodeTimeout: 10 * ms}, &redlock.Lease{Fraction: 0.9}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := tc.opts
			opts.Lease = tc.lease
			_, err := newGrantEnv(t, tc.n, opts)
			require.ErrorIs(t, err, core.ErrInvalidConfig)
			assert.Equal(t, []error{core.ErrInvalidConfig}, kindsOf(err))
			assert.ErrorContains(t, err, "loss margin")
		})
	}
	// At each bound, accepted.
	_, err := newGrantEnv(t, 3, redlock.Options{TTL: 100 * ms, NodeTimeout: 48500 * time.Microsecond})
	require.NoError(t, err, "100 − 3 ms: exactly the margin, 2×48.5 ms")
	_, err = newGrantEnv(t, 3, redlock.Options{TTL: 100 * ms, NodeTimeout: 10 * ms, Lease: &redlock.Lease{Fraction: 0.75}})
	require.NoError(t, err, "a quarter of 97 ms leaves two 10 ms bounds")
}

// kinds are the conditions every error of the module matches exactly
// one of (core's errors.go).
const ms = time.Millisecond

var kinds = []error{core.ErrTaken, core.ErrQuorumUnreachable, core.ErrCancelled, core.ErrNotHeld,
	core.ErrInvalidConfig, core.ErrExtensionLimit}

// kindsOf returns the kinds err matches, in kinds' order.
func kindsOf(err error) []error {
	var out []error
	for _, k := range kinds {
		if errors.Is(err, k) {
			out = append(out, k)
		}
	}
	return out
}
