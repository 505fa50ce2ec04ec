package redigo

import (
	"errors"
	"sync/atomic"
	"time"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers/internal/wire"
)

// Pipelined slot states.
const (
	pEmpty    uint8 = iota
	pBuffered       // Send was called; not queued yet
	pWaiting        // queued on a connection, or answered by a failure; reply due on ch
	pDone           // returned by Receive (a reply, or a timeout)
)

type pslot struct {
	cmd      core.Command
	deadline time.Time
	state    uint8
}

// pbatch is one round in pipelined mode. Its replies come on ch, from the
// connections' readers (or from enqueue, for commands refused at once). A
// round's replies may come after Close: a batch is reused only once every
// queued command has been answered. refs counts the owner (until Close)
// and the commands queued and unanswered; whoever drops it to zero
// returns the batch to the pool.
type pbatch struct {
	d       *Driver
	slots   []pslot
	ch      chan core.Reply // capacity: one reply per node
	timer   *time.Timer
	refs    atomic.Int32
	queued  int // slots in pBuffered
	waiting int // slots in pWaiting
}

func (d *Driver) newPbatch() any {
	t := time.NewTimer(time.Hour)
	t.Stop()
	b := &pbatch{d: d, slots: make([]pslot, len(d.nodes)), ch: make(chan core.Reply, len(d.nodes)), timer: t}
	b.refs.Store(1)
	return b
}

// Send records cmd for node; it is queued on the node's connection by the
// next Receive.
func (b *pbatch) Send(node int, cmd core.Command, deadline time.Time) {
	if node < 0 || node >= len(b.slots) || b.slots[node].state != pEmpty {
		return // outside the contract: at most one command per node
	}
	s := &b.slots[node]
	s.cmd, s.deadline, s.state = cmd, deadline, pBuffered
	b.queued++
}

// Receive queues the recorded commands on their connections, then returns
// the first reply to come, or StatusTimeout for a node whose deadline
// passes first.
func (b *pbatch) Receive(cancel <-chan struct{}) (core.Reply, bool) {
	if isClosed(cancel) {
		return core.Reply{}, false // recorded commands stay unsent
	}
	if b.queued > 0 {
		b.enqueue()
	}
	for b.waiting > 0 {
		select {
		case r := <-b.ch:
			if b.take(r) {
				return r, true
			}
			continue
		default:
		}
		j := -1
		for i := range b.slots {
			if s := &b.slots[i]; s.state == pWaiting && (j < 0 || s.deadline.Before(b.slots[j].deadline)) {
				j = i
			}
		}
		s := &b.slots[j]
		wait := time.Until(s.deadline)
		if wait <= 0 {
			s.state = pDone
			b.waiting--
			return wire.Fail(j, b.d.nodes[j].name, s.cmd.Op, errNoReply), true
		}
		b.timer.Reset(wait)
		select {
		case r := <-b.ch:
			b.timer.Stop()
			if b.take(r) {
				return r, true
			}
		case <-cancel:
			b.timer.Stop()
			return core.Reply{}, false
		case <-b.timer.C:
		}
	}
	return core.Reply{}, false
}

// take accepts r unless its node was answered already (timed out).
func (b *pbatch) take(r core.Reply) bool {
	s := &b.slots[r.Node]
	if s.state != pWaiting {
		return false
	}
	s.state = pDone
	b.waiting--
	return true
}

// enqueue queues every recorded command on its node's connection for its
// key. A command refused at once is answered on ch.
func (b *pbatch) enqueue() {
	now := time.Now()
	for i := range b.slots {
		s := &b.slots[i]
		if s.state != pBuffered {
			continue
		}
		s.state = pWaiting
		b.waiting++
		var err error
		switch op := s.cmd.Op; {
		case op < core.OpAcquire || op > core.OpExtend:
			err = errors.New("unknown op")
		case !now.Before(s.deadline):
			err = ErrDeadline
		default:
			e := pentry{b: b, cmd: s.cmd, deadline: s.deadline}
			if op == core.OpRelease {
				e.budget = s.deadline.Sub(now)
			}
			b.refs.Add(1)
			if err = b.d.pipeFor(i, s.cmd.Key).enqueue(e); err == nil {
				continue
			}
			b.refs.Add(-1)
		}
		b.ch <- wire.Fail(i, b.d.nodes[i].name, s.cmd.Op, err)
	}
	b.queued = 0
}

// deliver hands a queued command's reply to the round, which may have
// ended.
func (b *pbatch) deliver(r core.Reply) {
	b.ch <- r
	if b.refs.Add(-1) == 0 {
		b.recycle()
	}
}

// Close ends the round without waiting: the replies still due are
// discarded when they come. Releases recorded and never received are
// queued all the same (a cleanup does not wait for the nodes that timed
// out on its attempt, and may be what undoes a SET left there);
// acquires and extends never queued are dropped: nothing of them was
// written.
func (b *pbatch) Close() {
	if b.queued > 0 {
		for i := range b.slots {
			if s := &b.slots[i]; s.state == pBuffered && s.cmd.Op != core.OpRelease {
				s.state = pEmpty
				b.queued--
			}
		}
		if b.queued > 0 {
			b.enqueue()
		}
	}
	if b.refs.Add(-1) == 0 {
		b.recycle()
	}
}

// recycle returns b to the pool once nothing refers to it any more.
func (b *pbatch) recycle() {
	for len(b.ch) > 0 {
		<-b.ch
	}
	clear(b.slots)
	b.queued, b.waiting = 0, 0
	b.refs.Store(1)
	b.d.pbatches.Put(b)
}
