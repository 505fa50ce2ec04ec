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
	"github.com/redlock-go/redlock/internal/testguard"
)

// TestMain arms the hang guard (internal/testguard), then runs the tests
// and checks that none left a goroutine behind.
func TestMain(m *testing.M) {
	testguard.Arm()
	goleak.VerifyTestMain(m)
}

const (
	ttl      = 3 * time.Second           // drift 32 ms: validity 2.968 s on a still clock
	validity = ttl - 32*time.Millisecond // on a still clock
	bound    = 50 * time.Millisecond     // the fixture's node timeout: a multiplexed round's bound
)

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
	opts.Clock = clock // the driver's own: NewClient accepts it
	if opts.TTL == 0 {
		opts.TTL = ttl
	}
	opts.NodeTimeout = bound
	c, err := redlock.NewClient(nodes, opts)
	require.NoError(t, err)
	return fixture{clock, nodes, c}
}

// tryLock takes key; the Lock lives where the pointer says, never copied.
func (f fixture) tryLock(t *testing.T, key string) *redlock.Lock {
	t.Helper()
	l, err := f.client.TryLock(context.Background(), key)
	require.NoError(t, err)
	return l
}

// runUntilDone moves the clock to each timer's end until l's Context
// ends, and returns how many times it moved it. The clock only moves
// forward: an end already passed is that of a timer stopped since.
func (f fixture) runUntilDone(t *testing.T, l *redlock.Lock) int {
	t.Helper()
	for steps := 0; ; steps++ {
		require.Less(t, steps, 1000, "the watcher keeps waking without an end")
		select {
		case <-l.Context().Done():
			return steps
		case at := <-f.clock.asleep:
			if at.After(f.clock.Now()) {
				f.clock.set(at)
			}
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

// notDone fails the test if ctx has ended.
func notDone(ctx context.Context, t *testing.T, msg string) {
	t.Helper()
	select {
	case <-ctx.Done():
		t.Fatalf("%s: %v", msg, context.Cause(ctx))
	default:
	}
}

func TestLockUnlock(t *testing.T) {
	f := newFixture(t, redlock.Options{})
	start := f.clock.Now()
	l := f.tryLock(t, "k")
	assert.Equal(t, "k", l.Key())
	assert.NotEqual(t, core.Token{}, l.Token())
	assert.Equal(t, 3, f.nodes.Holders("k", l.Token()))
	assert.Equal(t, start.Add(validity), l.Until(), "Until is the end of the validity on the client's clock")
	assert.False(t, redlock.WatcherStarted(l), "a Lock without a Lease started its watcher before Context")
	ctx := l.Context()
	assert.True(t, redlock.WatcherStarted(l), "Context did not start the watcher")
	assert.Same(t, ctx, l.Context(), "Context is one context")
	assert.Equal(t, l.Until().Add(-bound), f.clock.next(t), "the watcher sleeps until a round's bound before the validity ends")

	_, err := f.client.TryLock(context.Background(), "k")
	assert.ErrorIs(t, err, redlock.ErrTaken)

	require.NoError(t, l.Unlock(context.Background()))
	assert.Zero(t, f.nodes.Holders("k", l.Token()), "Unlock left keys")
	assert.True(t, redlock.WatcherExited(l), "Unlock returned before the watcher ended")
	assert.Zero(t, f.clock.armed(), "Unlock left a timer armed")
	<-ctx.Done()
	assert.ErrorIs(t, context.Cause(ctx), redlock.ErrUnlocked)
	assert.True(t, l.Until().IsZero())

	sent := f.calls()
	for _, err := range []error{l.Unlock(context.Background()), l.Extend(context.Background())} {
		assert.ErrorIs(t, err, redlock.ErrUnlocked)
		assert.ErrorIs(t, err, redlock.ErrNotHeld)
	}
	assert.Equal(t, sent, f.calls(), "Unlock or Extend of an unlocked lock sent commands")
}

// TestLockWithoutContextStartsNothing: a Lock without a Lease costs no
// goroutine, no timer and no state of its own until Context or Extend;
// Extend makes state but starts no goroutine either.
func TestLockWithoutContextStartsNothing(t *testing.T) {
	f := newFixture(t, redlock.Options{})
	l := f.tryLock(t, "k")
	assert.False(t, redlock.HasState(l), "TryLock made the Lock's state")
	assert.False(t, redlock.WatcherStarted(l))
	assert.Zero(t, f.clock.armed(), "TryLock left a timer armed")
	goleak.VerifyNone(t) // while the lock is held
	require.NoError(t, l.Unlock(context.Background()))
	assert.False(t, redlock.HasState(l), "Unlock made the Lock's state")
	goleak.VerifyNone(t)

	l = f.tryLock(t, "k")
	require.NoError(t, l.Extend(context.Background()))
	assert.True(t, redlock.HasState(l))
	assert.False(t, redlock.WatcherStarted(l), "Extend started a watcher")
	assert.Zero(t, f.clock.armed(), "Extend left a timer armed")
	goleak.VerifyNone(t)
	require.NoError(t, l.Unlock(context.Background()))
	assert.Zero(t, f.nodes.Holders("k", l.Token()))
	assert.Len(t, f.clock.asleep, 0, "nothing slept on the clock")
}

// TestTryLockUnlockAllocations: the uncontended TryLock and Unlock of a
// Lock without a Lease, over memnode, allocate once: the *Lock returned.
// The step values live on the stack, and memnode reuses its batches and
// entries.
func TestTryLockUnlockAllocations(t *testing.T) {
	for _, poll := range []bool{false, true} {
		t.Run(fmt.Sprintf("poll=%v", poll), func(t *testing.T) {
			c, err := redlock.NewClient(memnode.New(3, core.SystemClock{}), redlock.Options{Poll: poll})
			require.NoError(t, err)
			ctx := testguard.Context(t)
			allocs := testing.AllocsPerRun(200, func() {
				l, err := c.TryLock(ctx, "k")
				if err != nil {
					t.Fatal(err)
				}
				if err := l.Unlock(ctx); err != nil {
					t.Fatal(err)
				}
			})
			assert.Equal(t, 1.0, allocs, "allocations per TryLock+Unlock: the Lock only")
		})
	}
}

// TestContextEndsBeforeTheValidity: unextended, the lock is declared lost
// a round's bound before Until (the node timeout; once per node when
// sequential), so that no extension can still be in flight when the
// validity ends; never at or after Until.
func TestContextEndsBeforeTheValidity(t *testing.T) {
	for _, tc := range []struct {
		fanOut redlock.FanOut
		bound  time.Duration
	}{{redlock.Multiplexed, bound}, {redlock.Sequential, 3 * bound}} {
		t.Run(tc.fanOut.String(), func(t *testing.T) {
			f := newFixture(t, redlock.Options{FanOut: tc.fanOut})
			l := f.tryLock(t, "k")
			until := l.Until()
			ctx := l.Context()
			loseAt := f.clock.next(t)
			assert.Equal(t, until.Add(-tc.bound), loseAt, "the watcher does not wake a round's bound before Until")
			f.clock.set(loseAt.Add(-time.Nanosecond))
			notDone(ctx, t, "context cancelled before the loss was due")
			assert.Equal(t, until, l.Until())
			f.clock.set(loseAt)
			<-ctx.Done()
			assert.True(t, f.clock.Now().Before(until), "the loss was declared at or after Until")
			assert.True(t, l.Until().IsZero(), "Until of a lost lock")
			cause := context.Cause(ctx)
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
			assert.True(t, redlock.WatcherExited(l))
		})
	}
}

// TestExtendTooLateIsRefused: an extension whose round could still be in
// flight when the loss is due is refused with ErrNotHeld, sending nothing
// and leaving the lock as it was; one that just fits is sent; one asked
// for once the loss is due declares it.
func TestExtendTooLateIsRefused(t *testing.T) {
	f := newFixture(t, redlock.Options{})
	l := f.tryLock(t, "k")
	until := l.Until()
	lastFit := until.Add(-2 * bound) // a round started then ends by the loss
	f.clock.set(lastFit.Add(time.Nanosecond))
	sent := f.calls()
	err := l.Extend(context.Background())
	assert.ErrorIs(t, err, redlock.ErrNotHeld)
	assert.NotErrorIs(t, err, redlock.ErrLost)
	assert.Equal(t, sent, f.calls(), "a refused extension sent commands")
	assert.Equal(t, until, l.Until(), "a refused extension moved Until")
	notDone(l.Context(), t, "a refused extension ended the context")

	f.clock.set(lastFit)
	require.Equal(t, until.Add(-bound), f.clock.next(t), "the watcher sleeps until the loss is due") // Context started it
	require.NoError(t, l.Extend(context.Background()), "an extension that ends by the loss")
	until = l.Until()
	assert.Equal(t, lastFit.Add(validity), until)
	assert.Equal(t, until.Add(-bound), f.clock.next(t), "the watcher did not move to the new loss")

	f.clock.set(until.Add(-bound)) // the watcher and the caller race to declare the loss
	err = l.Extend(context.Background())
	assert.ErrorIs(t, err, redlock.ErrLost)
	assert.ErrorIs(t, err, redlock.ErrNotHeld)
	<-l.Context().Done()
	assert.ErrorIs(t, l.Unlock(context.Background()), redlock.ErrLost)
	assert.True(t, redlock.WatcherExited(l))
}

func TestExtendMovesUntil(t *testing.T) {
	f := newFixture(t, redlock.Options{})
	l := f.tryLock(t, "k")
	ctx := l.Context()
	first := f.clock.next(t)
	f.clock.set(first.Add(-time.Second))
	require.NoError(t, l.Extend(context.Background()))
	assert.Equal(t, f.clock.Now().Add(validity), l.Until())
	// The extension wakes the watcher, which sleeps until the new loss.
	assert.Equal(t, l.Until().Add(-bound), f.clock.next(t))
	f.clock.set(first) // the old loss is no longer due
	notDone(ctx, t, "an extended lock's context ended")
	assert.Equal(t, 1, f.clock.armed(), "the watcher's old timer is still armed")
	require.NoError(t, l.Unlock(context.Background()))
	assert.Zero(t, f.clock.armed())
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
				_, _ = l.Fence()          // read for the race detector; the values do not matter
			}
		}
	}()
	defer func() { close(stopReading); <-read }()
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

// TestLeaseGivesUpWhenNodesAreUnreachable: extensions that prove nothing
// are retried until none could end before the loss is due, which is then
// declared a round's bound before the validity ends, with the last
// extension's error. Down nodes refuse at once, on a clock that does not
// move; hung ones time out, each round taking the node timeout.
func TestLeaseGivesUpWhenNodesAreUnreachable(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(*memnode.Cluster, int, bool)
	}{{"down", (*memnode.Cluster).SetDown}, {"hung", (*memnode.Cluster).SetHung}} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, redlock.Options{Lease: &redlock.Lease{Fraction: 1.0 / 3}})
			l := f.tryLock(t, "k")
			t.Cleanup(func() { _ = l.Unlock(context.Background()) }) // stops a watcher that spins, should the test fail; the lock is lost by then, so its error is expected
			for i := 0; i < 3; i++ {
				tc.set(f.nodes, i, true)
			}
			until := l.Until()
			retries := f.runUntilDone(t, l)
			cause := context.Cause(l.Context())
			assert.ErrorIs(t, cause, redlock.ErrQuorumUnreachable)
			assert.Equal(t, until.Add(-bound), f.clock.Now(), "the lease did not declare the loss a round's bound before the validity ends (%v)", until)
			assert.Greater(t, retries, 2, "the lease did not retry the extension")
			for i := 0; i < 3; i++ {
				tc.set(f.nodes, i, false)
			}
			assert.ErrorIs(t, l.Unlock(context.Background()), redlock.ErrLost)
		})
	}
}

func TestLeaseBounds(t *testing.T) {
	t.Run("MaxHold", func(t *testing.T) {
		// Some 16 extensions: past the default bound of 10, which
		// MaxHold lifts.
		f := newFixture(t, redlock.Options{Lease: &redlock.Lease{Fraction: 0.5, MaxHold: 8 * ttl}})
		start := f.clock.Now()
		l := f.tryLock(t, "k")
		f.runUntilDone(t, l)
		assert.ErrorIs(t, context.Cause(l.Context()), redlock.ErrExtensionLimit)
		assert.Equal(t, start.Add(8*ttl), f.clock.Now(), "the lease did not end at MaxHold: did the default extension count end it?")
		require.ErrorIs(t, l.Unlock(context.Background()), redlock.ErrLost)
	})
	t.Run("MaxExtensions", func(t *testing.T) {
		f := newFixture(t, redlock.Options{MaxExtensions: 2, Lease: &redlock.Lease{Fraction: 0.5}})
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

	f := newFixture(t, redlock.Options{Fencing: true})
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
		"hold below the TTL":   {TTL: time.Second, Lease: &redlock.Lease{Fraction: 0.5, MaxHold: time.Second - time.Millisecond}},
		"hold below default":   {Lease: &redlock.Lease{Fraction: 0.5, MaxHold: defaultTTL / 2}},
		"negative hold":        {Lease: &redlock.Lease{Fraction: 0.5, MaxHold: -1}},
		"lease, no extensions": {MaxExtensions: -1, Lease: &redlock.Lease{Fraction: 0.5}},
		"negative TTL":         {TTL: -time.Second},
		"TTL of a fraction":    {TTL: time.Second + time.Microsecond},
		"timeout over the TTL": {TTL: time.Second, NodeTimeout: time.Second},
		"negative timeout":     {NodeTimeout: -time.Second},
		"drift of the TTL":     {DriftPPM: 1_000_000},
		"negative drift":       {DriftFixed: -time.Millisecond},
		"drift eats the TTL":   {TTL: 2 * time.Millisecond},
		"unknown fan-out":      {FanOut: redlock.Sequential + 1},
		"empty delay range":    {Backoff: redlock.RandomDelay(2*time.Millisecond, time.Millisecond)},
		"negative backoff":     {Backoff: redlock.ExponentialBackoff(-time.Millisecond, time.Second)},
		"fair, polling":        {Fair: true, Poll: true},
	} {
		_, err := redlock.NewClient(nodes, opts)
		assert.ErrorIs(t, err, redlock.ErrInvalidConfig, name)
	}
	for i := 0; i < 3; i++ {
		assert.Zero(t, nodes.Calls(i), "bad options sent commands")
	}
	for name, d := range map[string]redlock.Driver{
		"nil driver":           nil,
		"typed nil driver":     (*memnode.Cluster)(nil),
		"typed nil wrapper":    (*counting)(nil),
		"nil driver, no clock": (*clockless)(nil),
	} {
		_, err := redlock.NewClient(d, redlock.Options{})
		assert.ErrorIs(t, err, redlock.ErrInvalidConfig, name)
	}
	c, err := redlock.NewClient(nodes, redlock.Options{Lease: &redlock.Lease{Fraction: 0.5, MaxHold: defaultTTL}})
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
			c, err := redlock.NewClient(nodes, redlock.Options{Poll: tc.poll,
				Backoff: redlock.RandomDelay(time.Millisecond, 2*time.Millisecond)})
			require.NoError(t, err)
			holder, err := c.TryLock(context.Background(), "k")
			require.NoError(t, err)
			got := make(chan *redlock.Lock)
			go func() {
				l, err := c.Lock(testguard.Context(t), "k") // no count of tries: Lock tries until it holds the lock
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
