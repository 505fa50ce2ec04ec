package redigo

import (
	"context"
	"sync"
	"time"
)

// checkoutCtx returns the context for one pool checkout ending at dl. The
// worker reuses it from checkout to checkout unless someone observed it
// (called Done, or Err after the deadline): an observed context is left
// to its observers, unchanged, and a new one is made.
func (w *worker) checkoutCtx(dl time.Time) *nodeCtx {
	c := w.ctx
	if c == nil || c.observed() {
		c = new(nodeCtx)
		w.ctx = c
	}
	c.values, c.dl = w.values, dl
	return c
}

// reset forgets the caller's values.
func (w *worker) reset() {
	w.values = context.Background()
	if w.ctx != nil && !w.ctx.observed() {
		w.ctx.values = w.values
	}
}

// nodeCtx is the context.Context of a pool checkout: its deadline is the
// command's, its values are Begin's, and it is never cancelled otherwise.
// Its Done channel and timer are made only when someone asks for Done
// (a dial, a pool with Wait set): the common checkout of an idle connection
// costs no allocation.
type nodeCtx struct {
	values context.Context
	dl     time.Time

	mu    sync.Mutex
	done  chan struct{}
	timer *time.Timer
	err   error
}

func (c *nodeCtx) Deadline() (time.Time, bool) { return c.dl, true }
func (c *nodeCtx) Value(key any) any           { return c.values.Value(key) }

func (c *nodeCtx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		c.done = make(chan struct{})
		if c.err == nil {
			if d := time.Until(c.dl); d > 0 {
				c.timer = time.AfterFunc(d, func() { c.end(context.DeadlineExceeded) })
				return c.done
			}
			c.err = context.DeadlineExceeded
		}
		close(c.done)
	}
	return c.done
}

func (c *nodeCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil && !time.Now().Before(c.dl) {
		c.err = context.DeadlineExceeded
		if c.done != nil {
			close(c.done)
		}
	}
	return c.err
}

// end cancels c with err unless it has ended already.
func (c *nodeCtx) end(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.err = err
		if c.done != nil {
			close(c.done)
		}
	}
}

// finish is the cancel of a checkout: it releases an armed timer.
func (c *nodeCtx) finish() {
	c.mu.Lock()
	armed := c.done != nil
	if c.timer != nil {
		c.timer.Stop()
	}
	c.mu.Unlock()
	if armed {
		c.end(context.Canceled)
	}
}

func (c *nodeCtx) observed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.done != nil || c.err != nil
}

func (c *nodeCtx) String() string { return "redigo.checkoutContext" }
