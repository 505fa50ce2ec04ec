package redigo

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"net"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers/internal/wire"
)

// MaxPipeline is the largest Options.Pipeline.
const MaxPipeline = 64

// MaxPending bounds the commands a pipelined connection holds: queued for
// its writer, and written but unanswered, each up to MaxPending. A command
// beyond it fails at once with ErrBacklog rather than queue without bound
// (only a node that stopped answering for a long node timeout, or far more
// concurrent rounds than this, gets there).
const MaxPending = 4096

// A pipelined connection is given up when the reply to its oldest
// unanswered command is overdue by as long again as the command had when
// it was written (its node timeout, in practice), and by at least
// minSlack. The round has answered StatusTimeout at the deadline itself;
// the connection is kept a while longer because giving it up fails every
// command on it, the other rounds' too, while a server that is only slow
// (a CPU stall, a burst) answers them all in order a little later.
const minSlack = 5 * time.Millisecond

// ErrBacklog is the error of a command refused because its pipelined
// connection already holds MaxPending commands.
var ErrBacklog = errors.New("redigo: too many commands pending on the pipelined connection")

// errNoReply is the error of a pipelined command whose reply did not come
// by its deadline.
var errNoReply = fmt.Errorf("redigo: no reply before the per-node deadline: %w", os.ErrDeadlineExceeded)

// pentry is one command of a pipelined connection, from the round (b) that
// waits for its reply.
type pentry struct {
	b        *pbatch
	cmd      core.Command
	deadline time.Time
	slack    time.Duration // how long past deadline the reply may come before the connection is given up
	// budget is, for a release, the time it had when queued; 0 once the
	// writer has given it that time again (see write).
	budget time.Duration
	eval   bool // sent as EVAL rather than EVALSHA
}

// ring is a FIFO of pentries.
type ring struct {
	buf  []pentry // len is 0 or a power of two
	head int
	n    int
}

func (r *ring) push(e pentry) {
	if r.n == len(r.buf) {
		nb := make([]pentry, max(16, 2*len(r.buf)))
		for i := 0; i < r.n; i++ {
			nb[i] = r.buf[(r.head+i)&(len(r.buf)-1)]
		}
		r.buf, r.head = nb, 0
	}
	r.buf[(r.head+r.n)&(len(r.buf)-1)] = e
	r.n++
}

func (r *ring) front() *pentry { return &r.buf[r.head] }

func (r *ring) pop() pentry {
	e := r.buf[r.head]
	r.buf[r.head] = pentry{}
	r.head = (r.head + 1) & (len(r.buf) - 1)
	r.n--
	return e
}

// pconn is one of a node's pipelined connections, across reconnects. Its
// writer goroutine (started by Dial, stopped by Driver.Close) takes every
// queued command at once, dials if there is no live connection, writes
// them with one Flush, and hands them to the session's reader.
type pconn struct {
	d    *Driver
	node int
	dial func(context.Context) (redis.Conn, net.Conn, error)

	mu     sync.Mutex
	queue  []pentry // not yet taken by the writer, in issue order
	idle   bool     // the writer waits for wake
	closed bool
	sess   *session // the current connection, nil before the first dial
	wake   chan struct{}

	// The writer's own.
	enc   encoder
	spare []pentry
}

// session is one live connection of a pconn and its reader goroutine,
// which reads the replies in order and hands each to its round. A session
// that fails is not reused: the writer dials a new one for the next
// command.
type session struct {
	p    *pconn
	conn redis.Conn
	nc   net.Conn // under conn, for write deadlines

	mu      sync.Mutex
	pending ring // written (or being written), unanswered, in write order
	dead    bool
	idle    bool // the reader waits for more
	more    chan struct{}
}

func newPconn(d *Driver, node int, dial func(context.Context) (redis.Conn, net.Conn, error)) *pconn {
	p := &pconn{d: d, node: node, dial: dial, wake: make(chan struct{}, 1)}
	p.enc.keys = new(keyBoxes)
	return p
}

// pipeFor returns the connection of node i that carries key's commands.
func (d *Driver) pipeFor(i int, key string) *pconn {
	ps := d.nodes[i].pipes
	if len(ps) == 1 {
		return ps[0]
	}
	return ps[maphash.String(d.seed, key)%uint64(len(ps))]
}

// enqueue queues e for the writer. It fails only if the driver is closed
// or the queue is full.
func (p *pconn) enqueue(e pentry) error {
	p.mu.Lock()
	switch {
	case p.closed:
		p.mu.Unlock()
		return ErrClosed
	case len(p.queue) >= MaxPending:
		p.mu.Unlock()
		return ErrBacklog
	}
	p.queue = append(p.queue, e)
	wake := p.idle
	p.idle = false
	p.mu.Unlock()
	if wake {
		p.signal()
	}
	return nil
}

// requeue puts e (a release or extend met with NOSCRIPT, now to be sent as
// EVAL) at the head of the queue, ahead of the commands not written yet.
func (p *pconn) requeue(e pentry) bool {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return false
	}
	p.queue = slices.Insert(p.queue, 0, e)
	wake := p.idle
	p.idle = false
	p.mu.Unlock()
	if wake {
		p.signal()
	}
	return true
}

func (p *pconn) signal() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// close stops p's writer and fails its connection. The writer fails what
// is still queued.
func (p *pconn) close() {
	p.mu.Lock()
	p.closed = true
	s := p.sess
	p.idle = false
	p.mu.Unlock()
	p.signal()
	if s != nil {
		s.fail(ErrClosed)
	}
}

// answer ends e with err, without a reply.
func (p *pconn) answer(e *pentry, err error) {
	e.b.deliver(wire.Fail(p.node, p.d.nodes[p.node].name, e.cmd.Op, err))
}

func (p *pconn) writeLoop() {
	defer p.d.wg.Done()
	for {
		p.mu.Lock()
		for len(p.queue) == 0 && !p.closed {
			p.idle = true
			p.mu.Unlock()
			<-p.wake
			p.mu.Lock()
		}
		batch := p.queue
		p.queue = p.spare[:0]
		closed := p.closed
		s := p.sess
		p.mu.Unlock()
		if closed {
			for i := range batch {
				p.answer(&batch[i], ErrClosed)
			}
			if s != nil {
				s.fail(ErrClosed)
			}
			return
		}
		p.write(batch)
		clear(batch)
		p.spare = batch[:0]
	}
}

// write puts batch on the wire with one Flush, on the live connection or
// a new one. Commands whose deadline has passed are not sent, except
// releases: each is given, from now, the time it had when queued (at
// least), for the dial, the write and its reply, even past its own
// deadline, at which its round has answered StatusTimeout by itself. A
// release may be what undoes a SET its node runs later (the cleanup of an
// attempt abandoned on a hung node, queued while a dial was under way):
// dropped, it would leave the key until its TTL.
func (p *pconn) write(batch []pentry) {
	n := &p.d.nodes[p.node]
	start := time.Now()
	for i := range batch {
		if e := &batch[i]; e.cmd.Op == core.OpRelease && e.budget > 0 {
			if g := start.Add(e.budget); g.After(e.deadline) {
				e.deadline = g
			}
			e.budget = 0
		}
	}
	for attempt := 0; ; attempt++ {
		now := time.Now()
		var latest time.Time
		k := 0
		for i := range batch {
			e := &batch[i]
			if !now.Before(e.deadline) {
				p.answer(e, ErrDeadline)
				continue
			}
			if e.deadline.After(latest) {
				latest = e.deadline
			}
			batch[k] = *e
			k++
		}
		clear(batch[k:])
		batch = batch[:k]
		if k == 0 {
			return
		}
		s := p.sess
		if s == nil || s.isDead() {
			var err error
			if s, err = p.connect(latest); err != nil {
				if err != ErrClosed {
					p.d.observe(p.node, batch[0].cmd.Op, err)
				}
				for i := range batch {
					p.answer(&batch[i], err)
				}
				return
			}
			continue // the dial took time: check the deadlines again
		}

		s.mu.Lock()
		if s.dead { // the reader lost the connection meanwhile
			s.mu.Unlock()
			if attempt < 2 {
				continue
			}
			for i := range batch {
				p.answer(&batch[i], errLost)
			}
			return
		}
		room := MaxPending - s.pending.n
		over := batch[min(room, len(batch)):]
		batch = batch[:min(room, len(batch))]
		for i := range batch {
			e := &batch[i]
			e.eval = e.eval || (e.cmd.Op != core.OpAcquire && !n.scripts.known(e.cmd.Op))
			e.slack = max(minSlack, e.deadline.Sub(now))
			s.pending.push(*e)
		}
		wake := s.idle && len(batch) > 0
		if wake {
			s.idle = false
		}
		s.mu.Unlock()
		if wake {
			s.signal()
		}
		for i := range over {
			p.answer(&over[i], ErrBacklog)
		}
		if len(batch) == 0 {
			return
		}
		var err error
		for i := range batch {
			if err = p.enc.send(s.conn, batch[i].cmd, batch[i].eval); err != nil {
				break
			}
		}
		if err == nil {
			// A stopped server's socket buffers may fill: the write must
			// not outlast the commands.
			if err = s.nc.SetWriteDeadline(latest.Add(minSlack)); err == nil {
				err = s.conn.Flush()
			}
		}
		if err != nil {
			s.fail(err) // answers every written command, these included
		}
		return
	}
}

// connect dials a new session, bounded by until, and starts its reader.
func (p *pconn) connect(until time.Time) (*session, error) {
	ctx, cancel := context.WithDeadline(p.d.stopCtx, until)
	conn, nc, err := p.dial(ctx)
	cancel()
	if err != nil {
		if p.d.stopCtx.Err() != nil {
			err = ErrClosed
		}
		return nil, err
	}
	s := &session{p: p, conn: conn, nc: nc, more: make(chan struct{}, 1)}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		conn.Close()
		return nil, ErrClosed
	}
	p.sess = s
	p.d.wg.Add(1)
	p.mu.Unlock()
	go s.readLoop()
	return s, nil
}

func (s *session) signal() {
	select {
	case s.more <- struct{}{}:
	default:
	}
}

func (s *session) isDead() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dead
}

// fail ends the session: its connection is closed and every command
// written on it and unanswered fails with err. It is idempotent.
func (s *session) fail(err error) {
	s.mu.Lock()
	if s.dead {
		s.mu.Unlock()
		return
	}
	s.dead = true
	pend := s.pending
	s.pending = ring{}
	wake := s.idle
	s.idle = false
	s.mu.Unlock()
	s.conn.Close()
	if wake {
		s.signal()
	}
	p := s.p
	if pend.n > 0 && err != ErrClosed {
		p.d.observe(p.node, pend.front().cmd.Op, err)
	}
	for pend.n > 0 {
		e := pend.pop()
		p.answer(&e, err)
	}
}

// readLoop reads the session's replies in order and hands each to its
// round. Each read is bounded by the deadline of the oldest unanswered
// command plus its slack: past it, the session fails.
func (s *session) readLoop() {
	p := s.p
	d := p.d
	defer d.wg.Done()
	n := &d.nodes[p.node]
	for {
		s.mu.Lock()
		for s.pending.n == 0 && !s.dead {
			s.idle = true
			s.mu.Unlock()
			<-s.more
			s.mu.Lock()
		}
		if s.dead {
			s.mu.Unlock()
			return
		}
		head := s.pending.front()
		dl := head.deadline.Add(head.slack)
		s.mu.Unlock()
		reply, err := redis.ReceiveWithTimeout(s.conn, readTimeout(dl, time.Now()))
		if _, answered := err.(redis.Error); err != nil && !answered {
			s.fail(err)
			return
		}
		s.mu.Lock()
		if s.dead {
			s.mu.Unlock()
			return
		}
		e := s.pending.pop()
		s.mu.Unlock()
		if err != nil && !e.eval && e.cmd.Op != core.OpAcquire && wire.IsNoScript(err) {
			// The server lost its script cache (SCRIPT FLUSH): send the
			// script itself, ahead of the commands not written yet.
			n.scripts.forget(e.cmd.Op)
			if time.Now().Before(e.deadline) {
				e.eval = true
				if p.requeue(e) {
					continue
				}
				err = ErrClosed
			} else {
				err = errDeadlineEval
			}
		}
		d.observe(p.node, e.cmd.Op, err)
		e.b.deliver(d.decode(p.node, e.cmd.Op, reply, err))
	}
}

// closePipes stops every pipelined connection and waits for their
// goroutines.
func (d *Driver) closePipes() {
	for i := range d.nodes {
		for _, p := range d.nodes[i].pipes {
			p.close()
		}
	}
	d.stopCancel()
	d.wg.Wait()
}
