package redlock_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/core/memnode"
	"github.com/redlock-go/redlock/drivers"
	"github.com/redlock-go/redlock/drivers/redigo"
	"github.com/redlock-go/redlock/internal/testguard"
)

// TestHotKeyQueuesWithinAClient: many goroutines of one Client on one key,
// with hour-long retry delays (only a wake can hand the lock on), with
// and without Options.Fair (the memnode cluster is then one waiter): no two
// hold it at once, a non-atomic counter is exact, and the queue keeps the
// attempts per acquisition small, where every waiter trying at every
// release would make about as many as there are waiters.
func TestHotKeyQueuesWithinAClient(t *testing.T) {
	for _, fair := range []bool{false, true} {
		t.Run(fmt.Sprintf("fair=%v", fair), func(t *testing.T) { testHotKeyQueuesWithinAClient(t, fair) })
	}
}

func testHotKeyQueuesWithinAClient(t *testing.T, fair bool) {
	const goroutines, rounds = 8, 25
	mem := memnode.New(3, core.SystemClock{})
	for i := range 3 {
		mem.SetLatency(i, 200*time.Microsecond) // rounds overlap: waiters contend
	}
	nodes := newCounting(mem)
	c, err := redlock.NewClient(nodes, redlock.Options{Fair: fair,
		Backoff: redlock.RandomDelay(time.Hour, time.Hour)})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var inside atomic.Int32
	counter := 0
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range rounds {
				l, err := c.Lock(ctx, "hot")
				if !assert.NoError(t, err) {
					return
				}
				assert.Equal(t, int32(1), inside.Add(1), "two holders at once")
				v := counter
				counter = v + 1
				inside.Add(-1)
				assert.NoError(t, l.Unlock(context.Background()))
			}
		})
	}
	wg.Wait()
	assert.Equal(t, goroutines*rounds, counter)
	perAcq := float64(nodes.attempts.Load()) / float64(goroutines*rounds)
	t.Logf("attempts per acquisition: %.2f", perAcq)
	assert.Less(t, perAcq, 3.0, "attempts per acquisition, with %d waiters", goroutines-1)
	if fair {
		// The process keeps its place in the nodes' queue while its
		// waiters follow one another: each is served by one attempt, but
		// the first of each run of waiters, whose failed attempt queues it.
		assert.Less(t, perAcq, 1.5, "attempts per acquisition, Fair")
	}
}

// counting is a memnode cluster (which announces releases) that counts
// attempts (acquire commands to node 0) and refused rounds (those in
// which some node replied StatusHeld: the holder's own rounds never are).
type counting struct {
	*memnode.Cluster
	attempts atomic.Int64
	mu       sync.Mutex
	refused  int
	changed  chan struct{} // poked after each refused round; waitRefused re-reads
}

func newCounting(nodes *memnode.Cluster) *counting {
	return &counting{Cluster: nodes, changed: make(chan struct{}, 1)}
}

func (d *counting) Begin(ctx context.Context) core.Batch {
	return &countingBatch{Batch: d.Cluster.Begin(ctx), d: d}
}

// waitRefused returns once n refused rounds have been counted.
func (d *counting) waitRefused(n int) {
	for {
		d.mu.Lock()
		done := d.refused >= n
		d.mu.Unlock()
		if done {
			return
		}
		<-d.changed
	}
}

type countingBatch struct {
	core.Batch
	d       *counting
	refused bool
}

func (b *countingBatch) Send(node int, cmd core.Command, deadline time.Time) {
	if node == 0 && cmd.Op == core.OpAcquire {
		b.d.attempts.Add(1)
	}
	b.Batch.Send(node, cmd, deadline)
}

func (b *countingBatch) Receive(cancel <-chan struct{}) (core.Reply, bool) {
	rep, ok := b.Batch.Receive(cancel)
	if ok && rep.Status == core.StatusHeld && !b.refused {
		b.refused = true
		b.d.mu.Lock()
		b.d.refused++
		b.d.mu.Unlock()
		select {
		case b.d.changed <- struct{}{}:
		default: // a poke is pending: waitRefused will re-read the count
		}
	}
	return rep, ok
}

// BenchmarkLockUnlock: the uncontended Lock+Unlock on memnode, with wake
// (the default) and polling: the wake costs nothing until a key is
// contended. Compare with benchstat.
func BenchmarkLockUnlock(b *testing.B) {
	for _, poll := range []bool{false, true} {
		b.Run(fmt.Sprintf("poll=%v", poll), func(b *testing.B) {
			c, err := redlock.NewClient(memnode.New(5, core.SystemClock{}), redlock.Options{Poll: poll})
			require.NoError(b, err)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				l, err := c.Lock(ctx, "k")
				if err != nil {
					b.Fatal(err)
				}
				if err := l.Unlock(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestWaiterBehindAHolderThatNeverUnlocks: two goroutines of one Client
// wait for a key; the first takes it when it is released and never
// unlocks (a leaked lock). The second, now the queue's head, must still
// try again on its own wait (the retry delay, then the holder's expiry
// that its attempt learns) and take the lock once the leaked keys
// expire, not sleep as a waiter behind the head until its ctx ends.
func TestWaiterBehindAHolderThatNeverUnlocks(t *testing.T) {
	mem := memnode.New(3, core.SystemClock{})
	nodes := newCounting(mem)
	opts := redlock.Options{TTL: 300 * time.Millisecond}
	holder, err := redlock.NewClient(mem, opts)
	require.NoError(t, err)
	c, err := redlock.NewClient(nodes, opts)
	require.NoError(t, err)
	first, err := holder.TryLock(context.Background(), "k")
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	type result struct {
		l   *redlock.Lock
		err error
	}
	got := make(chan result, 2)
	for range 2 {
		go func() {
			l, err := c.Lock(ctx, "k")
			got <- result{l, err}
		}()
	}
	nodes.waitRefused(2) // both made their first attempt and wait
	require.NoError(t, first.Unlock(context.Background()))
	leaked := <-got // the head, woken by the release: it never unlocks
	require.NoError(t, leaked.err)
	second := <-got
	require.NoError(t, second.err, "the second waiter did not take the lock once the leaked keys expired")
	assert.NoError(t, second.l.Unlock(context.Background()))
	_ = leaked.l.Unlock(context.Background()) // its keys expired: ErrNotHeld or ErrTaken
}

// watchCounting is a memnode cluster that counts the watches started and
// stopped.
type watchCounting struct {
	*memnode.Cluster
	started, stopped atomic.Int32
}

func (d *watchCounting) Watch(key string, notify func(node int)) core.Watch {
	d.started.Add(1)
	return countedWatch{d.Cluster.Watch(key, notify), d}
}

type countedWatch struct {
	core.Watch
	d *watchCounting
}

func (w countedWatch) Stop() {
	w.d.stopped.Add(1)
	w.Watch.Stop()
}

// TestWatchLingers: a key's watch outlives its last waiter by core.WatchLinger
// (a second), so that a waiter that comes back within it finds its
// subscriptions confirmed rather than subscribe again; it stops then.
func TestWatchLingers(t *testing.T) {
	clock := newStepClock()
	nodes := &watchCounting{Cluster: memnode.New(3, clock)}
	c, err := redlock.NewClient(nodes, redlock.Options{TTL: ttl, NodeTimeout: bound,
		Backoff: redlock.RandomDelay(time.Hour, time.Hour)})
	require.NoError(t, err)
	ctx := testguard.Context(t)
	for round := range 2 {
		holder, err := c.TryLock(ctx, "k")
		require.NoError(t, err)
		got := lockThenUnlock(ctx, c, "k")
		for clock.next(t).Equal(clock.Now().Add(time.Second)) { // the linger's, not the waiter's wait's
		}
		require.NoError(t, holder.Unlock(ctx))
		require.NoError(t, <-got)
		assert.Equal(t, int32(1), nodes.started.Load(), "round %d: one watch for both", round)
		assert.Zero(t, nodes.stopped.Load(), "round %d: it lingers", round)
	}
	clock.set(clock.Now().Add(time.Second))
	assert.Equal(t, int32(1), nodes.stopped.Load(), "stopped a second after its last waiter left")
	assert.Zero(t, clock.armed())
}

// TestWatchLingersItsTTLIfShorter: a key whose TTL is shorter than
// core.WatchLinger lingers its TTL (core.Room's decision, which the
// simulation's scaled times keep too).
func TestWatchLingersItsTTLIfShorter(t *testing.T) {
	const short = 400 * time.Millisecond
	clock := newStepClock()
	nodes := &watchCounting{Cluster: memnode.New(3, clock)}
	c, err := redlock.NewClient(nodes, redlock.Options{TTL: short, NodeTimeout: bound,
		Backoff: redlock.RandomDelay(time.Hour, time.Hour)})
	require.NoError(t, err)
	ctx := testguard.Context(t)
	holder, err := c.TryLock(ctx, "k")
	require.NoError(t, err)
	got := lockThenUnlock(ctx, c, "k")
	for clock.next(t).Equal(clock.Now().Add(short)) { // the linger's, not the waiter's wait's
	}
	require.NoError(t, holder.Unlock(ctx))
	require.NoError(t, <-got)
	assert.Equal(t, int32(1), nodes.started.Load(), "one watch")
	assert.Zero(t, nodes.stopped.Load(), "it lingers")
	clock.set(clock.Now().Add(short - time.Millisecond))
	assert.Zero(t, nodes.stopped.Load(), "stopped before the TTL")
	clock.set(clock.Now().Add(time.Millisecond))
	assert.Equal(t, int32(1), nodes.stopped.Load(), "stopped a TTL after its last waiter left")
	assert.Zero(t, clock.armed())
}

// waitersAt returns Options whose Observer sends the count of key's
// waiters in the room at each change, and the channel it sends on.
func waitersAt(opts redlock.Options) (redlock.Options, <-chan int) {
	ch := make(chan int, 64)
	opts.Observer.Waiters = func(e redlock.WaitersEvent) { ch <- e.Waiters }
	return opts, ch
}

// TestDeadlineBehindWaitersBeforeAnyAttempt: a Lock that joins behind
// other waiters of its Client, and whose deadline ends before it made an
// attempt, returns ErrCancelled with the deadline as its cause, not a nil
// error (a typed nil) or a grant, in both wait modes.
func TestDeadlineBehindWaitersBeforeAnyAttempt(t *testing.T) {
	for _, fair := range []bool{false, true} {
		t.Run(fmt.Sprintf("fair=%v", fair), func(t *testing.T) {
			opts, waiters := waitersAt(redlock.Options{Fair: fair, TTL: time.Minute})
			c, err := redlock.NewClient(memnode.New(3, core.SystemClock{}), opts)
			require.NoError(t, err)
			ctx := testguard.Context(t)
			held, err := c.TryLock(ctx, "k")
			require.NoError(t, err)
			first := make(chan error, 1)
			fctx, stop := context.WithCancel(ctx)
			defer stop()
			go func() {
				_, err := c.Lock(fctx, "k")
				first <- err
			}()
			require.Equal(t, 1, <-waiters, "the first waiter joined")
			dctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
			defer cancel()
			l, err := c.Lock(dctx, "k")
			require.Error(t, err)
			assert.Equal(t, redlock.Token{}, l.Token(), "no grant")
			assert.ErrorIs(t, err, redlock.ErrCancelled)
			assert.ErrorIs(t, err, context.DeadlineExceeded)
			stop()
			assert.ErrorIs(t, <-first, redlock.ErrCancelled)
			require.NoError(t, held.Unlock(ctx))
		})
	}
}

// TestLockWaitsBehindItsClientsHolder: a Lock of a key that a Lock of the
// same Client holds sends no attempt: it waits for that Lock's release,
// which this Client hears first (with Fair: its place in the nodes'
// queue), and then takes the key in one attempt. The retry delay is an
// hour: only the release can wake it.
func TestLockWaitsBehindItsClientsHolder(t *testing.T) {
	for _, fair := range []bool{false, true} {
		t.Run(fmt.Sprintf("fair=%v", fair), func(t *testing.T) {
			clk := newStepClock()
			nodes := newCounting(memnode.New(3, clk))
			opts, waiters := waitersAt(redlock.Options{Fair: fair, TTL: time.Minute,
				Backoff: redlock.RandomDelay(time.Hour, time.Hour)})
			c, err := redlock.NewClient(nodes, opts)
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // a guard, not a wait
			defer cancel()
			type result struct {
				l   *redlock.Lock
				err error
			}
			lock := func() <-chan result {
				got := make(chan result, 1)
				go func() {
					l, err := c.Lock(ctx, "k")
					got <- result{l, err}
				}()
				return got
			}

			first, err := c.TryLock(ctx, "k") // no waiter yet: not counted
			require.NoError(t, err)
			second := lock()
			require.Equal(t, 1, <-waiters, "the second waits, after a refused attempt")
			require.NoError(t, first.Unlock(ctx))
			got := <-second
			require.NoError(t, got.err)
			require.Equal(t, 0, <-waiters)
			before := nodes.attempts.Load()

			third := lock()
			require.Equal(t, 1, <-waiters, "the third waits")
			assert.Equal(t, before, nodes.attempts.Load(), "the third attempted while its Client held the key")
			require.NoError(t, got.l.Unlock(ctx))
			got = <-third
			require.NoError(t, got.err)
			assert.Equal(t, before+1, nodes.attempts.Load(), "the third took the key in one attempt")
			require.NoError(t, got.l.Unlock(ctx))
		})
	}
}

// TestLeakedLockStopsHoldingBack: a Lock that is never unlocked holds
// back its Client's later Locks of the key only while it is valid; after
// that, a Lock attempts at once (it would otherwise sleep out the hour
// of the retry delay) and takes the expired key.
func TestLeakedLockStopsHoldingBack(t *testing.T) {
	clk := newStepClock()
	nodes := newCounting(memnode.New(3, clk))
	h, err := handToWaiter(t, nodes, 500*time.Millisecond, func() {}, false) // the waiter's Lock leaks
	require.NoError(t, err)
	// Past the leaked Lock's validity and its keys' TTL, within the
	// second that the key's queue outlives its last waiter.
	clk.set(clk.Now().Add(600 * time.Millisecond))
	before := nodes.attempts.Load()
	l, err := h.c.Lock(h.ctx, "k")
	require.NoError(t, err)
	assert.Equal(t, before+1, nodes.attempts.Load(), "one attempt, at once")
	require.NoError(t, l.Unlock(h.ctx))
}

// flushWatch is a memnode cluster whose batches are core.Flushers, and
// whose next release batch, once armed, awaits its first reply only after
// some other batch sent an acquire (or after a guard of 10 s): it tells
// whether a waiter's attempt went out while the release was in flight.
type flushWatch struct {
	*memnode.Cluster
	armed    atomic.Bool
	acquired chan struct{} // closed at the first acquire sent while armed
	overlap  atomic.Bool   // that acquire came before the release's first Receive
}

func (d *flushWatch) Begin(ctx context.Context) core.Batch {
	return &flushBatch{Batch: d.Cluster.Begin(ctx), d: d}
}

type flushBatch struct {
	core.Batch
	d       *flushWatch
	release bool
	waited  bool
}

func (b *flushBatch) Send(node int, cmd core.Command, deadline time.Time) {
	if b.d.armed.Load() {
		switch cmd.Op {
		case core.OpRelease:
			b.release = true
		case core.OpAcquire:
			if node == 0 {
				close(b.d.acquired)
				b.d.armed.Store(false)
			}
		}
	}
	b.Batch.Send(node, cmd, deadline)
}

func (b *flushBatch) Flush() { b.Batch.(core.Flusher).Flush() }

func (b *flushBatch) Receive(cancel <-chan struct{}) (core.Reply, bool) {
	if b.release && !b.waited {
		b.waited = true
		select {
		case <-b.d.acquired:
			b.d.overlap.Store(true)
		case <-time.After(10 * time.Second): // a hang, not a timing
		}
	}
	return b.Batch.Receive(cancel)
}

// TestWaiterAttemptsBehindTheReleaseInFlight: over a driver whose batches
// can say when their commands are on their way (core.Flusher), Unlock
// wakes its Client's waiter as soon as the release's commands are, and
// the waiter's attempt goes out before the release's replies are awaited:
// on each node it follows the release, and takes the key at once.
func TestWaiterAttemptsBehindTheReleaseInFlight(t *testing.T) {
	d := &flushWatch{Cluster: memnode.New(3, newStepClock()), acquired: make(chan struct{})}
	_, err := handToWaiter(t, d, time.Minute, func() { d.armed.Store(true) }, true)
	require.NoError(t, err)
	assert.True(t, d.overlap.Load(), "the waiter attempted only after the release's replies")
}

// handoff is a Client over a test's driver, with the guard of the test
// and the counts of its waiters (waitersAt).
type handoff struct {
	c       *redlock.Client
	ctx     context.Context
	waiters <-chan int
}

// handToWaiter takes "k" on a Client over d, starts a Lock of it that
// waits (and unlocks once it wins, if unlock), calls arm, unlocks the
// first Lock, and returns the waiter's error. The retry delay is an hour:
// only a release the Client hears, or the TTL, can wake the waiter. A
// handoff first warms the key's queue, so that the waiter queues behind
// the first Lock without an attempt, and sleeps until the release tells
// it: over a clock that stands still (stepClock), the queue outlives its
// waiters for as long as the test runs.
func handToWaiter(t *testing.T, d redlock.Driver, ttl time.Duration, arm func(), unlock bool) (handoff, error) {
	t.Helper()
	opts, waiters := waitersAt(redlock.Options{TTL: ttl,
		Backoff: redlock.RandomDelay(time.Hour, time.Hour)})
	c, err := redlock.NewClient(d, opts)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a guard, not a wait
	t.Cleanup(cancel)
	pass := func(unlock bool, arm func()) error {
		first, err := c.TryLock(ctx, "k")
		require.NoError(t, err)
		got := make(chan error, 1)
		go func() {
			l, err := c.Lock(ctx, "k")
			if err == nil && unlock {
				err = l.Unlock(ctx)
			}
			got <- err
		}()
		require.Equal(t, 1, <-waiters, "the waiter waits")
		arm()
		require.NoError(t, first.Unlock(ctx))
		err = <-got
		require.Equal(t, 0, <-waiters, "the waiter left")
		return err
	}
	require.NoError(t, pass(true, func() {}), "the warm-up")
	return handoff{c, ctx, waiters}, pass(unlock, arm)
}

// quietLog is a memnode cluster that logs whether each token's release
// sent to node 0 was quiet (core.Command.Quiet).
type quietLog struct {
	*memnode.Cluster
	mu    sync.Mutex
	quiet map[core.Token]bool
}

func (d *quietLog) Begin(ctx context.Context) core.Batch {
	return &quietBatch{Batch: d.Cluster.Begin(ctx), d: d}
}

type quietBatch struct {
	core.Batch
	d *quietLog
}

func (b *quietBatch) Send(node int, cmd core.Command, deadline time.Time) {
	if node == 0 && cmd.Op == core.OpRelease {
		b.d.mu.Lock()
		b.d.quiet[cmd.Token] = cmd.Quiet
		b.d.mu.Unlock()
	}
	b.Batch.Send(node, cmd, deadline)
}

// TestHandoffChainOpensToOthers: releases that a waiter of the Client
// follows hand the key on within the Client, announcing nothing (with
// Fair, outside the nodes' queue), MaxChain in a row; the next is open to
// every process (with Fair, it hands the key to the first process the
// nodes queued), whose waiters would otherwise never hear of the key.
func TestHandoffChainOpensToOthers(t *testing.T) {
	for _, fair := range []bool{false, true} {
		t.Run(fmt.Sprintf("fair=%v", fair), func(t *testing.T) { testHandoffChainOpensToOthers(t, fair) })
	}
}

func testHandoffChainOpensToOthers(t *testing.T, fair bool) {
	d := &quietLog{Cluster: memnode.New(3, core.SystemClock{}), quiet: map[core.Token]bool{}}
	opts, waiters := waitersAt(redlock.Options{TTL: time.Minute, Fair: fair,
		Backoff: redlock.RandomDelay(time.Hour, time.Hour)})
	c, err := redlock.NewClient(d, opts)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a guard, not a wait
	defer cancel()
	first, err := c.TryLock(ctx, "k")
	require.NoError(t, err)
	cur := first
	releases := core.MaxChain + 3
	var tokens []core.Token // of the Locks, in the order they are unlocked
	for range releases {
		tokens = append(tokens, cur.Token())
		next := make(chan *redlock.Lock, 1)
		go func() {
			l, err := c.Lock(ctx, "k")
			assert.NoError(t, err)
			next <- l
		}()
		require.Equal(t, 1, <-waiters, "the next waits")
		require.NoError(t, cur.Unlock(ctx))
		cur = <-next
		require.Equal(t, 0, <-waiters)
	}
	tokens = append(tokens, cur.Token())
	require.NoError(t, cur.Unlock(ctx)) // followed by nobody: announced
	var want, got []bool
	d.mu.Lock()
	defer d.mu.Unlock()
	for i, tok := range tokens {
		want = append(want, i < releases && i != core.MaxChain)
		got = append(got, d.quiet[tok])
	}
	assert.Equal(t, want, got, "quiet releases, in order")
}

// overtaken is a memnode cluster whose batches claim core.Flusher but
// flush nothing, as when a node runs the next attempt on another
// connection (a WAIT lane) before the release: an armed release waits,
// before its first reply, until an acquire of another batch was refused.
type overtaken struct {
	*memnode.Cluster
	armed   atomic.Bool
	refused chan struct{} // closed when an acquire was refused while armed
}

func (d *overtaken) Begin(ctx context.Context) core.Batch {
	return &overtakenBatch{Batch: d.Cluster.Begin(ctx), d: d}
}

type overtakenBatch struct {
	core.Batch
	d                        *overtaken
	release, acquire, waited bool
}

func (b *overtakenBatch) Send(node int, cmd core.Command, deadline time.Time) {
	b.release = b.release || cmd.Op == core.OpRelease
	b.acquire = b.acquire || cmd.Op == core.OpAcquire
	b.Batch.Send(node, cmd, deadline)
}

func (b *overtakenBatch) Flush() {} // a lie: the release runs at its first Receive

func (b *overtakenBatch) Receive(cancel <-chan struct{}) (core.Reply, bool) {
	if b.release && b.d.armed.Load() && !b.waited {
		b.waited = true
		select {
		case <-b.d.refused:
		case <-time.After(10 * time.Second): // a hang, not a timing
		}
	}
	r, ok := b.Batch.Receive(cancel)
	if b.acquire && r.Status == core.StatusHeld && b.d.armed.CompareAndSwap(true, false) {
		close(b.d.refused)
	}
	return r, ok
}

// TestHandoffOvertakenIsRetold: a release that hands the key on (quiet,
// its follower told as soon as it was on its way) but that a node ran
// after the follower's attempt tells the follower again once it is done:
// the follower, whose attempt found the key held, takes it then, rather
// than sleep until the old key's expiry (a minute; the retry delay is an
// hour) with nobody announcing the release.
func TestHandoffOvertakenIsRetold(t *testing.T) {
	d := &overtaken{Cluster: memnode.New(3, newStepClock()), refused: make(chan struct{})}
	_, err := handToWaiter(t, d, time.Minute, func() { d.armed.Store(true) }, true)
	select {
	case <-d.refused:
	default:
		t.Fatal("the follower's attempt did not overtake the release: nothing tested")
	}
	require.NoError(t, err, "the follower took the key")
}

// gated is a driver whose batches cannot flush (no core.Flusher), and
// whose armed batches stop at their first Receive:
//
//   - armed: a quiet release says it is in flight (inflight) and waits
//     for gate;
//   - attempt: an acquire runs its commands, says so (took), and hangs
//     until its round is cancelled: an attempt that took what it could
//     and whose caller gave up;
//   - cleanup: a cleanup that queues its waiter runs its commands, says
//     so (cleaned), and waits for open before its replies come;
//   - quietDone, set before the Unlock that runs it, in its goroutine: a
//     quiet release's batch calls it once closed, before the Unlock tells
//     its waiter.
type gated struct {
	clockedAnnouncer
	armed, attempt, cleanup atomic.Bool
	inflight, gate          chan struct{}
	took, cleaned, open     chan struct{}
	quietDone               func()
}

// clockedAnnouncer is a driver that announces and says which clock it
// reads, as memnode and the drivers here do.
type clockedAnnouncer interface {
	core.Announcer
	Clock() core.Clock
}

func (d *gated) Begin(ctx context.Context) core.Batch {
	return &gatedBatch{b: d.clockedAnnouncer.Begin(ctx), d: d}
}

type gatedBatch struct {
	b                                  core.Batch
	d                                  *gated
	release, acquire, queueing, waited bool
}

func (b *gatedBatch) Send(n int, cmd core.Command, deadline time.Time) {
	// A quiet release, not a cleanup: the waiter may attempt and clean up
	// once more, after the "maybe missed" of its watch's subscription.
	b.release = b.release || cmd.Op == core.OpRelease && cmd.Quiet
	b.acquire = b.acquire || cmd.Op == core.OpAcquire
	b.queueing = b.queueing || cmd.Ticket > 0 // a cleanup, or an attempt, that queues its waiter
	b.b.Send(n, cmd, deadline)
}

func (b *gatedBatch) Receive(cancel <-chan struct{}) (core.Reply, bool) {
	switch {
	case b.release && !b.waited && b.d.armed.CompareAndSwap(true, false):
		b.waited = true
		close(b.d.inflight)
		<-b.d.gate
	case b.acquire && b.d.attempt.CompareAndSwap(true, false):
		b.b.(core.Flusher).Flush()
		close(b.d.took)
		<-cancel
		return core.Reply{}, false
	case b.queueing && b.d.cleanup.CompareAndSwap(true, false):
		b.b.(core.Flusher).Flush()
		close(b.d.cleaned)
		<-b.d.open
	}
	return b.b.Receive(cancel)
}

func (b *gatedBatch) Close() {
	b.b.Close()
	if b.release && b.d.quietDone != nil {
		f := b.d.quietDone
		b.d.quietDone = nil
		f()
	}
}

// TestQuietReleaseWhoseWaiterLeftIsAnnounced: a release that hands the
// key to a waiter of its Client announces nothing; when that waiter
// leaves without the key (its ctx ends) and nobody of the Client is left
// to take it, the Client makes the free key heard all the same, so that
// another process's waiter takes it rather than sleep until the old
// key's expiry (a minute; its retry delay is an hour): a TryLock and its
// Unlock; with Fair, on redis-server, where each process is its own
// waiter in the nodes' queue, a Spec.HandOn round, which hands the free
// key to the first process queued, without the Client taking the key
// ahead of it.
func TestQuietReleaseWhoseWaiterLeftIsAnnounced(t *testing.T) {
	for _, fair := range []bool{false, true} {
		t.Run(fmt.Sprintf("fair=%v", fair), func(t *testing.T) {
			var da, db clockedAnnouncer
			if fair {
				_, addrs, _ := fairServers(t)
				for _, d := range []*clockedAnnouncer{&da, &db} {
					c, err := redigo.Dial(addrs, drivers.Options{})
					require.NoError(t, err)
					t.Cleanup(func() { assert.NoError(t, c.Close()) })
					*d = c
				}
			} else {
				m := memnode.New(3, core.SystemClock{})
				da, db = m, m
			}
			d := &gated{clockedAnnouncer: da, inflight: make(chan struct{}), gate: make(chan struct{})}
			base := redlock.Options{TTL: time.Minute, Fair: fair, Backoff: redlock.RandomDelay(time.Hour, time.Hour)}
			optsA, wa := waitersAt(base)
			var won atomic.Int32 // the acquisitions a won
			optsA.Observer.Acquire = func(e redlock.AcquireEvent) {
				if e.Err == nil {
					won.Add(1)
				}
			}
			optsB, wb := waitersAt(base)
			a, err := redlock.NewClient(d, optsA)
			require.NoError(t, err)
			b, err := redlock.NewClient(db, optsB)
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // a guard, not a wait
			defer cancel()
			first, err := a.TryLock(ctx, "k")
			require.NoError(t, err)
			other := lockThenUnlock(ctx, b, "k")
			require.Equal(t, 1, <-wb, "the other process's waiter waits")
			wctx, leave := context.WithCancel(ctx)
			defer leave()
			left := make(chan error, 1)
			go func() {
				_, err := a.Lock(wctx, "k")
				left <- err
			}()
			require.Equal(t, 1, <-wa, "a waiter of the holder's Client waits")
			d.armed.Store(true)
			unlocked := make(chan error, 1)
			go func() { unlocked <- first.Unlock(ctx) }()
			<-d.inflight // the release, quiet, is on its way
			leave()
			require.Equal(t, 0, <-wa, "the waiter left")
			require.ErrorIs(t, <-left, redlock.ErrCancelled)
			close(d.gate)
			require.NoError(t, <-unlocked)
			require.NoError(t, <-other, "the other process heard the free key")
			want := map[bool]int32{false: 2, true: 1}[fair] // first, and the reannouncement's TryLock without Fair
			assert.Equal(t, want, won.Load(), "acquisitions a won")
		})
	}
}

// TestWaiterLeavingAfterAQuietReleaseMakesItHeard: a quiet release done
// while a waiter of the Client waited is pending; when that waiter leaves
// without the key, the last of its Client, the room says to make the
// release heard: with Fair by handing the key on, without by a TryLock.
func TestWaiterLeavingAfterAQuietReleaseMakesItHeard(t *testing.T) {
	for _, fair := range []bool{false, true} {
		c, err := redlock.NewClient(memnode.New(3, core.SystemClock{}), redlock.Options{Fair: fair})
		require.NoError(t, err)
		handOn, try := redlock.LeaveAfterQuietRelease(c, "k")
		assert.Equal(t, fair, handOn, "fair %v: hand on", fair)
		assert.Equal(t, !fair, try, "fair %v: try", fair)
	}
}

// TestFairCancelledAttemptWakesItsClientsHead: with Options.Fair, a Lock
// finds its Client's wait room empty and attempts at once while another
// Lock of the Client is in the round that queues the Client on every
// node (the race seed 16809 of the simulation's Fair processes of two
// found, then in a cleanup; now the attempt, held everywhere, queues). Where the key is free the attempt takes it, which takes the
// Client out of that node's queue; its caller gives up, and its cleanup
// frees the key there, queueing nobody and announcing nothing. The other
// Lock, the head by then, whose retry delay is an hour and whose turn no
// quorum of nodes would now give, attempts at once (core.Room.Ended)
// and takes the key. The clock stands still, so nothing but the Freed
// wake can end the head's wait, and the room keeps the key's queue.
func TestFairCancelledAttemptWakesItsClientsHead(t *testing.T) {
	m := memnode.New(3, newStepClock())
	d := &gated{clockedAnnouncer: m, took: make(chan struct{}), cleaned: make(chan struct{}), open: make(chan struct{})}
	base := redlock.Options{TTL: time.Minute, Fair: true, Backoff: redlock.RandomDelay(time.Hour, time.Hour)}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // a guard, not a wait
	defer cancel()
	opts, waiters := waitersAt(base)
	a, err := redlock.NewClient(d, opts)
	require.NoError(t, err)
	b, err := redlock.NewClient(m, base)
	require.NoError(t, err)
	// A Lock of a waits behind b's and takes the key at b's release, its
	// turn; its own release, with nobody of a waiting, hands nothing on
	// within a. a's room keeps the key's queue a while, having heard
	// nothing since: a Lock that joins it waits for what it hears.
	first, err := b.TryLock(ctx, "k")
	require.NoError(t, err)
	won := lockThenUnlock(ctx, a, "k")
	require.Equal(t, 1, <-waiters)
	require.NoError(t, first.Unlock(ctx))
	require.Equal(t, 0, <-waiters)
	require.NoError(t, <-won)
	held, err := b.TryLock(ctx, "k")
	require.NoError(t, err)
	// Its key leaves two nodes below: its release finds it on one only.
	defer func() { assert.ErrorIs(t, held.Unlock(ctx), redlock.ErrNotHeld) }()

	d.cleanup.Store(true)
	head := lockThenUnlock(ctx, a, "k")
	<-d.cleaned // its attempt, held everywhere, queued the Client (Fair, in its own round)
	// The holder's key leaves nodes 0 and 1 unheard, as by expiry: the
	// Client, queued there, takes it at its next attempt.
	for n := range 2 {
		m.Set(n, "k", core.Token{}, -time.Second)
	}
	d.attempt.Store(true)
	lctx, giveUp := context.WithCancel(ctx)
	direct := make(chan error, 1)
	go func() {
		_, err := a.Lock(lctx, "k")
		direct <- err
	}()
	<-d.took
	for n := range 2 {
		_, _, ok := m.Get(n, "k")
		require.True(t, ok, "node %d: the direct attempt took the key", n)
	}
	close(d.open)
	require.Equal(t, 1, <-waiters, "the first Lock waits, the head")
	giveUp()
	require.ErrorIs(t, <-direct, redlock.ErrCancelled)
	require.NoError(t, <-head, "the head took the key its Client's cleanup freed")
}

// lockThenUnlock locks key through c in a goroutine, unlocks it at once,
// and sends the first error (nil: both went through).
func lockThenUnlock(ctx context.Context, c *redlock.Client, key string) <-chan error {
	done := make(chan error, 1)
	go func() {
		l, err := c.Lock(ctx, key)
		if err == nil {
			err = l.Unlock(ctx)
		}
		done <- err
	}()
	return done
}

// TestWaiterThatLeavesAfterAQuietReleaseMakesItHeard: a release that
// hands the key to the Client's waiter is quiet; once it is done the
// waiter attempts, but another process took the key in between, and the
// waiter's caller gives up. Leaving, the last waiter of the Client, it
// makes the release heard (core.Room.Leave): without Fair, a TryLock,
// which here finds the other process's key.
func TestWaiterThatLeavesAfterAQuietReleaseMakesItHeard(t *testing.T) {
	m := memnode.New(3, newStepClock())
	d := &gated{clockedAnnouncer: m}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // a guard, not a wait
	defer cancel()
	wctx, giveUp := context.WithCancel(ctx)
	defer giveUp()
	votes := make(chan core.Op, 64)
	var tries atomic.Int32
	opts, waiters := waitersAt(redlock.Options{TTL: time.Minute, Backoff: redlock.RandomDelay(time.Hour, time.Hour)})
	opts.Observer.Vote = func(e redlock.VoteEvent) {
		if e.Context == wctx {
			votes <- e.Op
		}
	}
	opts.Observer.Acquire = func(e redlock.AcquireEvent) {
		if e.Try {
			tries.Add(1)
		}
	}
	a, err := redlock.NewClient(d, opts)
	require.NoError(t, err)
	held, err := a.TryLock(ctx, "k")
	require.NoError(t, err)
	waiter := make(chan error, 1)
	go func() {
		_, err := a.Lock(wctx, "k")
		waiter <- err
	}()
	require.Equal(t, 1, <-waiters, "a waiter of the holder's Client waits")
	other := core.TokenFromUint64s(7, 7)
	d.quietDone = func() { // another process takes the key as soon as it is free
		for n := range 3 {
			m.Set(n, "k", other, time.Minute)
		}
	}
	require.NoError(t, held.Unlock(ctx))
	require.Nil(t, d.quietDone, "the release was not quiet")
	// The waiter's attempt, lost at its second answer, and its cleanup.
	for range 2 + 3 {
		select {
		case <-votes:
		case <-ctx.Done():
			t.Fatal("the waiter did not attempt after the release")
		}
	}
	before := tries.Load()
	giveUp()
	require.ErrorIs(t, <-waiter, redlock.ErrCancelled)
	assert.Equal(t, before+1, tries.Load(), "the leaving waiter made the quiet release heard")
}
