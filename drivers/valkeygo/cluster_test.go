package valkeygo_test

import (
	"context"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers"
	"github.com/redlock-go/redlock/drivers/internal/engine"
	"github.com/redlock-go/redlock/drivers/internal/wire"
	"github.com/redlock-go/redlock/drivers/valkeygo"
	"github.com/redlock-go/redlock/internal/redistest"
)

// membersClient is a fencing Client over members.
func membersClient(t *testing.T, members []drivers.Member) *redlock.Client {
	t.Helper()
	d, err := valkeygo.DialMembers(members, valkeygo.Options{})
	require.NoError(t, err)
	return lockClient(t, d, core.Config{TTL: 5 * time.Second, NodeTimeout: time.Second, Fencing: true})
}

// TestClusterMember: a Cluster as one member. The key's fence counter
// lives in its slot, on its master, under its Cluster name; a key that
// cannot be tagged is refused, sent nowhere.
func TestClusterMember(t *testing.T) {
	cl := redistest.StartCluster(t, redistest.ClusterOptions{})
	c := membersClient(t, []drivers.Member{drivers.NewCluster(cl.Addrs()...)})
	ctx := context.Background()
	for _, key := range []string{"plain", "{tag}:x"} {
		lock, err := c.TryLock(ctx, key)
		require.NoError(t, err, key)
		fence, err := lock.Fence()
		require.NoError(t, err)
		assert.Equal(t, uint64(1), fence)
		m := cl.MasterForKey(key)
		assert.Equal(t, lock.Token().String(), get(t, m, key))
		name, err := wire.ClusterName(core.FenceKeyPrefix, key)
		require.NoError(t, err)
		assert.Equal(t, "1", get(t, m, name), "the counter %s is on the key's master", name)
		require.NoError(t, lock.Extend(ctx))
		require.NoError(t, lock.Unlock(ctx))
		assert.Nil(t, get(t, m, key))
	}
	before := 0
	for _, s := range cl.Masters() {
		before += int(dbsize(t, s))
	}
	_, err := c.TryLock(ctx, "a}b")
	require.ErrorIs(t, err, core.ErrInvalidConfig)
	assert.ErrorIs(t, err, wire.ErrUntaggable)
	after := 0
	for _, s := range cl.Masters() {
		after += int(dbsize(t, s))
	}
	assert.Equal(t, before, after, "nothing written for an untaggable key")
}

// TestClusterMemberThroughMigrationAndFailover: goroutines take one lock
// on a Cluster member with WAIT for each master's replica, across a
// migration of the key's slot and a forced failover of its master: the
// counter the lock guards is exact and the fences strictly increase.
func TestClusterMemberThroughMigrationAndFailover(t *testing.T) {
	cl := redistest.StartCluster(t, redistest.ClusterOptions{})
	c := membersClient(t, []drivers.Member{drivers.NewCluster(cl.Addrs()...).WithWait(1, 500*time.Millisecond)})
	const key, workers, each = "counted", 4, 25
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	var counter atomic.Int64
	var last atomic.Uint64
	var failures atomic.Int64
	progress := make(chan struct{}, workers*each)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for done := 0; done < each; {
				lock, err := c.Lock(ctx, key)
				if err != nil {
					if ctx.Err() != nil {
						t.Errorf("gave up: %v", err)
						return
					}
					failures.Add(1)
					time.Sleep(20 * time.Millisecond) // pace retries through the failover
					continue
				}
				fence, err := lock.Fence()
				assert.NoError(t, err)
				if prev := last.Swap(fence); fence <= prev {
					t.Errorf("fence %d after %d", fence, prev)
				}
				v := counter.Load()
				runtime.Gosched() // an overlapping holder would lose an update
				counter.Store(v + 1)
				if err := lock.Unlock(ctx); err != nil {
					failures.Add(1) // lost in the failover, the key expires: still one holder at a time
				}
				done++
				progress <- struct{}{}
			}
		}()
	}
	waitProgress := func(n int) {
		t.Helper()
		for range n {
			select {
			case <-progress:
			case <-ctx.Done():
				t.Fatal("no progress")
			}
		}
	}
	waitProgress(15)
	slot := redistest.KeySlot(key)
	from := cl.MasterForKey(key)
	var to *redistest.Server
	for _, m := range cl.Masters() {
		if m != from {
			to = m
			break
		}
	}
	cl.MigrateSlot(t, slot, to)
	require.Equal(t, to, cl.MasterForKey(key))
	waitProgress(15)
	old := cl.ForceFailover(t, cl.ReplicasOf(to)[0])
	old.Restart() // back as a replica: WAIT finds one again
	wg.Wait()
	assert.Equal(t, int64(workers*each), counter.Load(), "one holder at a time")
	t.Logf("%d sections, last fence %d, %d failed Lock or Unlock calls", counter.Load(), last.Load(), failures.Load())
}

// TestClusterWaitGoesToTheKeysMaster: a write with WAIT on a Cluster
// member goes with its WAIT to the master of its key's slot, whose
// replica then holds the key, and whose replica alone can fail the vote;
// a Cluster whose masters have fewer replicas than asked is refused
// before any command.
func TestClusterWaitGoesToTheKeysMaster(t *testing.T) {
	cl := redistest.StartCluster(t, redistest.ClusterOptions{})
	ctx := context.Background()
	c := membersClient(t, []drivers.Member{drivers.NewCluster(cl.Addrs()...).WithWait(1, time.Second)})
	for i := range 6 { // keys of several slots, on every master
		key := "waited" + strconv.Itoa(i)
		lock, err := c.TryLock(ctx, key)
		require.NoError(t, err, key)
		m := cl.MasterForKey(key)
		assert.Equal(t, lock.Token().String(), get(t, m, key))
		// A replica's GET would be MOVED: WAIT counted it, so it holds
		// every key its master holds.
		for _, r := range cl.ReplicasOf(m) {
			assert.Equal(t, dbsize(t, m), dbsize(t, r), "WAIT: replica %s holds %s", r.Addr, key)
		}
		require.NoError(t, lock.Unlock(ctx))
	}

	// With the replica of one key's master hung, that key's vote fails
	// short of replicas, and a key of another master still gets its
	// replica's acknowledgement: each WAIT went to its key's master.
	member := drivers.NewCluster(cl.Addrs()...).WithWait(1, 300*time.Millisecond)
	d, err := valkeygo.DialMembers([]drivers.Member{member}, valkeygo.Options{})
	require.NoError(t, err)
	defer func() { assert.NoError(t, d.Close()) }()
	acquire := func(key string) core.Reply {
		b := d.Begin(ctx)
		defer b.Close()
		b.Send(0, core.Command{Op: core.OpAcquire, Key: key, Token: core.TokenFromUint64s(1, 2), TTL: 5 * time.Second}, d.Clock().Now().Add(3*time.Second))
		r, ok := b.Receive(nil)
		assert.True(t, ok)
		return r
	}
	hung, other := "hung", ""
	for i := 0; other == ""; i++ {
		if k := "other" + strconv.Itoa(i); cl.MasterForKey(k) != cl.MasterForKey(hung) {
			other = k
		}
	}
	require.Equal(t, core.StatusOK, acquire("warmup"+hung).Status, "connected")
	replica := cl.ReplicasOf(cl.MasterForKey(hung))[0]
	replica.Stop()
	t.Cleanup(replica.Cont)
	r := acquire(hung)
	assert.Equal(t, core.StatusError, r.Status)
	assert.ErrorIs(t, r.Err, drivers.ErrNotReplicated)
	assert.ErrorContains(t, r.Err, member.String())
	r = acquire(other)
	assert.Equal(t, core.StatusOK, r.Status, "%v", r.Err)
	replica.Cont()

	d2, err := valkeygo.DialMembers([]drivers.Member{drivers.NewCluster(cl.Addrs()...).WithWait(2, time.Second)}, valkeygo.Options{})
	require.NoError(t, err)
	c2 := lockClient(t, d2, core.Config{TTL: 2 * time.Second, NodeTimeout: time.Second})
	_, err = c2.TryLock(ctx, "refused")
	require.ErrorIs(t, err, core.ErrInvalidConfig)
	assert.ErrorContains(t, err, "WAIT for 2 replicas, but the master has 1 connected")
	assert.Nil(t, get(t, cl.MasterForKey("refused"), "refused"))
}

// TestMixedQuorum: a standalone master, a Sentinel group and a Cluster as
// the three members of one quorum, locked through the root package.
func TestMixedQuorum(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	g := redistest.StartSentinelGroup(t, redistest.SentinelOptions{Replicas: 1, Sentinels: 1})
	cl := redistest.StartCluster(t, redistest.ClusterOptions{})
	c := membersClient(t, []drivers.Member{
		drivers.NewStandalone(s.Addr),
		drivers.NewSentinel(g.Name, g.SentinelAddrs()...).WithWait(1, time.Second),
		drivers.NewCluster(cl.Addrs()...).WithWait(1, time.Second),
	})
	ctx := context.Background()
	var last uint64
	for i := range 3 {
		lock, err := c.Lock(ctx, "mixed")
		require.NoError(t, err, i)
		fence, err := lock.Fence()
		require.NoError(t, err)
		assert.Greater(t, fence, last)
		last = fence
		tok := lock.Token().String()
		holders := 0
		for _, srv := range []*redistest.Server{s, g.Master(), cl.MasterForKey("mixed")} {
			if get(t, srv, "mixed") == tok {
				holders++
			}
		}
		assert.GreaterOrEqual(t, holders, 2, "a quorum of the members holds the key")
		require.NoError(t, lock.Extend(ctx))
		require.NoError(t, lock.Unlock(ctx))
		for _, srv := range []*redistest.Server{s, g.Master(), cl.MasterForKey("mixed")} {
			assert.Nil(t, get(t, srv, "mixed"), "released on %s", srv.Addr)
		}
	}
}

// TestClusterSeedNotInClusterMode: a Cluster member whose seeds are
// standalone servers (one seed, which valkey-go would take as a single
// client, or two) is a typed error naming the member, and no lock command
// reaches any server.
func TestClusterSeedNotInClusterMode(t *testing.T) {
	ss := redistest.StartN(t, 3, redistest.Options{})
	for _, cluster := range []drivers.Member{drivers.NewCluster(ss[1].Addr), drivers.NewCluster(ss[1].Addr, ss[2].Addr)} {
		d, err := valkeygo.DialMembers([]drivers.Member{drivers.NewStandalone(ss[0].Addr), cluster}, valkeygo.Options{})
		require.NoError(t, err)
		c, err := redlock.NewClient(d, redlock.Options{Config: core.Config{TTL: 2 * time.Second, NodeTimeout: time.Second}})
		require.NoError(t, err)
		_, err = c.TryLock(context.Background(), "notcluster")
		require.NoError(t, d.Close())
		require.ErrorIs(t, err, core.ErrInvalidConfig, cluster.String())
		assert.ErrorContains(t, err, cluster.String()+": not a Cluster")
	}
	for _, s := range ss {
		assert.Zero(t, dbsize(t, s), "nothing left on %s", s.Addr)
	}
}

// TestClusterAnnouncesReleases: a Cluster member's subscription, on
// whichever node the cluster client picks, hears the release script's
// PUBLISH from the key's master: a Cluster broadcasts it.
func TestClusterAnnouncesReleases(t *testing.T) {
	cl := redistest.StartCluster(t, redistest.ClusterOptions{Replicas: -1})
	members := []drivers.Member{drivers.NewCluster(cl.Addrs()...)}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := valkeygo.MembersSubscriber(members, valkeygo.Options{})(ctx, 0)
	require.NoError(t, err)
	defer func() { _ = s.Close() }() // the subscription's Close reports nothing a test checks
	ch := wire.ReleaseChannel("announced")
	require.NoError(t, s.Subscribe(ctx, ch))
	e, err := s.Receive(ctx)
	require.NoError(t, err)
	require.Equal(t, engine.Event{Kind: engine.EventSubscribed, Channel: ch}, e)

	c := membersClient(t, members)
	lock, err := c.TryLock(ctx, "announced")
	require.NoError(t, err)
	require.NoError(t, lock.Unlock(ctx))
	e, err = s.Receive(ctx)
	require.NoError(t, err)
	assert.Equal(t, engine.Event{Kind: engine.EventMessage, Channel: ch}, e)
}

// TestSameGroupTwiceIsRefused: one Sentinel group, or one Cluster, given
// as two members under different addresses would vote twice: the second
// to connect is refused with ErrInvalidConfig. So is a Cluster's master
// given as a standalone member besides the Cluster.
func TestSameGroupTwiceIsRefused(t *testing.T) {
	g := redistest.StartSentinelGroup(t, redistest.SentinelOptions{Replicas: 1, Sentinels: 2, Quorum: 1})
	cl := redistest.StartCluster(t, redistest.ClusterOptions{Replicas: -1})
	seeds := cl.Addrs()
	for _, members := range [][]drivers.Member{
		{drivers.NewSentinel(g.Name, g.Sentinels[0].Addr), drivers.NewSentinel(g.Name, g.Sentinels[1].Addr)},
		{drivers.NewCluster(seeds[0]), drivers.NewCluster(seeds[1], seeds[2])},
		{drivers.NewCluster(seeds[0]), drivers.NewStandalone(seeds[1])},
	} {
		d, err := valkeygo.DialMembers(members, valkeygo.Options{})
		require.NoError(t, err, "no address repeats: found at connect")
		c, err := redlock.NewClient(d, redlock.Options{Config: core.Config{TTL: 2 * time.Second, NodeTimeout: time.Second}})
		require.NoError(t, err)
		_, err = c.TryLock(context.Background(), "twice")
		require.NoError(t, d.Close())
		require.ErrorIs(t, err, core.ErrInvalidConfig, "%v", members)
		assert.ErrorContains(t, err, "is the same server as node")
	}
	for _, s := range append(g.Servers, cl.MasterForKey("twice")) {
		assert.Nil(t, get(t, s, "twice"), "nothing left on %s", s.Addr)
	}
}

// TestClusterFair: Config.Fair on a Cluster member: the waiter queues
// live in the key's slot (one script takes the key and both queues),
// waiters are served in turn, and leave the queue when served.
func TestClusterFair(t *testing.T) {
	cl := redistest.StartCluster(t, redistest.ClusterOptions{Replicas: -1})
	members := []drivers.Member{drivers.NewCluster(cl.Addrs()...)}
	fair := func() *redlock.Client {
		d, err := valkeygo.DialMembers(members, valkeygo.Options{})
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, d.Close()) })
		c, err := redlock.NewClient(d, redlock.Options{Config: core.Config{TTL: 10 * time.Second, NodeTimeout: time.Second, Fair: true}})
		require.NoError(t, err)
		return c
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a guard, not a wait
	defer cancel()
	holder, first, second := fair(), fair(), fair()
	m := cl.MasterForKey("k")
	queue, err := wire.ClusterName(wire.QueuePrefix, "k")
	require.NoError(t, err)
	queued := func(n int64) func() bool {
		return func() bool { v, err := m.Do("ZCARD", queue); return err == nil && v == n }
	}

	l, err := holder.TryLock(ctx, "k")
	require.NoError(t, err)
	got := make(chan string, 2)
	lockThen := func(name string, c *redlock.Client) {
		lk, err := c.Lock(ctx, "k")
		got <- name
		if assert.NoError(t, err, name) {
			assert.NoError(t, lk.Unlock(ctx), name)
		}
	}
	go lockThen("first", first)
	require.Eventually(t, queued(1), 10*time.Second, time.Millisecond, "the first queues in %s", queue)
	go lockThen("second", second)
	require.Eventually(t, queued(2), 10*time.Second, time.Millisecond, "then the second")
	require.NoError(t, l.Unlock(ctx))
	assert.Equal(t, "first", <-got)
	assert.Equal(t, "second", <-got)
	require.Eventually(t, queued(0), 10*time.Second, time.Millisecond, "each left the queue when served")
}

// TestClusterPipelineKeepsTheLiveMastersReplies: a pipeline over two
// masters, one of them dead, fails; the other master's reply is still
// returned, for its command's round (its SET ran).
func TestClusterPipelineKeepsTheLiveMastersReplies(t *testing.T) {
	cl := redistest.StartCluster(t, redistest.ClusterOptions{Replicas: -1})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := valkeygo.MemberConn(ctx, drivers.NewCluster(cl.Addrs()...))
	require.NoError(t, err)
	defer func() { assert.NoError(t, conn.Close()) }()
	ids, _, err := conn.(engine.Identifier).Identify(ctx)
	require.NoError(t, err)
	assert.Len(t, ids, len(cl.Masters()), "one run_id per master")
	dead, live := "k0", ""
	for i := 1; live == ""; i++ {
		if k := "k" + strconv.Itoa(i); cl.MasterForKey(k) != cl.MasterForKey(dead) {
			live = k
		}
	}
	cl.MasterForKey(dead).Kill()
	replies := make([]engine.Reply, 2)
	err = conn.Exchange(ctx, [][]string{{"SET", dead, "t", "NX", "PX", "10000"}, {"SET", live, "t", "NX", "PX", "10000"}}, replies)
	require.Error(t, err, "a master is dead")
	assert.Equal(t, engine.KindNone, replies[0].Kind)
	assert.Equal(t, engine.KindOK, replies[1].Kind, "the live master's reply")
	assert.Equal(t, "t", get(t, cl.MasterForKey(live), live))
}
