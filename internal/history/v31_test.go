package history

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/internal/redistest"
)

// Schedule "async-failover-before-replication": a master with one replica;
// the replication stream is cut; C1 takes the lock on the master, which
// acknowledges it and crashes before the replica receives the write; the
// replica is promoted (REPLICAOF NO ONE); C2 tries on the new master.
//
// V3.1 grants the lock to C2 as well: the new master never saw C1's key.
// Redlock runs over independent masters, and one of them failing over
// loses one vote of C1's majority only: C2 wins that node and is refused by
// the others (ErrTaken).
//
// Before that, the V2.0/V3.0 schedule shows what V3.1 does fix: on one
// server, a stale release is refused.
func TestV31AsyncFailover(t *testing.T) {
	const (
		name = "async-failover-before-replication"
		key  = "history:v31"
		ttl  = 30 * time.Second // nothing expires during the schedule
	)

	t.Run("V3.1/one-server", func(t *testing.T) {
		srv := redistest.Start(t, redistest.Options{})
		s := newSchedule(t, "paused-holder-deletes-successor")
		c1 := &V31{Conn: dial(t, srv), Key: key, TTL: pausedTTL, Name: "c1"}
		c2 := &V31{Conn: dial(t, srv), Key: key, TTL: ttl, Name: "c2"}
		c3 := &V31{Conn: dial(t, srv), Key: key, TTL: ttl, Name: "c3"}

		s.step("C1: TryLock")
		ok, err := c1.TryLock()
		require.NoError(t, err)
		require.True(t, ok)
		s.step("C1 pauses; its key expires")
		waitExpired(t, key, srv)
		s.step("C2: TryLock")
		ok, err = c2.TryLock()
		require.NoError(t, err)
		require.True(t, ok)
		s.step("C1 resumes: Release")
		deleted, err := c1.Release()
		require.NoError(t, err)
		assert.False(t, deleted, "C1's id is not C2's: the release is refused")
		assert.Equal(t, c2.Value, get(t, srv, key))
		s.step("C3: TryLock while C2 holds")
		ok, err = c3.TryLock()
		require.NoError(t, err)
		assert.False(t, ok, "on one server, V3.1 has a single holder")
	})

	t.Run("V3.1/failover", func(t *testing.T) {
		master := redistest.Start(t, redistest.Options{})
		replica := redistest.Start(t, redistest.Options{})
		s := newSchedule(t, name)
		link := replicate(t, master, replica)
		c1 := &V31{Conn: dial(t, master), Key: key, TTL: ttl, Name: "c1"}

		s.step("the replication stream is cut")
		link.Cut()

		s.step("C1: TryLock on the master")
		ok1, err := c1.TryLock()
		require.NoError(t, err)
		require.True(t, ok1)
		waitFor(t, "the master to send C1's write to the replica", func() bool { return link.Holds(key) })

		s.step("the master crashes; the replica is promoted")
		failover(t, master, replica)
		assert.Empty(t, get(t, replica, key), "the new master never received C1's write")

		s.step("C2: TryLock on the new master")
		c2 := &V31{Conn: dial(t, replica), Key: key, TTL: ttl, Name: "c2"}
		ok2, err := c2.TryLock()
		require.NoError(t, err)
		assert.True(t, ok1 && ok2, "VIOLATION expected: C1 and C2 both hold the lock")
	})

	t.Run("redlock", func(t *testing.T) {
		ss := redistest.StartN(t, 3, redistest.Options{})
		replica := redistest.Start(t, redistest.Options{}) // node 0's
		s := newSchedule(t, name)
		link := replicate(t, ss[0], replica)
		c1 := newClient(t, ttl, ss...)

		s.step("node 0's replication stream is cut")
		link.Cut()

		s.step("C1: TryLock")
		l1, err := c1.TryLock(ctx, key)
		require.NoError(t, err)
		waitFor(t, "node 0 to send C1's write to its replica", func() bool { return link.Holds(key) })

		s.step("node 0 crashes; its replica is promoted in its place")
		failover(t, ss[0], replica)
		after := []*redistest.Server{replica, ss[1], ss[2]}
		assert.Empty(t, get(t, replica, key), "the new node 0 never received C1's write")

		s.step("C2: TryLock over the new node 0 and nodes 1, 2")
		c2 := newClient(t, ttl, after...)
		_, err = c2.TryLock(ctx, key)
		require.ErrorIs(t, err, core.ErrTaken)
		var e *core.Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, []int{1, 2}, e.Failed(core.StatusHeld), "C1's majority survives on nodes 1 and 2")
		assert.Empty(t, get(t, replica, key), "C2's cleanup removed the minority key it won")
		assert.Equal(t, []int{1, 2}, holders(t, key, l1.Token(), after...))
		assert.Positive(t, remaining(l1), "C1 is the only holder")
	})
}
