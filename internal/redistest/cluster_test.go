package redistest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestKeySlot(t *testing.T) {
	// CRC-16/XMODEM's check value is 0x31c3 = 12739.
	assert.Equal(t, 12739, KeySlot("123456789"))
	assert.Equal(t, KeySlot("user1000"), KeySlot("{user1000}.following"))
	assert.Equal(t, KeySlot("user1000"), KeySlot("x{user1000}y{z}"), "the first tag counts")
	assert.Equal(t, KeySlot("bar"), KeySlot("foo{bar}{zap}"))
	assert.Equal(t, crc16("foo{}{bar}")%ClusterSlots, uint16(KeySlot("foo{}{bar}")), "an empty tag hashes the whole key") //nolint:gosec // G115: a slot, below ClusterSlots = 16384
	assert.NotEqual(t, KeySlot("foo"), KeySlot("foo{}"))
}

// addrsOf returns the servers' addresses, for short test failures.
func addrsOf(servers []*Server) []string {
	out := make([]string, len(servers))
	for i, s := range servers {
		out[i] = s.Addr
	}
	return out
}

// movedTo returns the address of a MOVED error, or "".
func movedTo(err error) string {
	var re redis.Error
	if !errors.As(err, &re) {
		return ""
	}
	var slot int
	var addr string
	if n, _ := fmt.Sscanf(string(re), "MOVED %d %s", &slot, &addr); n != 2 {
		return ""
	}
	return addr
}

func TestClusterStarts(t *testing.T) {
	c := StartCluster(t, ClusterOptions{})
	require.Len(t, c.Servers, 6)
	assert.Len(t, c.Addrs(), 6)
	masters := c.Masters()
	assert.Equal(t, addrsOf(c.Servers[:3]), addrsOf(masters), "the first three nodes own the slots, in order")
	for i, m := range masters {
		assert.Equal(t, []string{c.Servers[3+i].Addr}, addrsOf(c.ReplicasOf(m)), "one replica each")
		role, err := Role(c.Servers[3+i])
		require.NoError(t, err)
		assert.Equal(t, "slave", role)
	}
	// Replication is fenced off from other tests' servers.
	list, err := redis.String(masters[0].Do("CLIENT", "LIST", "TYPE", "replica"))
	require.NoError(t, err)
	assert.Contains(t, list, "user="+ReplUser)
	_, err = masters[0].Do("PSYNC", "?", "-1")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "NOPERM")

	assert.Same(t, c.Servers[0], c.MasterForSlot(0))
	assert.Same(t, c.Servers[2], c.MasterForSlot(ClusterSlots-1))

	for _, key := range []string{"a", "b", "lock:{x}", "{user1000}.following", "foo{}{bar}", "123456789"} {
		slot, err := redis.Int(c.Servers[0].Do("CLUSTER", "KEYSLOT", key))
		require.NoError(t, err)
		assert.Equal(t, slot, KeySlot(key), key)

		owner := c.MasterForKey(key)
		_, err = owner.Do("SET", key, "v")
		require.NoError(t, err, "the owner of %q takes it", key)
		for _, m := range masters {
			if m != owner {
				_, err := m.Do("GET", key)
				assert.Equal(t, owner.Addr, movedTo(err), "%s redirects %q: %v", m.Addr, key, err)
			}
		}
	}
}

func TestClusterMigrateSlot(t *testing.T) {
	c := StartCluster(t, ClusterOptions{})
	key := "migrating-key"
	slot := KeySlot(key)
	from := c.MasterForKey(key)
	_, err := from.Do("SET", key, "v")
	require.NoError(t, err)
	_, err = from.Do("SET", "{migrating-key}2", "w")
	require.NoError(t, err)
	var to *Server
	for _, m := range c.Masters() {
		if m != from {
			to = m
			break
		}
	}
	require.NotNil(t, to)

	c.MigrateSlot(t, slot, to)
	assert.Same(t, to, c.MasterForKey(key))
	_, err = from.Do("GET", key)
	assert.Equal(t, to.Addr, movedTo(err), "the old owner redirects: %v", err)
	v, err := to.Do("GET", key)
	require.NoError(t, err)
	assert.Equal(t, "v", v, "the key moved with the slot")
	v, err = to.Do("GET", "{migrating-key}2")
	require.NoError(t, err)
	assert.Equal(t, "w", v)
	n, err := redis.Int(from.Do("CLUSTER", "COUNTKEYSINSLOT", slot))
	require.NoError(t, err)
	assert.Zero(t, n)
	// The neighbouring slot stayed.
	assert.Same(t, from, c.MasterForSlot(slot^1))
	c.WaitHealthy(t)
}

func TestClusterForceFailover(t *testing.T) {
	c := StartCluster(t, ClusterOptions{})
	key := "failover-key"
	m := c.MasterForKey(key)
	replies, err := m.DoAll([]any{"SET", key, "v"}, []any{"WAIT", 1, 10000})
	require.NoError(t, err)
	require.Equal(t, int64(1), replies[1], "the replica acknowledged the write")
	reps := c.ReplicasOf(m)
	require.Len(t, reps, 1)
	r := reps[0]

	old := c.ForceFailover(t, r)
	assert.Same(t, m, old)
	assert.Same(t, r, c.MasterForKey(key), "the replica owns the slots now")
	role, err := Role(r)
	require.NoError(t, err)
	assert.Equal(t, "master", role)
	v, err := r.Do("GET", key)
	require.NoError(t, err)
	assert.Equal(t, "v", v)
	_, err = old.Do("PING")
	assert.Error(t, err, "the old master is killed")

	// Back, the old master joins as a replica of the new one.
	old.Restart()
	waitFor(t, "the old master to replicate", func() error {
		role, err := Role(old)
		if err != nil {
			return err
		}
		if role != "slave" {
			return errors.New("role " + role)
		}
		return nil
	})
	c.WaitHealthy(t)
	assert.Equal(t, []string{old.Addr}, addrsOf(c.ReplicasOf(r)))
}

func TestClusterFailoverKeepsWrites(t *testing.T) {
	c := StartCluster(t, ClusterOptions{})
	key := "graceful-key"
	m := c.MasterForKey(key)
	_, err := m.Do("SET", key, "v")
	require.NoError(t, err)
	r := c.ReplicasOf(m)[0]

	old := c.Failover(t, r)
	assert.Same(t, m, old)
	assert.Same(t, r, c.MasterForKey(key))
	require.NoError(t, hasRole(m, "slave"), "the old master runs on as a replica")
	assert.Equal(t, []string{m.Addr}, addrsOf(c.ReplicasOf(r)))
	v, err := r.Do("GET", key)
	require.NoError(t, err)
	assert.Equal(t, "v", v, "a manual failover waits for the replica to catch up")
	_, err = m.Do("GET", key)
	assert.Equal(t, r.Addr, movedTo(err), "the old master redirects: %v", err)
}

func TestClusterTakeOverFromStoppedMaster(t *testing.T) {
	c := StartCluster(t, ClusterOptions{})
	key := "zombie-key"
	m := c.MasterForKey(key)
	replies, err := m.DoAll([]any{"SET", key, "v"}, []any{"WAIT", 1, 10000})
	require.NoError(t, err)
	require.Equal(t, int64(1), replies[1], "the replica acknowledged the write")
	r := c.ReplicasOf(m)[0]

	m.Stop()
	c.TakeOver(t, r)
	assert.Same(t, r, c.MasterForKey(key), "the running nodes route to the new master")
	v, err := r.Do("GET", key)
	require.NoError(t, err)
	assert.Equal(t, "v", v)

	// Woken, the old master learns of the newer configuration.
	m.Cont()
	waitFor(t, "the old master to step down", func() error { return hasRole(m, "slave") })
	c.WaitHealthy(t)
	assert.Equal(t, []string{m.Addr}, addrsOf(c.ReplicasOf(r)))
	_, err = m.Do("GET", key)
	assert.Equal(t, r.Addr, movedTo(err), "the old master redirects: %v", err)
}

// TestClusterAutomaticFailover: after a master's kill WaitHealthy waits
// for the cluster to promote its replica by itself.
func TestClusterAutomaticFailover(t *testing.T) {
	c := StartCluster(t, ClusterOptions{})
	key := "auto-key"
	m := c.MasterForKey(key)
	replies, err := m.DoAll([]any{"SET", key, "v"}, []any{"WAIT", 1, 10000})
	require.NoError(t, err)
	require.Equal(t, int64(1), replies[1])
	r := c.ReplicasOf(m)[0]

	m.Kill()
	c.WaitHealthy(t)
	assert.Same(t, r, c.MasterForKey(key), "the replica was elected")
	require.NoError(t, hasRole(r, "master"))
	v, err := r.Do("GET", key)
	require.NoError(t, err)
	assert.Equal(t, "v", v)
}
