package engine

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Duplex is a Conn that can write a pipeline without reading its replies,
// which a client with one writer and one reader per connection (redigo's
// Send and Flush beside Receive) allows. The engine then writes a node's
// next pipeline while the replies to the previous ones are still on
// their way, from the node's goroutine, and reads them, in order, from a
// second goroutine per connection: a command waits for no other batch's
// replies before it goes out.
//
// A client that cannot write without reading (go-redis: a pipeline is
// one call that writes and reads) implements Conn alone; its pipelines
// go one at a time, as Exchange does them.
type Duplex interface {
	Conn
	// Write sends cmds, in order, as one pipeline (Exchange's words),
	// without reading their replies; ctx's deadline bounds it. It is
	// called from one goroutine at a time, concurrently with Read.
	Write(ctx context.Context, cmds [][]string) error
	// Read reads the next len(replies) replies, in order, into replies
	// (zeroed), by ctx's deadline; error replies are replies. It is
	// called from one goroutine at a time, concurrently with Write. An
	// error fails the connection.
	Read(ctx context.Context, replies []Reply) error
	// Close (Conn's) may be called while a Write or a Read runs, and
	// makes them return; the engine calls it once per connection.
}

// duplexDepth bounds the pipelines of a node written and not yet read.
// When they are all out, the node's commands queue and go out together in
// the next pipeline, once the oldest has been read.
const duplexDepth = 4

// duplex is the node goroutine's side of its pipes and of the reader of
// a Duplex connection.
type duplex struct {
	l       *link
	spare   []*pipe    // pipes not in the reader's hands
	made    int        // pipes made, at most duplexDepth
	out     int        // pipes handed to the reader and not yet back
	back    chan *pipe // the reader gives pipes back here
	barrier bool       // the last pipe handed out must come back before the next is written
}

// link is one Duplex connection and its reader.
type link struct {
	conn     Duplex
	inflight chan *pipe    // written, to read, in order
	done     chan struct{} // closed when the reader returns
	failed   atomic.Bool
	once     sync.Once
	err      error // the first failure, set once failed is
}

// fail records err as the connection's failure, if it is the first, and
// closes the connection once, which ends a Write or Read under way.
func (l *link) fail(err error) {
	l.once.Do(func() {
		l.err = err
		l.failed.Store(true)
		_ = l.conn.Close() // the failure that matters is err; closing only ends a Write or Read
	})
}

// next returns the pipe for the next pipeline: a spare one, a new one
// while fewer than duplexDepth exist, or else the first the reader gives
// back; after a barrier (a script that may meet NOSCRIPT and must go again
// before the commands behind it) every pipe must be back.
func (n *node) next() *pipe {
	d := &n.dup
	for d.barrier && d.out > 0 {
		n.takeBack()
	}
	d.barrier = false
	if len(d.spare) == 0 {
		if d.made < duplexDepth {
			d.made++
			if d.back == nil {
				d.back = make(chan *pipe, duplexDepth)
			}
			return new(pipe)
		}
		n.takeBack()
	}
	p := d.spare[len(d.spare)-1]
	d.spare = d.spare[:len(d.spare)-1]
	return p
}

func (n *node) takeBack() {
	p := <-n.dup.back
	n.dup.out--
	n.dup.spare = append(n.dup.spare, p)
}

// open starts the reader of a new Duplex connection.
func (n *node) open(conn Duplex) {
	l := &link{conn: conn, inflight: make(chan *pipe, duplexDepth), done: make(chan struct{})}
	n.dup.l = l
	go n.read(l)
}

// retire ends the current Duplex connection, if any, once its reader has
// answered every pipe handed to it, and reports whether no command waits
// to go again (requeue): at Close, the loop sends those first.
func (n *node) retire() bool {
	if l := n.dup.l; l != nil {
		close(l.inflight)
		<-l.done
		for n.dup.out > 0 {
			n.takeBack()
		}
		l.fail(errConnFailed) // closes the connection, once
		n.dup.l, n.conn = nil, nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.again) == 0
}

// write encodes p's live jobs, writes them, and hands p to the reader.
// A pipe with a script other than a release sent as EVALSHA is a barrier:
// if it meets NOSCRIPT, the command goes again (requeue) before anything
// written after it.
func (n *node) write(p *pipe, now, dl time.Time) {
	l := n.dup.l
	p.barrier = n.encode(p, p.live, false)
	p.replies = grow(p.replies, len(p.cmds))
	p.duplex, p.sent, p.deadline = true, now, dl
	c := dctxFor(p.base, &p.ctx, n.e.clock, dl)
	err := l.conn.Write(c, p.cmds)
	finishCtx(&p.ctx, c, err)
	if err != nil {
		l.fail(err) // the reader answers p with it
		p.text, p.args, p.cmds = nil, nil, nil
	}
	n.dup.barrier = p.barrier
	n.dup.out++
	l.inflight <- p // never blocks: at most duplexDepth pipes exist
}

// read is a Duplex connection's reader: it reads each pipe's replies by
// the pipe's deadline and answers its jobs. The first failure fails the
// connection: the pipe being read is answered with it (answer), as an
// Exchange's would be; the pipes behind it were never read (abandon).
func (n *node) read(l *link) {
	defer close(l.done)
	var failure error
	for p := range l.inflight {
		if failure == nil && l.failed.Load() {
			failure = l.err // a failed Write
		}
		if failure != nil {
			n.abandon(p, failure)
		} else {
			c := dctxFor(p.base, &p.ctx, n.e.clock, p.deadline)
			err := l.conn.Read(c, p.replies)
			finishCtx(&p.ctx, c, err)
			if err != nil {
				failure = err
				l.fail(err)
				p.text, p.args, p.cmds = nil, nil, nil // the client may still read them
			}
			n.answer(p, err)
		}
		p.reset()
		n.dup.back <- p
	}
}

// errConnFailed is the failure recorded for a connection given up
// without one of its own (Close).
var errConnFailed = connFailedError{}

type connFailedError struct{}

func (connFailedError) Error() string { return "the connection failed before the reply" }

// abandon answers the jobs of a pipe written to a connection that failed
// before its replies were read, as if it had never gone out: a release
// whose time on the wire has not run out goes again, once, on the next
// connection (requeue), as it would have had it still been queued; any
// other command fails with the connection's failure (core.StatusTimeout
// if that was a deadline or its own has passed): it may have reached the
// node, so it is not sent again.
func (n *node) abandon(p *pipe, err error) {
	now := n.e.clock.Now()
	for _, i := range p.live {
		j := &p.jobs[i]
		if n.resend(j, p, now, true) {
			continue
		}
		j.deliver(n.e.fail(n.i, j.cmd.Op, err, !now.Before(j.deadline)))
	}
	clear(p.replies)
}
