package radix_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers"
	"github.com/redlock-go/redlock/drivers/radix"
	"github.com/redlock-go/redlock/internal/redistest"
)

func TestDialMembersValidation(t *testing.T) {
	for _, tc := range []struct {
		name    string
		members []drivers.Member
		opts    radix.Options
		msg     string
	}{
		{"none", nil, radix.Options{}, "no members"},
		{"no topology", []drivers.Member{{Addrs: []string{"a:1"}}}, radix.Options{}, "no topology"},
		{"no master name", []drivers.Member{drivers.NewSentinel("", "a:1")}, radix.Options{}, "master name"},
		{"shared address", []drivers.Member{drivers.NewStandalone("a:1"), drivers.NewCluster("b:1", "a:1")}, radix.Options{}, "two members reach one server"},
		{"wait without timeout", []drivers.Member{drivers.NewStandalone("a:1").WithWait(1, 0)}, radix.Options{}, "positive WaitTimeout"},
		{"cluster db", []drivers.Member{drivers.NewCluster("a:1")}, radix.Options{DB: 2}, "member 0 cluster:a:1: a Cluster has only DB 0"},
		{"negative timeout", []drivers.Member{drivers.NewStandalone("a:1")}, radix.Options{DialTimeout: -1}, "DialTimeout"},
	} {
		d, err := radix.DialMembers(tc.members, tc.opts)
		require.ErrorIs(t, err, core.ErrInvalidConfig, tc.name)
		assert.ErrorContains(t, err, "radix", tc.name)
		assert.ErrorContains(t, err, tc.msg, tc.name)
		assert.Nil(t, d, tc.name)
	}
}

// membersClient is a fencing Client over members, closed with the test.
func membersClient(t *testing.T, members []drivers.Member) *redlock.Client {
	t.Helper()
	d, err := radix.DialMembers(members, radix.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, d.Close()) })
	c, err := redlock.NewClient(d, redlock.Options{Config: core.Config{TTL: 5 * time.Second, NodeTimeout: time.Second, Fencing: true}})
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

// TestMembersStandaloneWait: standalone members lock, extend and unlock
// through the root package; WAIT asked of a master without replicas is a
// typed error naming the member, and no lock command reaches any server.
func TestMembersStandaloneWait(t *testing.T) {
	ss := redistest.StartN(t, 3, redistest.Options{})
	members := drivers.Members(addrs(ss)...)
	c := membersClient(t, members)
	ctx := context.Background()
	lock, err := c.TryLock(ctx, "members")
	require.NoError(t, err)
	held := 0
	for _, s := range ss {
		if get(t, s, "members") == lock.Token().String() {
			held++
		}
	}
	assert.GreaterOrEqual(t, held, 2, "a quorum holds the key")
	require.NoError(t, lock.Extend(ctx))
	require.NoError(t, lock.Unlock(ctx))
	for _, s := range ss {
		assert.Nil(t, get(t, s, "members"))
	}

	members[1] = members[1].WithWait(1, 100*time.Millisecond)
	members[2] = members[2].WithWait(2, 100*time.Millisecond)
	_, err = membersClient(t, members).TryLock(ctx, "refused")
	require.ErrorIs(t, err, core.ErrInvalidConfig)
	assert.ErrorContains(t, err, "WAIT for 1 replicas, but the master has 0 connected")
	assert.ErrorContains(t, err, ss[1].Addr)
	for _, s := range ss {
		assert.Nil(t, get(t, s, "refused"), "nothing left on %s", s.Addr)
	}
}

// TestMixedQuorum: a standalone master, a Sentinel group and a Cluster as
// the three members of one quorum, locked through the root package, WAIT
// on both groups: the fences increase, a quorum of members holds each
// lock, and each release reaches every member.
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
		d, err := radix.DialMembers(members, radix.Options{})
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

// TestWaitCountsReplicas: a member with WAIT votes once its replica holds
// the key; with the replica hung, its vote fails with ErrNotReplicated,
// naming it, and the lock still stands on the other two. While a WAIT
// blocks, the member's other commands (a release of another lock) go on
// its other connection, answered before the WAIT returns.
func TestWaitCountsReplicas(t *testing.T) {
	ss := redistest.StartN(t, 4, redistest.Options{})
	master, replica := ss[0], ss[3]
	replicate(t, master, replica)
	members := drivers.Members(master.Addr, ss[1].Addr, ss[2].Addr)
	members[0] = members[0].WithWait(1, 1500*time.Millisecond)
	d, err := radix.DialMembers(members, radix.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, d.Close()) })
	c, err := redlock.NewClient(d, redlock.Options{Config: core.Config{TTL: 5 * time.Second, NodeTimeout: 2 * time.Second}})
	require.NoError(t, err)
	ctx := context.Background()

	run := func(op core.Op, key string) core.Reply {
		b := d.Begin(ctx)
		defer b.Close()
		b.Send(0, core.Command{Op: op, Key: key, Token: core.TokenFromUint64s(1, 2), TTL: 5 * time.Second}, d.Clock().Now().Add(3*time.Second))
		r, ok := b.Receive(nil)
		assert.True(t, ok)
		return r
	}
	r := run(core.OpAcquire, "waited")
	require.Equal(t, core.StatusOK, r.Status, "%v", r.Err)
	assert.Equal(t, core.TokenFromUint64s(1, 2).String(), get(t, replica, "waited"), "the replica holds the key once the vote counts")

	replica.Stop()
	t.Cleanup(replica.Cont)
	waited := make(chan core.Reply, 1)
	go func() { waited <- run(core.OpAcquire, "unreplicated") }()
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
