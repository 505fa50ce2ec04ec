package multiproc

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/internal/batchwrap"
)

// AttemptCounter is a core.Driver that counts acquire rounds: every batch
// (Begin) that carries an acquire command (core.OpAcquire or
// core.OpAcquireFenced) counts one, once, whatever else it carries;
// release, extend and cleanup rounds do not count. A Client passes the
// Lock call's ctx to Begin, so a round is charged to the counter that
// WithAttempts put in that ctx, or to Unattributed when there is none.
// Over a driver that announces releases, it announces them too, and it
// reports the driver's clock, so that a Client over it waits and reads
// time as over the driver itself.
type AttemptCounter struct {
	core.Driver
	unattributed atomic.Int64
	pool         sync.Pool
}

type attemptsKey struct{}

// WithAttempts returns ctx carrying n: the acquire rounds begun with it
// add to n.
func WithAttempts(ctx context.Context, n *atomic.Int64) context.Context {
	return context.WithValue(ctx, attemptsKey{}, n)
}

// CountAttempts wraps d in an AttemptCounter and returns the driver to
// build a Client on: a core.Announcer when d is one.
func CountAttempts(d core.Driver) (*AttemptCounter, core.Driver) {
	c := &AttemptCounter{Driver: d}
	if ann, ok := d.(core.Announcer); ok {
		return c, announcingCounter{c, ann}
	}
	return c, c
}

// Unattributed returns the acquire rounds begun with a ctx that carried
// no counter.
func (c *AttemptCounter) Unattributed() int64 { return c.unattributed.Load() }

// Begin begins a round on the wrapped driver; the round counts when its
// first acquire command is sent.
func (c *AttemptCounter) Begin(ctx context.Context) core.Batch {
	b, _ := c.pool.Get().(*countedBatch)
	if b == nil {
		b = &countedBatch{owner: c}
	}
	b.Batch = c.Driver.Begin(ctx)
	b.n, _ = ctx.Value(attemptsKey{}).(*atomic.Int64)
	b.counted = false
	// A Client over the counter gathers replies and flushes as over the
	// driver's own batch.
	return batchwrap.Keep(b, b.Batch)
}

// Clock returns the wrapped driver's clock; nil (the system clock) when
// it does not say.
func (c *AttemptCounter) Clock() core.Clock {
	if cd, ok := c.Driver.(interface{ Clock() core.Clock }); ok {
		return cd.Clock()
	}
	return nil
}

type countedBatch struct {
	core.Batch
	owner   *AttemptCounter
	n       *atomic.Int64
	counted bool
}

func (b *countedBatch) Send(node int, cmd core.Command, deadline time.Time) {
	if !b.counted && (cmd.Op == core.OpAcquire || cmd.Op == core.OpAcquireFenced) {
		b.counted = true
		if b.n != nil {
			b.n.Add(1)
		} else {
			b.owner.unattributed.Add(1)
		}
	}
	b.Batch.Send(node, cmd, deadline)
}

func (b *countedBatch) Close() {
	b.Batch.Close()
	b.Batch, b.n = nil, nil
	b.owner.pool.Put(b)
}

// announcingCounter is an AttemptCounter over a driver that announces
// releases, and announces them too.
type announcingCounter struct {
	*AttemptCounter
	ann core.Announcer
}

func (a announcingCounter) Watch(key string, notify func(node int)) core.Watch {
	return a.ann.Watch(key, notify)
}
