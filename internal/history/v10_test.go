package history

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/internal/redistest"
)

// Schedule "crash-between-setnx-and-expire": C1 wins SETNX and crashes
// before its next command; C2 tries once C1's TTL has passed.
//
// V1.0's two commands leave a key with no expiry, which nobody ever
// acquires. Redlock's one command per node (SET NX PX) cannot be split:
// a crash between nodes leaves only keys that expire, and C2 wins the
// nodes C1 never reached at once.
func TestV10CrashBetweenSetnxAndExpire(t *testing.T) {
	const (
		name = "crash-between-setnx-and-expire"
		key  = "history:v10:crash"
		ttl  = 500 * time.Millisecond
	)

	t.Run("V1.0", func(t *testing.T) {
		srv := redistest.Start(t, redistest.Options{})
		s := newSchedule(t, name)
		c1 := V10{Conn: dial(t, srv), Key: key, TTL: ttl}
		c2 := V10{Conn: dial(t, srv), Key: key, TTL: ttl}

		s.step("C1: SETNX %s 1", key)
		ok, err := c1.SetNX()
		require.NoError(t, err)
		require.True(t, ok)

		s.step("C1 crashes before EXPIRE")
		require.NoError(t, c1.Conn.Close())

		// A witness key with the TTL C1 meant to set: once it has expired,
		// the lock would have expired too, had EXPIRE been sent.
		const witness = key + ":witness"
		s.step("a witness key set with C1's TTL expires")
		_, err = srv.Do("SET", witness, "1", "PX", ttl.Milliseconds())
		require.NoError(t, err)
		waitExpired(t, witness, srv)

		s.step("C2: TryLock after C1's TTL")
		ok, err = c2.TryLock()
		require.NoError(t, err)
		assert.False(t, ok, "C2 must be refused: the orphan key is still there")
		assert.Equal(t, int64(-1), pttl(t, srv, key),
			"VIOLATION expected: the lock has no expiry, so no client can ever acquire it")
	})

	t.Run("redlock", func(t *testing.T) {
		ss := redistest.StartN(t, 3, redistest.Options{})
		s := newSchedule(t, name)
		drv1 := newDriver(t, ss...)
		cfg1 := config(ttl)
		cfg1.Tokens, cfg1.Jitter = redlock.CryptoTokens(), redlock.NewJitter()
		c1, err := core.NewSpec(drv1, cfg1)
		require.NoError(t, err)
		c2 := newClient(t, 10*time.Second, ss...)

		// C1's acquire round, driven by hand so that it can stop after
		// one node: the nearest thing to V1.0's gap.
		s.step("C1: SET %s <token> NX PX %d on node 0 only", key, ttl.Milliseconds())
		a, err := c1.Acquire(key, core.Token{}, time.Now())
		require.NoError(t, err)
		node, cmd, deadline, ok := a.Round().Next(time.Now())
		require.True(t, ok)
		require.Equal(t, 0, node)
		b := drv1.Begin(ctx)
		b.Send(node, cmd, deadline)
		rep, ok := b.Receive(nil)
		b.Close()
		require.True(t, ok)
		require.Equal(t, core.StatusOK, rep.Status, "node 0: %v", rep.Err)

		s.step("C1 crashes before nodes 1 and 2")
		orphan := pttl(t, ss[0], key)
		assert.True(t, orphan > 0 && orphan <= ttl.Milliseconds(),
			"the orphan key on node 0 carries C1's TTL (PTTL %d ms), set by the same command", orphan)
		assert.Equal(t, int64(-2), pttl(t, ss[1], key))
		assert.Equal(t, int64(-2), pttl(t, ss[2], key))

		s.step("C2: TryLock while the orphan is still there")
		l2, err := c2.TryLock(ctx, key)
		require.NoError(t, err, "C2 wins nodes 1 and 2, a majority")
		assert.Equal(t, []int{1, 2}, holders(t, key, l2.Token(), ss...))

		s.step("the orphan expires on node 0 by itself")
		waitExpired(t, key, ss[0])
		require.NoError(t, l2.Unlock(ctx))
	})
}

// Schedule "loser-releases-in-finally": C1 holds; C2 fails to acquire and
// releases anyway, in a finally block; C3 tries.
//
// V1.0's release is a bare DEL, so C2 deletes C1's lock and C3 acquires
// while C1 holds: two holders. Redlock gives a loser nothing to release
// (the zero Lock's Unlock returns ErrUnlocked before anything is sent),
// and the cleanup of its failed attempt compare-and-deletes on its own
// token only.
func TestV10LoserReleasesInFinally(t *testing.T) {
	const (
		name = "loser-releases-in-finally"
		key  = "history:v10:finally"
		ttl  = 10 * time.Second
	)

	t.Run("V1.0", func(t *testing.T) {
		srv := redistest.Start(t, redistest.Options{})
		s := newSchedule(t, name)
		c1 := V10{Conn: dial(t, srv), Key: key, TTL: ttl}
		c2 := V10{Conn: dial(t, srv), Key: key, TTL: ttl}
		c3 := V10{Conn: dial(t, srv), Key: key, TTL: ttl}

		s.step("C1: TryLock")
		ok1, err := c1.TryLock()
		require.NoError(t, err)
		require.True(t, ok1)

		s.step("C2: TryLock")
		ok2, err := c2.TryLock()
		require.NoError(t, err)
		require.False(t, ok2)

		s.step("C2: Release in finally (DEL)")
		require.NoError(t, c2.Release())

		s.step("C3: TryLock while C1 holds")
		ok3, err := c3.TryLock()
		require.NoError(t, err)
		assert.True(t, ok1 && ok3, "VIOLATION expected: C1 and C3 both hold the lock")
	})

	t.Run("redlock", func(t *testing.T) {
		ss := redistest.StartN(t, 3, redistest.Options{})
		s := newSchedule(t, name)
		c1 := newClient(t, ttl, ss...)
		c2 := newClient(t, ttl, ss...)
		c3 := newClient(t, ttl, ss...)

		s.step("C1: TryLock")
		l1, err := c1.TryLock(ctx, key)
		require.NoError(t, err)

		s.step("C2: TryLock")
		l2, err := c2.TryLock(ctx, key)
		require.ErrorIs(t, err, core.ErrTaken)

		s.step("C2: Unlock in finally")
		assert.ErrorIs(t, l2.Unlock(ctx), redlock.ErrUnlocked,
			"a failed TryLock returns the zero Lock, whose Unlock sends nothing")
		assert.Equal(t, all(3), holders(t, key, l1.Token(), ss...), "C1's key is on every node")

		s.step("C3: TryLock while C1 holds")
		_, err = c3.TryLock(ctx, key)
		assert.ErrorIs(t, err, core.ErrTaken)
		assert.Positive(t, remaining(l1), "C1 is the only holder")
		require.NoError(t, l1.Unlock(ctx))
	})
}
