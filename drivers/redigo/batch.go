package redigo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
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

// Arguments boxed once: passing them to redigo's ...interface{} costs no
// allocation.
var (
	argNX         any = "NX"
	argPX         any = "PX"
	argOne        any = "1"
	argReleaseSHA any = wire.Release.SHA1
	argExtendSHA  any = wire.Extend.SHA1
	argReleaseSrc any = wire.Release.Src
	argExtendSrc  any = wire.Extend.Src
)

// Slot states.
const (
	slotEmpty    uint8 = iota
	slotBuffered       // Send was called; nothing is on the wire yet
	slotWire           // written and flushed; conn holds the reply in flight
	slotReady          // the reply is known without a read (the write failed)
	slotDone           // the reply was returned by Receive
)

type slot struct {
	cmd      core.Command
	deadline time.Time
	conn     redis.Conn
	reply    core.Reply
	state    uint8
	suspect  bool // the node was suspect when written: read it last
	eval     bool // the NOSCRIPT fallback (EVAL) is on the wire
}

// batch is one round. It is pooled by its Driver; a round allocates only
// what redigo's pool allocates per checkout (one small struct per node) and
// the boxes of a new key and token.
type batch struct {
	d        *Driver
	values   context.Context
	ctx      *nodeCtx
	buffered int
	slots    [core.MaxNodes]slot

	enc encoder
}

// Send records cmd for node; nothing is written until the next Receive.
func (b *batch) Send(node int, cmd core.Command, deadline time.Time) {
	if node < 0 || node >= len(b.d.nodes) || b.slots[node].state != slotEmpty {
		return // outside the contract: at most one command per node
	}
	s := &b.slots[node]
	s.cmd, s.deadline, s.state = cmd, deadline, slotBuffered
	b.buffered++
}

// Receive writes the buffered commands, then returns the first available
// reply: replies known without a read first, then the nodes in index order,
// nodes that were suspect (their last command timed out or lost its
// connection) last. A blocking read cannot be interrupted, so cancel is
// checked before each read: a cancellation is seen within one node timeout.
func (b *batch) Receive(cancel <-chan struct{}) (core.Reply, bool) {
	if b.buffered > 0 {
		b.flush()
	}
	i := b.next()
	if i < 0 {
		return core.Reply{}, false
	}
	s := &b.slots[i]
	if s.state == slotReady {
		s.state = slotDone
		return s.reply, true
	}
	if isClosed(cancel) {
		return core.Reply{}, false
	}
	reply, err := redis.ReceiveWithTimeout(s.conn, readTimeout(s.deadline, time.Now()))
	if err != nil && !s.eval && s.cmd.Op != core.OpAcquire && wire.IsNoScript(err) {
		// The server lost its script cache (SCRIPT FLUSH, restart): send
		// the script itself on the same connection.
		b.d.nodes[i].scripts.forget(s.cmd.Op)
		s.eval = true
		if !time.Now().Before(s.deadline) {
			err = errDeadlineEval // the connection is healthy: nothing is in flight
		} else if err = b.enc.write(s.conn, s.cmd, true); err == nil {
			if isClosed(cancel) {
				return core.Reply{}, false // the EVAL is a straggler now
			}
			reply, err = redis.ReceiveWithTimeout(s.conn, readTimeout(s.deadline, time.Now()))
		}
	}
	b.d.observe(i, s.cmd.Op, err)
	r := b.decode(i, reply, err)
	s.conn.Close() // back to the pool, or dropped if the read failed
	s.conn, s.state = nil, slotDone
	return r, true
}

// Close hands the connections whose replies were not received to the
// driver's drainer, or discards them when it is busy, and returns the
// batch to the pool. It never waits for the network.
func (b *batch) Close() {
	for i := range b.d.nodes {
		s := &b.slots[i]
		if s.state == slotWire {
			b.d.enqueue(straggler{conn: s.conn, cmd: s.cmd, deadline: s.deadline, node: i, eval: s.eval})
		}
		*s = slot{}
	}
	b.buffered = 0
	b.values = nil
	if b.ctx != nil && !b.ctx.observed() {
		b.ctx.values = context.Background() // keep no caller values in the pool
	}
	b.d.batches.Put(b)
}

// next returns the slot to answer next, or -1 when none is owed.
func (b *batch) next() int {
	best := -1
	for i := range b.d.nodes {
		s := &b.slots[i]
		switch s.state {
		case slotReady:
			return i
		case slotWire:
			if best < 0 || (b.slots[best].suspect && !s.suspect) {
				best = i
			}
		}
	}
	return best
}

// flush checks out a connection for every buffered command and writes and
// flushes the command on it: healthy nodes first, so that a suspect node's
// dial, which may take until its deadline, delays nobody's write.
func (b *batch) flush() {
	for i := range b.d.nodes {
		if s := &b.slots[i]; s.state == slotBuffered {
			s.suspect = b.d.nodes[i].suspect.Load()
		}
	}
	for pass := 0; pass < 2; pass++ {
		for i := range b.d.nodes {
			s := &b.slots[i]
			if s.state == slotBuffered && s.suspect == (pass == 1) {
				b.start(i, s)
			}
		}
	}
	b.buffered = 0
}

// start puts slot i's command on the wire, or makes its reply ready when
// that fails.
func (b *batch) start(i int, s *slot) {
	n := &b.d.nodes[i]
	switch {
	case b.d.closed.Load():
		b.ready(i, s, wire.Fail(i, n.name, s.cmd.Op, ErrClosed))
		return
	case s.cmd.Op < core.OpAcquire || s.cmd.Op > core.OpExtend:
		b.ready(i, s, wire.Fail(i, n.name, s.cmd.Op, errors.New("unknown op")))
		return
	}
	if !time.Now().Before(s.deadline) {
		b.ready(i, s, wire.Fail(i, n.name, s.cmd.Op, ErrDeadline))
		return
	}
	ctx := b.checkoutCtx(s.deadline)
	c, err := n.pool.GetContext(ctx)
	ctx.finish()
	if err != nil {
		b.d.observe(i, s.cmd.Op, err)
		b.ready(i, s, wire.Fail(i, n.name, s.cmd.Op, err))
		return
	}
	if !time.Now().Before(s.deadline) { // the checkout dialed past the deadline
		c.Close()
		b.ready(i, s, wire.Fail(i, n.name, s.cmd.Op, ErrDeadline))
		return
	}
	// Until the node is known to have the script, send it whole: EVAL
	// caches it, and a fresh server costs no NOSCRIPT round trip.
	s.eval = s.cmd.Op != core.OpAcquire && !n.scripts.known(s.cmd.Op)
	if err := b.enc.write(c, s.cmd, s.eval); err != nil {
		b.d.observe(i, s.cmd.Op, err)
		c.Close()
		b.ready(i, s, wire.Fail(i, n.name, s.cmd.Op, err))
		return
	}
	s.conn, s.state = c, slotWire
}

func (b *batch) ready(i int, s *slot, r core.Reply) {
	s.reply, s.state = r, slotReady
}

// encoder writes commands on redigo connections. It keeps the boxed key,
// token and TTL while they stay the same from node to node and round to
// round, so that passing them to redigo's ...interface{} allocates nothing.
type encoder struct {
	args   [5]any
	key    string
	keyBox any
	tok    core.Token
	tokHex [core.HexSize]byte
	tokBox any
	ttl    time.Duration
	ttlBox any
}

// write sends cmd on c, as EVAL instead of EVALSHA if eval is set, and
// flushes it.
func (e *encoder) write(c redis.Conn, cmd core.Command, eval bool) error {
	a := &e.args
	var name string
	var n int
	switch cmd.Op {
	case core.OpAcquire:
		name = "SET"
		a[0], a[1], a[2], a[3], a[4] = e.boxKey(cmd.Key), e.boxToken(cmd.Token), argNX, argPX, e.boxTTL(cmd.TTL)
		n = 5
	case core.OpRelease, core.OpExtend:
		name, a[0] = "EVALSHA", argReleaseSHA
		switch {
		case cmd.Op == core.OpExtend && eval:
			name, a[0] = "EVAL", argExtendSrc
		case cmd.Op == core.OpExtend:
			a[0] = argExtendSHA
		case eval:
			name, a[0] = "EVAL", argReleaseSrc
		}
		a[1], a[2], a[3] = argOne, e.boxKey(cmd.Key), e.boxToken(cmd.Token)
		n = 4
		if cmd.Op == core.OpExtend {
			a[4] = e.boxTTL(cmd.TTL)
			n = 5
		}
	default:
		return errors.New("unknown op " + cmd.Op.String())
	}
	if err := c.Send(name, a[:n]...); err != nil {
		return err
	}
	return c.Flush()
}

// decode maps a read's outcome to node i's reply.
func (b *batch) decode(i int, reply any, err error) core.Reply {
	s := &b.slots[i]
	name := b.d.nodes[i].name
	if err != nil {
		return wire.Fail(i, name, s.cmd.Op, err)
	}
	switch s.cmd.Op {
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
				return wire.Fail(i, name, s.cmd.Op, err)
			}
			return core.Reply{Node: i, Status: st}
		}
	}
	return wire.Fail(i, name, s.cmd.Op, fmt.Errorf("unexpected reply %T %v", reply, reply))
}

func (e *encoder) boxKey(k string) any {
	if e.keyBox == nil || k != e.key {
		e.key, e.keyBox = k, k
	}
	return e.keyBox
}

func (e *encoder) boxToken(t core.Token) any {
	if e.tokBox == nil || t != e.tok {
		e.tok = t
		wire.AppendToken(e.tokHex[:0], t)
		e.tokBox = e.tokHex[:]
	}
	return e.tokBox
}

func (e *encoder) boxTTL(ttl time.Duration) any {
	if e.ttlBox == nil || ttl != e.ttl {
		e.ttl, e.ttlBox = ttl, wire.MillisString(ttl)
	}
	return e.ttlBox
}

// checkoutCtx returns the context for one pool checkout ending at dl. The
// batch reuses it from checkout to checkout unless someone observed it
// (called Done, or Err after the deadline): an observed context is left
// to its observers, unchanged, and a new one is made.
func (b *batch) checkoutCtx(dl time.Time) *nodeCtx {
	c := b.ctx
	if c == nil || c.observed() {
		c = new(nodeCtx)
		b.ctx = c
	}
	c.values, c.dl = b.values, dl
	return c
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
