package redigo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers/internal/wire"
)

// lateRead is the read timeout used once a command's deadline has passed,
// typically because the replies are read one node after the other and an
// earlier node took until the deadline. A reply that has already arrived is
// in the socket buffer, but Go fails a read whose deadline has passed
// without looking at the socket, so the read needs a deadline slightly in
// the future: lateRead is long enough for the read to reach the socket on a
// loaded machine, and short against any node timeout. (redigo treats a zero
// timeout as none, so a read is never given less.)
const lateRead = time.Millisecond

// discardRead is the read timeout of a connection being discarded without
// blocking: a reply already buffered is taken, anything else kills it.
const discardRead = time.Nanosecond

// ErrDeadline is the error of a command whose per-node deadline passed
// before it could be written (while an earlier node's connection was being
// dialed, for instance). It matches os.ErrDeadlineExceeded.
var ErrDeadline = fmt.Errorf("redigo: per-node deadline passed before the command was sent: %w", os.ErrDeadlineExceeded)

// errDeadlineEval is the error of a release or extend whose EVALSHA met
// NOSCRIPT after its deadline: the EVAL fallback is not sent.
var errDeadlineEval = fmt.Errorf("redigo: NOSCRIPT after the per-node deadline, EVAL not sent: %w", os.ErrDeadlineExceeded)

// call is one command to one node, from checkout to reply.
type call struct {
	node     int
	cmd      core.Command
	deadline time.Time
	conn     redis.Conn // holds the reply in flight, once written
	eval     bool       // the command on the wire is EVAL, not EVALSHA
}

// worker runs calls: a batch's (on its caller's goroutine) or the
// drainer's. It holds what a call needs besides the call itself, so that
// running one allocates nothing.
type worker struct {
	enc    encoder
	ctx    *nodeCtx
	values context.Context // Begin's, for the pools' DialContext
}

// start checks out a connection for c and writes c's command on it. When
// that fails it returns the reply and false, and c holds no connection.
func (w *worker) start(d *Driver, c *call) (core.Reply, bool) {
	i, op := c.node, c.cmd.Op
	n := &d.nodes[i]
	switch {
	case d.closed.Load():
		return wire.Fail(i, n.name, op, ErrClosed), false
	case op < core.OpAcquire || op > core.OpExtend:
		return wire.Fail(i, n.name, op, errors.New("unknown op")), false
	case !time.Now().Before(c.deadline):
		return wire.Fail(i, n.name, op, ErrDeadline), false
	}
	ctx := w.checkoutCtx(c.deadline)
	conn, err := n.pool.GetContext(ctx)
	ctx.finish()
	if err != nil {
		d.observe(i, op, err)
		return wire.Fail(i, n.name, op, err), false
	}
	if !time.Now().Before(c.deadline) { // the checkout dialed past the deadline
		conn.Close()
		return wire.Fail(i, n.name, op, ErrDeadline), false
	}
	// Until the node is known to have the script, send it whole: EVAL
	// caches it, and a fresh server costs no NOSCRIPT round trip.
	c.eval = op != core.OpAcquire && !n.scripts.known(op)
	if err := w.enc.write(conn, c.cmd, c.eval); err != nil {
		d.observe(i, op, err)
		conn.Close()
		return wire.Fail(i, n.name, op, err), false
	}
	c.conn = conn
	return core.Reply{}, true
}

// finish reads the reply to c's command, bounded by c's deadline, answers
// NOSCRIPT with EVAL on the same connection, and returns the connection to
// its pool (redigo closes it, and the pool drops it, if the read failed).
// If cancel is closed before a read, it returns false and c keeps its
// connection, the reply still in flight.
func (w *worker) finish(d *Driver, c *call, cancel <-chan struct{}) (core.Reply, bool) {
	if isClosed(cancel) {
		return core.Reply{}, false
	}
	reply, err := redis.ReceiveWithTimeout(c.conn, readTimeout(c.deadline, time.Now()))
	if err != nil && !c.eval && c.cmd.Op != core.OpAcquire && wire.IsNoScript(err) {
		// The server lost its script cache (SCRIPT FLUSH): send the script
		// itself. A release the round no longer waits for must still take
		// effect, so the drainer does this too.
		d.nodes[c.node].scripts.forget(c.cmd.Op)
		c.eval = true
		if !time.Now().Before(c.deadline) {
			err = errDeadlineEval // the connection is healthy: nothing is in flight
		} else if err = w.enc.write(c.conn, c.cmd, true); err == nil {
			if isClosed(cancel) {
				return core.Reply{}, false // the EVAL is in flight
			}
			reply, err = redis.ReceiveWithTimeout(c.conn, readTimeout(c.deadline, time.Now()))
		}
	}
	d.observe(c.node, c.cmd.Op, err)
	r := d.decode(c, reply, err)
	c.conn.Close()
	c.conn = nil
	return r, true
}

// Slot states.
const (
	slotEmpty    uint8 = iota
	slotBuffered       // Send was called; nothing is on the wire yet
	slotDeferred       // a suspect node's command, started once nothing else is left to read
	slotWire           // written and flushed; the call's conn holds the reply in flight
	slotReady          // the reply is known without a read (the write failed)
	slotDone           // the reply was returned by Receive
)

type slot struct {
	call
	reply core.Reply
	state uint8
}

// batch is one round. It is pooled by its Driver; a round allocates only
// what redigo's pool allocates per checkout (one small struct per node) and
// the box of a new key or token.
type batch struct {
	d        *Driver
	w        worker
	buffered int
	deferred int
	slots    [core.MaxNodes]slot
}

// Send records cmd for node; nothing is written until the next Receive.
func (b *batch) Send(node int, cmd core.Command, deadline time.Time) {
	if node < 0 || node >= len(b.d.nodes) || b.slots[node].state != slotEmpty {
		return // outside the contract: at most one command per node
	}
	s := &b.slots[node]
	s.call = call{node: node, cmd: cmd, deadline: deadline}
	s.state = slotBuffered
	b.buffered++
}

// Receive writes the buffered commands of healthy nodes, then returns the
// first available reply: replies known without a read first, then the
// nodes in index order. The commands of suspect nodes (whose last command
// timed out or lost its connection) are written only when no other reply
// is left to read. A blocking read cannot be interrupted, so cancel is
// checked before each read: a cancellation is seen within one node timeout.
func (b *batch) Receive(cancel <-chan struct{}) (core.Reply, bool) {
	if b.buffered > 0 {
		b.flush()
	}
	i := b.next()
	if i < 0 && b.deferred > 0 {
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
	r, ok := b.w.finish(b.d, &s.call, cancel)
	if ok {
		s.state = slotDone
	}
	return r, ok
}

// Close hands the connections whose replies were not read, and the
// suspect nodes' commands not yet written, to the driver's drainer (or,
// when it is busy, discards them) and returns the batch to the pool. It
// never waits for the network.
func (b *batch) Close() {
	for i := range b.d.nodes {
		s := &b.slots[i]
		if s.state == slotWire || s.state == slotDeferred {
			b.d.enqueue(s.call)
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
	for i := range b.d.nodes {
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

// flush writes every buffered command of a healthy node and defers the
// suspect nodes': their checkout may dial or PING until their deadline,
// which would hold up the reads of the healthy nodes.
func (b *batch) flush() {
	for i := range b.d.nodes {
		s := &b.slots[i]
		if s.state != slotBuffered {
			continue
		}
		if b.d.nodes[i].suspect.Load() {
			s.state = slotDeferred
			b.deferred++
			continue
		}
		b.start(s)
	}
	b.buffered = 0
}

func (b *batch) startDeferred() {
	for i := range b.d.nodes {
		if s := &b.slots[i]; s.state == slotDeferred {
			b.start(s)
		}
	}
	b.deferred = 0
}

func (b *batch) start(s *slot) {
	if r, ok := b.w.start(b.d, &s.call); ok {
		s.state = slotWire
	} else {
		s.reply, s.state = r, slotReady
	}
}

// decode maps the outcome of c's read to its reply.
func (d *Driver) decode(c *call, reply any, err error) core.Reply {
	i, op := c.node, c.cmd.Op
	name := d.nodes[i].name
	if err != nil {
		return wire.Fail(i, name, op, err)
	}
	switch op {
	case core.OpAcquire:
		switch v := reply.(type) {
		case nil:
			return core.Reply{Node: i, Status: core.StatusHeld}
		case string:
			if v == "OK" {
				return core.Reply{Node: i, Status: core.StatusOK}
			}
		}
	default:
		if v, ok := reply.(int64); ok {
			st, err := wire.ScriptStatus(v)
			if err != nil {
				return wire.Fail(i, name, op, err)
			}
			return core.Reply{Node: i, Status: st}
		}
	}
	return wire.Fail(i, name, op, fmt.Errorf("unexpected reply %T %v", reply, reply))
}

// readTimeout is the read timeout for a command ending at deadline: the
// time left, or lateRead once none is.
func readTimeout(deadline, now time.Time) time.Duration {
	if d := deadline.Sub(now); d > lateRead {
		return d
	}
	return lateRead
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

var isTimeout = wire.IsTimeout
