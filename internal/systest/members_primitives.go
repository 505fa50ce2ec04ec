package systest

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/drivers"
	"github.com/redlock-go/redlock/internal/redistest"
	"github.com/redlock-go/redlock/internal/testguard"
)

// mixedView is a quorum of a standalone master, a Sentinel group's
// master and a Cluster's master of each key, as a quorumView. Data may
// be left on the standalone server, the group's master and every
// Cluster master.
func mixedView(s *redistest.Server, g *redistest.SentinelGroup, cl *redistest.Cluster) quorumView {
	return quorumView{
		members: []memberView{
			{name: "standalone " + s.Addr, server: func(string) *redistest.Server { return s }},
			{name: "sentinel " + g.Name, server: func(string) *redistest.Server { return g.Master() }},
			{name: "cluster", cluster: true, server: cl.MasterForKey},
		},
		servers: func() []*redistest.Server { return append([]*redistest.Server{s, g.Master()}, cl.Masters()...) },
	}
}

// testMembersPrimitivesMixedQuorum: the primitives' exercises (RLock and
// WLock, LockAll, LockPermit) on one quorum of a standalone master, a
// Sentinel group with WAIT for its replica and a Cluster with WAIT for
// each master's replica, read back from each member's server.
func testMembersPrimitivesMixedQuorum(t *testing.T, md Members) {
	s := redistest.Start(t, redistest.Options{})
	g := redistest.StartSentinelGroup(t, redistest.SentinelOptions{Replicas: 1, Sentinels: 1})
	cl := redistest.StartCluster(t, redistest.ClusterOptions{})
	d, err := md.Dial([]drivers.Member{
		drivers.NewStandalone(s.Addr),
		drivers.NewSentinel(g.Name, g.SentinelAddrs()...).WithWait(1, time.Second),
		drivers.NewCluster(cl.Addrs()...).WithWait(1, time.Second),
	}, drivers.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, d.Close()) })
	// The members' Clients: a node timeout that covers a WAIT.
	complete := func(opts redlock.Options) redlock.Options {
		opts.NodeTimeout = 2 * time.Second
		if opts.TTL < 3*opts.NodeTimeout {
			opts.TTL = 3 * opts.NodeTimeout
		}
		return opts
	}
	env := primEnv{
		view: mixedView(s, g, cl),
		client: func(t *testing.T, opts redlock.Options) *redlock.Client {
			t.Helper()
			c, err := redlock.NewClient(d, complete(opts))
			require.NoError(t, err)
			return c
		},
		watched: func(t *testing.T, opts redlock.Options) (*redlock.Client, *attemptWatch) {
			t.Helper()
			w := watchAttemptsLossy(t, d)
			c, err := redlock.NewClient(w, complete(opts))
			require.NoError(t, err)
			return c, w
		},
	}
	t.Run("rwlock", func(t *testing.T) { exerciseRW(t, env, "{rw}") })
	t.Run("lockall", func(t *testing.T) { exerciseLockAll(t, env, "{all}:") })
	t.Run("permits", func(t *testing.T) { exercisePermits(t, env, "sem") })
}

// testMembersPrimitivesBadInput: on a quorum with a Cluster member, keys
// of several hash slots are refused by LockAll with ErrInvalidConfig,
// naming the Cluster member, before anything is sent: no server counts
// a script, a SET or a delete, and nothing is on any server. So is the
// rest of the bad input. Keys of one slot are then locked, and counted.
func testMembersPrimitivesBadInput(t *testing.T, md Members) {
	s := redistest.Start(t, redistest.Options{})
	cl := redistest.StartCluster(t, redistest.ClusterOptions{Replicas: -1})
	member := drivers.NewCluster(cl.Addrs()...)
	d, err := md.Dial([]drivers.Member{drivers.NewStandalone(s.Addr), member}, drivers.Options{})
	require.NoError(t, err)
	c := lockClient(t, d, redlock.Options{TTL: 5 * time.Second, NodeTimeout: time.Second})
	ctx := testguard.Context(t) // a hang fails the test, with a message
	v := quorumView{servers: func() []*redistest.Server { return append([]*redistest.Server{s}, cl.Masters()...) }}
	before := v.keys(t)
	for _, srv := range v.servers() {
		_, err := srv.Do("CONFIG", "RESETSTAT")
		require.NoError(t, err)
	}

	x, y := "x", ""
	for i := 0; y == ""; i++ {
		if k := "y" + strconv.Itoa(i); redistest.KeySlot(k) != redistest.KeySlot(x) {
			y = k
		}
	}
	for _, lockAll := range []func(context.Context, ...string) (*redlock.Lock, error){c.LockAll, c.TryLockAll} {
		l, err := lockAll(ctx, x, y)
		require.ErrorIs(t, err, redlock.ErrInvalidConfig, "keys of two slots on a Cluster member")
		assert.Nil(t, l)
		assert.ErrorContains(t, err, d.NodeName(1), "the error names the Cluster member")
	}
	requireBadInput(t, c, "bad", nil)
	v.requireNothingLeft(t, before, false)
	for _, srv := range v.servers() {
		assert.Empty(t, writesCounted(t, srv), "commands that write on %s", srv.Addr)
	}

	// The counts are not blind: keys of one slot are locked.
	l, err := c.TryLockAll(ctx, "{same}:x", "{same}:y")
	require.NoError(t, err)
	require.NoError(t, l.Unlock(ctx))
	assert.NotEmpty(t, writesCounted(t, cl.MasterForKey("{same}")), "the lock's scripts are counted")
}

// writesCounted returns the lines of srv's INFO commandstats that count
// a command a lock's acquisition or release would send: scripts, SET,
// DEL, sorted-set writes.
func writesCounted(t *testing.T, srv *redistest.Server) []string {
	t.Helper()
	r, err := srv.Do("INFO", "commandstats")
	require.NoError(t, err)
	var out []string
	for line := range strings.Lines(r.(string)) {
		for _, cmd := range []string{"eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "set", "del", "zadd", "zrem", "pexpire"} {
			if strings.HasPrefix(line, "cmdstat_"+cmd+":") {
				out = append(out, strings.TrimSpace(line))
			}
		}
	}
	return out
}
