package valkeygo_test

import (
	"context"
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
	t.Cleanup(func() { d.Close() })
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
		d.Close()
		require.ErrorIs(t, err, core.ErrInvalidConfig, tc.m.String())
		assert.ErrorContains(t, err, tc.msg)
		assert.ErrorContains(t, err, tc.m.String())
	}
	for _, s := range g.Servers {
		assert.Zero(t, dbsize(t, s), "nothing left on %s", s.Addr)
	}
}
