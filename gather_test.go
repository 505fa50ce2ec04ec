package redlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/core/memnode"
)

// lateDriver answers an extension's commands OK, both before the round's
// deadline, but wakes the round's goroutine for them only at wakeAt (a GC
// pause, a starved CPU): one at a time, for the second reply; gathering,
// for both at once.
type lateDriver struct {
	*memnode.Cluster
	clock  *memnode.ManualClock
	wakeAt time.Time
	gather bool
}

func (d *lateDriver) Begin(ctx context.Context) core.Batch {
	b := &lateBatch{Batch: d.Cluster.Begin(ctx), d: d}
	if d.gather {
		return gatherBatch{b}
	}
	return b
}

type lateBatch struct {
	core.Batch
	d     *lateDriver
	nodes []int // the extension's, answered OK
	got   int
}

func (b *lateBatch) Send(node int, cmd core.Command, deadline time.Time) {
	if cmd.Op == core.OpExtend {
		b.nodes = append(b.nodes, node)
		return
	}
	b.Batch.Send(node, cmd, deadline)
}

func (b *lateBatch) late() { b.d.clock.Advance(b.d.wakeAt.Sub(b.d.clock.Now())) }

func (b *lateBatch) next() (core.Reply, bool) {
	b.got++
	return core.Reply{Node: b.nodes[b.got-1], Status: core.StatusOK}, true
}

func (b *lateBatch) Receive(cancel <-chan struct{}) (core.Reply, bool) {
	if len(b.nodes) == 0 {
		return b.Batch.Receive(cancel)
	}
	if b.got == 1 {
		b.late()
	}
	return b.next()
}

type gatherBatch struct{ *lateBatch }

func (b gatherBatch) Gather(n int, cancel <-chan struct{}) (core.Reply, bool) {
	if len(b.nodes) == 0 {
		return b.Batch.Receive(cancel)
	}
	if b.got == 0 && n >= 2 {
		b.late()
	}
	return b.next()
}

// Ready: both replies are in once the goroutine woke; one was returned.
func (b gatherBatch) Ready() int {
	if len(b.nodes) > 0 && b.got == 1 {
		return 1
	}
	return 0
}

// TestGatheredRepliesCountWhenTheyCame: an extension whose quorum replied
// before the round's end is not lost because the round's goroutine woke
// after LoseAt to take the replies: gathering, the replies already in are
// taken as they came, as one at a time each would have been (found by
// review: the runner looked at the clock between them).
func TestGatheredRepliesCountWhenTheyCame(t *testing.T) {
	for _, gather := range []bool{false, true} {
		clock := memnode.NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		d := &lateDriver{Cluster: memnode.New(3, clock), clock: clock, gather: gather}
		nt := 50 * time.Millisecond
		c, err := redlock.NewClient(d, redlock.Options{TTL: 10 * time.Second, NodeTimeout: nt})
		if err != nil {
			t.Fatal(err)
		}
		l, err := c.TryLock(context.Background(), "k")
		if err != nil {
			t.Fatal(err)
		}
		loseAt := l.Until().Add(-nt)
		// The last moment an Extend may start: its round ends at LoseAt.
		clock.Advance(loseAt.Add(-nt).Sub(clock.Now()))
		d.wakeAt = loseAt.Add(time.Microsecond)
		if err := l.Extend(context.Background()); err != nil {
			t.Errorf("gather=%v: an extension whose quorum replied in time was lost: %v", gather, err)
		}
	}
}
