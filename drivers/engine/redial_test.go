package engine

import (
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// armedClock is a manualClock that tells the test every timer armed on
// it, with its delay: the test advances the clock only once the engine
// waits on it.
type armedClock struct {
	*manualClock
	armed chan time.Duration
}

func (c armedClock) AfterFunc(d time.Duration, f func()) Timer {
	t := c.manualClock.AfterFunc(d, f)
	c.armed <- d
	return t
}

// nextArmed waits for the next timer armed on c.
func (c armedClock) nextArmed(t *testing.T) time.Duration {
	t.Helper()
	select {
	case d := <-c.armed:
		return d
	case <-time.After(10 * time.Second):
		t.Fatal("no timer armed on the engine's clock")
		return 0
	}
}

// TestWatchRedialsOnTheClock: a node's subscription connection is
// dialled again after the redial delays measured on the engine's clock
// (Config.Clock), not on the system's: each delay is a timer of that
// clock, and the next dial comes when the clock reaches it, doubling
// after failed dials and waiting refusedRetry after a refusal.
func TestWatchRedialsOnTheClock(t *testing.T) {
	f := newFakeSubNet(t, 1)
	clock := armedClock{newManualClock(), make(chan time.Duration, 64)}
	e := mustNew(t, Config{Names: []string{"nodeA:6379"}, Dial: okDial, Subscribe: f.dial, Clock: clock,
		Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(e.Close)
	k := newNotes(t)
	e.Watch("k", k.notify)
	conn := f.dialedAll(1)[0]
	f.expectAll([]*fakeSub{conn}, "SUBSCRIBE", chK)
	conn.push(subscribed(chK))
	k.expect(0)

	conn.breakWith(io.EOF)
	k.expect(0)
	conn.waitClosed()
	require.Equal(t, redialMin, clock.nextArmed(t), "the redial waits redialMin on the engine's clock")
	assert.Equal(t, []int{1}, f.dialCounts(), "not dialled before the clock moves")

	// The dials fail: each waits twice as long as the one before, on the
	// clock.
	f.setDialErr(0, errRefused)
	clock.Advance(redialMin)
	require.Equal(t, subDial{node: 0}, f.nextDial(), "dialled once the clock reached the delay")
	want := 2 * redialMin
	for range 3 {
		require.Equal(t, want, clock.nextArmed(t))
		clock.Advance(want - 1)
		assert.Equal(t, 0, len(f.dials), "no dial before the delay's end") // a wrong dial would be a timer that came due
		clock.Advance(1)
		require.Equal(t, subDial{node: 0}, f.nextDial())
		want *= 2
	}
	require.Equal(t, want, clock.nextArmed(t))
	f.setDialErr(0, nil)
	clock.Advance(want)
	fresh, failed := f.redialed(0)
	assert.Zero(t, failed)
	f.expectAll([]*fakeSub{fresh}, "SUBSCRIBE", chK)

	// A refusal waits refusedRetry, on the clock too.
	fresh.push(Event{Kind: EventRefused, Err: errors.New("NOPERM no channel rights")})
	fresh.waitClosed()
	require.Equal(t, refusedRetry, clock.nextArmed(t))
	clock.Advance(refusedRetry)
	again, _ := f.redialed(0)
	f.expectAll([]*fakeSub{again}, "SUBSCRIBE", chK)
}
