package redigo

import (
	"time"

	"github.com/redlock-go/redlock/core"
)

// Slot states.
const (
	slotEmpty    uint8 = iota
	slotBuffered       // Send was called; nothing is on the wire yet
	slotDeferred       // a suspect node's command, started once nothing else is left to read
	slotWire           // written; the slot's line holds the reply in flight
	slotReady          // the reply is known without a read (the write failed)
	slotDone           // the reply was returned by Receive
)

type slot struct {
	cmd      core.Command
	deadline time.Time
	budget   time.Duration // a release's time at Send (see pending.budget)
	line     line
	reply    core.Reply
	state    uint8
}

// batch is one round. It is pooled by its Driver; a round allocates only
// what redigo's pool allocates per checkout (one small struct per node) and
// the box of a new key or token.
type batch struct {
	d        *Driver
	w        worker
	buffered int
	deferred int
	slots    []slot // one per node
}

// Send records cmd for node; nothing is written until the next Receive.
func (b *batch) Send(node int, cmd core.Command, deadline time.Time) {
	if node < 0 || node >= len(b.slots) || b.slots[node].state != slotEmpty {
		return // outside the contract: at most one command per node
	}
	s := &b.slots[node]
	s.cmd, s.deadline, s.state = cmd, deadline, slotBuffered
	if cmd.Op == core.OpRelease {
		s.budget = time.Until(deadline)
	}
	b.buffered++
}

// Receive writes the buffered commands of healthy nodes, then returns the
// first available reply: replies known without a read first, then the
// nodes in index order. The commands of suspect nodes (whose last command
// timed out or lost its connection) are written only when no other reply
// is left to read. A blocking read cannot be interrupted, so cancel is
// checked on entry (a cancelled round writes nothing more) and before each
// read: a cancellation is seen within one node timeout.
func (b *batch) Receive(cancel <-chan struct{}) (core.Reply, bool) {
	if isClosed(cancel) {
		return core.Reply{}, false // unwritten commands stay unwritten
	}
	if b.buffered > 0 {
		b.flush()
	}
	i := b.next()
	if i < 0 && b.deferred > 0 {
		if isClosed(cancel) {
			return core.Reply{}, false
		}
		b.startDeferred()
		i = b.next()
	}
	if i < 0 {
		return core.Reply{}, false
	}
	s := &b.slots[i]
	if s.state == slotReady {
		s.state = slotDone
		return s.reply, true
	}
	r, got, ok := b.w.read(b.d, &s.line, cancel, time.Time{})
	if !ok {
		return core.Reply{}, false
	}
	if !got { // cannot happen: the line holds the slot's command until it is answered
		r = b.d.decode(i, s.cmd.Op, nil, errLost)
	}
	s.state = slotDone
	if l := &s.line; l.conn != nil {
		if l.n == 0 {
			l.conn.Close() // back to the pool
			*l = line{}
		} else {
			b.d.park(l) // EVALs for adopted commands are still in flight
		}
	}
	return r, true
}

// Close parks the lines whose replies were not all read, the suspect
// nodes' commands not yet written, and the releases sent but never
// received (see the package documentation), and returns the batch to the
// pool. It never waits for the network. Acquires and extends never
// flushed are dropped: nothing of them was written.
func (b *batch) Close() {
	for i := range b.slots {
		s := &b.slots[i]
		switch {
		case s.state == slotWire:
			b.d.park(&s.line)
		case s.state == slotDeferred || (s.state == slotBuffered && s.cmd.Op == core.OpRelease):
			// A release the round sent and did not wait for (a cleanup
			// awaits no node that timed out on its attempt) may be what
			// undoes a SET left on that node.
			l := line{node: i}
			l.push(pending{cmd: s.cmd, deadline: s.deadline, budget: s.budget})
			b.d.park(&l)
		}
		*s = slot{}
	}
	b.buffered, b.deferred = 0, 0
	b.w.reset()
	b.d.batches.Put(b)
}

// next returns the slot to answer next, or -1 when none is ready or on
// the wire.
func (b *batch) next() int {
	wired := -1
	for i := range b.slots {
		switch b.slots[i].state {
		case slotReady:
			return i
		case slotWire:
			if wired < 0 {
				wired = i
			}
		}
	}
	return wired
}

// flush writes every buffered command of a healthy node, and defers the
// suspect nodes' commands, and those that would have to wait for the
// drainer to finish a line with the same key on their node: their start
// may take until their deadline (a suspect node's checkout may dial or
// PING), which would hold up the healthy nodes' writes and reads.
func (b *batch) flush() {
	for i := range b.slots {
		s := &b.slots[i]
		if s.state != slotBuffered {
			continue
		}
		if b.d.nodes[i].suspect.Load() || !b.start(i, s, false) {
			s.state = slotDeferred
			b.deferred++
		}
	}
	b.buffered = 0
}

func (b *batch) startDeferred() {
	for i := range b.slots {
		if s := &b.slots[i]; s.state == slotDeferred {
			b.start(i, s, true)
		}
	}
	b.deferred = 0
}

// start starts slot s (node i); it returns false if it must be deferred,
// which only happens without wait.
func (b *batch) start(i int, s *slot, wait bool) bool {
	r, outcome := b.w.start(b.d, &s.line, i, s.cmd, s.deadline, wait)
	switch outcome {
	case started:
		s.state = slotWire
	case failed:
		s.reply, s.state = r, slotReady
	case expired:
		// Answered at its deadline, and handed to the drainer all the
		// same: a release may be what undoes a SET left on that node.
		s.reply, s.state = r, slotReady
		l := line{node: i}
		l.push(pending{cmd: s.cmd, deadline: s.deadline, budget: s.budget})
		b.d.park(&l)
	default:
		return false
	}
	return true
}
