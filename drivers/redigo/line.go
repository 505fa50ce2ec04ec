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

// maxChain is the number of commands a line holds: its own and those of
// the unfinished lines it adopted.
const maxChain = 4

// ErrDeadline is the error of a command whose per-node deadline passed
// before it could be written (while an earlier node's connection was being
// dialed, for instance). It matches os.ErrDeadlineExceeded.
var ErrDeadline = fmt.Errorf("redigo: per-node deadline passed before the command was sent: %w", os.ErrDeadlineExceeded)

// errLost would be the error of a command whose line lost track of it.
var errLost = errors.New("redigo: reply lost")

// errDeadlineEval is the error of a release or extend whose EVALSHA met
// NOSCRIPT after its deadline: the EVAL fallback is not sent.
var errDeadlineEval = fmt.Errorf("redigo: NOSCRIPT after the per-node deadline, EVAL not sent: %w", os.ErrDeadlineExceeded)

// pending is one command of a line.
type pending struct {
	cmd      core.Command
	deadline time.Time
	// budget is, for a release not yet written, the time it had when it
	// was sent; 0 once that time has been given (see line.grant).
	budget time.Duration
	eval   bool // it is (or will be) sent as EVAL rather than EVALSHA
	mine   bool // the command of the batch holding the line
}

// late reports whether p, not written yet, is a release whose deadline
// has passed but which is still to be written (see line.grant).
func (p *pending) late(now time.Time) bool {
	return p.cmd.Op == core.OpRelease && p.budget > 0 && !now.Before(p.deadline)
}

// line is a connection to one node with commands in flight on it, whose
// replies are due in order; or, with conn nil, commands not written yet
// (a suspect node's, deferred). A line is the unit that rounds hand over
// when they end without reading every reply: the next command for the same
// key on that node is pipelined on the same line, so the server runs it
// after them (see adopt).
type line struct {
	node  int
	conn  redis.Conn
	calls [maxChain]pending
	n     int
}

func (l *line) push(p pending) { l.calls[l.n] = p; l.n++ }

func (l *line) pop() {
	copy(l.calls[:], l.calls[1:l.n])
	l.n--
	l.calls[l.n] = pending{}
}

// grant gives each release of l not yet written its time again: a
// deadline of at least now plus the time it had when it was sent. A
// release is written even once its round has stopped waiting for it,
// since it may be what undoes a SET that its node (hung, suspect) runs
// later: dropped, it would leave the key until its TTL. Its round has had
// its answer at the deadline; only the line waits longer. The time is
// given once.
func (l *line) grant(now time.Time) {
	for k := 0; k < l.n; k++ {
		p := &l.calls[k]
		if p.cmd.Op != core.OpRelease || p.budget <= 0 {
			continue
		}
		if g := now.Add(p.budget); g.After(p.deadline) {
			p.deadline = g
		}
		p.budget = 0
	}
}

func (l *line) has(key string) bool {
	for k := 0; k < l.n; k++ {
		if l.calls[k].cmd.Key == key {
			return true
		}
	}
	return false
}

// deadline is the bound of every read on l: the deadline of the batch's
// own command if l holds it (the replies before it must come by then too),
// or else the latest deadline of l's commands, since each reply waits for
// the ones before it.
func (l *line) deadline() time.Time {
	var dl time.Time
	for k := 0; k < l.n; k++ {
		if l.calls[k].mine {
			return l.calls[k].deadline
		}
		if l.calls[k].deadline.After(dl) {
			dl = l.calls[k].deadline
		}
	}
	return dl
}

// fail ends every command of l with err, closes its connection (redigo
// has closed it already after a failed read or write) and returns the
// reply to the batch's own command, if l held it.
func (d *Driver) fail(l *line, err error) (r core.Reply, mine bool) {
	if l.n > 0 {
		d.observe(l.node, l.calls[0].cmd.Op, err)
	}
	for k := 0; k < l.n; k++ {
		if p := &l.calls[k]; p.mine {
			r, mine = wire.Fail(l.node, d.nodes[l.node].name, p.cmd.Op, err), true
		}
	}
	if l.conn != nil {
		l.conn.Close()
	}
	*l = line{node: l.node}
	return r, mine
}

// worker runs lines: a batch's (on its caller's goroutine) or the
// drainer's. It holds what that needs besides the line, so that running
// one allocates nothing.
type worker struct {
	enc    encoder
	ctx    *nodeCtx
	values context.Context // Begin's, for the pools' DialContext
}

// Outcomes of worker.start.
const (
	started  = iota // cmd is on the wire in l
	failed          // cmd could not be written: the reply says why
	deferred        // the drainer is busy with cmd's key on that node; try later
	expired         // a release whose deadline passed before it could be written: the reply says so; the drainer writes it
)

// start puts cmd for node i on the wire in l, which is empty, behind any
// line of that node that still holds a command for the same key (see
// adopt). When the drainer is finishing such a line, start waits for it if
// wait is set, and otherwise returns deferred at once.
func (w *worker) start(d *Driver, l *line, i int, cmd core.Command, deadline time.Time, wait bool) (core.Reply, int) {
	n := &d.nodes[i]
	op := cmd.Op
	switch {
	case d.closed.Load():
		return wire.Fail(i, n.name, op, ErrClosed), failed
	case op < core.OpAcquire || op > core.OpExtend:
		return wire.Fail(i, n.name, op, errors.New("unknown op")), failed
	case !time.Now().Before(deadline):
		return wire.Fail(i, n.name, op, ErrDeadline), lateOutcome(op)
	}
	if d.adopt(l, i, cmd.Key, deadline, wait) {
		return core.Reply{}, deferred
	}
	if l.n == maxChain {
		w.settle(d, l, deadline) // no room: finish the adopted commands first
	}
	if l.conn == nil {
		if err := w.open(d, l, deadline); err != nil {
			if isTimeout(err) || !time.Now().Before(deadline) {
				// The wait for the drainer, or the checkout (a dial to a
				// hung node), took the time.
				return wire.Fail(i, n.name, op, err), lateOutcome(op)
			}
			return wire.Fail(i, n.name, op, err), failed
		}
	}
	p := pending{cmd: cmd, deadline: deadline, mine: true}
	// Until the node is known to have the script, send it whole: EVAL
	// caches it, and a fresh server costs no NOSCRIPT round trip.
	p.eval = op != core.OpAcquire && !n.scripts.known(op)
	if err := w.enc.write(l.conn, cmd, p.eval); err != nil {
		d.fail(l, err)
		return wire.Fail(i, n.name, op, err), failed
	}
	l.push(p)
	return core.Reply{}, started
}

// lateOutcome is the outcome of a command of op that its deadline
// overtook before it could be written.
func lateOutcome(op core.Op) int {
	if op == core.OpRelease {
		return expired
	}
	return failed
}

// open checks out a connection for l, bounded by until, and writes l's
// unwritten commands on it, dropping those whose deadline has passed
// (except releases, see line.grant). If the checkout times out, the
// releases that were not given their time yet are parked again, for the
// drainer.
func (w *worker) open(d *Driver, l *line, until time.Time) error {
	n := &d.nodes[l.node]
	ctx := w.checkoutCtx(until)
	conn, err := n.pool.GetContext(ctx)
	ctx.finish()
	if err != nil && isTimeout(err) {
		d.repark(l)
	}
	if err != nil {
		d.fail(l, err)
		return err
	}
	l.conn = conn
	now := time.Now()
	if !now.Before(until) { // the checkout dialed past the deadline
		l.conn = nil
		d.repark(l)
		*l = line{node: l.node}
		conn.Close()
		return ErrDeadline
	}
	k := 0
	for j := 0; j < l.n; j++ {
		p := l.calls[j]
		if p.late(now) {
			p.deadline, p.budget = now.Add(p.budget), 0 // see line.grant
		}
		if !now.Before(p.deadline) {
			continue // too late to send
		}
		p.eval = p.cmd.Op != core.OpAcquire && !n.scripts.known(p.cmd.Op)
		if err := w.enc.write(conn, p.cmd, p.eval); err != nil {
			d.fail(l, err)
			return err
		}
		l.calls[k] = p
		k++
	}
	for j := k; j < l.n; j++ {
		l.calls[j] = pending{}
	}
	l.n = k
	return nil
}

// read reads l's replies in order until the batch's own command is
// answered (got is true, r its reply) or, when l has none, until every
// command is. A release or extend that meets NOSCRIPT is sent again as EVAL
// at the end of the line. A failed read fails every command left, and
// leaves l without a connection. Each read is bounded by until, or if it
// is zero by l.deadline(). read returns ok == false, without reading
// further, once cancel is closed; l keeps what is left.
func (w *worker) read(d *Driver, l *line, cancel <-chan struct{}, until time.Time) (r core.Reply, got, ok bool) {
	for l.n > 0 {
		if isClosed(cancel) {
			return r, got, false
		}
		p := l.calls[0]
		bound := until
		if bound.IsZero() {
			bound = l.deadline()
		}
		reply, err := redis.ReceiveWithTimeout(l.conn, readTimeout(bound, time.Now()))
		if err != nil && !p.eval && p.cmd.Op != core.OpAcquire && wire.IsNoScript(err) {
			// The server lost its script cache (SCRIPT FLUSH): send the
			// script itself. A release the round no longer waits for must
			// still take effect, so the drainer does this too.
			d.nodes[l.node].scripts.forget(p.cmd.Op)
			if time.Now().Before(p.deadline) {
				l.pop()
				p.eval = true
				if err := w.enc.write(l.conn, p.cmd, true); err != nil {
					l.push(p)
					r, got = d.fail(l, err)
					return r, got, true
				}
				l.push(p)
				continue
			}
			err = errDeadlineEval // the connection is healthy: nothing is in flight
		}
		if _, answered := err.(redis.Error); err != nil && !answered && err != errDeadlineEval {
			r, got = d.fail(l, err)
			return r, got, true
		}
		l.pop()
		d.observe(l.node, p.cmd.Op, err)
		if p.mine {
			return d.decode(l.node, p.cmd.Op, reply, err), true, true
		}
	}
	return r, got, true
}

// settle finishes every command of l: writes them if l has no connection,
// then reads every reply, bounded by until (zero: l's deadlines). l's
// connection, if it has one left, is then idle.
func (w *worker) settle(d *Driver, l *line, until time.Time) {
	if until.IsZero() {
		if l.conn == nil {
			l.grant(time.Now())
		}
		until = l.deadline()
	}
	if l.conn == nil && l.n > 0 {
		if !time.Now().Before(until) {
			*l = line{node: l.node} // too late to send any of them
			return
		}
		if w.open(d, l, until) != nil {
			return
		}
	}
	w.read(d, l, nil, until)
}

// decode maps the outcome of a read to node i's reply.
func (d *Driver) decode(i int, op core.Op, reply any, err error) core.Reply {
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

// readTimeout is the read timeout for a read due by deadline: the time
// left, or lateRead once none is.
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
