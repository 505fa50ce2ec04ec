package engine

import (
	"context"
	"math/bits"
	"sync/atomic"
	"time"

	"github.com/redlock-go/redlock/core"
)

// job is one command on its way to a node.
type job struct {
	b        *batch
	node     int
	cmd      core.Command
	deadline time.Time
	// budget is how long the command had when it was queued: the least
	// time a release is given on the wire, however late it goes out.
	budget time.Duration
	// resent: the command is going again (node.requeue), which it does
	// at most once.
	resent bool
	// until, once a broken connection sends it again (node.resend): when
	// its time on the wire ends, as its first send's did.
	until time.Time
	// spent: the command went out on a connection that broke before its
	// reply, so it may have run; it goes again only once after that, a
	// Fair release with release.lua's resend flag (appendFairArgs).
	spent bool
	// lane: the WAIT lane that counts the job outstanding (node.route).
	lane *node
}

// batch is one round (core.Batch). It is used by one goroutine; node
// goroutines touch only replies and inflight.
type batch struct {
	e   *Engine
	ctx context.Context // Begin's: values only

	pend     []job           // sent, not yet queued for the nodes
	replies  chan core.Reply // capacity N: a node never blocks on it
	deadline []time.Time     // per node, of the command awaited
	op       []core.Op       // per node, of the command awaited
	waiting  uint64          // bit i: node i's reply is awaited (core.MaxNodes <= 64)

	timer Timer         // wakes Receive at the earliest deadline
	wake  chan struct{} // the timer's signal

	// Replies come in through replies: arrived counts them, taken those
	// Gather took. A node that brings arrived to need signals ready,
	// which Gather waits on for the replies it wants.
	arrived atomic.Int64
	need    atomic.Int64
	ready   chan struct{}
	taken   int64

	// inflight counts the jobs queued whose reply is not yet delivered,
	// plus abandoned once Close has run. Whoever brings it to exactly
	// abandoned (Close, or the node delivering the last reply) recycles the
	// batch: no node touches it after that.
	inflight atomic.Int64
}

const abandoned = 1 << 40

// idleBatches is how many idle batches an engine keeps (Engine.batches):
// a client's round takes one, and its batch before may still await the
// nodes a quorum went without, so that this covers a few dozen clients.
const idleBatches = 64

func newBatch(e *Engine) *batch {
	n := len(e.names)
	b := &batch{
		e:        e,
		pend:     make([]job, 0, n),
		replies:  make(chan core.Reply, n),
		deadline: make([]time.Time, n),
		op:       make([]core.Op, n),
		wake:     make(chan struct{}, 1),
		ready:    make(chan struct{}, 1),
	}
	b.timer = e.clock.AfterFunc(time.Hour, b.ring)
	b.timer.Stop()
	return b
}

func (b *batch) ring() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

var _ core.Gatherer = (*batch)(nil)

// Send buffers cmd for node until the next Receive or Close.
func (b *batch) Send(node int, cmd core.Command, deadline time.Time) {
	if node < 0 || node >= len(b.deadline) || b.waiting&(1<<node) != 0 || len(b.pend) == cap(b.pend) {
		return // outside the contract (one command per node); ignore
	}
	b.pend = append(b.pend, job{b: b, node: node, cmd: cmd, deadline: deadline})
}

// Flush queues the buffered commands (core.Flusher): each node takes its
// jobs in the order they are queued, but for a member with WAIT, whose
// acquires go on a lane of their own, which a release may follow.
func (b *batch) Flush() {
	if len(b.pend) > 0 {
		b.queue(false)
	}
}

// Receive queues the buffered commands, then returns the first reply to
// arrive, or core.StatusTimeout for a node whose deadline passes first.
func (b *batch) Receive(cancel <-chan struct{}) (core.Reply, bool) {
	return b.Gather(1, cancel)
}

// Gather is Receive, woken only once n replies are at hand
// (core.Gatherer): the nodes' replies queue without waking the round
// until then.
func (b *batch) Gather(n int, cancel <-chan struct{}) (core.Reply, bool) {
	if len(b.pend) > 0 {
		if isClosed(cancel) {
			b.queue(true) // cancelled before anything went out: releases only
			return core.Reply{}, false
		}
		b.queue(false)
	}
	for b.waiting != 0 {
		want := int64(min(max(n, 1), bits.OnesCount64(b.waiting)))
		if b.arrived.Load()-b.taken >= want {
			r := <-b.replies // arrived counts it once it is in the channel
			b.taken++
			if b.take(r.Node) {
				return r, true
			}
			continue // a reply already answered as a timeout
		}
		now := b.e.clock.Now()
		node := b.earliest()
		d := b.deadline[node].Sub(now)
		if d <= 0 && b.arrived.Load() > b.taken {
			n = 1 // the replies that came in time go first
			continue
		}
		if d <= 0 {
			b.take(node)
			return b.e.fail(node, b.op[node], errNoReply, true), true
		}
		// Ask the nodes for a signal at the want-th reply, then look
		// again: a reply that came in meanwhile may not have seen the ask.
		b.need.Store(b.taken + want)
		if b.arrived.Load()-b.taken >= want {
			continue
		}
		b.timer.Reset(d)
		select {
		case <-b.ready:
			b.timer.Stop()
		case <-b.wake:
		case <-cancel:
			b.timer.Stop()
			return core.Reply{}, false
		}
	}
	return core.Reply{}, false // nothing awaited: outside the contract
}

// Ready returns the replies come in and not yet returned (core.Gatherer).
func (b *batch) Ready() int { return int(b.arrived.Load() - b.taken) }

// take marks node's reply as returned, reporting false if it already was.
func (b *batch) take(node int) bool {
	bit := uint64(1) << node
	if b.waiting&bit == 0 {
		return false
	}
	b.waiting &^= bit
	return true
}

// earliest returns the awaited node with the earliest deadline.
func (b *batch) earliest() int {
	node := -1
	for w := b.waiting; w != 0; w &= w - 1 {
		i := bits.TrailingZeros64(w)
		if node < 0 || b.deadline[i].Before(b.deadline[node]) {
			node = i
		}
	}
	return node
}

// queue hands the buffered commands to their nodes; with releasesOnly, it
// drops the others, unsent and unawaited.
func (b *batch) queue(releasesOnly bool) {
	now := b.e.clock.Now()
	for _, j := range b.pend {
		if releasesOnly && j.cmd.Op != core.OpRelease {
			continue
		}
		j.budget = j.deadline.Sub(now)
		if !releasesOnly {
			b.deadline[j.node], b.op[j.node] = j.deadline, j.cmd.Op
			b.waiting |= 1 << j.node
		}
		b.inflight.Add(1)
		b.e.nodes[j.node].route(j)
	}
	clear(b.pend)
	b.pend = b.pend[:0]
}

// deliver is how a node answers a job. It recycles the batch if the batch
// was closed and this was the last reply it awaited.
func (b *batch) deliver(r core.Reply) {
	b.replies <- r
	if b.arrived.Add(1) == b.need.Load() {
		select {
		case b.ready <- struct{}{}:
		default:
		}
	}
	if b.inflight.Add(-1) == abandoned {
		b.recycle()
	}
}

// Close ends the round without waiting. Releases still buffered (a cleanup
// that awaits none of its nodes closes without a Receive) are queued all
// the same: each may undo an earlier SET on its node. Acquires and
// extends still buffered are dropped. The batch is recycled once no node
// holds it.
func (b *batch) Close() {
	b.queue(true)
	b.waiting = 0
	if b.inflight.Add(abandoned) == abandoned {
		b.recycle()
	}
}

func (b *batch) recycle() {
	for len(b.replies) > 0 {
		<-b.replies
	}
	select {
	case <-b.ready:
	default:
	}
	b.arrived.Store(0)
	b.need.Store(0)
	b.taken = 0
	b.ctx = nil
	b.waiting = 0
	b.inflight.Store(0)
	select {
	case b.e.batches <- b:
	default: // idleBatches idle already
	}
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
