package engine

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers/internal/wire"
)

// node is one Redis master: its queue, and the goroutine that owns its
// connection and sends the queue's commands as pipelines.
type node struct {
	e    *Engine
	i    int
	wake chan struct{}

	mu      sync.Mutex
	queue   []job
	idle    bool // the goroutine waits for wake
	closing bool
	queued  func(n int) // a test's hook: called, under mu, with the queue's length

	// The goroutine's own.
	conn    Conn
	scripts uint8 // bit op-OpRelease: the script ran on conn, EVALSHA works
	jobs    []job
	live    []int // indexes in jobs of the commands sent
	cmds    [][]string
	args    []string
	text    []byte // the tokens and TTLs that args view
	replies []Reply
	ctx     *dctx
}

// enqueue hands j to the node's goroutine, or answers it with
// core.ErrClosed once Close has begun.
func (n *node) enqueue(j job) {
	n.mu.Lock()
	if n.closing {
		n.mu.Unlock()
		j.b.deliver(n.e.fail(n.i, j.cmd.Op, core.ErrClosed, false))
		return
	}
	n.queue = append(n.queue, j)
	if n.queued != nil {
		n.queued(len(n.queue))
	}
	idle := n.idle
	n.idle = false
	n.mu.Unlock()
	if idle {
		n.signal()
	}
}

func (n *node) signal() {
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

func (n *node) close() {
	n.mu.Lock()
	n.closing = true
	if n.queued != nil {
		n.queued(-1)
	}
	n.idle = false
	n.mu.Unlock()
	n.signal()
}

// loop dials, then runs every queued command, a pipeline at a time, until
// Close.
func (n *node) loop(dialTimeout time.Duration) {
	defer n.e.wg.Done()
	n.connect(n.e.clock.Now().Add(dialTimeout), nil)
	for {
		n.mu.Lock()
		for len(n.queue) == 0 && !n.closing {
			n.idle = true
			n.mu.Unlock()
			<-n.wake
			n.mu.Lock()
		}
		n.jobs, n.queue = n.queue, n.jobs[:0]
		closing := n.closing
		n.mu.Unlock()
		n.pipeline(closing)
		if closing {
			if n.conn != nil {
				n.conn.Close()
				n.conn = nil
			}
			return
		}
	}
}

// connect dials the node if it has no connection, and reports the dial's
// error.
func (n *node) connect(deadline time.Time, base context.Context) error {
	if n.conn != nil {
		return nil
	}
	c := n.context(base, deadline)
	conn, err := n.e.dial(c, n.i)
	if err == nil {
		if err = n.identify(c, conn); err != nil {
			conn.Close()
		}
	}
	n.release(c, err)
	if err != nil {
		return err
	}
	n.conn, n.scripts = conn, 0 // a new connection may be a restarted server
	return nil
}

// identify asks a new connection's server for its run_id (INFO server) and
// claims it for the node (Engine.claim). A server that does not tell (an
// ACL user without INFO, a server without run_id) is not checked.
func (n *node) identify(c context.Context, conn Conn) error {
	var r [1]Reply
	if err := conn.Exchange(c, [][]string{{"INFO", "server"}}, r[:]); err != nil {
		return err
	}
	if id := runID(r[0].Text); id != "" {
		return n.e.claim(n.i, id)
	}
	return nil
}

// runID returns the run_id field of an INFO reply, or "".
func runID(info string) string {
	_, after, ok := strings.Cut(info, "run_id:")
	if !ok {
		return ""
	}
	id, _, _ := strings.Cut(after, "\n")
	return strings.TrimSpace(id)
}

// context returns the reusable context for a dial or an exchange.
func (n *node) context(base context.Context, deadline time.Time) *dctx {
	if n.ctx == nil {
		n.ctx = newDctx(n.e.clock)
	}
	n.ctx.start(base, deadline)
	return n.ctx
}

// release ends c's use; after a failure the client may still hold c, so
// it is not reused.
func (n *node) release(c *dctx, err error) {
	if !c.finish() || err != nil {
		n.ctx = nil
	}
}

// pipeline sends n.jobs as one pipeline and answers each job.
//
// Any command but a release (an acquire, fenced or not, an extend, a
// fence raise) whose deadline has passed is answered core.StatusTimeout
// and not sent: an unsent SET leaves nothing behind.
// While closing, it is answered core.ErrClosed. A release is always sent,
// in its place, with at least the time it had when queued: it may follow
// a SET that a hung node will run when it wakes, or one that went out on a
// connection given up since. The pipeline's deadline is the latest of its
// commands'; each round hears at its own deadline all the same (batch).
func (n *node) pipeline(closing bool) {
	now := n.e.clock.Now()
	var dl time.Time
	n.live = n.live[:0]
	for k := range n.jobs {
		j := &n.jobs[k]
		d := j.deadline
		switch {
		case j.cmd.Op == core.OpRelease:
			d = later(d, now.Add(j.budget))
		case closing:
			j.b.deliver(n.e.fail(n.i, j.cmd.Op, core.ErrClosed, false))
			continue
		case !now.Before(d):
			j.b.deliver(n.e.fail(n.i, j.cmd.Op, errNoReply, true))
			continue
		}
		dl = later(dl, d)
		n.live = append(n.live, k)
	}
	if len(n.live) > 0 {
		var base context.Context
		if len(n.live) == 1 {
			base = n.jobs[n.live[0]].b.ctx
		}
		err := n.connect(dl, base)
		if err == nil {
			err = n.exchange(dl, base)
		}
		n.answer(err)
	}
	clear(n.jobs)
	n.jobs = n.jobs[:0]
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// exchange sends the live jobs and reads their replies into n.replies,
// then sends again as EVAL those that met NOSCRIPT. It returns the
// connection's failure, after which the connection is closed.
func (n *node) exchange(dl time.Time, base context.Context) error {
	n.replies = grow(n.replies, len(n.live))
	n.encode(n.live, false)
	c := n.context(base, dl)
	err := n.conn.Exchange(c, n.cmds, n.replies)
	if err == nil {
		err = n.retryNoScript(c)
	}
	n.release(c, err)
	if err != nil {
		n.conn.Close()
		n.conn = nil
		n.text, n.args, n.cmds = nil, nil, nil // the client may still read them
	}
	return err
}

// retryNoScript sends again, as EVAL, the scripts that met NOSCRIPT (a
// SCRIPT FLUSH, or a server that lost its cache without the connection
// breaking).
func (n *node) retryNoScript(c context.Context) error {
	var again []int // indexes in live
	for k := range n.live {
		if r := n.replies[k]; r.Kind == KindError && wire.IsNoScript(r.Err) {
			again = append(again, k)
			n.scripts &^= scriptBit(n.jobs[n.live[k]].cmd.Op)
		}
	}
	if again == nil {
		return nil
	}
	idx := make([]int, len(again))
	for m, k := range again {
		idx[m] = n.live[k]
	}
	n.encode(idx, true)
	rs := make([]Reply, len(idx))
	err := n.conn.Exchange(c, n.cmds, rs)
	for m, k := range again {
		n.replies[k] = rs[m]
	}
	return err
}

// answer decodes each live job's reply and delivers it; err is the
// connection's failure, if any.
func (n *node) answer(err error) {
	now := n.e.clock.Now()
	for k, i := range n.live {
		j := &n.jobs[i]
		late := !now.Before(j.deadline)
		var r core.Reply
		switch {
		case k < len(n.replies) && n.replies[k].Kind != KindNone:
			st, fence, ttl, rerr := n.status(j.cmd.Op, n.replies[k])
			if rerr != nil {
				r = n.e.fail(n.i, j.cmd.Op, rerr, false)
			} else {
				r = core.Reply{Node: n.i, Status: st, Fence: fence, TTL: ttl}
			}
		case err == nil:
			r = n.e.fail(n.i, j.cmd.Op, errors.New("no reply"), late)
		default:
			r = n.e.fail(n.i, j.cmd.Op, err, late)
		}
		j.b.deliver(r)
	}
	clear(n.replies)
}

// status decodes the reply to a command of op, an OpAcquireFenced's
// fence, and the holder's TTL that a held acquire's script reports.
func (n *node) status(op core.Op, r Reply) (core.Status, uint64, time.Duration, error) {
	if r.Kind == KindError || r.Kind == KindOther {
		return core.StatusError, 0, 0, r.Err
	}
	switch op {
	case core.OpAcquire: // SET NX, or the probe script
		switch {
		case r.Kind == KindOK:
			return core.StatusOK, 0, 0, nil
		case r.Kind == KindNil: // SET NX: the key exists
			return core.StatusHeld, 0, 0, nil
		case r.Kind == KindInt && r.Int <= 0:
			n.scripts |= scriptBit(op) // it ran: the server has it cached
			return core.StatusHeld, 0, wire.HeldTTL(r.Int), nil
		}
	case core.OpAcquireFenced:
		var fence uint64
		var err error
		switch {
		case r.Kind == KindInt && r.Int <= 0:
			n.scripts |= scriptBit(op)
			return core.StatusHeld, 0, wire.HeldTTL(r.Int), nil
		case r.Kind == KindInt:
			fence, err = wire.FenceInt(r.Int)
		case r.Kind == KindString:
			fence, err = wire.FenceString(r.Text) // from 2^53 up
		default:
			return core.StatusError, 0, 0, unexpected(op, r)
		}
		n.scripts |= scriptBit(op)
		if err != nil {
			return core.StatusError, 0, 0, err
		}
		return core.StatusOK, fence, 0, nil
	default: // release, extend, raise-fence: 1, 0 or -1
		if r.Kind == KindInt {
			n.scripts |= scriptBit(op)
			st, err := wire.ScriptStatus(r.Int)
			return st, 0, 0, err
		}
	}
	return core.StatusError, 0, 0, unexpected(op, r)
}

func unexpected(op core.Op, r Reply) error {
	return errors.New("unexpected reply kind " + strconv.Itoa(int(r.Kind)) + " to " + op.String())
}

// scriptBit is op's bit in node.scripts: every op runs a script (an
// OpAcquire only with Probe), at most 8 of them (TestScriptBits).
func scriptBit(op core.Op) uint8 { return 1 << (op - core.OpAcquire) }

// encode builds n.cmds for the jobs at idx, each as EVAL rather than
// EVALSHA if eval is set or its script has not run on the connection.
// Tokens, TTLs, fences and fence counters' names are written into n.text
// and viewed as strings, which costs no allocation; n.text is rewritten
// only once the clients are done with it (see exchange).
func (n *node) encode(idx []int, eval bool) {
	text, args, cmds := n.text[:0], n.args[:0], n.cmds[:0]
	for _, i := range idx {
		cmd := &n.jobs[i].cmd
		op := cmd.Op
		start := len(text)
		text = cmd.Token.AppendHex(text)
		tok := view(text[start:])
		first := len(args)
		plain := op == core.OpAcquire && !cmd.Probe
		switch {
		case plain:
			args = append(args, "SET", cmd.Key, tok, "NX", "PX")
		case eval || n.scripts&scriptBit(op) == 0:
			args = append(args, "EVAL", wire.ScriptFor(op).Src)
		default:
			args = append(args, "EVALSHA", wire.ScriptFor(op).SHA1)
		}
		if !plain {
			keys := wire.Keys(op)
			if cmd.Fair {
				keys += 2
			}
			args = append(args, keyCounts[keys], cmd.Key)
			if wire.Keys(op) == 2 {
				start = len(text)
				text = append(text, core.FenceKeyPrefix...)
				text = append(text, cmd.Key...)
				args = append(args, view(text[start:]))
			}
			if cmd.Fair {
				text, args = n.e.appendQueueKeys(text, args, cmd.Key)
			}
			args = append(args, tok)
		}
		switch op {
		case core.OpAcquire, core.OpExtend, core.OpAcquireFenced:
			start = len(text)
			text = strconv.AppendInt(text, wire.Millis(cmd.TTL), 10)
			args = append(args, view(text[start:]))
		case core.OpRaiseFence:
			start = len(text)
			text = strconv.AppendUint(text, cmd.Fence, 10)
			args = append(args, view(text[start:]))
		}
		if cmd.Fair && op != core.OpExtend && op != core.OpRaiseFence {
			text, args = n.e.appendFairArgs(text, args, cmd)
		}
		cmds = append(cmds, args[first:len(args):len(args)])
	}
	n.text, n.args, n.cmds = text, args, cmds
}

// view returns b's bytes as a string without copying. A buffer that grows
// while encoding leaves earlier views on the old array, which nothing
// writes again.
func view(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

func grow(r []Reply, n int) []Reply {
	if cap(r) < n {
		return make([]Reply, n, 2*n)
	}
	return r[:n]
}
