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

// pausedTTL is the TTL of the holder that pauses past it; successors take
// a long one, so that nothing else expires during a schedule.
const pausedTTL = 500 * time.Millisecond

// Schedule "paused-holder-deletes-successor": C1 takes the lock and pauses
// (GC, SIGSTOP) past its TTL; the key expires; C2 takes the lock; C1
// resumes and releases; C3 tries.
//
// V2.0 cannot tell C1 that it lost the lock, and its release, a bare DEL,
// deletes C2's: C3 then holds it together with C2. Redlock tells C1 (its
// validity is over, Extend refuses) and refuses its release (ErrTaken:
// another token holds the keys; Unlock reports the loss instead once
// Extend has found it), so C2 stays the only holder.
func TestV20PausedHolderDeletesSuccessor(t *testing.T) {
	const (
		name = "paused-holder-deletes-successor"
		key  = "history:v20"
	)

	t.Run("V2.0", func(t *testing.T) {
		srv := redistest.Start(t, redistest.Options{})
		s := newSchedule(t, name)
		c1 := V20{Conn: dial(t, srv), Key: key, TTL: pausedTTL}
		c2 := V20{Conn: dial(t, srv), Key: key, TTL: 10 * time.Second}
		c3 := V20{Conn: dial(t, srv), Key: key, TTL: 10 * time.Second}

		s.step("C1: TryLock")
		ok1, err := c1.TryLock()
		require.NoError(t, err)
		require.True(t, ok1)

		s.step("C1 pauses; its key expires")
		waitExpired(t, key, srv)

		s.step("C2: TryLock")
		ok2, err := c2.TryLock()
		require.NoError(t, err)
		require.True(t, ok2, "C1, paused, still believes it holds the lock: nothing tells it otherwise")

		s.step("C1 resumes: Release (DEL)")
		require.NoError(t, c1.Release())

		s.step("C3: TryLock while C2 holds")
		ok3, err := c3.TryLock()
		require.NoError(t, err)
		assert.True(t, ok2 && ok3, "VIOLATION expected: C1 deleted C2's lock, and C2 and C3 both hold it")
	})

	t.Run("redlock", func(t *testing.T) { redlockPausedHolder(t, name, key) })
}

// redlockPausedHolder runs schedule name (paused holder, expiry, successor,
// stale release, third client) against Redlock over three servers, twice:
// C1 resuming checks its lock (Until, Extend) before it releases, or
// releases at once. A Lock that knows it is lost says so at Unlock (the
// *LostError) and still sends its release; one that does not know gets the
// release's own refusal, ErrTaken. Either way C2 stays the only holder.
func redlockPausedHolder(t *testing.T, name, key string) {
	t.Run("checks", func(t *testing.T) { redlockPausedHolderRun(t, name, key, true) })
	t.Run("does-not-check", func(t *testing.T) { redlockPausedHolderRun(t, name, key, false) })
}

func redlockPausedHolderRun(t *testing.T, name, key string, checks bool) {
	ss := redistest.StartN(t, 3, redistest.Options{})
	s := newSchedule(t, name)
	c1 := newClient(t, pausedTTL, ss...)
	c2 := newClient(t, 10*time.Second, ss...)
	c3 := newClient(t, 10*time.Second, ss...)

	s.step("C1: TryLock")
	l1, err := c1.TryLock(ctx, key)
	require.NoError(t, err)

	s.step("C1 pauses; its keys expire")
	waitExpired(t, key, ss...)
	assert.Zero(t, remaining(l1),
		"C1's validity ended before the servers' expiry: on resuming, C1 can see it no longer holds")
	if checks {
		assert.ErrorIs(t, l1.Extend(ctx), core.ErrNotHeld, "nor can C1 extend")
	}

	s.step("C2: TryLock")
	l2, err := c2.TryLock(ctx, key)
	require.NoError(t, err)
	assert.NotEqual(t, l1.Token(), l2.Token(), "tokens are random, never derived from a clock")

	s.step("C1 resumes: Unlock")
	err = l1.Unlock(ctx)
	if checks {
		var lost *redlock.LostError
		require.ErrorAs(t, err, &lost, "C1's Extend found the lock lost: Unlock says so")
		assert.ErrorIs(t, err, core.ErrNotHeld)
	} else {
		assert.ErrorIs(t, err, core.ErrTaken, "C1's release is refused: another token holds the keys")
	}
	assert.Equal(t, all(3), holders(t, key, l2.Token(), ss...), "C2's key is on every node")

	s.step("C3: TryLock while C2 holds")
	_, err = c3.TryLock(ctx, key)
	assert.ErrorIs(t, err, core.ErrTaken)
	assert.Positive(t, remaining(l2), "C2 is the only holder")
	require.NoError(t, l2.Unlock(ctx))
}
