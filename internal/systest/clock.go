package systest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers"
	"github.com/redlock-go/redlock/internal/dialtest"
	"github.com/redlock-go/redlock/internal/redistest"
)

// testDialClock: Options.Clock is the clock the driver reads its
// deadlines on, and its Clock method says so. A Client given that clock,
// or none, adopts it and locks, extends and unlocks through the driver,
// its Until a reading of that clock; a Client given another clock, the
// system clock included, is refused with ErrInvalidConfig. A driver
// dialled without a clock reads the system clock.
func testDialClock(t *testing.T, dial DialFunc) {
	srvs := startServers(t, 3, redistest.Options{})
	open := func(t *testing.T, clock core.Clock) dialtest.Clocked {
		t.Helper()
		d, err := dial(addrsOf(srvs), drivers.Options{DialTimeout: time.Second, Clock: clock})
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, d.Close()) })
		cd, ok := d.(dialtest.Clocked)
		require.True(t, ok, "%T has no Clock method: redlock.NewClient cannot tell which clock it reads", d)
		return cd
	}
	cfg := redlock.Options{TTL: 5 * time.Second, NodeTimeout: time.Second}
	withClock := func(c core.Clock) redlock.Options { o := cfg; o.Clock = c; return o }
	for _, by := range []time.Duration{-time.Hour, time.Hour} {
		t.Run("shifted="+by.String(), func(t *testing.T) {
			clock := &dialtest.ShiftedClock{By: by}
			cd := open(t, clock)
			require.Equal(t, core.Clock(clock), cd.Clock(), "Clock returns Options.Clock")
			d := cd.(core.Driver)
			for _, given := range []core.Clock{clock, nil} {
				client, err := redlock.NewClient(d, withClock(given))
				require.NoError(t, err, "Options.Clock %v: the driver's", given)
				ctx, key := testContext(t), testKey(t, "")
				lock, err := client.TryLock(ctx, key)
				require.NoError(t, err)
				assert.WithinDuration(t, clock.Now().Add(cfg.TTL), lock.Until(), time.Second,
					"Until is a reading of the driver's clock")
				require.NoError(t, lock.Extend(ctx))
				require.NoError(t, lock.Unlock(ctx))
			}
			for _, other := range []core.Clock{core.SystemClock{}, &dialtest.ShiftedClock{By: by}} {
				_, err := redlock.NewClient(d, withClock(other))
				require.ErrorIs(t, err, core.ErrInvalidConfig, "Options.Clock %T is not the driver's", other)
			}
		})
	}
	t.Run("system", func(t *testing.T) {
		cd := open(t, nil)
		assert.Equal(t, core.Clock(core.SystemClock{}), cd.Clock(), "no Options.Clock: the system clock")
		client, err := redlock.NewClient(cd.(core.Driver), withClock(core.SystemClock{}))
		require.NoError(t, err)
		lock, err := client.TryLock(testContext(t), testKey(t, ""))
		require.NoError(t, err)
		require.NoError(t, lock.Unlock(testContext(t)))
		_, err = redlock.NewClient(cd.(core.Driver), withClock(&dialtest.ShiftedClock{}))
		require.ErrorIs(t, err, core.ErrInvalidConfig)
	})
}
