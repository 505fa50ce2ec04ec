package goredis_test

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
	"github.com/redlock-go/redlock/drivers/goredis"
	"github.com/redlock-go/redlock/internal/redistest"
)

func TestDialMembersValidation(t *testing.T) {
	for _, tc := range []struct {
		name    string
		members []drivers.Member
		opts    goredis.Options
		msg     string
	}{
		{"none", nil, goredis.Options{}, "no members"},
		{"no topology", []drivers.Member{{Addrs: []string{"a:1"}}}, goredis.Options{}, "no topology"},
		{"no master name", []drivers.Member{drivers.NewSentinel("", "a:1")}, goredis.Options{}, "master name"},
		{"shared address", []drivers.Member{drivers.NewStandalone("a:1"), drivers.NewCluster("b:1", "a:1")}, goredis.Options{}, "two members reach one server"},
		{"wait without timeout", []drivers.Member{drivers.NewStandalone("a:1").WithWait(1, 0)}, goredis.Options{}, "positive WaitTimeout"},
		{"cluster db", []drivers.Member{drivers.NewCluster("a:1")}, goredis.Options{DB: 2}, "a Cluster has only DB 0"},
		{"negative timeout", []drivers.Member{drivers.NewStandalone("a:1")}, goredis.Options{DialTimeout: -1}, "DialTimeout"},
	} {
		d, err := goredis.DialMembers(tc.members, tc.opts)
		require.ErrorIs(t, err, core.ErrInvalidConfig, tc.name)
		assert.ErrorContains(t, err, tc.msg, tc.name)
		assert.Nil(t, d, tc.name)
	}
}

// lockClient is a redlock.Client over d, closed with the test.
func lockClient(t *testing.T, d *goredis.Driver) *redlock.Client {
	t.Helper()
	t.Cleanup(func() { assert.NoError(t, d.Close()) })
	c, err := redlock.NewClient(d, redlock.Options{Config: core.Config{TTL: 5 * time.Second, NodeTimeout: 2 * time.Second}})
	require.NoError(t, err)
	return c
}

func dbsize(t *testing.T, s *redistest.Server) int64 {
	t.Helper()
	n, err := s.Do("DBSIZE")
	require.NoError(t, err)
	return n.(int64)
}

// replicate makes r a replica of m and returns once it holds m's writes
// (WAIT on the master counts it).
func replicate(t *testing.T, m, r *redistest.Server) {
	t.Helper()
	_, err := m.Do("CONFIG", "SET", "repl-diskless-sync-delay", "0")
	require.NoError(t, err)
	_, err = r.Do("REPLICAOF", "127.0.0.1", m.Port)
	require.NoError(t, err)
	rs, err := m.DoAll([]any{"SET", "replicate:probe", "1"}, []any{"WAIT", 1, 10000}, []any{"DEL", "replicate:probe"})
	require.NoError(t, err)
	require.Equal(t, int64(1), rs[1], "the replica caught up")
}

// TestMembersStandalone: Dial's nodes as members, locked through the
// root package; Member.String names them.
func TestMembersStandalone(t *testing.T) {
	ss := redistest.StartN(t, 3, redistest.Options{})
	d, err := goredis.DialMembers(drivers.Members(ss[0].Addr, ss[1].Addr, ss[2].Addr), goredis.Options{})
	require.NoError(t, err)
	assert.Equal(t, ss[1].Addr, d.NodeName(1))
	c := lockClient(t, d)
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
	d, err := goredis.DialMembers(members, goredis.Options{})
	require.NoError(t, err)
	c := lockClient(t, d)
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
	d, err := goredis.DialMembers(members, goredis.Options{})
	require.NoError(t, err)
	c := lockClient(t, d)
	_, err = c.TryLock(context.Background(), "refused")
	require.ErrorIs(t, err, core.ErrInvalidConfig)
	assert.ErrorContains(t, err, "WAIT for 1 replicas, but the master has 0 connected")
	assert.ErrorContains(t, err, ss[1].Addr)
	for _, s := range ss {
		assert.Zero(t, dbsize(t, s), "nothing left on %s", s.Addr)
	}
}

// TestUntaggableKeyIsFineOffCluster: the Cluster naming does not touch
// standalone members: a key with '}' locks, fenced.
func TestUntaggableKeyIsFineOffCluster(t *testing.T) {
	ss := redistest.StartN(t, 1, redistest.Options{Embedded: true})
	d, err := goredis.DialMembers(drivers.Members(ss[0].Addr), goredis.Options{})
	require.NoError(t, err)
	c, err := redlock.NewClient(d, redlock.Options{Config: core.Config{TTL: 5 * time.Second, NodeTimeout: 2 * time.Second, Fencing: true}})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, d.Close()) })
	lock, err := c.TryLock(context.Background(), "a}b")
	require.NoError(t, err)
	n, err := ss[0].Do("GET", core.FenceKeyPrefix+"a}b")
	require.NoError(t, err)
	assert.Equal(t, "1", n)
	require.NoError(t, lock.Unlock(context.Background()))
}
