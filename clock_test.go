package redlock_test

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redlock-go/redlock/core"
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
