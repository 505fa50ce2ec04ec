package systest

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/internal/latproxy"
	"github.com/redlock-go/redlock/internal/redistest"
)

// proxiedCluster is a realCluster whose driver reaches node i through
// proxies[i], a latproxy that can partition the node off. Get, Set and Del
// still go to the servers directly.
type proxiedCluster struct {
	*realCluster
	proxies []*latproxy.Proxy
}

// Name is the address the driver dialled: the proxy's.
func (c *proxiedCluster) Name(i int) string { return c.proxies[i].Addr() }

// startProxied starts n servers, one latproxy in front of each adding
// delay each way, and a driver over the proxies' addresses.
func startProxied(t *testing.T, f Factory, n int, delay time.Duration) *proxiedCluster {
	t.Helper()
	var proxies []*latproxy.Proxy
	rc := startReal(t, f, n, redistest.Options{}, func(eps []Endpoint) {
		for i := range eps {
			p, err := latproxy.Start(eps[i].Addr, delay)
			require.NoError(t, err)
			t.Cleanup(func() { assert.NoError(t, p.Close()) })
			proxies = append(proxies, p)
			eps[i].Addr = p.Addr()
		}
	})
	// Runs before the driver's Close: a driver never closes into a
	// partition.
	t.Cleanup(func() {
		for _, p := range proxies {
			p.Heal()
		}
	})
	return &proxiedCluster{realCluster: rc, proxies: proxies}
}

func (c *proxiedCluster) partition(m latproxy.Partition, nodes ...int) {
	for _, i := range nodes {
		c.proxies[i].SetPartition(m)
	}
}

// testPartitionBlackHole: a majority of nodes black-holed while the lock is
// held (the network silently loses their packets, so commands hang).
// Extend fails cleanly with ErrQuorumUnreachable, naming the partitioned
// nodes by the address the driver dialled, after the node timeout rather
// than hanging. The lock is as it was: not lost, not extended, and still
// bounded by its old validity; its Context ends, a round's bound before
// that validity does, with the failed extension as the cause, and from
// then on Extend sends nothing. After the partition heals, release
// reaches every node and leaves nothing, and the driver works again.
func testPartitionBlackHole(t *testing.T, f Factory, mode core.FanOut) {
	for _, n := range []int{3, 5} {
		t.Run("N="+strconv.Itoa(n), func(t *testing.T) {
			const (
				// ttl leaves time, after the acquisition, for an
				// extension: one must end a round's bound (up to
				// N × nodeTimeout, sequential) before the loss, itself
				// declared a round's bound before the validity ends.
				ttl         = 3 * time.Second
				nodeTimeout = 150 * time.Millisecond
				// slack covers scheduling on a loaded machine under the
				// race detector; a driver that ignored the node timeout
				// would hang until the test's deadline.
				slack = time.Second
			)
			c := startProxied(t, f, n, 0)
			ctx, key := testContext(t), testKey(t, "")
			h := &hookDriver{Driver: c.Driver()}
			client := clientOver(t, h, mode, redlock.Options{TTL: ttl, NodeTimeout: nodeTimeout})
			lock := acquireSettled(ctx, t, c, client, key)
			until := lock.Until()

			cut := all(n)[n-core.Quorum(n):] // a majority
			live := without(all(n), cut...)
			c.partition(latproxy.BlackHole, cut...)

			// A sequential round waits out each hanging node in turn.
			waits, bound := 1, nodeTimeout
			if mode == core.Sequential {
				waits, bound = len(cut), time.Duration(n)*nodeTimeout
			}
			require.Greater(t, time.Until(until), 2*bound,
				"the machine is too slow for this case: too little validity is left for an extension")
			start := time.Now()
			err := lock.Extend(ctx)
			elapsed := time.Since(start)

			e := requireError(t, err, core.ErrQuorumUnreachable)
			assert.NotErrorIs(t, err, redlock.ErrLost, "an extension that proved nothing does not lose the lock")
			assert.ElementsMatch(t, cut, e.Failed(core.StatusTimeout), "the partitioned nodes time out: %v", err)
			for _, r := range e.Nodes {
				assert.Contains(t, cut, r.Node, "only partitioned nodes fail: %v", err)
			}
			assertNamed(t, c, err, cut)
			assert.Less(t, elapsed, time.Duration(waits)*nodeTimeout+slack,
				"Extend must give up at the node timeout (%d × %v), not hang", waits, nodeTimeout)

			// Nothing was proved: the lock is unchanged, bounded by the
			// validity it had.
			assert.Equal(t, until, lock.Until(), "a failed extension that proved nothing leaves the validity as it was")
			requireHolds(t, c, key, lock.Token(), 0, live...) // the live nodes extended

			// The lock's Context ends before its validity does, with the
			// failed extension as the cause; the live nodes' keys
			// (extended above) outlive it.
			ctxLock := lock.Context()
			select {
			case <-ctxLock.Done():
			case <-time.After(ttl + 5*time.Second):
				require.FailNow(t, "the lock's Context did not end")
			}
			ended := time.Now()
			cause := context.Cause(ctxLock)
			assert.ErrorIs(t, cause, redlock.ErrLost)
			assert.ErrorIs(t, cause, core.ErrQuorumUnreachable, "the last extension's failure is why: %v", cause)
			assert.False(t, ended.Before(until.Add(-bound)), "the loss was declared more than a round's bound before the validity's end")
			assert.True(t, ended.Before(until), "the loss is declared before the validity ends")
			assert.True(t, lock.Until().IsZero(), "a lost lock has no validity")

			// Extending it now sends nothing: no hang, even partitioned.
			h.takeRounds()
			assert.ErrorIs(t, lock.Extend(ctx), redlock.ErrLost)
			assert.Empty(t, h.takeRounds(), "nothing is sent for a lock that is lost")

			// Heal once the partitioned nodes' keys have expired, so that
			// what the black hole held (the failed round's extends) finds
			// nothing to extend and the outcome below is exact.
			eventually(t, 5*time.Second, func() bool {
				for _, i := range cut {
					if _, _, ok := c.Get(i, key); ok {
						return false
					}
				}
				return true
			}, "the partitioned nodes' keys must expire")
			c.partition(latproxy.Healed, cut...)

			// Unlock says the lock was lost, and its release reaches
			// every node all the same: no key is left.
			assert.ErrorIs(t, lock.Unlock(ctx), redlock.ErrLost)
			requireAbsent(t, c, key, all(n)...)

			// And the driver works again on every node.
			lock2 := acquireSettled(ctx, t, c, client, testKey(t, "-2"))
			require.NoError(t, lock2.Unlock(ctx))
			requireAbsent(t, c, lock2.Key(), all(n)...)
		})
	}
}

// testPartitionDropMinority: a minority of nodes dropped (connections
// ended and refused) while the lock is held: Extend succeeds on the
// quorum and leaves the unreachable node's key alone; after the partition
// heals the driver reaches the node again.
func testPartitionDropMinority(t *testing.T, f Factory, mode core.FanOut) {
	for _, n := range []int{3, 5} {
		t.Run("N="+strconv.Itoa(n), func(t *testing.T) {
			c := startProxied(t, f, n, 0)
			ctx, key := testContext(t), testKey(t, "")
			client := newClient(t, c, mode, redlock.Options{})
			lock := acquireSettled(ctx, t, c, client, key)
			until := lock.Until()

			// Shorten every key, so that the extension shows where it
			// landed.
			const short = 2 * time.Second
			for i := range n {
				c.Set(i, key, lock.Token(), short)
			}
			var cut []int // the largest minority, spread out
			for i := 0; len(cut) < n-core.Quorum(n); i += 2 {
				cut = append(cut, i)
			}
			live := without(all(n), cut...)
			c.partition(latproxy.Drop, cut...)

			require.NoError(t, lock.Extend(ctx), "a quorum is reachable")
			assert.True(t, valid(lock, time.Now()))
			assert.True(t, lock.Until().After(until), "the validity counts from the extension")
			requireHolds(t, c, key, lock.Token(), defaultTTL/2, live...)
			for _, i := range cut {
				if tok, pttl, ok := c.Get(i, key); ok {
					assert.Equal(t, lock.Token().String(), tok)
					assert.LessOrEqual(t, pttl, short, "the extension reached dropped node %d (%s)", i, c.Name(i))
				}
			}

			require.NoError(t, lock.Unlock(ctx), "a quorum is reachable")
			requireAbsent(t, c, key, live...)

			// Healed, the nodes are used again: the driver redials the
			// connections the drop ended (the first rounds may still
			// meet them).
			c.partition(latproxy.Healed, cut...)
			for _, i := range cut {
				c.Del(i, key)
			}
			requireEveryNodeTakes(ctx, t, c, client, testKey(t, "-2"), "after the partition heals, an acquire must set the key on every node")
		})
	}
}

// otherClient is c's servers seen through a second driver, standing for
// another process.
type otherClient struct {
	*realCluster
	drv core.Driver
}

func (o *otherClient) Driver() core.Driver { return o.drv }

// newOtherClient builds a second driver over c's endpoints with f.
func newOtherClient(t *testing.T, f Factory, c *realCluster) *otherClient {
	t.Helper()
	d := f(t, c.eps)
	require.NotNil(t, d)
	return &otherClient{realCluster: c, drv: d}
}

// acquireWithoutNode2 has client lock key on three nodes while node 2 is
// unreachable (SIGSTOPped), so that the lock rests on nodes 0 and 1
// alone, a bare majority. Node 2 then comes back empty: its process is
// killed while still stopped, discarding the SET queued in its socket
// (which SIGCONT would run, handing the lock node 2 as well, as a real
// partition that lost the packet would not), and restarted. Node 2 thus
// never saw the lock's key.
func acquireWithoutNode2(t *testing.T, c *realCluster, client *redlock.Client, key string) *redlock.Lock {
	t.Helper()
	c.Stop(2)
	l, err := client.TryLock(testContext(t), key)
	require.NoError(t, err, "nodes 0 and 1 make a quorum")
	c.Kill(2)
	c.Restart(2)
	requireHolds(t, c, key, l.Token(), 0, 0, 1)
	requireAbsent(t, c, key, 2)
	return l
}

// testRestartDoubleGrant demonstrates the documented unsafety of a
// restart without delay (core/doc.go, "What safety rests on: Restarts"):
// client A holds the lock on nodes {0, 1}; node 1 crashes and restarts at
// once, empty (no persistence); client B then wins {1, 2} while A's lock
// is still valid. Two clients hold the lock at once. The case asserts that
// this double grant happens, so that the documentation's warning is shown
// true on every driver; were B refused, the scenario would not be the one
// the warning is about. testRestartDelayed is the safe counterpart.
func testRestartDoubleGrant(t *testing.T, f Factory, mode core.FanOut) {
	c := startReal(t, f, 3, redistest.Options{}, nil)
	ctx, key := testContext(t), testKey(t, "")
	cfg := redlock.Options{NodeTimeout: 200 * time.Millisecond}
	a := newClient(t, c, mode, cfg)
	lockA := acquireWithoutNode2(t, c, a, key)

	c.Restart(1) // at once, and empty: A's key on node 1 is gone
	requireAbsent(t, c, key, 1)

	// B is a process that starts now.
	b := newClient(t, newOtherClient(t, f, c), mode, cfg)
	lockB, err := b.TryLock(ctx, key)
	won := time.Now()
	require.NoError(t, err, "B wins nodes 1 and 2: the documented unsafety of a restart without delay")
	assert.True(t, valid(lockA, won), "A's lock is still valid when B wins: the double grant the documentation warns of")
	assert.True(t, valid(lockB, won))
	requireHolds(t, c, key, lockA.Token(), 0, 0)
	requireHolds(t, c, key, lockB.Token(), 0, 1, 2)

	require.NoError(t, lockB.Unlock(ctx), "B holds nodes 1 and 2")
	_ = lockA.Unlock(ctx) // node 0; A's connections to 1 and 2 broke with the restarts
	requireAbsent(t, c, key, 0, 1, 2)
}

// testRestartDelayed: the same as testRestartDoubleGrant, but node 1 stays
// down until A's lock is no longer valid, as the documentation requires
// (a delayed restart, of at least the TTL). B is refused while node 1 is
// down and A valid, and wins only after A's validity ended: B's lock never
// overlaps A's validity.
func testRestartDelayed(t *testing.T, f Factory, mode core.FanOut) {
	c := startReal(t, f, 3, redistest.Options{}, nil)
	ctx, key := testContext(t), testKey(t, "")
	cfg := redlock.Options{TTL: time.Second, NodeTimeout: 200 * time.Millisecond}
	a := newClient(t, c, mode, cfg)
	lockA := acquireWithoutNode2(t, c, a, key)
	untilA := lockA.Until()

	c.Kill(1) // crashes, and stays down

	// While node 1 is down and A valid, B is refused: node 0 holds A's
	// key for as long as A is valid, and B cannot make a quorum of node 2
	// alone.
	b0 := newClient(t, newOtherClient(t, f, c), mode, cfg)
	lockB0, err := b0.TryLock(ctx, key)
	if time.Now().Before(untilA) {
		require.Error(t, err, "B won while node 1 was down and A's lock valid")
	} else {
		t.Logf("A's lock ran out during B's first attempt (%v): the machine is slow; its refusal is not checked", err)
		if err == nil {
			_ = lockB0.Unlock(ctx)
		}
	}

	// Node 1 restarts only once A's lock is no longer valid: the caller
	// knows this by reading A's Until.
	eventually(t, cfg.TTL+5*time.Second, func() bool { return !time.Now().Before(untilA) },
		"A's validity must run out")
	c.Restart(1)

	b := newClient(t, newOtherClient(t, f, c), mode, cfg)
	start := time.Now()
	lockB, err := b.TryLock(ctx, key)
	won := time.Now()
	require.NoError(t, err, "nodes 1 and 2 are free")
	assert.False(t, valid(lockA, start), "B's round started while A's lock was valid")
	assert.False(t, valid(lockA, won), "B won while A's lock was valid")
	assert.False(t, start.Before(untilA), "B's validity overlaps A's: A valid until %v, B's round started at %v",
		untilA, start)
	assert.True(t, valid(lockB, won))
	require.NoError(t, lockB.Unlock(ctx))
	requireNotHolding(t, c, key, lockB.Token(), all(3)...)
}
