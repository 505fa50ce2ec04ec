package systest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/drivers"
	"github.com/redlock-go/redlock/drivers/wire"
	"github.com/redlock-go/redlock/internal/redistest"
)

// shardedClient is a Client over members whose waiters retry after an
// hour, and whose locks live for ten minutes: a waiter that acquires
// within wakeTimeout heard the release.
func shardedClient(t *testing.T, md Members, members []drivers.Member) *redlock.Client {
	t.Helper()
	d, err := md.Dial(members, drivers.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, d.Close()) })
	c, err := redlock.NewClient(d, redlock.Options{
		TTL: 10 * time.Minute, NodeTimeout: time.Second, Backoff: redlock.RandomDelay(time.Hour, time.Hour)})
	require.NoError(t, err)
	return c
}

// pubsubCount returns the count PUBSUB sub (NUMSUB or SHARDNUMSUB) gives
// channel on s.
func pubsubCount(t *testing.T, s *redistest.Server, sub, channel string) int64 {
	t.Helper()
	r, err := s.Do("PUBSUB", sub, channel)
	require.NoError(t, err)
	return r.([]any)[1].(int64)
}

// requireShardSubscribed waits until the key's shard channel has one
// subscriber on owner, a shard subscriber (SSUBSCRIBE), and checks that no
// master has a classic subscription to the key's channels.
func requireShardSubscribed(t *testing.T, cl *redistest.Cluster, owner *redistest.Server, key string) {
	t.Helper()
	ch, ok := wire.ShardChannel(wire.ReleaseChannel(key))
	require.True(t, ok)
	require.Eventually(t, func() bool { return pubsubCount(t, owner, "SHARDNUMSUB", ch) == 1 },
		wakeTimeout, time.Millisecond, "the waiter's shard subscription to %s on %s", ch, owner.Addr)
	for _, m := range cl.Masters() {
		assert.Zero(t, pubsubCount(t, m, "NUMSUB", ch), "no classic subscription on %s", m.Addr)
		assert.Zero(t, pubsubCount(t, m, "NUMSUB", wire.ReleaseChannel(key)), "no classic subscription on %s", m.Addr)
	}
}

// testMembersClusterShardedRelease: on a Cluster member whose servers have
// sharded pub/sub, a waiter listens with SSUBSCRIBE on the master of its
// key's slot, and hears the release (SPUBLISH there): it acquires long
// before its retry delay or the holder's expiry. Its subscription follows
// the slot to another master (MigrateSlot), and to a replica promoted in
// its master's place (ForceFailover), and hears the releases there.
func testMembersClusterShardedRelease(t *testing.T, md Members) {
	cl := redistest.StartCluster(t, redistest.ClusterOptions{})
	members := []drivers.Member{drivers.NewCluster(cl.Addrs()...)}
	holder, waiter := shardedClient(t, md, members), shardedClient(t, md, members)
	const key = "sharded"
	ctx := testContext(t)

	hold := func() *redlock.Lock {
		t.Helper()
		l, err := holder.TryLock(ctx, key)
		require.NoError(t, err)
		return l
	}
	l := hold()
	got := lockAsync(t, waiter, key)
	owner := cl.MasterForKey(key)
	requireShardSubscribed(t, cl, owner, key)
	require.NoError(t, l.Unlock(ctx))
	requireLocked(t, got)

	// The slot moves: the server ends the shard subscription (sunsubscribe),
	// and the waiter subscribes again on the new owner.
	l = hold()
	got = lockAsync(t, waiter, key)
	requireShardSubscribed(t, cl, owner, key)
	to := otherMaster(cl, owner)
	cl.MigrateSlot(t, redistest.KeySlot(key), to)
	requireShardSubscribed(t, cl, to, key)
	assert.Zero(t, pubsubCount(t, owner, "SHARDNUMSUB", mustShard(t, key)), "none left on the old owner")
	require.NoError(t, l.Unlock(ctx))
	requireLocked(t, got)

	// The owner dies and its replica takes over.
	l = hold()
	replica := cl.ReplicasOf(to)[0]
	require.Eventually(t, func() bool {
		r, err := replica.DoAll([]any{"READONLY"}, []any{"GET", key})
		return err == nil && r[1] == l.Token().String()
	}, wakeTimeout, time.Millisecond, "the lock reached the replica")
	got = lockAsync(t, waiter, key)
	requireShardSubscribed(t, cl, to, key)
	cl.ForceFailover(t, replica)
	requireShardSubscribed(t, cl, replica, key)
	require.Eventually(t, func() bool { return l.Extend(ctx) == nil }, wakeTimeout, 10*time.Millisecond,
		"the holder reaches the new master")
	require.NoError(t, l.Unlock(ctx))
	requireLocked(t, got)
}

// mustShard returns the shard channel of key's releases.
func mustShard(t *testing.T, key string) string {
	t.Helper()
	ch, ok := wire.ShardChannel(wire.ReleaseChannel(key))
	require.True(t, ok)
	return ch
}

// testMembersClusterShardedFair: a Fair release on a Cluster member with
// sharded pub/sub tells the first waiter its turn over SSUBSCRIBE too.
func testMembersClusterShardedFair(t *testing.T, md Members) {
	cl := redistest.StartCluster(t, redistest.ClusterOptions{Replicas: -1})
	members := []drivers.Member{drivers.NewCluster(cl.Addrs()...)}
	fair := func() *redlock.Client {
		d, err := md.Dial(members, drivers.Options{})
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, d.Close()) })
		c, err := redlock.NewClient(d, redlock.Options{TTL: 10 * time.Minute, NodeTimeout: time.Second,
			Fair: true, Backoff: redlock.RandomDelay(time.Hour, time.Hour)})
		require.NoError(t, err)
		return c
	}
	holder, waiter := fair(), fair()
	const key = "fair"
	ctx := testContext(t)
	l, err := holder.TryLock(ctx, key)
	require.NoError(t, err)
	got := lockAsync(t, waiter, key)
	owner := cl.MasterForKey(key)
	queue, err := wire.ClusterName(wire.QueuePrefix, key)
	require.NoError(t, err)
	require.Eventually(t, func() bool { v, err := owner.Do("ZCARD", queue); return err == nil && v == int64(1) },
		wakeTimeout, time.Millisecond, "the waiter queues")
	require.Eventually(t, func() bool {
		r, err := owner.Do("PUBSUB", "SHARDCHANNELS", wire.TurnPrefix+"*")
		return err == nil && len(r.([]any)) == 1
	}, wakeTimeout, time.Millisecond, "the waiter listens to its turn with SSUBSCRIBE")
	r, err := owner.Do("PUBSUB", "CHANNELS", "redlock:*")
	require.NoError(t, err)
	assert.Empty(t, r, "no classic subscription")
	require.NoError(t, l.Unlock(ctx))
	requireLocked(t, got)
}

// testMembersClusterShardedKeys: waiters on keys of every master each
// listen on their key's master, and each hears its own key's release.
func testMembersClusterShardedKeys(t *testing.T, md Members) {
	cl := redistest.StartCluster(t, redistest.ClusterOptions{Replicas: -1})
	members := []drivers.Member{drivers.NewCluster(cl.Addrs()...)}
	holder, waiter := shardedClient(t, md, members), shardedClient(t, md, members)
	ctx := testContext(t)
	keys := []string{"{a}1", "{a}2", "b", "c", "d", "e", "f", "g"}
	owners := map[*redistest.Server]bool{}
	locks := make([]*redlock.Lock, len(keys))
	gots := make([]<-chan lockResult, len(keys))
	for i, key := range keys {
		l, err := holder.TryLock(ctx, key)
		require.NoError(t, err)
		locks[i] = l
		gots[i] = lockAsync(t, waiter, key)
		owners[cl.MasterForKey(key)] = true
	}
	require.Len(t, owners, 3, "keys on every master")
	for _, key := range keys {
		requireShardSubscribed(t, cl, cl.MasterForKey(key), key)
	}
	for i := range keys {
		require.NoError(t, locks[i].Unlock(ctx))
		requireLocked(t, gots[i])
	}
}

// testMembersClusterShardUnsubscribes: once a key's last waiter leaves and
// its watch ends, the member's shard subscription to the key's channel
// ends on the server too (SUNSUBSCRIBE): a client that waits on key after
// key leaves no subscriptions behind.
func testMembersClusterShardUnsubscribes(t *testing.T, md Members) {
	cl := redistest.StartCluster(t, redistest.ClusterOptions{Replicas: -1})
	members := []drivers.Member{drivers.NewCluster(cl.Addrs()...)}
	holder, waiter := shardedClient(t, md, members), shardedClient(t, md, members)
	const key = "unsubscribed"
	ctx := testContext(t)
	_, err := holder.TryLock(ctx, key)
	require.NoError(t, err)
	owner := cl.MasterForKey(key)

	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := waiter.Lock(wctx, key)
		done <- err
	}()
	requireShardSubscribed(t, cl, owner, key)
	cancel()
	require.ErrorIs(t, <-done, redlock.ErrCancelled)
	ch := mustShard(t, key)
	assert.Eventually(t, func() bool { return pubsubCount(t, owner, "SHARDNUMSUB", ch) == 0 },
		wakeTimeout, 10*time.Millisecond, "the shard subscription to %s outlives its watch on %s", ch, owner.Addr)
}

// testMembersClusterCloseWithMastersStopped: a shard subscription whose
// connection is killed while the Cluster's other masters are stopped
// (SIGSTOP) looks for the slot's master again, and the driver's Close
// still returns with those masters stopped: nothing after the end of a
// subscription waits on a node without a bound.
func testMembersClusterCloseWithMastersStopped(t *testing.T, md Members) {
	cl := redistest.StartCluster(t, redistest.ClusterOptions{Replicas: -1})
	d, err := md.Dial([]drivers.Member{drivers.NewCluster(cl.Addrs()...)}, drivers.Options{})
	require.NoError(t, err)
	c, err := redlock.NewClient(d, redlock.Options{
		TTL: 10 * time.Minute, NodeTimeout: time.Second, Backoff: redlock.RandomDelay(time.Hour, time.Hour)})
	require.NoError(t, err)
	const key = "closing"
	ctx := testContext(t)
	_, err = c.TryLock(ctx, key)
	require.NoError(t, err)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	go func() { defer close(done); _, _ = c.Lock(wctx, key) }()
	owner := cl.MasterForKey(key)
	requireShardSubscribed(t, cl, owner, key)

	var stopped []*redistest.Server
	defer func() {
		for _, m := range stopped {
			m.Cont()
		}
	}()
	for _, m := range cl.Masters() {
		if m != owner {
			m.Stop()
			stopped = append(stopped, m)
		}
	}
	_, err = owner.Do("CLIENT", "KILL", "TYPE", "pubsub") // the subscription ends: its slot may have moved
	require.NoError(t, err)
	cancel()
	<-done

	closed := make(chan error, 1)
	go func() { closed <- d.Close() }()
	select {
	case err := <-closed:
		assert.NoError(t, err)
	case <-time.After(wakeTimeout):
		for _, m := range stopped {
			m.Cont()
		}
		stopped = nil
		assert.NoError(t, <-closed)
		t.Fatal("Close waited for the stopped masters: it returned only once they continued")
	}
}
