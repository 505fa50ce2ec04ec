package redlock_test

import (
	"sync"
	"testing"
	"time"
)

// stepClock is a clock that moves only when a test advances it. Sleep
// blocks until the clock reaches its end or cancel closes, and announces
// each sleeper on asleep, so that a test waits for the Lock's goroutine to
// be parked before it moves time: events, not sleeps.
type stepClock struct {
	mu       sync.Mutex
	now      time.Time
	sleepers map[*sleeper]bool
	asleep   chan time.Time // the end of every Sleep that starts
}

type sleeper struct {
	until time.Time
	wake  chan struct{}
}

func newStepClock() *stepClock {
	return &stepClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), sleepers: map[*sleeper]bool{},
		asleep: make(chan time.Time, 64)}
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *stepClock) Sleep(d time.Duration, cancel <-chan struct{}) bool {
	c.mu.Lock()
	s := &sleeper{until: c.now.Add(d), wake: make(chan struct{})}
	if d <= 0 {
		c.mu.Unlock()
		return true
	}
	c.sleepers[s] = true
	c.mu.Unlock()
	c.asleep <- s.until
	select {
	case <-s.wake:
		return true
	case <-cancel:
		c.mu.Lock()
		delete(c.sleepers, s)
		c.mu.Unlock()
		return false
	}
}

// set moves the clock to t and wakes the sleepers whose end it reached.
func (c *stepClock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
	for s := range c.sleepers {
		if !s.until.After(t) {
			close(s.wake)
			delete(c.sleepers, s)
		}
	}
}

// next waits for the next sleeper and returns the end of its sleep.
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
