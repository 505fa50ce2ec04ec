package redlock_test

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/core/memnode"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const ttl = 3 * time.Second // drift 32 ms: validity 2.968 s on a still clock

// fixture is a client over memnodes on a step clock.
type fixture struct {
	clock  *stepClock
	nodes  *memnode.Cluster
	client *redlock.Client
}

func newFixture(t *testing.T, opts redlock.Options) fixture {
	t.Helper()
	clock := newStepClock()
	nodes := memnode.New(3, clock)
	opts.Clock = clock
	if opts.TTL == 0 {
		opts.TTL = ttl
	}
	opts.NodeTimeout = 50 * time.Millisecond
	c, err := redlock.NewClient(nodes, opts)
	require.NoError(t, err)
	return fixture{clock, nodes, c}
}

func (f fixture) tryLock(t *testing.T, key string) *redlock.Lock {
	t.Helper()
	l, err := f.client.TryLock(context.Background(), key)
	require.NoError(t, err)
	return l
}

// runUntilDone moves the clock to each sleeper's end until l's Context
// ends, and returns how many times it moved it.
func (f fixture) runUntilDone(t *testing.T, l *redlock.Lock) int {
	t.Helper()
	for steps := 0; ; steps++ {
		require.Less(t, steps, 1000, "the watcher keeps waking without an end")
		select {
		case <-l.Context().Done():
			return steps
		case at := <-f.clock.asleep:
			f.clock.set(at)
		case <-time.After(10 * time.Second): // a hang, not a timing
			t.Fatal("the watcher neither sleeps nor ends the context")
		}
	}
}

// calls is the number of commands every node has received.
func (f fixture) calls() int {
	n := 0
	for i := 0; i < f.nodes.Nodes(); i++ {
		n += f.nodes.Calls(i)
	}
	return n
}

func TestLockUnlock(t *testing.T) {
	f := newFixture(t, redlock.Options{})
	start := f.clock.Now()
	l := f.tryLock(t, "k")
	assert.Equal(t, "k", l.Key())
	assert.NotEqual(t, core.Token{}, l.Token())
	assert.Equal(t, 3, f.nodes.Holders("k", l.Token()))
	assert.Equal(t, start.Add(ttl-32*time.Millisecond), l.Until(), "Until is the end of the validity on the client's clock")
	assert.Equal(t, l.Until(), f.clock.next(t), "the watcher sleeps until the validity ends")

	_, err := f.client.TryLock(context.Background(), "k")
	assert.ErrorIs(t, err, redlock.ErrTaken)

	require.NoError(t, l.Unlock(context.Background()))
	assert.Zero(t, f.nodes.Holders("k", l.Token()), "Unlock left keys")
	assert.True(t, redlock.WatcherExited(l), "Unlock returned before the watcher ended")
	<-l.Context().Done()
	assert.ErrorIs(t, context.Cause(l.Context()), redlock.ErrUnlocked)
	assert.True(t, l.Until().IsZero())

	sent := f.calls()
	for _, err := range []error{l.Unlock(context.Background()), l.Extend(context.Background())} {
		assert.ErrorIs(t, err, redlock.ErrUnlocked)
		assert.ErrorIs(t, err, redlock.ErrNotHeld)
	}
	assert.Equal(t, sent, f.calls(), "Unlock or Extend of an unlocked lock sent commands")
}

func TestContextEndsWithTheValidity(t *testing.T) {
	f := newFixture(t, redlock.Options{})
	l := f.tryLock(t, "k")
	until := f.clock.next(t)
	f.clock.set(until.Add(-time.Nanosecond))
	select {
	case <-l.Context().Done():
		t.Fatal("context cancelled before the validity ended")
	default:
	}
	f.clock.set(until)
	<-l.Context().Done()
	cause := context.Cause(l.Context())
	assert.ErrorIs(t, cause, redlock.ErrLost)
	assert.ErrorIs(t, cause, redlock.ErrNotHeld)
	assert.NotErrorIs(t, cause, redlock.ErrTaken)
	var lost *redlock.LostError
	require.ErrorAs(t, cause, &lost)
	assert.Equal(t, "k", lost.Key)

	sent := f.calls()
	assert.ErrorIs(t, l.Extend(context.Background()), redlock.ErrLost)
	assert.Equal(t, sent, f.calls(), "Extend of a lost lock sent commands")
	// Unlock still deletes what is left, and says the lock was lost.
	assert.ErrorIs(t, l.Unlock(context.Background()), redlock.ErrLost)
	assert.Zero(t, f.nodes.Holders("k", l.Token()))
}

func TestExtendMovesUntil(t *testing.T) {
	f := newFixture(t, redlock.Options{})
	l := f.tryLock(t, "k")
	first := f.clock.next(t)
	f.clock.set(first.Add(-time.Second))
	require.NoError(t, l.Extend(context.Background()))
	assert.Equal(t, f.clock.Now().Add(ttl-32*time.Millisecond), l.Until())
	f.clock.set(first) // the watcher wakes at the old end, sees the new one, and sleeps again
	assert.Equal(t, l.Until(), f.clock.next(t))
	select {
	case <-l.Context().Done():
		t.Fatalf("an extended lock's context ended: %v", context.Cause(l.Context()))
	default:
	}
	require.NoError(t, l.Unlock(context.Background()))
}

func TestLeaseExtendsUntilUnlock(t *testing.T) {
	f := newFixture(t, redlock.Options{Lease: &redlock.Lease{Fraction: 1.0 / 3}})
	l := f.tryLock(t, "k")
	// The handle is read while the lease writes it (the race detector
	// watches).
	stopReading := make(chan struct{})
	read := make(chan struct{})
	go func() {
		defer close(read)
		for {
			select {
			case <-stopReading:
				return
			default:
				_, _ = l.Key(), l.Token() // no mutex: nothing orders them after the lease's writes
				l.Fence()
			}
		}
	}()
	defer func() { close(stopReading); <-read }()
	validity := ttl - 32*time.Millisecond
	due := f.clock.next(t)
	for i := 0; i < 5; i++ {
		assert.Equal(t, l.Until().Add(-validity+validity/3), due, "extension %d is not due at a third of the validity", i)
		f.clock.set(due)
		next := f.clock.next(t) // the extension is done when the watcher sleeps again
		assert.Equal(t, due.Add(validity), l.Until(), "extension %d did not move Until", i)
		_, left, ok := f.nodes.Get(0, "k")
		require.True(t, ok)
		assert.Equal(t, ttl, left, "the keys' TTL was not reset")
		due = next
	}
	require.NoError(t, l.Unlock(context.Background()))
	assert.True(t, redlock.WatcherExited(l), "Unlock returned before the watcher ended")
	assert.ErrorIs(t, context.Cause(l.Context()), redlock.ErrUnlocked)
}

func TestLeaseLostToAnotherHolder(t *testing.T) {
	f := newFixture(t, redlock.Options{Lease: &redlock.Lease{Fraction: 0.5}})
	l := f.tryLock(t, "k")
	other := core.TokenFromUint64s(1, 2)
	f.nodes.Set(0, "k", other, ttl) // the keys expired unseen and another client took them
	f.nodes.Set(1, "k", other, ttl)
	f.clock.set(f.clock.next(t))
	<-l.Context().Done()
	cause := context.Cause(l.Context())
	assert.ErrorIs(t, cause, redlock.ErrTaken)
	assert.ErrorIs(t, cause, redlock.ErrLost)
	assert.ErrorIs(t, l.Extend(context.Background()), redlock.ErrTaken)
	assert.ErrorIs(t, l.Unlock(context.Background()), redlock.ErrLost)
	assert.Equal(t, 2, f.nodes.Holders("k", other), "Unlock deleted another holder's keys")
}

func TestLeaseGivesUpWhenNodesAreUnreachable(t *testing.T) {
	f := newFixture(t, redlock.Options{Lease: &redlock.Lease{Fraction: 1.0 / 3}})
	l := f.tryLock(t, "k")
	for i := 0; i < 3; i++ {
		f.nodes.SetDown(i, true)
	}
	until := l.Until()
	retries := f.runUntilDone(t, l)
	cause := context.Cause(l.Context())
	assert.ErrorIs(t, cause, redlock.ErrQuorumUnreachable)
	assert.True(t, f.clock.Now().Before(until), "the lease waited for the validity to run out (%v) instead of giving up when no round fits", until)
	assert.Greater(t, retries, 2, "the lease did not retry the extension")
	for i := 0; i < 3; i++ {
		f.nodes.SetDown(i, false)
	}
	assert.ErrorIs(t, l.Unlock(context.Background()), redlock.ErrLost)
}

func TestLeaseBounds(t *testing.T) {
	t.Run("MaxHold", func(t *testing.T) {
		f := newFixture(t, redlock.Options{Lease: &redlock.Lease{Fraction: 0.5, MaxHold: 2 * ttl}})
		start := f.clock.Now()
		l := f.tryLock(t, "k")
		f.runUntilDone(t, l)
		assert.ErrorIs(t, context.Cause(l.Context()), redlock.ErrExtensionLimit)
		assert.Equal(t, start.Add(2*ttl), f.clock.Now(), "the lease did not end at MaxHold")
		assert.Equal(t, math.MaxInt32, f.client.Config().MaxExtensions, "MaxHold did not lift the default extension count")
		require.ErrorIs(t, l.Unlock(context.Background()), redlock.ErrLost)
	})
	t.Run("MaxExtensions", func(t *testing.T) {
		f := newFixture(t, redlock.Options{Config: redlock.Config{MaxExtensions: 2}, Lease: &redlock.Lease{Fraction: 0.5}})
		l := f.tryLock(t, "k")
		f.runUntilDone(t, l)
		assert.ErrorIs(t, context.Cause(l.Context()), redlock.ErrExtensionLimit)
		_, left, _ := f.nodes.Get(0, "k")
		assert.Greater(t, left, time.Duration(0), "the bound was applied after the validity, not at the third extension's time")
		require.ErrorIs(t, l.Unlock(context.Background()), redlock.ErrLost)
	})
}

// TestUnlockStopsAnExtensionInFlight: Unlock during an extension that
// waits on hung nodes stops it, and returns only once the watcher is gone.
func TestUnlockStopsAnExtensionInFlight(t *testing.T) {
	f := newFixture(t, redlock.Options{Lease: &redlock.Lease{Fraction: 0.5}})
	l := f.tryLock(t, "k")
	for i := 0; i < 3; i++ {
		f.nodes.SetHung(i, true)
	}
	f.clock.set(f.clock.next(t))
	f.clock.next(t) // the extension awaits the hung nodes' replies
	sent := f.calls()
	for i := 0; i < 3; i++ {
		f.nodes.SetHung(i, false)
	}
	require.NoError(t, l.Unlock(context.Background()))
	assert.True(t, redlock.WatcherExited(l), "Unlock returned with the watcher still running")
	assert.Equal(t, sent+3, f.calls(), "something besides the three deletes was sent after Unlock began")
	assert.Zero(t, f.nodes.Holders("k", l.Token()))
}

func TestFence(t *testing.T) {
	plain := newFixture(t, redlock.Options{})
	l := plain.tryLock(t, "k")
	_, err := l.Fence()
	assert.ErrorIs(t, err, redlock.ErrNoFencing)
	assert.ErrorIs(t, err, redlock.ErrInvalidConfig)
	require.NoError(t, l.Unlock(context.Background()))

	f := newFixture(t, redlock.Options{Config: redlock.Config{Fencing: true}})
	var last uint64
	for i := 0; i < 3; i++ {
		l := f.tryLock(t, "k")
		fence, err := l.Fence()
		require.NoError(t, err)
		assert.Greater(t, fence, last)
		last = fence
		require.NoError(t, l.Unlock(context.Background()))
	}
}

func TestBadOptions(t *testing.T) {
	nodes := memnode.New(3, core.SystemClock{})
	for name, opts := range map[string]redlock.Options{
		"zero fraction":        {Lease: &redlock.Lease{}},
		"negative fraction":    {Lease: &redlock.Lease{Fraction: -0.5}},
		"fraction of one":      {Lease: &redlock.Lease{Fraction: 1}},
		"NaN fraction":         {Lease: &redlock.Lease{Fraction: math.NaN()}},
		"hold below the TTL":   {Config: redlock.Config{TTL: time.Second}, Lease: &redlock.Lease{Fraction: 0.5, MaxHold: time.Second - time.Millisecond}},
		"hold below default":   {Lease: &redlock.Lease{Fraction: 0.5, MaxHold: core.DefaultTTL / 2}},
		"negative hold":        {Lease: &redlock.Lease{Fraction: 0.5, MaxHold: -1}},
		"lease, no extensions": {Config: redlock.Config{MaxExtensions: -1}, Lease: &redlock.Lease{Fraction: 0.5}},
		"core's own checks":    {Config: redlock.Config{TTL: -time.Second}},
	} {
		_, err := redlock.NewClient(nodes, opts)
		assert.ErrorIs(t, err, redlock.ErrInvalidConfig, name)
	}
	for i := 0; i < 3; i++ {
		assert.Zero(t, nodes.Calls(i), "bad options sent commands")
	}
	c, err := redlock.NewClient(nodes, redlock.Options{Lease: &redlock.Lease{Fraction: 0.5, MaxHold: core.DefaultTTL}})
	require.NoError(t, err, "MaxHold equal to the TTL")
	_, err = c.TryLock(nil, "k") //nolint:staticcheck // a nil ctx is the bad input under test
	assert.ErrorIs(t, err, redlock.ErrInvalidConfig)
	_, err = c.TryLock(context.Background(), "")
	assert.ErrorIs(t, err, redlock.ErrInvalidConfig)
}

func TestLockWaitsForTheHolder(t *testing.T) {
	// Polling: the waiter is refused again and again, 1-2 ms apart. With
	// wake (memnode announces releases): refused once, then once more as
	// its watch starts (a release may have gone unheard), then it sleeps
	// until the holder's release is announced; the 10 s TTL and
	// unbounded tries would time the test out otherwise.
	for _, tc := range []struct {
		poll     bool
		refusals int
	}{{true, 3}, {false, 2}} {
		t.Run(fmt.Sprintf("poll=%v", tc.poll), func(t *testing.T) {
			nodes := newCounting(memnode.New(3, core.SystemClock{}))
			c, err := redlock.NewClient(nodes, redlock.Options{Poll: tc.poll, Config: redlock.Config{
				Retry: redlock.RandomDelay(1, time.Millisecond, 2*time.Millisecond)}})
			require.NoError(t, err)
			holder, err := c.TryLock(context.Background(), "k")
			require.NoError(t, err)
			got := make(chan *redlock.Lock)
			go func() {
				l, err := c.Lock(context.Background(), "k") // one try in Retry: Lock ignores the count
				assert.NoError(t, err)
				got <- l
			}()
			nodes.waitRefused(tc.refusals)
			require.NoError(t, holder.Unlock(context.Background()))
			l := <-got
			require.NotNil(t, l)
			require.NoError(t, l.Unlock(context.Background()))

			held, err := c.TryLock(context.Background(), "k")
			require.NoError(t, err)
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			_, err = c.Lock(ctx, "k")
			assert.ErrorIs(t, err, redlock.ErrCancelled)
			require.NoError(t, held.Unlock(context.Background()))
		})
	}
}
