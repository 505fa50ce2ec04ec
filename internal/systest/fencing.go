package systest

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/internal/batchwrap"
	"github.com/redlock-go/redlock/internal/fencedstore"
)

// Fencing (core.Config.Fencing): the cases that run on real servers and on
// memnode are in behavioural, the ones only a real server can check
// (big counters, the script cache, SIGSTOP, several processes) in
// realCases.

// fencedClient is newClient with Fencing.
func fencedClient(t *testing.T, c cluster, mode core.FanOut, cfg redlock.Options) *redlock.Client {
	t.Helper()
	cfg.Fencing = true
	return newClient(t, c, mode, cfg)
}

// raisedOn returns the nodes whose fence counter for key is at least
// fence.
func raisedOn(c cluster, key string, fence uint64) []int {
	var out []int
	for i := range c.N() {
		if c.Fence(i, key) >= fence {
			out = append(out, i)
		}
	}
	return out
}

// requireRaised checks that a quorum of nodes has key's counter at least
// at fence: what a fenced acquisition leaves once it returns, without
// waiting for anything in flight, since the raise round awaited them.
func requireRaised(t *testing.T, c cluster, key string, fence uint64) {
	t.Helper()
	raised := raisedOn(c, key, fence)
	require.GreaterOrEqual(t, len(raised), core.Quorum(c.N()),
		"the counter of %q must be at least the fence %d on a quorum, is on nodes %v", key, fence, raised)
}

// hookDriver wraps a driver: it records the command of every round it
// begins, and calls before, if set, ahead of every Send, on the goroutine
// that drives the round (rounds may run concurrently: before must be safe
// for that). It reads the wrapped driver's clock.
type hookDriver struct {
	core.Driver
	before func(node int, cmd core.Command)
	mu     sync.Mutex
	rounds []core.Op // each round's op, once it sent a command
}

func (d *hookDriver) Clock() core.Clock { return clockOf(d.Driver) }

// clockOf returns the clock d says it reads (its Clock method), or nil,
// which a Client takes for the system clock: what a wrapper's Clock
// method returns, so that the Client reads the wrapped driver's clock.
func clockOf(d core.Driver) core.Clock {
	if cd, ok := d.(interface{ Clock() core.Clock }); ok {
		return cd.Clock()
	}
	return nil
}

func (d *hookDriver) Begin(ctx context.Context) core.Batch {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.rounds = append(d.rounds, 0)
	b := d.Driver.Begin(ctx)
	return batchwrap.Keep(&hookBatch{Batch: b, d: d, round: len(d.rounds) - 1}, b)
}

// takeRounds returns the rounds begun since the last call.
func (d *hookDriver) takeRounds() []core.Op {
	d.mu.Lock()
	defer d.mu.Unlock()
	r := d.rounds
	d.rounds = nil
	return r
}

type hookBatch struct {
	core.Batch
	d     *hookDriver
	round int
}

func (b *hookBatch) Send(node int, cmd core.Command, deadline time.Time) {
	if b.d.before != nil {
		b.d.before(node, cmd)
	}
	b.d.mu.Lock()
	if b.round < len(b.d.rounds) {
		b.d.rounds[b.round] = cmd.Op
	}
	b.d.mu.Unlock()
	b.Batch.Send(node, cmd, deadline)
}

// testFencesGrow: a plain Client's locks have no fence and leave no
// counter; a fenced Client's first lock of a fresh key has fence 1, set on
// every node; a refused acquisition changes no counter; Extend keeps the
// fence; holders one after another, through two Clients, get strictly
// increasing fences, each on a quorum's counters once TryLock returns.
func testFencesGrow(t *testing.T, c cluster, mode core.FanOut) {
	ctx, n, key := testContext(t), c.N(), testKey(t, "")
	plain := newClient(t, c, mode, redlock.Options{})
	lock, err := plain.TryLock(ctx, key)
	require.NoError(t, err)
	_, err = lock.Fence()
	assert.ErrorIs(t, err, redlock.ErrNoFencing, "no fence without Options.Fencing")
	require.NoError(t, lock.Unlock(ctx))
	for i := range n {
		assert.Zero(t, c.Fence(i, key), "node %d: a plain acquisition leaves no counter", i)
	}

	a := fencedClient(t, c, mode, redlock.Options{})
	b := fencedClient(t, c, mode, redlock.Options{})
	first := acquireSettled(ctx, t, c, a, key)
	require.Equal(t, uint64(1), fenceOf(t, first), "every counter was 0")
	requireSettles(t, c, all(n), func(i int) string {
		if f := c.Fence(i, key); f != 1 {
			return "the counter is " + strconv.FormatUint(f, 10) + ", want 1"
		}
		return ""
	})
	_, err = b.TryLock(ctx, key)
	requireKind(t, err, core.ErrTaken)
	for i := range n {
		assert.Equal(t, uint64(1), c.Fence(i, key), "node %d: a refused acquisition changes no counter", i)
	}
	require.NoError(t, first.Extend(ctx))
	assert.Equal(t, uint64(1), fenceOf(t, first), "Extend keeps the fence")
	for i := range n {
		assert.Equal(t, uint64(1), c.Fence(i, key), "node %d: an extension changes no counter", i)
	}
	require.NoError(t, first.Unlock(ctx))

	prev := uint64(1)
	for round := range 6 {
		cl := a
		if round%2 == 1 {
			cl = b
		}
		lock, err := cl.TryLock(ctx, key)
		require.NoError(t, err)
		f := fenceOf(t, lock)
		require.Greater(t, f, prev, "holder %d's fence", round)
		requireRaised(t, c, key, f)
		prev = f
		require.NoError(t, lock.Unlock(ctx))
	}
	requireRaised(t, c, key, prev) // releases leave the counters
}

// testRaiseConditional drives OpAcquireFenced and OpRaiseFence through the
// driver alone: the raise needs the key to hold its token (StatusMissing,
// StatusHeld otherwise, changing nothing), never lowers the counter and
// never creates the key; a fenced acquire of a held key is StatusHeld and
// increments nothing.
func testRaiseConditional(t *testing.T, c cluster, _ core.FanOut) {
	d, key := c.Driver(), testKey(t, "")
	tok := core.TokenFromUint64s(0xfe4ce, uint64(time.Now().UnixNano()))
	send := func(i int, cmd core.Command) core.Reply {
		t.Helper()
		r := SendOne(d, i, cmd, testTimeout)
		require.NotEqual(t, core.StatusError, r.Status, "%v", r.Err)
		require.NotEqual(t, core.StatusTimeout, r.Status, "%v", r.Err)
		return r
	}
	acquire := func(i int, tk core.Token) core.Reply {
		return send(i, core.Command{Op: core.OpAcquireFenced, Key: key, Token: tk, TTL: defaultTTL})
	}
	raise := func(i int, tk core.Token, fence uint64) core.Status {
		r := send(i, core.Command{Op: core.OpRaiseFence, Key: key, Token: tk, Fence: fence})
		assert.Zero(t, r.Fence, "a raise's reply carries no fence")
		return r.Status
	}
	counter := func(i int, want uint64, msg string) {
		t.Helper()
		assert.Equal(t, want, c.Fence(i, key), "node %d: %s", i, msg)
	}

	// Node 0 has no key.
	assert.Equal(t, core.StatusMissing, raise(0, tok, 40))
	counter(0, 0, "a raise without the key creates no counter")
	requireAbsent(t, c, key, 0)

	// Node 1: another client holds the key.
	c.Set(1, key, foreignToken, defaultTTL)
	assert.Equal(t, core.StatusHeld, raise(1, tok, 40))
	counter(1, 0, "a raise with another token changes nothing")
	requireHeld(t, acquire(1, tok), 1)
	counter(1, 0, "a refused fenced acquire increments nothing")
	requireHolds(t, c, key, foreignToken, 0, 1)

	// Node 2: ours.
	r := acquire(2, tok)
	assert.Equal(t, core.Reply{Node: 2, Status: core.StatusOK, Fence: 1}, r)
	requireHolds(t, c, key, tok, defaultTTL/2, 2)
	counter(2, 1, "incremented where the key was set")
	assert.Equal(t, core.StatusOK, raise(2, tok, 40))
	counter(2, 40, "raised")
	assert.Equal(t, core.StatusOK, raise(2, tok, 7), "a lower fence is no error")
	counter(2, 40, "never lowered")
	assert.Equal(t, core.StatusHeld, raise(2, foreignToken, 100))
	counter(2, 40, "another token's raise changes nothing")
	requireHeld(t, acquire(2, foreignToken), 2)
	counter(2, 40, "a refused fenced acquire increments nothing")
	assert.Equal(t, core.StatusOK, send(2, core.Command{Op: core.OpRelease, Key: key, Token: tok}).Status)
	assert.Equal(t, core.StatusMissing, raise(2, tok, 100))
	counter(2, 40, "a raise after the release changes nothing")
	requireAbsent(t, c, key, 2)
	assert.Equal(t, core.Reply{Node: 2, Status: core.StatusOK, Fence: 41}, acquire(2, tok), "the counter outlives the key")
	requireHolds(t, c, key, tok, 0, 2)
}

// requireHeld checks a fenced acquire refused on node i: StatusHeld, no
// fence, and the holder's remaining TTL (PTTL), at most the defaultTTL it
// was set with.
func requireHeld(t *testing.T, r core.Reply, i int) {
	t.Helper()
	assert.Equal(t, core.Reply{Node: i, Status: core.StatusHeld}, core.Reply{Node: r.Node, Status: r.Status, Fence: r.Fence, Err: r.Err})
	assert.LessOrEqual(t, r.TTL, defaultTTL, "the holder's TTL")
	assert.Positive(t, r.TTL, "the holder's TTL")
}

// testCountersDiffer: the counters of a key differ across nodes, as
// earlier holders' raises and lost replies leave them; enough nodes are
// high that every quorum meets one. The next fence is above the lowest of
// those (it is the largest counter its quorum returned), and once TryLock
// returns a quorum's counters are at least that fence. Then the node with
// the highest counter goes down: the next holder still gets a larger
// fence, because the raise carried it to a majority.
//
// Node 0 has the highest counter, so that a quorum that includes it (every
// sequential one, most multiplexed ones) catches a missing raise (core's
// SkipFenceRaise mutation): node 0 alone would then hold the fence.
func testCountersDiffer(t *testing.T, c cluster, mode core.FanOut) {
	ctx, n, key := testContext(t), c.N(), testKey(t, "")
	high := lossThreshold(n)
	var low, top uint64 = 1 << 62, 0
	for i := range n {
		v := uint64(n - i) //nolint:gosec // G115: i < n. Low: ..., 2, 1
		if i < high {
			v = 40 - 10*uint64(i) // high: 40, 30, 20
			low = min(low, v)
		}
		top = max(top, v)
		c.SetFence(i, key, v)
	}
	client := fencedClient(t, c, mode, redlock.Options{})
	lock, err := client.TryLock(ctx, key)
	require.NoError(t, err)
	fence := fenceOf(t, lock)
	assert.Greater(t, fence, low, "every quorum meets a node whose counter was at least %d", low)
	assert.LessOrEqual(t, fence, top+1)
	requireRaised(t, c, key, fence)
	require.NoError(t, lock.Unlock(ctx))

	highest := 0
	for i := range n {
		if c.Fence(i, key) > c.Fence(highest, key) {
			highest = i
		}
	}
	c.Kill(highest)
	lock2, err := client.TryLock(ctx, key)
	require.NoError(t, err)
	assert.Greater(t, fenceOf(t, lock2), fence, "with node %d down, the raised nodes still decide", highest)
	require.NoError(t, lock2.Unlock(ctx))
}

// testRaiseFails: the keys of a won fenced attempt are deleted on enough
// nodes, between its acquire round and its raise round, to deny the raise
// a quorum. The acquisition fails (ErrNotHeld, the raise named as the
// cause), no fence is handed out, the cleanup leaves no key, and the next
// acquisition's fence is above the counters the failed attempt left.
func testRaiseFails(t *testing.T, c cluster, mode core.FanOut) {
	ctx, n, key := testContext(t), c.N(), testKey(t, "")
	var set [core.MaxNodes]bool
	var victims []int
	h := &hookDriver{Driver: c.Driver()}
	h.before = func(node int, cmd core.Command) {
		switch {
		case cmd.Op == core.OpAcquireFenced:
			set[node] = true
		case cmd.Op == core.OpRaiseFence && set[node] && len(victims) < lossThreshold(n):
			// A multiplexed round may have returned before this node's
			// SET landed: wait for it, so that the delete comes after.
			requireHolds(t, c, key, cmd.Token, 0, node)
			c.Del(node, key)
			victims = append(victims, node)
		}
	}
	client := clientOver(t, h, mode, redlock.Options{Fencing: true})
	lock, err := client.TryLock(ctx, key)
	e := requireError(t, err, core.ErrNotHeld)
	assert.Empty(t, lock.Key(), "no lock is handed out")
	assert.Zero(t, lock.Token(), "no lock is handed out")
	assert.Equal(t, core.OpAcquire, e.Op)
	assert.ErrorContains(t, err, "fence counters could not be raised")
	assert.Subset(t, e.Failed(core.StatusMissing), victims, "%v", err)
	requireAbsent(t, c, key, all(n)...)

	h.before = nil
	left := uint64(0)
	for _, i := range victims {
		left = max(left, c.Fence(i, key))
	}
	require.Positive(t, left, "the victims' counters were incremented")
	next, err := client.TryLock(ctx, key)
	require.NoError(t, err)
	assert.Greater(t, fenceOf(t, next), left)
	require.NoError(t, next.Unlock(ctx))
}

// testFencingRounds: fencing costs an acquisition exactly one more round,
// the raise, and nothing else: extend and release are unchanged.
func testFencingRounds(t *testing.T, c cluster, mode core.FanOut) {
	ctx, key := testContext(t), testKey(t, "")
	h := &hookDriver{Driver: c.Driver()}
	plain := clientOver(t, h, mode, redlock.Options{})
	fenced := clientOver(t, h, mode, redlock.Options{Fencing: true})

	lock, err := plain.TryLock(ctx, key)
	require.NoError(t, err)
	assert.Equal(t, []core.Op{core.OpAcquire}, h.takeRounds(), "plain acquire")
	require.NoError(t, lock.Extend(ctx))
	assert.Equal(t, []core.Op{core.OpExtend}, h.takeRounds(), "plain extend")
	require.NoError(t, lock.Unlock(ctx))
	assert.Equal(t, []core.Op{core.OpRelease}, h.takeRounds(), "plain release")

	lock2, err := fenced.TryLock(ctx, key)
	require.NoError(t, err)
	assert.Equal(t, []core.Op{core.OpAcquireFenced, core.OpRaiseFence}, h.takeRounds(), "fenced acquire")
	require.NoError(t, lock2.Extend(ctx))
	assert.Equal(t, []core.Op{core.OpExtend}, h.takeRounds(), "fenced extend")
	require.NoError(t, lock2.Unlock(ctx))
	assert.Equal(t, []core.Op{core.OpRelease}, h.takeRounds(), "fenced release")
}

// testFencedMutualExclusion: many goroutines take one key through one
// fenced Client and, under the lock, write their fence twice to a fenced
// store. No write is refused; the writes of one holder are adjacent (one
// holder at a time) and the holders' fences, in the order the store saw
// them, strictly increase.
func testFencedMutualExclusion(t *testing.T, c cluster, mode core.FanOut) {
	key := testKey(t, "")
	workers, rounds := 16, 5
	if mode == core.Sequential {
		workers = 8 // a sequential round costs N round trips, and fencing two rounds
	}
	client := fencedClient(t, c, mode, redlock.Options{
		TTL:     5 * time.Second,
		Backoff: redlock.RandomDelay(time.Millisecond, 5*time.Millisecond),
	})
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	store := fencedstore.New()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for r := range rounds {
				lock, err := client.Lock(ctx, key)
				if err != nil {
					t.Errorf("worker %d: acquire: %v", w, err)
					return
				}
				who := strconv.Itoa(w) + "/" + strconv.Itoa(r)
				fence, err := lock.Fence()
				if err != nil {
					t.Errorf("worker %d: fence: %v", w, err)
				}
				for range 2 {
					if err := store.Write(fence, who); err != nil {
						t.Errorf("worker %d: write with fence %d: %v", w, fence, err)
					}
				}
				if !valid(lock, time.Now()) {
					// Not the driver's fault: the holder overran its validity.
					t.Errorf("worker %d: the writes outlived the lock's validity", w)
				}
				if err := lock.Unlock(context.Background()); err != nil {
					t.Errorf("worker %d: release: %v", w, err)
					return
				}
			}
		})
	}
	wg.Wait()
	assert.Empty(t, store.Rejected(), "writes refused")
	acc := store.Accepted()
	require.Len(t, acc, 2*workers*rounds)
	for i := 0; i < len(acc); i += 2 {
		require.Equal(t, acc[i], acc[i+1], "writes %d and %d: one holder's two writes are adjacent", i, i+1)
		if i > 0 {
			require.Greater(t, acc[i].Fence, acc[i-1].Fence, "holder %q after holder %q", acc[i].Value, acc[i-1].Value)
		}
	}
	requireAbsent(t, c, key, all(c.N())...)
}

// testPause is Kleppmann's scenario ("How to do distributed locking",
// 2016): client 1 takes the lock and pauses (a GC, a SIGSTOP) past its
// validity; client 2 takes the lock, retrying until the keys have
// expired, and writes to the storage; client 1 wakes and writes with its
// old lock. With fencing the storage refuses client 1's write, its fence
// being lower than client 2's. Without fencing the storage cannot tell,
// and the stale write lands over client 2's: both outcomes are asserted.
// Client 2's acquisition is the event that the keys expired: nothing
// sleeps.
func testPause(t *testing.T, c cluster, mode core.FanOut) {
	const ttl = 500 * time.Millisecond
	for _, fencing := range []bool{true, false} {
		t.Run("fencing="+strconv.FormatBool(fencing), func(t *testing.T) {
			ctx, key := testContext(t), testKey(t, "")
			cfg := redlock.Options{TTL: ttl, NodeTimeout: 200 * time.Millisecond, Fencing: fencing}
			store := fencedstore.Unfenced()
			if fencing {
				store = fencedstore.New()
			}
			client1 := newClient(t, c, mode, cfg)
			cfg.Backoff = redlock.RandomDelay(5*time.Millisecond, 10*time.Millisecond)
			client2 := newClient(t, c, mode, cfg)

			type result struct {
				lock *redlock.Lock
				err  error
			}
			acquired := make(chan result, 1)
			wrote := make(chan error, 1)
			wake := make(chan struct{})
			var once sync.Once
			resume := func() { once.Do(func() { close(wake) }) }
			defer resume()
			go func() { // client 1
				lock, err := client1.TryLock(ctx, key)
				acquired <- result{lock, err}
				if err != nil {
					return
				}
				<-wake                   // paused
				fence, _ := lock.Fence() // 0 without fencing
				wrote <- store.Write(fence, "client 1")
			}()
			r1 := <-acquired
			require.NoError(t, r1.err)

			lock2, err := client2.Lock(ctx, key)
			require.NoError(t, err, "client 2 must get the lock once client 1's keys expire")
			require.False(t, valid(r1.lock, time.Now()), "client 1's validity ended before its keys expired")
			fence2, _ := lock2.Fence()
			require.NoError(t, store.Write(fence2, "client 2"))

			resume()
			err = <-wrote
			latest, _ := store.Latest()
			if fencing {
				assert.Greater(t, fence2, fenceOf(t, r1.lock))
				assert.ErrorIs(t, err, fencedstore.ErrStale, "the storage refuses the paused client's write")
				assert.Equal(t, "client 2", latest)
			} else {
				_, ferr := r1.lock.Fence()
				assert.ErrorIs(t, ferr, redlock.ErrNoFencing)
				assert.NoError(t, err, "without fences the storage cannot tell")
				assert.Equal(t, "client 1", latest, "the stale write landed over client 2's")
			}
			require.NoError(t, lock2.Unlock(ctx))
		})
	}
}
