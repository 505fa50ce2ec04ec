package redlock_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/core/memnode"
	"github.com/redlock-go/redlock/drivers"
	"github.com/redlock-go/redlock/drivers/goredis"
	"github.com/redlock-go/redlock/drivers/radix"
	"github.com/redlock-go/redlock/drivers/redigo"
	"github.com/redlock-go/redlock/drivers/rueidis"
	"github.com/redlock-go/redlock/drivers/valkeygo"
	"github.com/redlock-go/redlock/internal/redistest"
)

// closer is a driver that its test closes.
type closer interface {
	redlock.Driver
	Close() error
}

// fairDials are the drivers the Fair tests run over.
var fairDials = map[string]func(addrs []string) (closer, error){
	"redigo":   func(a []string) (closer, error) { return redigo.Dial(a, drivers.Options{}) },
	"radix":    func(a []string) (closer, error) { return radix.Dial(a, drivers.Options{}) },
	"rueidis":  func(a []string) (closer, error) { return rueidis.Dial(a, drivers.Options{}) },
	"goredis":  func(a []string) (closer, error) { return goredis.Dial(a, drivers.Options{}) },
	"valkeygo": func(a []string) (closer, error) { return valkeygo.Dial(a, drivers.Options{}) },
}

// fairProcess is one process of a Fair test: its own driver, so its own
// waiter id, and its own Client.
func fairProcess(t *testing.T, driver string, addrs []string) *redlock.Client {
	t.Helper()
	d, err := fairDials[driver](addrs)
	require.NoError(t, err)
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Errorf("close %s driver: %v", driver, err)
		}
	})
	c, err := redlock.NewClient(d, redlock.Options{Fair: true, NodeTimeout: time.Second})
	require.NoError(t, err) // a long NodeTimeout: these tests are about order, not timeouts
	return c
}

// queued returns how many waiters key's queue holds on each server, with
// the one it was handed to, if any: a waiter's attempt may reach a server
// before the holder's SET, and its cleanup then hands itself the key.
func queued(t *testing.T, srvs []*redistest.Server, key string) []int64 {
	out := make([]int64, len(srvs))
	for i, s := range srvs {
		n, err := s.Do("ZCARD", "redlock:queue:"+key)
		require.NoError(t, err)
		out[i] = n.(int64)
		if v, err := s.Do("GET", key); err == nil && v != nil && strings.HasPrefix(v.(string), "~") {
			out[i]++
		}
	}
	return out
}

// TestFairServesWaitersInTurn: with Options.Fair, on redis-server, waiters
// of three processes are served in the order they began to wait, not in
// the order they happen to attempt after a release; a waiter's process
// leaves the queue when served.
func TestFairServesWaitersInTurn(t *testing.T) {
	for driver := range fairDials {
		t.Run(driver, func(t *testing.T) { testFairServesWaitersInTurn(t, driver) })
	}
}

func testFairServesWaitersInTurn(t *testing.T, driver string) {
	srvs := redistest.StartN(t, 3, redistest.Options{})
	addrs := make([]string, len(srvs))
	for i, s := range srvs {
		addrs[i] = s.Addr
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a guard, not a wait
	defer cancel()
	holder, first, second := fairProcess(t, driver, addrs), fairProcess(t, driver, addrs), fairProcess(t, driver, addrs)

	l, err := holder.TryLock(ctx, "k")
	require.NoError(t, err)
	got := make(chan string, 2)
	var unlocked sync.WaitGroup // the test waits for the Unlocks, which use the drivers its cleanup closes
	t.Cleanup(unlocked.Wait)
	lockThen := func(name string, c *redlock.Client) {
		defer unlocked.Done()
		m, err := c.Lock(ctx, "k")
		if !assert.NoError(t, err, name) {
			got <- name
			return
		}
		got <- name
		assert.NoError(t, m.Unlock(ctx), name)
	}
	unlocked.Add(2)
	go lockThen("first", first)
	all := func(n int64) func() bool {
		return func() bool { q := queued(t, srvs, "k"); return q[0] == n && q[1] == n && q[2] == n }
	}
	require.Eventually(t, all(1), 10*time.Second, time.Millisecond, "the first queues on every server")
	go lockThen("second", second)
	require.Eventually(t, all(2), 10*time.Second, time.Millisecond, "then the second")

	_, err = holder.TryLock(ctx, "k")
	require.ErrorIs(t, err, redlock.ErrTaken)
	require.NoError(t, l.Unlock(ctx))
	assert.Equal(t, "first", <-got)
	assert.Equal(t, "second", <-got)
	require.Eventually(t, func() bool {
		for _, s := range srvs {
			if n, err := s.Do("ZCARD", "redlock:queue:k"); err != nil || n.(int64) != 0 {
				return false
			}
		}
		return true
	}, 10*time.Second, time.Millisecond, "each left the queue when served")
}

// TestFairNeedsAnnouncements: a Fair waiter hears its turn announced;
// without announcements (Poll, or a driver that cannot announce) the
// Client is refused before anything is sent.
func TestFairNeedsAnnouncements(t *testing.T) {
	_, err := redlock.NewClient(memnode.New(3, nil), redlock.Options{Fair: true, Poll: true})
	assert.ErrorIs(t, err, redlock.ErrInvalidConfig)
}

// fairServers starts three redis-servers for a Fair test, and returns
// them, their addresses, and a context that guards the test against a
// hang (not a wait).
func fairServers(t *testing.T) ([]*redistest.Server, []string, context.Context) {
	srvs := redistest.StartN(t, 3, redistest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return srvs, []string{srvs[0].Addr, srvs[1].Addr, srvs[2].Addr}, ctx
}

// requireFree fails the test if key is set on any of srvs (why says what
// it would mean).
func requireFree(t *testing.T, srvs []*redistest.Server, key, why string) {
	t.Helper()
	for i, s := range srvs {
		v, err := s.Do("GET", key)
		require.NoError(t, err)
		assert.Nil(t, v, "node %d: the key was %s", i, why)
	}
}

// TestFairTryLockDoesNotQueue: a TryLock that fails, with Options.Fair,
// leaves no entry in the key's queues: it will not wait, and an entry
// would be handed the next release for nothing. The release then leaves
// the key free, for anyone.
func TestFairTryLockDoesNotQueue(t *testing.T) {
	for driver := range fairDials {
		t.Run(driver, func(t *testing.T) {
			srvs, addrs, ctx := fairServers(t)
			holder, other := fairProcess(t, driver, addrs), fairProcess(t, driver, addrs)
			l, err := holder.TryLock(ctx, "k")
			require.NoError(t, err)
			_, err = other.TryLock(ctx, "k")
			require.ErrorIs(t, err, redlock.ErrTaken)
			assert.Equal(t, []int64{0, 0, 0}, queued(t, srvs, "k"), "queued by a TryLock")
			require.NoError(t, l.Unlock(ctx))
			requireFree(t, srvs, "k", "handed to a waiter that never came")
		})
	}
}

// TestFairWaiterThatGivesUpLeaves: a Fair Lock whose context ends while it
// waits takes its process out of the queues before it returns, so that the
// next release leaves the key free rather than hand it to nobody.
func TestFairWaiterThatGivesUpLeaves(t *testing.T) {
	for driver := range fairDials {
		t.Run(driver, func(t *testing.T) {
			srvs, addrs, ctx := fairServers(t)
			holder, waiter := fairProcess(t, driver, addrs), fairProcess(t, driver, addrs)
			l, err := holder.TryLock(ctx, "k")
			require.NoError(t, err)
			wctx, giveUp := context.WithCancel(ctx)
			got := make(chan error, 1)
			go func() {
				_, err := waiter.Lock(wctx, "k")
				got <- err
			}()
			require.Eventually(t, func() bool {
				q := queued(t, srvs, "k")
				return q[0]+q[1]+q[2] >= 2
			}, 10*time.Second, time.Millisecond, "the waiter queues")
			giveUp()
			require.ErrorIs(t, <-got, redlock.ErrCancelled)
			assert.Equal(t, []int64{0, 0, 0}, queued(t, srvs, "k"), "the waiter left the queues")
			require.NoError(t, l.Unlock(ctx))
			requireFree(t, srvs, "k", "handed to a waiter that gave up")
		})
	}
}

// opCountingDriver counts the commands its Client sends, by op and node.
type opCountingDriver struct {
	closer
	mu   sync.Mutex
	sent map[core.Op][]int
}

func (d *opCountingDriver) Watch(key string, notify func(node int)) core.Watch {
	return d.closer.(core.Announcer).Watch(key, notify)
}

func (d *opCountingDriver) Begin(ctx context.Context) core.Batch {
	return opCountingBatch{d.closer.Begin(ctx), d}
}

// count returns the commands of op sent so far, per node.
func (d *opCountingDriver) count(op core.Op) []int {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]int, d.Nodes())
	copy(out, d.sent[op])
	return out
}

type opCountingBatch struct {
	core.Batch
	d *opCountingDriver
}

func (b opCountingBatch) Send(node int, cmd core.Command, deadline time.Time) {
	b.d.mu.Lock()
	if b.d.sent[cmd.Op] == nil {
		b.d.sent[cmd.Op] = make([]int, b.d.Nodes())
	}
	b.d.sent[cmd.Op][node]++
	b.d.mu.Unlock()
	b.Batch.Send(node, cmd, deadline)
}

// TestFairWaiterQueuesInOneRound: on redis-server, a Fair waiter that
// finds the key held on every node queues its process there in its
// attempt's own round, with no cleanup round to join the queue. The
// waiter's first wait starts its watch of the key, and its subscriptions'
// start makes it attempt once more (a turn handed before them would have
// gone unheard), held again, which queues it again in the same round;
// then the holder's release hands it its turn. From Lock to the lock it
// sends each node three attempts and no cleanup: before, each failed
// attempt had its cleanup, five rounds in all. Its retry delay and the
// holder's TTL are long, so that no timed attempt comes in between.
func TestFairWaiterQueuesInOneRound(t *testing.T) {
	srvs, addrs, ctx := fairServers(t)
	opts := redlock.Options{Fair: true, NodeTimeout: time.Second, TTL: time.Minute,
		Backoff: redlock.RandomDelay(time.Minute, time.Minute)}
	hd, err := redigo.Dial(addrs, drivers.Options{})
	require.NoError(t, err)
	wd, err := redigo.Dial(addrs, drivers.Options{})
	require.NoError(t, err)
	count := &opCountingDriver{closer: wd, sent: map[core.Op][]int{}}
	t.Cleanup(func() { assert.NoError(t, hd.Close()); assert.NoError(t, wd.Close()) })
	holder, err := redlock.NewClient(hd, opts)
	require.NoError(t, err)
	waiter, err := redlock.NewClient(count, opts)
	require.NoError(t, err)

	l, err := holder.TryLock(ctx, "k")
	require.NoError(t, err)
	require.Eventually(t, func() bool { // TryLock returns once a quorum has it
		for _, s := range srvs {
			if v, err := s.Do("GET", "k"); err != nil || v == nil {
				return false
			}
		}
		return true
	}, 10*time.Second, time.Millisecond, "the holder's key on every server")
	got := make(chan error, 1)
	var m *redlock.Lock
	go func() {
		var err error
		m, err = waiter.Lock(ctx, "k")
		got <- err
	}()
	require.Eventually(t, func() bool {
		q := queued(t, srvs, "k")
		return q[0] == 1 && q[1] == 1 && q[2] == 1 && slices.Equal(count.count(core.OpAcquire), []int{2, 2, 2})
	}, 10*time.Second, time.Millisecond, "the waiter queues on every server, and attempts again once its watch listens")
	assert.Equal(t, []int{0, 0, 0}, count.count(core.OpRelease), "cleanups per node while it waits")
	require.NoError(t, l.Unlock(ctx))
	require.NoError(t, <-got)
	assert.Equal(t, []int{3, 3, 3}, count.count(core.OpAcquire), "attempts per node: two that queued, the one on its turn")
	assert.Equal(t, []int{0, 0, 0}, count.count(core.OpRelease), "cleanups per node")
	require.NoError(t, m.Unlock(ctx))
	assert.Equal(t, []int{1, 1, 1}, count.count(core.OpRelease), "releases per node: the Unlock's")
}
