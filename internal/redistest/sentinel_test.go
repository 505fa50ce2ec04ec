package redistest

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSentinelGroupStarts(t *testing.T) {
	g := StartSentinelGroup(t, SentinelOptions{})
	require.Len(t, g.Servers, 3)
	require.Len(t, g.Sentinels, 3)
	assert.Regexp(t, "^mymaster-[0-9a-f]{8}$", g.Name, "a name of its own")

	m := g.Master()
	assert.Same(t, g.Servers[0], m, "the first server is the master at start")
	role, err := Role(m)
	require.NoError(t, err)
	assert.Equal(t, "master", role)
	reps := g.Replicas()
	assert.ElementsMatch(t, g.Servers[1:], reps)
	for _, r := range reps {
		role, err := Role(r)
		require.NoError(t, err)
		assert.Equal(t, "slave", role, r.Addr)
		// Replicas announce loopback addresses.
		info, err := redis.String(m.Do("INFO", "replication"))
		require.NoError(t, err)
		assert.Contains(t, info, "ip=127.0.0.1,port="+strconv.Itoa(r.Port)+",")
	}
	for i, sen := range g.Sentinels {
		role, err := Role(sen)
		require.NoError(t, err)
		assert.Equal(t, "sentinel", role)
		assert.Equal(t, sen.Addr, g.SentinelAddrs()[i])
		addr, err := SentinelMasterAddr(sen, g.Name)
		require.NoError(t, err)
		assert.Equal(t, m.Addr, addr)
	}
}

func TestSentinelGroupFailsOver(t *testing.T) {
	g := StartSentinelGroup(t, SentinelOptions{})
	m := g.Master()
	replicas := g.Replicas()
	replies, err := m.DoAll([]any{"SET", "k", "v"}, []any{"WAIT", len(replicas), 10000})
	require.NoError(t, err)
	require.Equal(t, int64(len(replicas)), replies[1], "the write reached every replica")

	old := g.KillMaster()
	require.Same(t, m, old)
	nm := g.WaitFailover(t, old.Addr)
	assert.NotSame(t, old, nm)
	assert.Contains(t, replicas, nm, "a replica was promoted")
	assert.Same(t, nm, g.Master())
	role, err := Role(nm)
	require.NoError(t, err)
	assert.Equal(t, "master", role)
	v, err := nm.Do("GET", "k")
	require.NoError(t, err)
	assert.Equal(t, "v", v, "the new master has the acknowledged write")
	assert.Contains(t, g.Replicas(), old, "the old master counts as a replica now")
}

func TestSentinelGroupWithPassword(t *testing.T) {
	g := StartSentinelGroup(t, SentinelOptions{Replicas: 1, Server: Options{Password: "pw"}})
	m := g.Master()
	_, err := redis.Dial("tcp", m.Addr, redis.DialPassword("wrong"))
	require.Error(t, err, "the data servers ask for the password")
	// The replica authenticated to replicate: StartSentinelGroup waited
	// for it. The Sentinels authenticated to see it.
	role, err := Role(g.Replicas()[0])
	require.NoError(t, err)
	assert.Equal(t, "slave", role)
}

func TestSentinelGroupFailoverCommandAndRejoin(t *testing.T) {
	g := StartSentinelGroup(t, SentinelOptions{})
	m := g.Master()
	_, err := m.Do("SET", "k", "v")
	require.NoError(t, err)

	// SENTINEL FAILOVER: the old master runs on and is demoted.
	nm := g.Failover(t)
	assert.NotSame(t, m, nm)
	assert.Contains(t, g.Servers[1:], nm)
	v, err := nm.Do("GET", "k")
	require.NoError(t, err)
	assert.Equal(t, "v", v, "a Sentinel failover picks an up-to-date replica")
	g.WaitReplicas(t)
	role, err := Role(m)
	require.NoError(t, err)
	assert.Equal(t, "slave", role, "the Sentinels demoted the old master")

	// A second failover, by a kill this time.
	old := g.KillMaster()
	require.Same(t, nm, old)
	third := g.WaitFailover(t, old.Addr)
	assert.NotSame(t, old, third)

	// The killed master comes back empty and catches up as a replica.
	g.RestartAsReplica(t, old)
	role, err = Role(old)
	require.NoError(t, err)
	assert.Equal(t, "slave", role)
	v, err = old.Do("GET", "k")
	require.NoError(t, err)
	assert.Equal(t, "v", v, "the restarted server resynchronized")
	assert.Same(t, third, g.Master())
}

// TestSentinelGroupFencesReplication: servers of other tests cannot
// replicate from the group's, and its replicas replicate as ReplUser.
func TestSentinelGroupFencesReplication(t *testing.T) {
	g := StartSentinelGroup(t, SentinelOptions{Replicas: 1, Sentinels: 1})
	m := g.Master()
	for _, cmd := range [][]any{{"REPLCONF", "listening-port", "1"}, {"PSYNC", "?", "-1"}, {"SYNC"}} {
		_, err := m.Do(cmd...)
		require.Error(t, err, "%v", cmd)
		assert.Contains(t, err.Error(), "NOPERM", "%v", cmd)
	}
	list, err := redis.String(m.Do("CLIENT", "LIST", "TYPE", "replica"))
	require.NoError(t, err)
	assert.Contains(t, list, "user="+ReplUser)
	_, err = m.Do("SET", "k", "v")
	require.NoError(t, err, "the default user keeps every other command")
}

// TestSentinelGroupWithAStoppedSentinel: the helpers skip a stopped
// Sentinel instead of hanging on it, and two of three still fail over.
func TestSentinelGroupWithAStoppedSentinel(t *testing.T) {
	g := StartSentinelGroup(t, SentinelOptions{})
	g.Sentinels[0].Stop()
	old := g.KillMaster()
	start := time.Now()
	nm := g.WaitFailover(t, old.Addr)
	assert.Contains(t, g.Servers[1:], nm)
	assert.Less(t, time.Since(start), 30*time.Second)
	g.Sentinels[0].Cont()
	// Woken, the third Sentinel learns of the new master.
	waitFor(t, "the third Sentinel to name the new master", func() error {
		addr, err := SentinelMasterAddr(g.Sentinels[0], g.Name)
		if err == nil && addr != nm.Addr {
			err = fmt.Errorf("it names %s", addr)
		}
		return err
	})
}
