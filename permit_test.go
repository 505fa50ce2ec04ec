package redlock_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/core/memnode"
	"github.com/redlock-go/redlock/internal/testguard"
)

// slotWatching is memnode counting its live watches, and telling when
// one starts.
type slotWatching struct {
	*memnode.Cluster
	live    atomic.Int32
	started chan string // each watched key, if not nil
}

func (d *slotWatching) Watch(key string, notify func(node int)) core.Watch {
	d.live.Add(1)
	w := d.Cluster.Watch(key, notify)
	if d.started != nil {
		d.started <- key
	}
	return &slotWatch{Watch: w, d: d}
}

type slotWatch struct {
	core.Watch
	d    *slotWatching
	once sync.Once
}

func (w *slotWatch) Stop() {
	w.Watch.Stop()
	w.once.Do(func() { w.d.live.Add(-1) })
}

// TestLockPermitHoldsAtMostK: contenders that take and release permits
// of a semaphore over and over never hold more than K at once, each holds
// one slot key, and every section completes.
func TestLockPermitHoldsAtMostK(t *testing.T) {
	const k, contenders, rounds = 3, 8, 10
	nodes := &slotWatching{Cluster: memnode.New(3, core.SystemClock{})}
	c, err := redlock.NewClient(nodes, redlock.Options{Backoff: redlock.RandomDelay(time.Millisecond, 5*time.Millisecond)})
	require.NoError(t, err)
	ctx := testguard.Context(t)
	var inside, most, sections atomic.Int32
	var slots sync.Map // slot key -> holder count, for its exclusion
	var wg sync.WaitGroup
	for range contenders {
		wg.Go(func() {
			for range rounds {
				l, err := c.LockPermit(ctx, "sem", k)
				if !assert.NoError(t, err) {
					return
				}
				n := inside.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				v, _ := slots.LoadOrStore(l.Key(), new(atomic.Int32))
				if held := v.(*atomic.Int32).Add(1); held != 1 {
					t.Errorf("slot %q has %d holders", l.Key(), held)
				}
				sections.Add(1)
				v.(*atomic.Int32).Add(-1)
				inside.Add(-1)
				assert.NoError(t, l.Unlock(context.Background()))
			}
		})
	}
	wg.Wait()
	assert.LessOrEqual(t, most.Load(), int32(k), "more holders than permits")
	assert.Equal(t, int32(contenders*rounds), sections.Load())
	n := 0
	slots.Range(func(key, _ any) bool {
		n++
		assert.Contains(t, []string{core.PermitKey("sem", 0), core.PermitKey("sem", 1), core.PermitKey("sem", 2)}, key)
		return true
	})
	assert.LessOrEqual(t, n, k)
	assert.Zero(t, nodes.live.Load(), "watches left running")
}

// TestLockPermitWaitsForARelease: with every permit held, TryLockPermit
// fails with ErrTaken naming the nodes; LockPermit waits, watching every
// slot, and takes the slot released, though neither its backoff nor the
// holders' TTL would have ended its wait; its watches stop after.
func TestLockPermitWaitsForARelease(t *testing.T) {
	nodes := &slotWatching{Cluster: memnode.New(3, core.SystemClock{}), started: make(chan string, 16)}
	c, err := redlock.NewClient(nodes, redlock.Options{TTL: time.Hour, Backoff: redlock.RandomDelay(time.Hour, time.Hour)})
	require.NoError(t, err)
	ctx := testguard.Context(t)
	a, err := c.TryLockPermit(ctx, "sem", 2)
	require.NoError(t, err)
	b, err := c.TryLockPermit(ctx, "sem", 2)
	require.NoError(t, err)
	require.NotEqual(t, a.Key(), b.Key())

	_, err = c.TryLockPermit(ctx, "sem", 2)
	require.ErrorIs(t, err, redlock.ErrTaken)
	var e *core.Error
	require.ErrorAs(t, err, &e)
	assert.NotEmpty(t, e.Failed(core.StatusHeld), "the error names no node: %v", err)
	assert.Contains(t, []string{a.Key(), b.Key()}, e.Key)

	got := make(chan *redlock.Lock)
	go func() {
		l, err := c.LockPermit(ctx, "sem", 2)
		assert.NoError(t, err)
		got <- l
	}()
	for range 2 { // both slots watched: the waiter swept them and waits
		<-nodes.started
	}
	require.NoError(t, a.Unlock(context.Background()))
	l := <-got
	require.NotNil(t, l)
	assert.Equal(t, a.Key(), l.Key(), "the waiter took another slot than the one released")
	assert.Zero(t, nodes.live.Load(), "watches left running")
	require.NoError(t, l.Unlock(context.Background()))
	require.NoError(t, b.Unlock(context.Background()))
}

// TestLockPermitIsALockOfItsSlot: the Lock is an ordinary Lock of the
// slot key: its Key, Until, Context, Extend, Fence; Unlock frees the
// slot on every node.
func TestLockPermitIsALockOfItsSlot(t *testing.T) {
	f := newFixture(t, redlock.Options{Fencing: true})
	l, err := f.client.TryLockPermit(context.Background(), "{t}sem", 4)
	require.NoError(t, err)
	slot := -1
	for i := range 4 {
		if l.Key() == core.PermitKey("{t}sem", i) {
			slot = i
		}
	}
	require.GreaterOrEqual(t, slot, 0, "key %q is no slot of the semaphore", l.Key())
	assert.Equal(t, f.clock.Now().Add(validity), l.Until())
	fence, err := l.Fence()
	require.NoError(t, err)
	assert.Equal(t, uint64(1), fence, "the slot's first holder's fence")
	notDone(l.Context(), t, "a new permit's Context")
	require.NoError(t, l.Extend(context.Background()))
	for i := range 3 {
		tok, _, ok := f.nodes.Get(i, l.Key())
		require.True(t, ok, "node %d does not hold the slot", i)
		assert.Equal(t, l.Token(), tok)
	}
	ctx := l.Context()
	require.NoError(t, l.Unlock(context.Background()))
	assert.ErrorIs(t, context.Cause(ctx), redlock.ErrUnlocked)
	for i := range 3 {
		_, _, ok := f.nodes.Get(i, l.Key())
		assert.False(t, ok, "node %d still holds the slot after Unlock", i)
	}
}

// TestLockPermitBadInput: bad input is refused with ErrInvalidConfig,
// and nothing is sent; Fair is refused for LockPermit, and its
// TryLockPermit runs without it.
func TestLockPermitBadInput(t *testing.T) {
	nodes := memnode.New(3, core.SystemClock{})
	c, err := redlock.NewClient(nodes, redlock.Options{})
	require.NoError(t, err)
	ctx := context.Background()
	for _, tc := range []struct {
		key     string
		permits int
	}{{"sem", 0}, {"sem", -1}, {"sem", core.MaxPermits + 1}, {"", 2}} {
		_, err := c.LockPermit(ctx, tc.key, tc.permits)
		assert.ErrorIs(t, err, redlock.ErrInvalidConfig, "LockPermit(%q, %d)", tc.key, tc.permits)
		assert.False(t, errors.Is(err, redlock.ErrTaken) || errors.Is(err, redlock.ErrQuorumUnreachable))
		_, err = c.TryLockPermit(ctx, tc.key, tc.permits)
		assert.ErrorIs(t, err, redlock.ErrInvalidConfig, "TryLockPermit(%q, %d)", tc.key, tc.permits)
	}
	_, err = c.LockPermit(nil, "sem", 2) //nolint:staticcheck // a nil ctx is the bad input under test
	assert.ErrorIs(t, err, redlock.ErrInvalidConfig)
	assert.Zero(t, callsTo(nodes), "bad input reached the nodes")

	fair, err := redlock.NewClient(nodes, redlock.Options{Fair: true})
	require.NoError(t, err)
	_, err = fair.LockPermit(ctx, "sem", 2)
	assert.ErrorIs(t, err, redlock.ErrInvalidConfig)
	assert.Zero(t, callsTo(nodes), "a Fair LockPermit reached the nodes")
	l, err := fair.TryLockPermit(ctx, "sem", 2)
	require.NoError(t, err)
	require.NoError(t, l.Unlock(ctx))
}

// TestLockPermitEnds: a cancelled ctx gives ErrCancelled; a deadline
// that ends the wait gives the last sweep's ErrTaken.
func TestLockPermitEnds(t *testing.T) {
	c, err := redlock.NewClient(memnode.New(3, core.SystemClock{}), redlock.Options{TTL: time.Hour,
		Backoff: redlock.RandomDelay(time.Hour, time.Hour)})
	require.NoError(t, err)
	held, err := c.TryLockPermit(context.Background(), "sem", 1)
	require.NoError(t, err)

	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = c.LockPermit(cancelled, "sem", 1)
	assert.ErrorIs(t, err, redlock.ErrCancelled)
	assert.ErrorIs(t, err, context.Canceled)

	dctx := newDeadlineCtx()
	done := make(chan error)
	go func() {
		_, err := c.LockPermit(dctx, "sem", 1)
		done <- err
	}()
	waitSelectingIn(t, "redlock.(*Client).permitWait")
	dctx.expire()
	err = <-done
	assert.ErrorIs(t, err, redlock.ErrTaken)
	assert.False(t, errors.Is(err, redlock.ErrCancelled), "%v", err)
	require.NoError(t, held.Unlock(context.Background()))
}

// TestLockPermitOnRedis: on redis-server, over every driver, K permits
// hold K distinct slot keys set on a quorum of servers; one more is refused as
// taken; a waiter takes the slot released; Unlock leaves nothing.
func TestLockPermitOnRedis(t *testing.T) {
	srvs, addrs, ctx := fairServers(t)
	for name, dial := range fairDials {
		t.Run(name, func(t *testing.T) {
			d, err := dial(addrs)
			require.NoError(t, err)
			defer func() { assert.NoError(t, d.Close()) }()
			c, err := redlock.NewClient(d, redlock.Options{NodeTimeout: time.Second,
				Backoff: redlock.RandomDelay(time.Hour, time.Hour)})
			require.NoError(t, err)
			key := "sem:" + name
			var held []*redlock.Lock
			for range 2 {
				l, err := c.TryLockPermit(ctx, key, 2)
				require.NoError(t, err)
				held = append(held, l)
				holders := 0 // a round is decided at its quorum: the last SET may be in flight
				for _, s := range srvs {
					v, err := s.Do("GET", l.Key())
					require.NoError(t, err)
					if v != nil {
						holders++
					}
				}
				assert.GreaterOrEqual(t, holders, 2, "a minority of servers holds %q", l.Key())
			}
			_, err = c.TryLockPermit(ctx, key, 2)
			require.ErrorIs(t, err, redlock.ErrTaken)
			got := make(chan *redlock.Lock)
			go func() {
				l, err := c.LockPermit(ctx, key, 2)
				assert.NoError(t, err)
				got <- l
			}()
			require.NoError(t, held[1].Unlock(context.Background()))
			l := <-got
			require.NotNil(t, l)
			assert.Equal(t, held[1].Key(), l.Key())
			require.NoError(t, l.Unlock(context.Background()))
			require.NoError(t, held[0].Unlock(context.Background()))
			for i := range 2 {
				requireFree(t, srvs, core.PermitKey(key, i), "left after Unlock")
			}
		})
	}
}

// waitSelectingIn returns once some goroutine is blocked in a select
// within fn, as its stack says.
func waitSelectingIn(t *testing.T, fn string) {
	t.Helper()
	buf := make([]byte, 1<<20)
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); runtime.Gosched() {
		for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
			header, _, _ := strings.Cut(g, "\n")
			if strings.Contains(header, "[select") && strings.Contains(g, fn) {
				return
			}
		}
	}
	t.Fatalf("no goroutine blocked in a select in %s", fn)
}

// TestLockPermitErrorsHaveOneKind: each failure of LockPermit and
// TryLockPermit matches exactly one of core's sentinels, the one its
// documentation names, and names the nodes where nodes answered.
func TestLockPermitErrorsHaveOneKind(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		kind  error
		nodes bool // names nodes
		err   func(t *testing.T) error
	}{
		{"every slot taken", redlock.ErrTaken, true, func(t *testing.T) error {
			nodes := memnode.New(3, core.SystemClock{})
			for i := range 3 {
				for s := range 2 {
					nodes.Set(i, core.PermitKey("sem", s), core.TokenFromUint64s(1, uint64(s)), time.Minute)
				}
			}
			c, err := redlock.NewClient(nodes, redlock.Options{})
			require.NoError(t, err)
			_, err = c.TryLockPermit(ctx, "sem", 2)
			return err
		}},
		{"a majority down", redlock.ErrQuorumUnreachable, true, func(t *testing.T) error {
			nodes := memnode.New(3, core.SystemClock{})
			nodes.SetDown(0, true)
			nodes.SetDown(1, true)
			c, err := redlock.NewClient(nodes, redlock.Options{})
			require.NoError(t, err)
			_, err = c.TryLockPermit(ctx, "sem", 2)
			return err
		}},
		{"cancelled", redlock.ErrCancelled, false, func(t *testing.T) error {
			c, err := redlock.NewClient(memnode.New(3, core.SystemClock{}), redlock.Options{})
			require.NoError(t, err)
			cctx, cancel := context.WithCancel(ctx)
			cancel()
			_, err = c.LockPermit(cctx, "sem", 2)
			return err
		}},
		{"no permits", redlock.ErrInvalidConfig, false, func(t *testing.T) error {
			c, err := redlock.NewClient(memnode.New(3, core.SystemClock{}), redlock.Options{})
			require.NoError(t, err)
			_, err = c.LockPermit(ctx, "sem", 0)
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.err(t)
			require.Error(t, err)
			var kinds []error
			for kind := range outcomeOfKind {
				if errors.Is(err, kind) {
					kinds = append(kinds, kind)
				}
			}
			assert.Equal(t, []error{tc.kind}, kinds, "%v", err)
			assert.Equal(t, outcomeOfKind[tc.kind], redlock.OutcomeOf(err))
			if tc.nodes {
				var e *core.Error
				require.ErrorAs(t, err, &e)
				assert.NotEmpty(t, e.Nodes, "%v names no node", err)
				assert.Contains(t, err.Error(), "node ", "%v", err)
			}
		})
	}
}

// TestLockPermitPolls: with Options.Poll, LockPermit watches nothing and
// sweeps again after each Backoff delay, until a permit is released.
func TestLockPermitPolls(t *testing.T) {
	nodes := &slotWatching{Cluster: memnode.New(3, core.SystemClock{})}
	c, err := redlock.NewClient(nodes, redlock.Options{Poll: true, TTL: time.Hour,
		Backoff: redlock.RandomDelay(time.Millisecond, 2*time.Millisecond)})
	require.NoError(t, err)
	ctx := testguard.Context(t)
	holder, err := c.TryLockPermit(ctx, "sem", 1)
	require.NoError(t, err)
	got := make(chan *redlock.Lock)
	go func() {
		l, err := c.LockPermit(ctx, "sem", 1)
		assert.NoError(t, err)
		got <- l
	}()
	require.NoError(t, holder.Unlock(context.Background()))
	l := <-got
	require.NotNil(t, l)
	assert.Equal(t, holder.Key(), l.Key())
	require.NoError(t, l.Unlock(context.Background()))
	assert.Zero(t, nodes.live.Load(), "a polling LockPermit watched")
}

// TestLockPermitObserved: the Observer's Acquire event of a LockPermit
// names the semaphore's key, its outcome and its attempts.
func TestLockPermitObserved(t *testing.T) {
	var events []redlock.AcquireEvent
	c, err := redlock.NewClient(memnode.New(3, core.SystemClock{}), redlock.Options{
		Observer: redlock.Observer{Acquire: func(e redlock.AcquireEvent) { events = append(events, e) }}})
	require.NoError(t, err)
	l, err := c.TryLockPermit(context.Background(), "sem", 1)
	require.NoError(t, err)
	_, err = c.TryLockPermit(context.Background(), "sem", 1)
	require.ErrorIs(t, err, redlock.ErrTaken)
	require.NoError(t, l.Unlock(context.Background()))
	require.Len(t, events, 2)
	assert.Equal(t, "sem", events[0].Key)
	assert.Equal(t, redlock.OutcomeOK, events[0].Outcome)
	assert.Equal(t, 1, events[0].Attempts)
	assert.True(t, events[1].Try)
	assert.Equal(t, redlock.OutcomeTaken, events[1].Outcome)
	assert.ErrorIs(t, events[1].Err, redlock.ErrTaken)
}
