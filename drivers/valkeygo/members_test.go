package valkeygo_test

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
	"github.com/redlock-go/redlock/drivers/valkeygo"
	"github.com/redlock-go/redlock/internal/redistest"
)

func TestDialMembersValidation(t *testing.T) {
	for _, tc := range []struct {
		name    string
		members []drivers.Member
		opts    valkeygo.Options
		msg     string
	}{
		{"none", nil, valkeygo.Options{}, "no members"},
		{"no topology", []drivers.Member{{Addrs: []string{"a:1"}}}, valkeygo.Options{}, "no topology"},
		{"no master name", []drivers.Member{drivers.NewSentinel("", "a:1")}, valkeygo.Options{}, "master name"},
		{"no sentinels", []drivers.Member{drivers.NewSentinel("m")}, valkeygo.Options{}, "no addresses"},
		{"bad address", []drivers.Member{drivers.NewCluster("a:1", "nohost")}, valkeygo.Options{}, "nohost"},
		{"shared address", []drivers.Member{drivers.NewStandalone("a:1"), drivers.NewCluster("b:1", "a:1")}, valkeygo.Options{}, "two members reach one server"},
		{"wait without timeout", []drivers.Member{drivers.NewSentinel("m", "a:1").WithWait(1, 0)}, valkeygo.Options{}, "positive WaitTimeout"},
		{"cluster db", []drivers.Member{drivers.NewCluster("a:1")}, valkeygo.Options{DB: 2}, "a Cluster has only DB 0"},
		{"negative timeout", []drivers.Member{drivers.NewStandalone("a:1")}, valkeygo.Options{DialTimeout: -1}, "DialTimeout"},
	} {
		d, err := valkeygo.DialMembers(tc.members, tc.opts)
		require.ErrorIs(t, err, core.ErrInvalidConfig, tc.name)
		assert.ErrorContains(t, err, tc.msg, tc.name)
		assert.Nil(t, d, tc.name)
	}
}

func TestMemberOption(t *testing.T) {
	opts := valkeygo.Options{Password: "p", DB: 3, DialTimeout: time.Second}
	s := valkeygo.MemberOption(drivers.NewSentinel("mymaster", "a:1", "b:2"), opts)
	assert.Equal(t, []string{"a:1", "b:2"}, s.InitAddress)
	assert.Equal(t, "mymaster", s.Sentinel.MasterSet)
	assert.Empty(t, s.Sentinel.Password, "the Sentinels are asked without credentials")
	assert.Equal(t, time.Second, s.Sentinel.Dialer.Timeout)
	assert.Equal(t, 3, s.SelectDB)
	assert.True(t, s.DisableRetry)
	c := valkeygo.MemberOption(drivers.NewCluster("a:1", "b:2"), valkeygo.Options{})
	assert.False(t, c.ForceSingleClient, "a cluster client")
	assert.True(t, c.DisableRetry)
	assert.True(t, c.ShuffleInit)
	assert.Empty(t, c.Sentinel.MasterSet)
}

// lockClient is a redlock.Client over d, closed with the test.
func lockClient(t *testing.T, d *valkeygo.Driver, cfg core.Config) *redlock.Client {
	t.Helper()
	t.Cleanup(func() { assert.NoError(t, d.Close()) })
	c, err := redlock.NewClient(d, redlock.Options{Config: cfg})
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

// TestMembersStandalone: Dial's nodes as members, locked through the
// root package.
func TestMembersStandalone(t *testing.T) {
	ss := redistest.StartN(t, 3, redistest.Options{})
	d, err := valkeygo.DialMembers(drivers.Members(ss[0].Addr, ss[1].Addr, ss[2].Addr), valkeygo.Options{})
	require.NoError(t, err)
	assert.Equal(t, ss[1].Addr, d.NodeName(1))
	c := lockClient(t, d, core.Config{TTL: 5 * time.Second, NodeTimeout: 2 * time.Second})
	ctx := context.Background()
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
func sentinelClient(t *testing.T, g *redistest.SentinelGroup, replicas int, ttl time.Duration) *redlock.Client {
	t.Helper()
	m := drivers.NewSentinel(g.Name, g.SentinelAddrs()...)
	if replicas > 0 {
		m = m.WithWait(replicas, time.Second)
	}
	d, err := valkeygo.DialMembers([]drivers.Member{m}, valkeygo.Options{})
	require.NoError(t, err)
	assert.Equal(t, m.String(), d.NodeName(0))
	return lockClient(t, d, core.Config{TTL: ttl, NodeTimeout: 2 * time.Second})
}

// TestSentinelFailoverWithWait: a lock taken with WAIT for both replicas
// survives its master's SIGKILL: the promoted replica holds it, a waiter
// that waited through the failover gets the key only once the holder's
// validity has ended, and nobody else before.
func TestSentinelFailoverWithWait(t *testing.T) {
	g := redistest.StartSentinelGroup(t, redistest.SentinelOptions{})
	const ttl = 4 * time.Second
	holder := sentinelClient(t, g, 2, ttl)
	other := sentinelClient(t, g, 0, ttl)
	ctx := context.Background()

	lock, err := holder.TryLock(ctx, "failover")
	require.NoError(t, err)
	for _, r := range g.Replicas() {
		assert.Equal(t, lock.Token().String(), get(t, r, "failover"), "WAIT: replica %s holds the key", r.Addr)
	}
	until := lock.Until()

	got := make(chan time.Time, 1)
	waiting := make(chan struct{})
	go func() {
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
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
	assert.Equal(t, lock.Token().String(), get(t, promoted, "failover"), "the promoted replica holds the key")

	_, err = other.TryLock(ctx, "failover")
	if time.Now().Before(until) {
		require.ErrorIs(t, err, redlock.ErrTaken, "no second holder after the failover")
	}
	at, ok := <-got
	require.True(t, ok, "the waiter got the key in the end")
	assert.False(t, at.Before(until), "the waiter got the key %v before the holder's validity ended", until.Sub(at))
}

// TestSentinelBadInput: an unknown master name and WAIT for more replicas
// than the master has are typed errors naming the member, and nothing is
// left on any server.
func TestSentinelBadInput(t *testing.T) {
	g := redistest.StartSentinelGroup(t, redistest.SentinelOptions{})
	ctx := context.Background()
	for _, tc := range []struct {
		m   drivers.Member
		msg string
	}{
		{drivers.NewSentinel("nosuchmaster", g.SentinelAddrs()...), `the Sentinels know no master "nosuchmaster"`},
		{drivers.NewSentinel(g.Name, g.SentinelAddrs()...).WithWait(3, time.Second), "WAIT for 3 replicas, but the master has 2 connected"},
	} {
		d, err := valkeygo.DialMembers([]drivers.Member{tc.m}, valkeygo.Options{})
		require.NoError(t, err)
		c, err := redlock.NewClient(d, redlock.Options{Config: core.Config{TTL: 2 * time.Second, NodeTimeout: time.Second}})
		require.NoError(t, err)
		_, err = c.TryLock(ctx, "bad")
		require.NoError(t, d.Close())
		require.ErrorIs(t, err, core.ErrInvalidConfig, tc.m.String())
		assert.ErrorContains(t, err, tc.msg)
		assert.ErrorContains(t, err, tc.m.String())
	}
	for _, s := range g.Servers {
		assert.Zero(t, dbsize(t, s), "nothing left on %s", s.Addr)
	}
}

// TestSentinelFailoverWithoutWait shows the documented risk of a Sentinel
// member without WAIT: replicas that had not received the lock's key
// (paused, their links cut, while it was written) are promoted without
// it, and a second client is granted the lock while the first still
// holds it.
func TestSentinelFailoverWithoutWait(t *testing.T) {
	g := redistest.StartSentinelGroup(t, redistest.SentinelOptions{})
	const ttl = 30 * time.Second
	first := sentinelClient(t, g, 0, ttl)
	second := sentinelClient(t, g, 0, ttl)
	ctx := context.Background()

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
	d, err := valkeygo.DialMembers(members, valkeygo.Options{})
	require.NoError(t, err)
	c := lockClient(t, d, core.Config{TTL: 5 * time.Second, NodeTimeout: 2 * time.Second})
	ctx := context.Background()

	run := func(op core.Op, key string) core.Reply {
		b := d.Begin(ctx)
		defer b.Close()
		b.Send(0, core.Command{Op: op, Key: key, Token: core.TokenFromUint64s(1, 2), TTL: 5 * time.Second}, d.Clock().Now().Add(3*time.Second))
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

// TestWaitWithoutReplicasIsRefused: WAIT asked of a master without
// replicas is a typed error naming the member, and no lock command
// reaches any server.
func TestWaitWithoutReplicasIsRefused(t *testing.T) {
	ss := redistest.StartN(t, 3, redistest.Options{})
	members := drivers.Members(ss[0].Addr, ss[1].Addr, ss[2].Addr)
	members[1] = members[1].WithWait(1, 100*time.Millisecond)
	members[2] = members[2].WithWait(2, 100*time.Millisecond)
	d, err := valkeygo.DialMembers(members, valkeygo.Options{})
	require.NoError(t, err)
	c := lockClient(t, d, core.Config{TTL: 5 * time.Second, NodeTimeout: 2 * time.Second})
	_, err = c.TryLock(context.Background(), "refused")
	require.ErrorIs(t, err, core.ErrInvalidConfig)
	assert.ErrorContains(t, err, "WAIT for 1 replicas, but the master has 0 connected")
	assert.ErrorContains(t, err, ss[1].Addr)
	for _, s := range ss {
		assert.Zero(t, dbsize(t, s), "nothing left on %s", s.Addr)
	}
}
