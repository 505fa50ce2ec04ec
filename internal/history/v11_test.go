package history

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/internal/redistest"
)

// Schedule "getset-loser-rewrites-expiry": a dead holder C0 left the lock;
// C1 and C2 both find it expired, C1's GETSET wins, C2's loses; later C3
// tries while C1 still holds. C2's clock is 3 s behind C1's and C3's.
//
// V1.1's losing GETSET has already written C2's expiry over C1's, 3 s
// earlier, so C3 finds the lock "expired" and takes it while C1 holds: two
// holders. Redlock's loser writes nothing (SET NX fails), the expiry is the
// servers' PX timer, and a client's clock only measures its own rounds.
func TestV11GetsetLoserRewritesExpiry(t *testing.T) {
	const (
		name = "getset-loser-rewrites-expiry"
		key  = "history:v11"
		ttl  = 10 * time.Second
	)

	t.Run("V1.1", func(t *testing.T) {
		srv := redistest.Start(t, redistest.Options{})
		s := newSchedule(t, name)
		now := int64(1_700_000_000_000) // Unix ms on C1's and C3's clocks
		clock := func(skew int64) func() int64 { return func() int64 { return now + skew } }
		c1 := &V11{Conn: dial(t, srv), Key: key, TTL: ttl, Clock: clock(0)}
		c2 := &V11{Conn: dial(t, srv), Key: key, TTL: ttl, Clock: clock(-3000)}
		c3 := &V11{Conn: dial(t, srv), Key: key, TTL: ttl, Clock: clock(0)}

		s.step("C0 took the lock until now-5s and crashed")
		_, err := srv.Do("SET", key, now-5000)
		require.NoError(t, err)

		s.step("C1: SETNX, refused")
		ok, err := c1.SetNX(c1.NewExpireTime())
		require.NoError(t, err)
		require.False(t, ok)
		s.step("C2: SETNX, refused")
		ok, err = c2.SetNX(c2.NewExpireTime())
		require.NoError(t, err)
		require.False(t, ok)

		s.step("C1: GET, expired on C1's clock")
		old1, err := c1.Get()
		require.NoError(t, err)
		require.Less(t, old1, c1.Clock())
		s.step("C2: GET, expired on C2's clock")
		old2, err := c2.Get()
		require.NoError(t, err)
		require.Less(t, old2, c2.Clock())

		s.step("C1: GETSET, wins")
		ok, err = c1.GetSet(c1.NewExpireTime(), old1)
		require.NoError(t, err)
		require.True(t, ok)
		s.step("C2: GETSET, loses")
		ok, err = c2.GetSet(c2.NewExpireTime(), old2)
		require.NoError(t, err)
		require.False(t, ok)
		assert.Equal(t, strconv.FormatInt(now+ttl.Milliseconds()-3000, 10), get(t, srv, key),
			"the loser's GETSET wrote its own expiry over the winner's")

		s.step("8 s pass: C1 holds until now+10s")
		now += 8000
		require.True(t, c1.Holds())

		s.step("C3: TryLock")
		ok, err = c3.TryLock()
		require.NoError(t, err)
		assert.True(t, ok && c1.Holds() && c3.Holds(),
			"VIOLATION expected: C3 takes the lock over while C1 holds it")
	})

	t.Run("redlock", func(t *testing.T) {
		ss := redistest.StartN(t, 3, redistest.Options{})
		s := newSchedule(t, name)
		c0 := newClient(t, 500*time.Millisecond, ss...)
		c1 := newClient(t, ttl, ss...)
		// C2 sets a much shorter TTL than C1: had its attempt written
		// anything, C1's keys would show it.
		const ttl2 = time.Second
		c2 := newClient(t, ttl2, ss...)
		c3 := newClient(t, ttl, ss...)

		s.step("C0 took the lock and crashed; its keys expire")
		_, err := c0.TryLock(ctx, key)
		require.NoError(t, err)
		waitExpired(t, key, ss...)

		s.step("C1: TryLock")
		l1, err := c1.TryLock(ctx, key)
		require.NoError(t, err)

		s.step("C2: TryLock")
		_, err = c2.TryLock(ctx, key)
		require.ErrorIs(t, err, core.ErrTaken)
		assert.Equal(t, all(3), holders(t, key, l1.Token(), ss...), "C1's token is untouched on every node")
		for i, srv := range ss {
			assert.Greater(t, pttl(t, srv, key), ttl2.Milliseconds(), "node %d: C1's expiry is untouched", i)
		}

		s.step("C3: TryLock while C1 holds")
		_, err = c3.TryLock(ctx, key)
		assert.ErrorIs(t, err, core.ErrTaken)
		assert.Positive(t, remaining(l1), "C1 is the only holder")
		require.NoError(t, l1.Unlock(ctx))
	})
}
