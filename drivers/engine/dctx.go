package engine

import (
	"context"
	"sync"
	"time"
)

// dctx is the context a command runs under: the Begin context's values and
// the Send deadline, without the Begin context's cancellation. It does what
// context.WithDeadline(context.WithoutCancel(parent), deadline) does, but
// it is reused from one pipeline to the next by the node's goroutine, so
// that a pipeline costs no context allocation. Time is the engine's Clock.
//
// Its timer and done channel are made only when a client waits on Done,
// and kept across uses. A dctx is reused only when its command succeeded
// before the deadline and its timer was stopped before firing: then the
// client has finished with it and its done channel was never closed. After
// a failure the client may still hold it (a pipelined command abandoned at
// its deadline), so the runner drops it for a fresh one.
//
// Every field is guarded by mu: a client may read the context from its own
// goroutines while the command runs.
type dctx struct {
	clock    Clock
	mu       sync.Mutex
	parent   context.Context // values only
	deadline time.Time
	done     chan struct{} // nil until Done; closed at the deadline
	err      error
	timer    Timer // runs expire at the deadline once armed
	armed    bool
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func newDctx(clock Clock) *dctx { return &dctx{clock: clock} }

// start prepares c for a command.
func (c *dctx) start(parent context.Context, deadline time.Time) {
	c.mu.Lock()
	c.parent, c.deadline = parent, deadline
	c.mu.Unlock()
}

// finish ends the command and reports whether c may be reused.
func (c *dctx) finish() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.armed {
		c.armed = false
		if !c.timer.Stop() {
			return false // fired or firing
		}
	}
	c.parent = nil
	return c.err == nil
}

// Deadline returns the deadline as a reading of the system clock (see
// wall): the client libraries set socket deadlines and read timeouts from
// it. Done and Err keep to the engine's Clock.
func (c *dctx) Deadline() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return wall(c.clock, c.deadline), true
}

func (c *dctx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return c.done
	}
	if !c.clock.Now().Before(c.deadline) {
		c.expireLocked()
		return c.done
	}
	if c.done == nil {
		c.done = make(chan struct{})
	}
	if !c.armed {
		d := c.deadline.Sub(c.clock.Now())
		if c.timer == nil {
			c.timer = c.clock.AfterFunc(d, c.expire)
		} else {
			c.timer.Reset(d)
		}
		c.armed = true
	}
	return c.done
}

func (c *dctx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil && !c.clock.Now().Before(c.deadline) {
		c.expireLocked()
	}
	return c.err
}

func (c *dctx) Value(key any) any {
	c.mu.Lock()
	p := c.parent
	c.mu.Unlock()
	if p == nil {
		return nil
	}
	return p.Value(key)
}

func (c *dctx) String() string { return "engine.deadlineContext" }

// expire is the timer's function.
func (c *dctx) expire() {
	c.mu.Lock()
	if c.err == nil {
		c.expireLocked()
	}
	c.mu.Unlock()
}

func (c *dctx) expireLocked() {
	c.err = context.DeadlineExceeded
	if c.done == nil {
		c.done = closedChan
	} else {
		close(c.done)
	}
}
