package systest

import (
	"context"
	"errors"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers"
	"github.com/redlock-go/redlock/drivers/conformance"
	"github.com/redlock-go/redlock/drivers/engine"
	"github.com/redlock-go/redlock/drivers/wire"
	"github.com/redlock-go/redlock/internal/redistest"
	"github.com/redlock-go/redlock/internal/testguard"
)

// Members is what the member suite needs of a driver with DialMembers:
// the dial (MembersOf adapts the driver's), and a member's subscription
// and engine connection as DialMembers makes them (from the driver's
// export_test.go).
type Members struct {
	Dial       func(members []drivers.Member, opts drivers.Options) (conformance.Closer, error)
	Subscriber func(members []drivers.Member, opts drivers.Options) engine.SubscribeDialer
	Conn       func(ctx context.Context, m drivers.Member) (engine.Conn, error)
}

// MembersOf adapts a driver's DialMembers to Members.Dial: no driver (a
// nil interface) with an error.
func MembersOf[D conformance.Closer](dial func([]drivers.Member, drivers.Options) (D, error)) func([]drivers.Member, drivers.Options) (conformance.Closer, error) {
	return func(ms []drivers.Member, opts drivers.Options) (conformance.Closer, error) {
		d, err := dial(ms, opts)
		if err != nil {
			return nil, err
		}
		return d, nil
	}
}

// RunMembers runs the member suite over md, against real servers the
// tests start: standalone masters, Sentinel groups and Clusters, with and
// without WAIT, failovers, slot migrations, a mixed quorum and bad input.
func RunMembers(t *testing.T, md Members) {
	t.Run("ClusterMember", func(t *testing.T) { testMembersClusterMember(t, md) })
	t.Run("ClusterMemberThroughMigrationAndFailover", func(t *testing.T) { testMembersClusterMemberThroughMigrationAndFailover(t, md) })
	t.Run("ClusterMemberAcrossProcesses", func(t *testing.T) { testMembersClusterMemberAcrossProcesses(t, md) })
	t.Run("ClusterWaitGoesToTheKeysMaster", func(t *testing.T) { testMembersClusterWaitGoesToTheKeysMaster(t, md) })
	t.Run("MixedQuorum", func(t *testing.T) { testMembersMixedQuorum(t, md) })
	t.Run("ClusterSeedNotInClusterMode", func(t *testing.T) { testMembersClusterSeedNotInClusterMode(t, md) })
	t.Run("ClusterAnnouncesReleases", func(t *testing.T) { testMembersClusterAnnouncesReleases(t, md) })
	t.Run("ClusterShardedRelease", func(t *testing.T) { testMembersClusterShardedRelease(t, md) })
	t.Run("ClusterShardedFair", func(t *testing.T) { testMembersClusterShardedFair(t, md) })
	t.Run("ClusterShardUnsubscribes", func(t *testing.T) { testMembersClusterShardUnsubscribes(t, md) })
	t.Run("ClusterCloseWithMastersStopped", func(t *testing.T) { testMembersClusterCloseWithMastersStopped(t, md) })
	t.Run("ClusterShardedKeys", func(t *testing.T) { testMembersClusterShardedKeys(t, md) })
	t.Run("SameGroupTwiceIsRefused", func(t *testing.T) { testMembersSameGroupTwiceIsRefused(t, md) })
	t.Run("ClusterFair", func(t *testing.T) { testMembersClusterFair(t, md) })
	t.Run("ClusterPipelineKeepsTheLiveMastersReplies", func(t *testing.T) { testMembersClusterPipelineKeepsTheLiveMastersReplies(t, md) })
	t.Run("DialMembersValidation", func(t *testing.T) { testMembersDialMembersValidation(t, md) })
	t.Run("MembersStandalone", func(t *testing.T) { testMembersMembersStandalone(t, md) })
	t.Run("SentinelFailoverWithWait", func(t *testing.T) { testMembersSentinelFailoverWithWait(t, md) })
	t.Run("SentinelAnnouncesReleases", func(t *testing.T) { testMembersSentinelAnnouncesReleases(t, md) })
	t.Run("SentinelBadInput", func(t *testing.T) { testMembersSentinelBadInput(t, md) })
	t.Run("SentinelFailoverWithoutWait", func(t *testing.T) { testMembersSentinelFailoverWithoutWait(t, md) })
	t.Run("WaitCountsReplicas", func(t *testing.T) { testMembersWaitCountsReplicas(t, md) })
	t.Run("WaitWithoutReplicasIsRefused", func(t *testing.T) { testMembersWaitWithoutReplicasIsRefused(t, md) })
	t.Run("PrimitivesMixedQuorum", func(t *testing.T) { testMembersPrimitivesMixedQuorum(t, md) })
	t.Run("PrimitivesBadInput", func(t *testing.T) { testMembersPrimitivesBadInput(t, md) })
}

// membersClient is a fencing Client over members.
func membersClient(t *testing.T, md Members, members []drivers.Member) *redlock.Client {
	t.Helper()
	d, err := md.Dial(members, drivers.Options{})
	require.NoError(t, err)
	return lockClient(t, d, redlock.Options{TTL: 5 * time.Second, NodeTimeout: time.Second, Fencing: true})
}

// testMembersClusterMember: a Cluster as one member. The key's fence counter
// lives in its slot, on its master, under its Cluster name; a key that
// cannot be tagged is refused, sent nowhere.
func testMembersClusterMember(t *testing.T, md Members) {
	cl := redistest.StartCluster(t, redistest.ClusterOptions{})
	c := membersClient(t, md, []drivers.Member{drivers.NewCluster(cl.Addrs()...)})
	ctx := testguard.Context(t) // a hang fails the test, with a message
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
	require.ErrorIs(t, err, core.ErrQuorumUnreachable)
	assert.ErrorIs(t, err, wire.ErrUntaggable)
	assert.ErrorIs(t, err, drivers.ErrMisconfigured)
	assert.NotErrorIs(t, err, core.ErrInvalidConfig, "one kind: a failed vote")
	after := 0
	for _, s := range cl.Masters() {
		after += int(dbsize(t, s))
	}
	assert.Equal(t, before, after, "nothing written for an untaggable key")
}

// testMembersClusterMemberThroughMigrationAndFailover: goroutines take one lock
// on a Cluster member with WAIT for each master's replica, across a
// migration of the key's slot and a forced failover of its master: the
// counter the lock guards is exact and the fences strictly increase.
func testMembersClusterMemberThroughMigrationAndFailover(t *testing.T, md Members) {
	cl := redistest.StartCluster(t, redistest.ClusterOptions{})
	c := membersClient(t, md, []drivers.Member{drivers.NewCluster(cl.Addrs()...).WithWait(1, 500*time.Millisecond)})
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
	to := otherMaster(cl, from)
	cl.MigrateSlot(t, slot, to)
	require.Equal(t, to, cl.MasterForKey(key))
	waitProgress(15)
	old := cl.ForceFailover(t, cl.ReplicasOf(to)[0])
	old.Restart() // back as a replica: WAIT finds one again
	wg.Wait()
	assert.Equal(t, int64(workers*each), counter.Load(), "one holder at a time")
	t.Logf("%d sections, last fence %d, %d failed Lock or Unlock calls", counter.Load(), last.Load(), failures.Load())
}

// testMembersClusterWaitGoesToTheKeysMaster: a write with WAIT on a Cluster
// member goes with its WAIT to the master of its key's slot, whose
// replica then holds the key, and whose replica alone can fail the vote;
// a Cluster whose masters have fewer replicas than asked is refused
// before any command.
func testMembersClusterWaitGoesToTheKeysMaster(t *testing.T, md Members) {
	cl := redistest.StartCluster(t, redistest.ClusterOptions{})
	ctx := testguard.Context(t) // a hang fails the test, with a message
	c := membersClient(t, md, []drivers.Member{drivers.NewCluster(cl.Addrs()...).WithWait(1, time.Second)})
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
	d, err := md.Dial([]drivers.Member{member}, drivers.Options{})
	require.NoError(t, err)
	defer func() { assert.NoError(t, d.Close()) }()
	acquire := func(key string) core.Reply {
		b := d.Begin(ctx)
		defer b.Close()
		b.Send(0, core.Command{Op: core.OpAcquire, Key: key, Token: core.TokenFromUint64s(1, 2), TTL: 5 * time.Second}, core.SystemClock{}.Now().Add(3*time.Second))
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

	d2, err := md.Dial([]drivers.Member{drivers.NewCluster(cl.Addrs()...).WithWait(2, time.Second)}, drivers.Options{})
	require.NoError(t, err)
	c2 := lockClient(t, d2, redlock.Options{TTL: 3 * time.Second, NodeTimeout: time.Second})
	_, err = c2.TryLock(ctx, "refused")
	require.ErrorIs(t, err, core.ErrQuorumUnreachable)
	require.ErrorIs(t, err, drivers.ErrNotReplicated)
	assert.NotErrorIs(t, err, core.ErrInvalidConfig, "one kind: a failed vote")
	assert.ErrorContains(t, err, "WAIT for 2 replicas, but the master has 1 connected")
	assert.Nil(t, get(t, cl.MasterForKey("refused"), "refused"))
}

// testMembersMixedQuorum: a standalone master, a Sentinel group and a Cluster as
// the three members of one quorum, locked through the root package.
func testMembersMixedQuorum(t *testing.T, md Members) {
	s := redistest.Start(t, redistest.Options{})
	g := redistest.StartSentinelGroup(t, redistest.SentinelOptions{Replicas: 1, Sentinels: 1})
	cl := redistest.StartCluster(t, redistest.ClusterOptions{})
	c := membersClient(t, md, []drivers.Member{
		drivers.NewStandalone(s.Addr),
		drivers.NewSentinel(g.Name, g.SentinelAddrs()...).WithWait(1, time.Second),
		drivers.NewCluster(cl.Addrs()...).WithWait(1, time.Second),
	})
	ctx := testguard.Context(t) // a hang fails the test, with a message
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

// testMembersClusterSeedNotInClusterMode: a Cluster member whose seeds are
// standalone servers (one seed, which a client such as rueidis would take as a
// single client, or two) is a typed error naming the member, and no lock command
// reaches any server.
func testMembersClusterSeedNotInClusterMode(t *testing.T, md Members) {
	ss := redistest.StartN(t, 3, redistest.Options{})
	for _, cluster := range []drivers.Member{drivers.NewCluster(ss[1].Addr), drivers.NewCluster(ss[1].Addr, ss[2].Addr)} {
		d, err := md.Dial([]drivers.Member{drivers.NewStandalone(ss[0].Addr), cluster}, drivers.Options{})
		require.NoError(t, err)
		c, err := redlock.NewClient(d, redlock.Options{TTL: 3 * time.Second, NodeTimeout: time.Second})
		require.NoError(t, err)
		_, err = c.TryLock(context.Background(), "notcluster")
		require.NoError(t, d.Close())
		require.ErrorIs(t, err, core.ErrQuorumUnreachable, cluster.String())
		require.ErrorIs(t, err, drivers.ErrMisconfigured, cluster.String())
		assert.NotErrorIs(t, err, core.ErrInvalidConfig, "one kind: a failed vote")
		assert.ErrorContains(t, err, cluster.String()+": not a Cluster")
	}
	for _, s := range ss {
		assert.Zero(t, dbsize(t, s), "nothing left on %s", s.Addr)
	}
}

// testMembersClusterAnnouncesReleases: a Cluster member's subscription
// hears the release script's announcement from the key's master.
func testMembersClusterAnnouncesReleases(t *testing.T, md Members) {
	cl := redistest.StartCluster(t, redistest.ClusterOptions{Replicas: -1})
	testMembersAnnouncesReleases(t, md, []drivers.Member{drivers.NewCluster(cl.Addrs()...)})
}

// testMembersSentinelAnnouncesReleases: a Sentinel member's subscription,
// on the master its Sentinels name, hears the release script's PUBLISH.
func testMembersSentinelAnnouncesReleases(t *testing.T, md Members) {
	g := redistest.StartSentinelGroup(t, redistest.SentinelOptions{Replicas: 1, Sentinels: 1})
	testMembersAnnouncesReleases(t, md, []drivers.Member{drivers.NewSentinel(g.Name, g.SentinelAddrs()...)})
}

// testMembersAnnouncesReleases: the subscription DialMembers gives the
// engine for members[0] confirms a release channel, then hears a release.
func testMembersAnnouncesReleases(t *testing.T, md Members, members []drivers.Member) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := md.Subscriber(members, drivers.Options{})(ctx, 0)
	require.NoError(t, err)
	defer func() { _ = s.Close() }() // the subscription's Close reports nothing a test checks
	ch := wire.ReleaseChannel("announced")
	require.NoError(t, s.Subscribe(ctx, ch))
	e, err := s.Receive(ctx)
	require.NoError(t, err)
	require.Equal(t, engine.Event{Kind: engine.EventSubscribed, Channel: ch}, e)

	c := membersClient(t, md, members)
	lock, err := c.TryLock(ctx, "announced")
	require.NoError(t, err)
	require.NoError(t, lock.Unlock(ctx))
	e, err = s.Receive(ctx)
	require.NoError(t, err)
	assert.Equal(t, engine.Event{Kind: engine.EventMessage, Channel: ch}, e)
}

// testMembersSameGroupTwiceIsRefused: one Sentinel group, or one Cluster, given
// as two members under different addresses would vote twice: the second
// to connect is refused with ErrMisconfigured. So is a Cluster's master
// given as a standalone member besides the Cluster.
func testMembersSameGroupTwiceIsRefused(t *testing.T, md Members) {
	g := redistest.StartSentinelGroup(t, redistest.SentinelOptions{Replicas: 1, Sentinels: 2, Quorum: 1})
	cl := redistest.StartCluster(t, redistest.ClusterOptions{Replicas: -1})
	seeds := cl.Addrs()
	for _, members := range [][]drivers.Member{
		{drivers.NewSentinel(g.Name, g.Sentinels[0].Addr), drivers.NewSentinel(g.Name, g.Sentinels[1].Addr)},
		{drivers.NewCluster(seeds[0]), drivers.NewCluster(seeds[1], seeds[2])},
		{drivers.NewCluster(seeds[0]), drivers.NewStandalone(seeds[1])},
	} {
		d, err := md.Dial(members, drivers.Options{})
		require.NoError(t, err, "no address repeats: found at connect")
		c, err := redlock.NewClient(d, redlock.Options{TTL: 3 * time.Second, NodeTimeout: time.Second})
		require.NoError(t, err)
		_, err = c.TryLock(context.Background(), "twice")
		require.NoError(t, d.Close())
		require.ErrorIs(t, err, drivers.ErrMisconfigured, "%v", members)
		assert.NotErrorIs(t, err, core.ErrInvalidConfig, "one kind: a failed vote")
		assert.ErrorContains(t, err, "is the same server as node")
	}
	for _, s := range append(g.Servers, cl.MasterForKey("twice")) {
		assert.Nil(t, get(t, s, "twice"), "nothing left on %s", s.Addr)
	}
}

// testMembersClusterFair: Options.Fair on a Cluster member: the waiter queues
// live in the key's slot (one script takes the key and both queues),
// waiters are served in turn, and leave the queue when served.
func testMembersClusterFair(t *testing.T, md Members) {
	cl := redistest.StartCluster(t, redistest.ClusterOptions{Replicas: -1})
	members := []drivers.Member{drivers.NewCluster(cl.Addrs()...)}
	fair := func() *redlock.Client {
		d, err := md.Dial(members, drivers.Options{})
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, d.Close()) })
		c, err := redlock.NewClient(d, redlock.Options{TTL: 10 * time.Second, NodeTimeout: time.Second, Fair: true})
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
	// The waiters' Unlocks end before the test does: its cleanup closes
	// their drivers.
	var wg sync.WaitGroup
	defer wg.Wait()
	lockThen := func(name string, c *redlock.Client) {
		defer wg.Done()
		lk, err := c.Lock(ctx, "k")
		got <- name
		if assert.NoError(t, err, name) {
			assert.NoError(t, lk.Unlock(ctx), name)
		}
	}
	wg.Add(1)
	go lockThen("first", first)
	require.Eventually(t, queued(1), 10*time.Second, time.Millisecond, "the first queues in %s", queue)
	wg.Add(1)
	go lockThen("second", second)
	require.Eventually(t, queued(2), 10*time.Second, time.Millisecond, "then the second")
	require.NoError(t, l.Unlock(ctx))
	assert.Equal(t, "first", <-got)
	assert.Equal(t, "second", <-got)
	require.Eventually(t, queued(0), 10*time.Second, time.Millisecond, "each left the queue when served")
}

// testMembersClusterPipelineKeepsTheLiveMastersReplies: a pipeline over two
// masters, one of them dead, fails; the other master's reply is still
// returned, for its command's round (its SET ran).
func testMembersClusterPipelineKeepsTheLiveMastersReplies(t *testing.T, md Members) {
	cl := redistest.StartCluster(t, redistest.ClusterOptions{Replicas: -1})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := md.Conn(ctx, drivers.NewCluster(cl.Addrs()...))
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

func testMembersDialMembersValidation(t *testing.T, md Members) {
	for _, tc := range []struct {
		name    string
		members []drivers.Member
		opts    drivers.Options
		msg     string
	}{
		{"none", nil, drivers.Options{}, "no members"},
		{"no topology", []drivers.Member{{Addrs: []string{"a:1"}}}, drivers.Options{}, "no topology"},
		{"no master name", []drivers.Member{drivers.NewSentinel("", "a:1")}, drivers.Options{}, "master name"},
		{"no sentinels", []drivers.Member{drivers.NewSentinel("m")}, drivers.Options{}, "no addresses"},
		{"bad address", []drivers.Member{drivers.NewCluster("a:1", "nohost")}, drivers.Options{}, "nohost"},
		{"shared address", []drivers.Member{drivers.NewStandalone("a:1"), drivers.NewCluster("b:1", "a:1")}, drivers.Options{}, "two members reach one server"},
		{"wait without timeout", []drivers.Member{drivers.NewSentinel("m", "a:1").WithWait(1, 0)}, drivers.Options{}, "positive WaitTimeout"},
		{"cluster db", []drivers.Member{drivers.NewCluster("a:1")}, drivers.Options{DB: 2}, "a Cluster has only DB 0"},
		{"negative timeout", []drivers.Member{drivers.NewStandalone("a:1")}, drivers.Options{DialTimeout: -1}, "DialTimeout"},
	} {
		d, err := md.Dial(tc.members, tc.opts)
		require.ErrorIs(t, err, core.ErrInvalidConfig, tc.name)
		assert.ErrorContains(t, err, tc.msg, tc.name)
		assert.Nil(t, d, tc.name)
	}
}

// lockClient is a redlock.Client over d, closed with the test.
func lockClient(t *testing.T, d conformance.Closer, opts redlock.Options) *redlock.Client {
	t.Helper()
	t.Cleanup(func() { assert.NoError(t, d.Close()) })
	c, err := redlock.NewClient(d, opts)
	require.NoError(t, err)
	return c
}

func get(t *testing.T, s *redistest.Server, key string) any {
	t.Helper()
	v, err := s.Do("GET", key)
	require.NoError(t, err)
	return v
}

func dbsize(t *testing.T, s *redistest.Server) int64 {
	t.Helper()
	n, err := s.Do("DBSIZE")
	require.NoError(t, err)
	return n.(int64)
}

// testMembersMembersStandalone: Dial's nodes as members, locked through the
// root package.
func testMembersMembersStandalone(t *testing.T, md Members) {
	ss := redistest.StartN(t, 3, redistest.Options{})
	d, err := md.Dial(drivers.Members(ss[0].Addr, ss[1].Addr, ss[2].Addr), drivers.Options{})
	require.NoError(t, err)
	assert.Equal(t, ss[1].Addr, d.NodeName(1))
	c := lockClient(t, d, redlock.Options{TTL: 5 * time.Second, NodeTimeout: 2 * time.Second})
	ctx := testguard.Context(t) // a hang fails the test, with a message
	lock, err := c.TryLock(ctx, "members")
	require.NoError(t, err)
	held := 0
	for _, s := range ss {
		held += int(dbsize(t, s))
	}
	assert.GreaterOrEqual(t, held, 2, "a quorum holds the key")
	require.NoError(t, lock.Extend(ctx))
	require.NoError(t, lock.Unlock(ctx))
	for _, s := range ss {
		assert.Zero(t, dbsize(t, s))
	}
}

// sentinelClient is a Client whose one member is g, with or without WAIT.
func sentinelClient(t *testing.T, md Members, g *redistest.SentinelGroup, replicas int, ttl time.Duration) *redlock.Client {
	t.Helper()
	m := drivers.NewSentinel(g.Name, g.SentinelAddrs()...)
	if replicas > 0 {
		m = m.WithWait(replicas, time.Second)
	}
	d, err := md.Dial([]drivers.Member{m}, drivers.Options{})
	require.NoError(t, err)
	assert.Equal(t, m.String(), d.NodeName(0))
	return lockClient(t, d, redlock.Options{TTL: ttl, NodeTimeout: 2 * time.Second})
}

// testMembersSentinelFailoverWithWait: a lock taken with WAIT for both replicas
// survives its master's SIGKILL: the promoted replica holds it, a waiter
// that waited through the failover gets the key only once the holder's
// validity has ended, and nobody else before.
func testMembersSentinelFailoverWithWait(t *testing.T, md Members) {
	g := redistest.StartSentinelGroup(t, redistest.SentinelOptions{})
	// The failover must end within the TTL, or the promoted replica's copy
	// has expired. It takes DownAfter, then an election; a split vote
	// retries after twice the FailoverTimeout (4 s), and one was seen to
	// take the failover to 7 s. 15 s leaves room for three elections.
	const ttl = 15 * time.Second
	holder := sentinelClient(t, md, g, 2, ttl)
	other := sentinelClient(t, md, g, 0, ttl)
	ctx := testguard.Context(t) // a hang fails the test, with a message

	lock, err := holder.TryLock(ctx, "failover")
	require.NoError(t, err)
	for _, r := range g.Replicas() {
		assert.Equal(t, lock.Token().String(), get(t, r, "failover"), "WAIT: replica %s holds the key", r.Addr)
	}
	until := lock.Until()

	got := make(chan time.Time, 1)
	waiting := make(chan struct{})
	go func() {
		wctx, cancel := context.WithTimeout(ctx, 2*ttl)
		defer cancel()
		_, err := other.TryLock(wctx, "failover")
		assert.ErrorIs(t, err, redlock.ErrTaken, "held before the failover")
		close(waiting)
		l, err := other.Lock(wctx, "failover")
		if assert.NoError(t, err) {
			got <- time.Now()
			assert.NoError(t, l.Unlock(ctx))
		}
		close(got)
	}()
	<-waiting
	old := g.KillMaster()
	promoted := g.WaitFailover(t, old.Addr)
	assert.Equal(t, lock.Token().String(), get(t, promoted, "failover"), "the promoted replica holds the key (%v of the lock's validity left)", time.Until(until))

	_, err = other.TryLock(ctx, "failover")
	if time.Now().Before(until) {
		require.Error(t, err, "no second holder after the failover")
		if !errors.Is(err, redlock.ErrTaken) {
			// A connection still on the dead master loses this one vote
			// (radix's Sentinel client may not have switched yet): no
			// grant either way.
			require.ErrorIs(t, err, redlock.ErrQuorumUnreachable, "no second holder after the failover")
		}
	}
	at, ok := <-got
	if ok {
		<-got // closed after the waiter's Unlock, which must end before the test's cleanup stops the servers
	}
	require.True(t, ok, "the waiter got the key in the end")
	assert.False(t, at.Before(until), "the waiter got the key %v before the holder's validity ended", until.Sub(at))
}

// testMembersSentinelBadInput: an unknown master name and WAIT for more replicas
// than the master has are typed errors naming the member, and nothing is
// left on any server.
func testMembersSentinelBadInput(t *testing.T, md Members) {
	g := redistest.StartSentinelGroup(t, redistest.SentinelOptions{})
	ctx := testguard.Context(t) // a hang fails the test, with a message
	for _, tc := range []struct {
		m    drivers.Member
		kind error // the member's cause; the kind is ErrQuorumUnreachable
		msg  string
	}{
		{drivers.NewSentinel("nosuchmaster", g.SentinelAddrs()...), drivers.ErrMisconfigured, `the Sentinels know no master "nosuchmaster"`},
		// A failed vote: the master may get its replicas back.
		{drivers.NewSentinel(g.Name, g.SentinelAddrs()...).WithWait(3, time.Second), drivers.ErrNotReplicated, "WAIT for 3 replicas, but the master has 2 connected"},
	} {
		d, err := md.Dial([]drivers.Member{tc.m}, drivers.Options{})
		require.NoError(t, err)
		c, err := redlock.NewClient(d, redlock.Options{TTL: 3 * time.Second, NodeTimeout: time.Second})
		require.NoError(t, err)
		_, err = c.TryLock(ctx, "bad")
		require.NoError(t, d.Close())
		require.ErrorIs(t, err, core.ErrQuorumUnreachable, tc.m.String())
		require.ErrorIs(t, err, tc.kind, tc.m.String())
		assert.NotErrorIs(t, err, core.ErrInvalidConfig, "one kind: a failed vote")
		assert.ErrorContains(t, err, tc.msg)
		assert.ErrorContains(t, err, tc.m.String())
	}
	for _, s := range g.Servers {
		assert.Zero(t, dbsize(t, s), "nothing left on %s", s.Addr)
	}
}

// testMembersSentinelFailoverWithoutWait shows the documented risk of a Sentinel
// member without WAIT: replicas that had not received the lock's key
// (paused, their links cut, while it was written) are promoted without
// it, and a second client is granted the lock while the first still
// holds it.
func testMembersSentinelFailoverWithoutWait(t *testing.T, md Members) {
	g := redistest.StartSentinelGroup(t, redistest.SentinelOptions{})
	const ttl = 30 * time.Second
	first := sentinelClient(t, md, g, 0, ttl)
	second := sentinelClient(t, md, g, 0, ttl)
	ctx := testguard.Context(t) // a hang fails the test, with a message

	replicas := g.Replicas()
	for _, r := range replicas {
		r.Stop()
	}
	// A paused replica would still read, once resumed, what the master
	// wrote to its socket: the master drops its replicas' connections
	// first, and they cannot reconnect while paused.
	_, err := g.Master().Do("CLIENT", "KILL", "TYPE", "replica")
	require.NoError(t, err)
	lock, err := first.TryLock(ctx, "unreplicated")
	require.NoError(t, err)
	old := g.KillMaster()
	for _, r := range replicas {
		r.Cont()
	}
	promoted := g.WaitFailover(t, old.Addr)
	assert.Nil(t, get(t, promoted, "unreplicated"), "the promoted replica never received the key")

	// Lock, not TryLock: the second client's first command may meet its
	// connection to the old master, which the failover client closed.
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	lock2, err := second.Lock(lctx, "unreplicated")
	require.NoError(t, err, "a second holder: the risk WAIT removes")
	assert.True(t, time.Now().Before(lock.Until()), "the first holder's validity has not ended")
	assert.NotEqual(t, lock.Token(), lock2.Token())
}

// replicate makes r a replica of m and returns once it holds m's writes
// (WAIT on the master counts it).
func replicate(t *testing.T, m, r *redistest.Server) {
	t.Helper()
	_, err := m.Do("CONFIG", "SET", "repl-diskless-sync-delay", "0")
	require.NoError(t, err)
	_, err = r.Do("REPLICAOF", "127.0.0.1", m.Port)
	require.NoError(t, err)
	_, err = m.Do("SET", "replicate:probe", "1")
	require.NoError(t, err)
	n, err := m.Do("WAIT", 1, 10000)
	require.NoError(t, err)
	require.Equal(t, int64(1), n, "the replica caught up")
	_, err = m.Do("DEL", "replicate:probe")
	require.NoError(t, err)
}

// testMembersWaitCountsReplicas: a member with WAIT votes once its replica holds
// the key; with the replica hung, its vote fails with ErrNotReplicated,
// naming it, and the lock still stands on the other two. While a WAIT
// blocks, the member's other commands (a release of another lock) go on
// its other connection, answered before the WAIT returns.
func testMembersWaitCountsReplicas(t *testing.T, md Members) {
	ss := redistest.StartN(t, 4, redistest.Options{})
	master, replica := ss[0], ss[3]
	replicate(t, master, replica)
	members := drivers.Members(master.Addr, ss[1].Addr, ss[2].Addr)
	members[0] = members[0].WithWait(1, 1500*time.Millisecond)
	d, err := md.Dial(members, drivers.Options{})
	require.NoError(t, err)
	c := lockClient(t, d, redlock.Options{TTL: 5 * time.Second, NodeTimeout: 2 * time.Second})
	ctx := testguard.Context(t) // a hang fails the test, with a message

	run := func(op core.Op, key string) core.Reply {
		b := d.Begin(ctx)
		defer b.Close()
		b.Send(0, core.Command{Op: op, Key: key, Token: core.TokenFromUint64s(1, 2), TTL: 5 * time.Second}, core.SystemClock{}.Now().Add(3*time.Second))
		r, ok := b.Receive(nil)
		assert.True(t, ok)
		return r
	}
	acquire := func(key string) core.Reply { return run(core.OpAcquire, key) }
	r := acquire("waited")
	require.Equal(t, core.StatusOK, r.Status, "%v", r.Err)
	n, err := replica.Do("EXISTS", "waited")
	require.NoError(t, err)
	assert.Equal(t, int64(1), n, "the replica holds the key once the vote counts")

	replica.Stop()
	t.Cleanup(replica.Cont)
	waited := make(chan core.Reply, 1)
	go func() { waited <- acquire("unreplicated") }()
	require.Eventually(t, func() bool { // the WAIT is on the wire, blocked
		info, err := master.Do("INFO", "clients")
		return err == nil && strings.Contains(info.(string), "blocked_clients:1")
	}, 10*time.Second, 5*time.Millisecond)
	// The release of "waited" goes while WAIT blocks the other connection.
	assert.Equal(t, core.StatusOK, run(core.OpRelease, "waited").Status)
	select {
	case r := <-waited:
		t.Fatalf("the WAIT returned before the release: %v", r)
	default:
	}
	r = <-waited
	assert.Equal(t, core.StatusError, r.Status)
	assert.ErrorIs(t, r.Err, drivers.ErrNotReplicated)
	assert.ErrorContains(t, r.Err, master.Addr)
	assert.ErrorContains(t, r.Err, "0 acknowledged")

	lock, err := c.TryLock(ctx, "two-of-three")
	require.NoError(t, err, "the two other members carry the quorum")
	require.NoError(t, lock.Unlock(ctx))
	replica.Cont()
}

// testMembersWaitWithoutReplicasIsRefused: WAIT asked of a master without
// replicas is a typed error naming the member, and no lock command
// reaches any server.
func testMembersWaitWithoutReplicasIsRefused(t *testing.T, md Members) {
	ss := redistest.StartN(t, 3, redistest.Options{})
	members := drivers.Members(ss[0].Addr, ss[1].Addr, ss[2].Addr)
	members[1] = members[1].WithWait(1, 100*time.Millisecond)
	members[2] = members[2].WithWait(2, 100*time.Millisecond)
	d, err := md.Dial(members, drivers.Options{})
	require.NoError(t, err)
	c := lockClient(t, d, redlock.Options{TTL: 5 * time.Second, NodeTimeout: 2 * time.Second})
	_, err = c.TryLock(context.Background(), "refused")
	require.ErrorIs(t, err, core.ErrQuorumUnreachable)
	require.ErrorIs(t, err, drivers.ErrNotReplicated)
	assert.NotErrorIs(t, err, core.ErrInvalidConfig, "one kind: a failed vote")
	assert.ErrorContains(t, err, "WAIT for 1 replicas, but the master has 0 connected")
	assert.ErrorContains(t, err, ss[1].Addr)
	for _, s := range ss {
		assert.Zero(t, dbsize(t, s), "nothing left on %s", s.Addr)
	}
}

// otherMaster returns a master of cl other than m.
func otherMaster(cl *redistest.Cluster, m *redistest.Server) *redistest.Server {
	for _, o := range cl.Masters() {
		if o != m {
			return o
		}
	}
	return nil
}
