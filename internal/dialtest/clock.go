package dialtest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers"
	"github.com/redlock-go/redlock/internal/contract"
	"github.com/redlock-go/redlock/internal/redistest"
)

// ShiftedClock is the system clock moved by a fixed amount: a clock of
// the caller's whose readings are far from time.Now's, so that a driver
// that took one of its deadlines for a time.Now reading would time every
// command out at once (a deadline an hour ago) or never (an hour ahead).
type ShiftedClock struct{ By time.Duration }

// Now returns time.Now moved by c.By.
func (c *ShiftedClock) Now() time.Time { return time.Now().Add(c.By) }

// AfterFunc is time.AfterFunc: durations are the system clock's.
func (c *ShiftedClock) AfterFunc(d time.Duration, f func()) core.Timer { return time.AfterFunc(d, f) }

// Clocked is a driver that says which clock its deadlines read.
type Clocked interface{ Clock() core.Clock }

// testDialClock: Options.Clock is the clock the driver reads its
// deadlines on, and its Clock method says so: a command whose deadline is
// a second ahead on that clock is answered, an hour either side of
// time.Now, and one whose deadline has passed on it times out. A driver
// dialled without a clock reads the system clock.
func testDialClock(t *testing.T, dial DialFunc) {
	srvs := contract.StartServers(t, 1, redistest.Options{})
	open := func(t *testing.T, clock core.Clock) core.Driver {
		t.Helper()
		d, err := dial(contract.AddrsOf(srvs), drivers.Options{DialTimeout: time.Second, Clock: clock})
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, d.Close()) })
		cd, ok := d.(Clocked)
		require.True(t, ok, "%T has no Clock method: a Client cannot tell which clock it reads", d)
		want := clock
		if want == nil {
			want = core.SystemClock{}
		}
		require.Equal(t, want, cd.Clock(), "Clock returns Options.Clock, or the system clock without one")
		return d
	}
	send := func(d core.Driver, cmd core.Command, deadline time.Time) core.Reply {
		b := d.Begin(context.Background())
		defer b.Close()
		b.Send(0, cmd, deadline)
		r, _ := b.Receive(nil)
		return r
	}
	for _, by := range []time.Duration{-time.Hour, time.Hour, 0} {
		t.Run("shifted="+by.String(), func(t *testing.T) {
			var clock core.Clock = &ShiftedClock{By: by}
			if by == 0 {
				clock = nil
			}
			d := open(t, clock)
			now := (&ShiftedClock{By: by}).Now
			r := send(d, contract.AcquireCmd("k"), now().Add(time.Second))
			require.Equal(t, core.StatusOK, r.Status, "a deadline a second ahead on the driver's clock: %v", r.Err)
			r = send(d, contract.ReleaseCmd("k", contract.Token), now().Add(time.Second))
			require.Equal(t, core.StatusOK, r.Status, "%v", r.Err)
			r = send(d, contract.AcquireCmd("late"), now().Add(-time.Second))
			assert.Equal(t, core.StatusTimeout, r.Status, "a deadline a second past on the driver's clock: %v", r.Err)
		})
	}
}
