package redlock_test

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/core/memnode"
)

// stepClock is a core.Clock that moves only when a test sets it. AfterFunc
// arms a timer that fires once the clock reaches its end, and announces
// the end of every timer armed (or Reset) on asleep, so that a test waits
// for a goroutine to be parked on the clock (the Client's sleeps, memnode's
// replies) before it moves time: events, not sleeps.
type stepClock struct {
	mu     sync.Mutex
	now    time.Time
	timers map[*stepTimer]bool // armed, not fired nor stopped
	asleep chan time.Time      // the end of every timer armed
}

var _ core.Clock = (*stepClock)(nil)

// stepTimer is a stepClock's timer.
type stepTimer struct {
	c  *stepClock
	at time.Time
	f  func()
}

func newStepClock() *stepClock {
	return &stepClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), timers: map[*stepTimer]bool{},
		asleep: make(chan time.Time, 256)}
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc calls f once the clock reaches d from now: from set, in the
// test's goroutine, or in a goroutine of its own for d <= 0.
func (c *stepClock) AfterFunc(d time.Duration, f func()) core.Timer {
	t := &stepTimer{c: c, f: f}
	t.arm(d)
	return t
}

// arm (re)starts t to fire d from now, and reports whether it was armed.
func (t *stepTimer) arm(d time.Duration) bool {
	c := t.c
	c.mu.Lock()
	was := c.timers[t]
	delete(c.timers, t)
	if d <= 0 {
		c.mu.Unlock()
		go t.f()
		return was
	}
	t.at = c.now.Add(d)
	c.timers[t] = true
	at := t.at
	c.mu.Unlock()
	c.asleep <- at
	return was
}

func (t *stepTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := t.c.timers[t]
	delete(t.c.timers, t)
	return was
}

func (t *stepTimer) Reset(d time.Duration) bool { return t.arm(d) }

// set moves the clock to t and fires, in order, the timers whose end it
// reached; they have run when set returns.
func (c *stepClock) set(t time.Time) {
	c.mu.Lock()
	c.now = t
	var due []*stepTimer
	for s := range c.timers {
		if !s.at.After(t) {
			due = append(due, s)
			delete(c.timers, s)
		}
	}
	c.mu.Unlock()
	slices.SortFunc(due, func(a, b *stepTimer) int { return a.at.Compare(b.at) })
	for _, s := range due {
		s.f()
	}
}

// armed returns how many timers are armed.
func (c *stepClock) armed() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// next waits for the next timer armed and returns its end.
func (c *stepClock) next(t *testing.T) time.Time {
	t.Helper()
	select {
	case until := <-c.asleep:
		return until
	case <-time.After(10 * time.Second): // a hang, not a timing: fail rather than block
		t.Fatal("nobody went to sleep on the clock")
	}
	return time.Time{}
}

// TestReadingAfterReadsTheMonotonicClock: over the system clock, a
// reading later in an operation is its start plus the monotonic time
// since (one clock read, not two): its wall part moves exactly as its
// monotonic part. A Fair Client, whose tickets are wall-clock readings
// other processes compare, and a Client over another clock read the
// clock itself.
func TestReadingAfterReadsTheMonotonicClock(t *testing.T) {
	newClient := func(clock core.Clock, fair bool) *redlock.Client {
		c, err := redlock.NewClient(memnode.New(3, clock), redlock.Options{Fair: fair})
		require.NoError(t, err)
		return c
	}
	start := time.Now()
	got := redlock.ReadingAfter(newClient(core.SystemClock{}, false), start)
	assert.GreaterOrEqual(t, got.Sub(start), time.Duration(0))
	assert.Equal(t, got.Sub(start), got.Round(0).Sub(start.Round(0)), "wall and monotonic parts moved apart")

	manual := memnode.NewManualClock(time.Unix(1000, 0))
	manual.Advance(time.Minute)
	got = redlock.ReadingAfter(newClient(manual, false), time.Unix(1000, 0))
	assert.Equal(t, time.Unix(1060, 0), got, "another clock is read")

	// A Fair Client's readings are time.Now's. The two differ only by a
	// wall-clock step, which a test cannot make: the Client says which it
	// takes.
	assert.True(t, redlock.ReadsMonotonicAfter(newClient(core.SystemClock{}, false)))
	assert.False(t, redlock.ReadsMonotonicAfter(newClient(core.SystemClock{}, true)), "a Fair Client")
	assert.False(t, redlock.ReadsMonotonicAfter(newClient(manual, false)), "another clock")
}
