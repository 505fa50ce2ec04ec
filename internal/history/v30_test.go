package history

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock/internal/redistest"
)

// Schedule "timestamp-collision": the paused-holder schedule of V2.0 where
// C2 reads the same Unix second as C1 did, in one of two ways: both
// acquisitions fall in the same second ("same-second"), or a second passes
// but C2's clock is one second behind C1's ("clock-behind").
//
// V3.0's compare-and-delete then compares equal values, so C1's stale
// release still deletes C2's lock and C3 holds it together with C2.
// Redlock's tokens are 128 random bits per attempt, read from no clock:
// C1's release is refused (ErrTaken) and C2 stays the only holder.
func TestV30TimestampCollision(t *testing.T) {
	const (
		name = "timestamp-collision"
		key  = "history:v30"
	)
	for _, sc := range []struct {
		name    string
		elapsed int64 // seconds between C1's and C2's acquisitions
		skew    int64 // C2's clock minus C1's, seconds
	}{
		{name: "same-second"},
		{name: "clock-behind", elapsed: 1, skew: -1},
	} {
		t.Run("V3.0/"+sc.name, func(t *testing.T) {
			srv := redistest.Start(t, redistest.Options{})
			s := newSchedule(t, name+"/"+sc.name)
			now := int64(1_700_000_000) // Unix seconds on C1's clock
			c1 := &V30{Conn: dial(t, srv), Key: key, TTL: pausedTTL, Clock: func() int64 { return now }}
			c2 := &V30{Conn: dial(t, srv), Key: key, TTL: 10 * time.Second, Clock: func() int64 { return now + sc.skew }}
			c3 := &V30{Conn: dial(t, srv), Key: key, TTL: 10 * time.Second, Clock: func() int64 { return now }}

			s.step("C1: TryLock")
			ok1, err := c1.TryLock()
			require.NoError(t, err)
			require.True(t, ok1)

			s.step("C1 pauses; its key expires; %d s pass", sc.elapsed)
			waitExpired(t, key, srv)
			now += sc.elapsed

			s.step("C2: TryLock")
			ok2, err := c2.TryLock()
			require.NoError(t, err)
			require.True(t, ok2)
			require.Equal(t, c1.Value, c2.Value, "C1 and C2 wrote the same timestamp")

			s.step("C1 resumes: Release (compare-and-delete)")
			deleted, err := c1.Release()
			require.NoError(t, err)
			assert.True(t, deleted, "the comparison cannot tell C1's value from C2's")

			s.step("C3: TryLock while C2 holds")
			ok3, err := c3.TryLock()
			require.NoError(t, err)
			assert.True(t, ok2 && ok3, "VIOLATION expected: C1 deleted C2's lock, and C2 and C3 both hold it")
		})
	}

	t.Run("redlock", func(t *testing.T) { redlockPausedHolder(t, name, key) })
}
