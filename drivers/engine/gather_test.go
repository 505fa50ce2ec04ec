package engine

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock/core"
)

// gather returns the batch's next reply from Gather(n) in a channel.
func gather(b core.Batch, n int, cancel <-chan struct{}) <-chan core.Reply {
	c := make(chan core.Reply, 1)
	go func() {
		r, ok := b.(core.Gatherer).Gather(n, cancel)
		if !ok {
			r = core.Reply{Node: -1}
		}
		c <- r
	}()
	return c
}

// answerAtEnd answers, when the test ends, the exchanges it did not, so
// that a failed test ends rather than leaving Close waiting on them.
func answerAtEnd(t *testing.T, xs ...*exchange) {
	t.Cleanup(func() {
		for _, x := range xs {
			select {
			case x.answer <- answer{err: errors.New("the test ended")}:
			default: // answered
			}
		}
	})
}

// arrived waits until n replies have reached b.
func arrived(t *testing.T, b core.Batch, n int64) {
	t.Helper()
	bt := b.(*batch)
	for end := time.Now().Add(10 * time.Second); bt.arrived.Load() < n; runtime.Gosched() {
		if time.Now().After(end) {
			t.Fatalf("%d replies arrived, want %d", bt.arrived.Load(), n)
		}
	}
}

// parked waits until b's Gather has asked for its want-th reply (it
// parks next), then checks that it has not been signalled nor returned.
func parked(t *testing.T, b core.Batch, c <-chan core.Reply, want int64) {
	t.Helper()
	bt := b.(*batch)
	for end := time.Now().Add(10 * time.Second); bt.need.Load() != want; runtime.Gosched() {
		if time.Now().After(end) {
			t.Fatalf("Gather asks for reply %d, want %d", bt.need.Load(), want)
		}
	}
	assert.Empty(t, bt.ready, "Gather was signalled before its replies were in")
	select {
	case r := <-c:
		t.Fatalf("Gather returned %+v before its replies were in", r)
	default:
	}
}

func TestGatherWakesAtTheNthReply(t *testing.T) {
	e, f, clock := start(t, 3)
	b := e.Begin(context.Background())
	defer b.Close()
	for i := range 3 {
		b.Send(i, acquire("k", 1), clock.Now().Add(time.Second))
	}
	c := gather(b, 2, nil)
	xs := []*exchange{f.next(), f.next(), f.next()}
	answerAtEnd(t, xs...)
	xs[0].ok()
	arrived(t, b, 1)
	parked(t, b, c, 2)

	xs[1].ok()
	first := wait(t, c)
	assert.Equal(t, core.StatusOK, first.Status)
	second, ok := b.(core.Gatherer).Gather(1, nil) // at hand: no wait
	require.True(t, ok)
	assert.ElementsMatch(t, []int{xs[0].conn.node, xs[1].conn.node}, []int{first.Node, second.Node})

	c = gather(b, 5, nil) // more than are due: waits for the last one
	parked(t, b, c, 3)
	xs[2].ok()
	assert.Equal(t, xs[2].conn.node, wait(t, c).Node)
}

// TestGatherTakesRepliesInTimeFirst: at the deadline, the replies that
// came in go out before the timeouts of the nodes that sent none.
func TestGatherTakesRepliesInTimeFirst(t *testing.T) {
	e, f, clock := start(t, 3)
	b := e.Begin(context.Background())
	defer b.Close()
	for i := range 3 {
		b.Send(i, acquire("k", 1), clock.Now().Add(50*time.Millisecond))
	}
	c := gather(b, 3, nil)
	x := f.next()
	answerAtEnd(t, x, f.next(), f.next())
	x.ok()
	arrived(t, b, 1)
	parked(t, b, c, 3)

	clock.Advance(50 * time.Millisecond)
	r := wait(t, c)
	assert.Equal(t, core.Reply{Node: x.conn.node, Status: core.StatusOK}, core.Reply{Node: r.Node, Status: r.Status})
	for range 2 {
		r, ok := b.(core.Gatherer).Gather(3, nil)
		require.True(t, ok)
		assert.Equal(t, core.StatusTimeout, r.Status)
		assert.NotEqual(t, x.conn.node, r.Node)
	}
}

func TestGatherCancelled(t *testing.T) {
	e, f, clock := start(t, 2)
	b := e.Begin(context.Background())
	b.Send(0, acquire("k", 1), clock.Now().Add(time.Second))
	b.Send(1, acquire("k", 1), clock.Now().Add(time.Second))
	cancel := make(chan struct{})
	c := gather(b, 2, cancel)
	x := f.next()
	y := f.next()
	answerAtEnd(t, x, y)
	x.ok()
	arrived(t, b, 1)
	parked(t, b, c, 2)
	close(cancel)
	assert.Equal(t, -1, wait(t, c).Node, "Gather returns at once when cancelled")
	b.Close()
	y.ok() // the straggler's reply is dropped with the batch
}

// TestGatherRecycledBatchStartsAfresh: a round decided before its last
// reply was taken leaves the batch, once recycled, counting from zero;
// otherwise the next round's Gather would take a drained reply as one at
// hand and wait on the channel past its deadline and cancel.
func TestGatherRecycledBatchStartsAfresh(t *testing.T) {
	e, f, clock := start(t, 2)
	b := e.Begin(context.Background())
	b.Send(0, acquire("k", 1), clock.Now().Add(time.Second))
	b.Send(1, acquire("k", 1), clock.Now().Add(time.Second))
	c := gather(b, 1, nil)
	x, y := f.next(), f.next()
	answerAtEnd(t, x, y)
	x.ok()
	wait(t, c)
	y.ok()
	arrived(t, b, 2)
	bt := b.(*batch)
	for end := time.Now().Add(10 * time.Second); bt.inflight.Load() != 0; runtime.Gosched() {
		if time.Now().After(end) {
			t.Fatal("the second reply was not delivered")
		}
	}
	b.Close() // recycles here, with a reply in that was never taken
	assert.Zero(t, bt.arrived.Load(), "arrived")
	assert.Zero(t, bt.need.Load(), "need")
	assert.Zero(t, bt.taken, "taken")
	assert.Empty(t, bt.ready, "ready")
}
