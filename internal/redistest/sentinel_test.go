package redistest

import (
	"strconv"
	"testing"

	"github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSentinelGroupStarts(t *testing.T) {
	g := StartSentinelGroup(t, SentinelOptions{})
	require.Len(t, g.Servers, 3)
	require.Len(t, g.Sentinels, 3)
	assert.Equal(t, "mymaster", g.Name)

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
	_, err := m.Do("SET", "k", "v")
	require.NoError(t, err)
	acked, err := redis.Int(m.Do("WAIT", len(replicas), 10000))
	require.NoError(t, err)
	require.Equal(t, len(replicas), acked, "the write reached every replica")

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
