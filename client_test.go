package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/core/memnode"
)

// clockless is a driver that does not say which clock it reads (no Clock
// method) and announces nothing.
type clockless struct{ c *memnode.Cluster }

func (d *clockless) Nodes() int                           { return d.c.Nodes() }
func (d *clockless) NodeName(i int) string                { return d.c.NodeName(i) }
func (d *clockless) Begin(ctx context.Context) core.Batch { return d.c.Begin(ctx) }

// callsTo is the number of commands every node of nodes has received.
func callsTo(nodes *memnode.Cluster) int {
	n := 0
	for i := 0; i < nodes.Nodes(); i++ {
		n += nodes.Calls(i)
	}
	return n
}

// TestNewClientClock: a Client has one clock, its driver's. Options.Clock
// nil adopts it; the same clock is accepted; any other is refused with
// ErrInvalidConfig before anything is sent, as is any clock given with a
// driver that does not say which clock it reads.
func TestNewClientClock(t *testing.T) {
	opts := func(clock redlock.Clock) redlock.Options {
		return redlock.Options{TTL: ttl, NodeTimeout: bound, Clock: clock}
	}
	// onClock checks that c's validity and watcher read clock.
	onClock := func(t *testing.T, c *redlock.Client, clock *stepClock) {
		t.Helper()
		l, err := c.TryLock(context.Background(), "k")
		require.NoError(t, err)
		assert.Equal(t, clock.Now().Add(validity), l.Until(), "the validity is not read on the driver's clock")
		ctx := l.Context()
		assert.Equal(t, l.Until().Add(-bound), clock.next(t), "the watcher does not sleep on the driver's clock")
		require.NoError(t, l.Unlock(context.Background()))
		assert.ErrorIs(t, context.Cause(ctx), redlock.ErrUnlocked)
	}
	t.Run("nil adopts the driver's", func(t *testing.T) {
		clock := newStepClock()
		c, err := redlock.NewClient(memnode.New(3, clock), opts(nil))
		require.NoError(t, err)
		onClock(t, c, clock)
	})
	t.Run("the driver's own is accepted", func(t *testing.T) {
		clock := newStepClock()
		c, err := redlock.NewClient(memnode.New(3, clock), opts(clock))
		require.NoError(t, err)
		onClock(t, c, clock)
		_, err = redlock.NewClient(memnode.New(3, core.SystemClock{}), redlock.Options{Clock: core.SystemClock{}})
		assert.NoError(t, err, "the system clock is the system clock")
	})
	t.Run("another is refused", func(t *testing.T) {
		nodes := memnode.New(3, newStepClock())
		for name, other := range map[string]redlock.Clock{
			"another step clock": newStepClock(),
			"the system clock":   core.SystemClock{},
			"a manual clock":     memnode.NewManualClock(time.Time{}),
			"a typed nil":        (*stepClock)(nil),
		} {
			c, err := redlock.NewClient(nodes, opts(other))
			assert.ErrorIs(t, err, redlock.ErrInvalidConfig, name)
			assert.Nil(t, c, name)
		}
		_, err := redlock.NewClient(memnode.New(3, core.SystemClock{}), redlock.Options{Clock: newStepClock()})
		assert.ErrorIs(t, err, redlock.ErrInvalidConfig, "a step clock over a system-clock driver")
		assert.Zero(t, callsTo(nodes), "a refused clock sent commands")
	})
	t.Run("a driver that does not say", func(t *testing.T) {
		nodes := memnode.New(3, core.SystemClock{})
		d := &clockless{nodes}
		for name, clock := range map[string]redlock.Clock{
			"the system clock": core.SystemClock{},
			"a step clock":     newStepClock(),
		} {
			_, err := redlock.NewClient(d, redlock.Options{Clock: clock, Poll: true})
			assert.ErrorIs(t, err, redlock.ErrInvalidConfig, name)
		}
		assert.Zero(t, callsTo(nodes), "a refused clock sent commands")
		c, err := redlock.NewClient(d, redlock.Options{Poll: true})
		require.NoError(t, err, "no clock given: the system clock")
		l, err := c.TryLock(context.Background(), "k")
		require.NoError(t, err)
		left := time.Until(l.Until())
		assert.True(t, left > 0 && left <= defaultTTL, "Until on the system clock is %v away", left)
		require.NoError(t, l.Unlock(context.Background()))
	})
}

// TestTryLockIsOneAttempt: TryLock makes one attempt, and cleans up
// after it; it never sleeps.
func TestTryLockIsOneAttempt(t *testing.T) {
	for _, poll := range []bool{false, true} {
		t.Run(fmt.Sprintf("poll=%v", poll), func(t *testing.T) {
			clock := newStepClock()
			mem := memnode.New(3, clock)
			nodes := newCounting(mem)
			c, err := redlock.NewClient(nodes, redlock.Options{Poll: poll, Clock: clock,
				TTL: ttl, NodeTimeout: bound, Backoff: redlock.RandomDelay(time.Millisecond, 2*time.Millisecond)})
			require.NoError(t, err)
			other := core.TokenFromUint64s(1, 2)
			mem.Set(0, "k", other, ttl) // the attempt wins node 2 only
			mem.Set(1, "k", other, ttl)
			_, err = c.TryLock(context.Background(), "k")
			assert.ErrorIs(t, err, redlock.ErrTaken)
			var e *redlock.Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, 1, e.Attempts)
			assert.Equal(t, int64(1), nodes.attempts.Load(), "TryLock attempted more than once")
			_, _, ok := mem.Get(2, "k")
			assert.False(t, ok, "the failed attempt's key was not cleaned up")
			assert.Equal(t, 2, mem.Holders("k", other))
			assert.Len(t, clock.asleep, 0, "TryLock slept")
			assert.Zero(t, clock.armed())
		})
	}
}

// deadlineCtx is a context whose deadline passes when the test says so
// (expire): its Err is then context.DeadlineExceeded.
type deadlineCtx struct {
	context.Context // values
	at              time.Time
	done            chan struct{}
	once            sync.Once
}

func newDeadlineCtx() *deadlineCtx {
	return &deadlineCtx{Context: context.Background(), at: time.Now().Add(time.Minute), done: make(chan struct{})}
}

func (c *deadlineCtx) Deadline() (time.Time, bool) { return c.at, true }
func (c *deadlineCtx) Done() <-chan struct{}       { return c.done }
func (c *deadlineCtx) expire()                     { c.once.Do(func() { close(c.done) }) }

func (c *deadlineCtx) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

// TestLockDeadlineEndsAWait: when ctx's deadline ends a wait, Lock returns
// the last attempt's error, polling or not; a cancelled ctx gives
// ErrCancelled.
func TestLockDeadlineEndsAWait(t *testing.T) {
	for _, poll := range []bool{false, true} {
		t.Run(fmt.Sprintf("poll=%v", poll), func(t *testing.T) {
			// Hour-long retry delays: only the ctx ends the waits.
			f := newFixture(t, redlock.Options{Poll: poll,
				Backoff: redlock.RandomDelay(time.Hour, time.Hour)})
			holder := f.tryLock(t, "k")
			for _, tc := range []struct {
				name string
				end  func() (context.Context, func())
				want error
			}{
				{"deadline", func() (context.Context, func()) { ctx := newDeadlineCtx(); return ctx, ctx.expire }, redlock.ErrTaken},
				{"cancel", func() (context.Context, func()) { return context.WithCancel(context.Background()) }, redlock.ErrCancelled},
			} {
				ctx, end := tc.end()
				got := make(chan error, 1)
				go func() {
					_, err := f.client.Lock(ctx, "k")
					got <- err
				}()
				f.clock.next(t) // the waiter is parked: for the retry delay, or for the holder's keys to expire
				end()
				err := <-got
				assert.ErrorIs(t, err, tc.want, tc.name)
				if errors.Is(tc.want, redlock.ErrTaken) {
					assert.NotErrorIs(t, err, redlock.ErrCancelled, tc.name)
				}
				lingering := 0
				if !poll {
					lingering = 1 // the key's watch outlives its last waiter by core.WatchLinger
				}
				assert.Equal(t, lingering, f.clock.armed(), "Lock returned with its timer armed")
			}
			require.NoError(t, holder.Unlock(context.Background()))
		})
	}
}

// TestLockDoesNotGiveUpEarly: a ctx deadline that ends before the next
// retry delay would does not make Lock give up before it ends: it waits,
// and takes the lock once the holder lets go.
func TestLockDoesNotGiveUpEarly(t *testing.T) {
	for _, poll := range []bool{false, true} {
		t.Run(fmt.Sprintf("poll=%v", poll), func(t *testing.T) {
			f := newFixture(t, redlock.Options{Poll: poll,
				Backoff: redlock.RandomDelay(time.Hour, time.Hour)})
			holder := f.tryLock(t, "k")
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // far less than the retry delay
			defer cancel()
			got := make(chan error, 1)
			go func() {
				l, err := f.client.Lock(ctx, "k")
				if err == nil {
					err = l.Unlock(context.Background())
				}
				got <- err
			}()
			at := f.clock.next(t)
			if poll {
				assert.Equal(t, f.clock.Now().Add(time.Hour), at, "the poller does not sleep the retry delay")
			}
			select {
			case err := <-got:
				t.Fatalf("Lock gave up before its ctx ended: %v", err)
			default:
			}
			require.NoError(t, holder.Unlock(context.Background()))
			if poll { // a poller hears nothing: it tries again after the delay
				f.clock.set(at)
			} // otherwise this Client's release wakes its waiter
			require.NoError(t, <-got)
		})
	}
}

// TestZeroLock: the zero Lock, and the nil *Lock that TryLock and Lock
// return with an error, hold nothing, send nothing and panic nowhere.
func TestZeroLock(t *testing.T) {
	for name, l := range map[string]*redlock.Lock{"zero": new(redlock.Lock), "nil": nil} {
		t.Run(name, func(t *testing.T) {
			assert.Empty(t, l.Key())
			assert.Zero(t, l.Token())
			assert.True(t, l.Until().IsZero())
			_, err := l.Fence()
			assert.ErrorIs(t, err, redlock.ErrUnlocked, "no lock, so no fence: not a configuration error")
			assert.NotErrorIs(t, err, redlock.ErrInvalidConfig)
			assert.ErrorIs(t, l.Extend(context.Background()), redlock.ErrUnlocked)
			assert.ErrorIs(t, l.Unlock(context.Background()), redlock.ErrUnlocked)
			<-l.Context().Done()
			assert.ErrorIs(t, context.Cause(l.Context()), redlock.ErrUnlocked)
			assert.False(t, errors.Is(context.Cause(l.Context()), redlock.ErrLost))
		})
	}
}

// TestContextDuringUnlockLeavesNoWatcher: Context called while Unlock
// waits for an extension in flight (Unlock has looked for a watcher to
// stop, and found none) must not start a watcher that outlives Unlock:
// Unlock promises that no goroutine or timer of the Lock is left.
func TestContextDuringUnlockLeavesNoWatcher(t *testing.T) {
	f := newFixture(t, redlock.Options{})
	l := f.tryLock(t, "k")
	for i := 0; i < 3; i++ {
		f.nodes.SetHung(i, true)
	}
	extended := make(chan error, 1)
	go func() { extended <- l.Extend(context.Background()) }()
	f.clock.next(t) // the extension awaits the hung nodes, and holds the Lock's extension mutex
	unlocked := make(chan error, 1)
	go func() { unlocked <- l.Unlock(context.Background()) }()
	waitBlockedIn(t, "redlock.(*Lock).Unlock") // on the extension mutex, past its look for a watcher
	ctx := l.Context()
	for i := 0; i < 3; i++ {
		f.nodes.SetHung(i, false)
	}
	f.clock.set(f.clock.Now().Add(bound)) // the extension times out
	assert.ErrorIs(t, <-extended, redlock.ErrQuorumUnreachable)
	require.NoError(t, <-unlocked)
	<-ctx.Done()
	assert.ErrorIs(t, context.Cause(ctx), redlock.ErrUnlocked)
	if done := redlock.WatcherDone(l); done != nil && !redlock.WatcherExited(l) {
		t.Error("Unlock returned, and the watcher that Context started during it runs on")
		for { // it ends once the loss is due: move the clock there
			select {
			case <-done:
				return
			case at := <-f.clock.asleep:
				if at.After(f.clock.Now()) {
					f.clock.set(at)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the watcher does not end")
			}
		}
	}
}

// waitBlockedIn returns once some goroutine is blocked on a mutex within
// fn, as its stack says.
func waitBlockedIn(t *testing.T, fn string) {
	t.Helper()
	buf := make([]byte, 1<<20)
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); runtime.Gosched() {
		for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
			header, _, _ := strings.Cut(g, "\n")
			if (strings.Contains(header, "sync.Mutex.Lock") || strings.Contains(header, "semacquire")) && strings.Contains(g, fn) {
				return
			}
		}
	}
	t.Fatalf("no goroutine blocked on a mutex in %s", fn)
}

// defaultTTL is core.Config's default TTL.
const defaultTTL = 10 * time.Second
