package engine

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers/internal/dialspec"
	"github.com/redlock-go/redlock/drivers/wire"
)

// node is one Redis master: its queue, and the goroutine that owns its
// connection and sends the queue's commands as pipelines. Over a Duplex
// connection a second goroutine, the connection's reader, reads the
// replies while the node's goroutine writes the next pipelines (duplex.go).
type node struct {
	e    *Engine
	i    int
	cfg  NodeConfig
	wake chan struct{}

	mu      sync.Mutex
	again   []job // commands to send again, first: see requeue
	queue   []job
	idle    bool // the goroutine waits for wake
	closing bool
	queued  func(n int) // a test's hook: called, under mu, with the queue's length
	yielded func()      // a test's hook: called after each of coalesce's yields

	// lane is the node's WAIT lane (see route), or nil; a lane's
	// outstanding counts its jobs not yet answered, by key and token.
	lane        *node
	outstanding map[laneKey]int

	// scripts: bit op-OpRelease: the script ran on the connection, EVALSHA
	// works. Set by whoever decodes a reply, read by the writer.
	scripts atomic.Uint32
	// held: a command that did not run goes again, a redialPause later
	// (resend). Set by whoever decodes a reply, read by the writer.
	held atomic.Bool

	// The goroutine's own.
	conn    Conn
	sharded bool  // conn announces releases with SPUBLISH (ShardedPublisher)
	dctx    *dctx // a dial's context
	dup     duplex
	many    bool // the last pipeline carried several commands (coalesce)
}

// pipe is one pipeline: its jobs, their commands and replies.
type pipe struct {
	jobs     []job
	live     []int // indexes in jobs of the commands sent
	cmds     [][]string
	at       []int // per live command: its index in cmds
	wat      []int // per live command: the index in cmds of its WAIT, or -1
	args     []string
	text     []byte // the tokens and TTLs that args view
	replies  []Reply
	ctx      *dctx
	base     context.Context // the values of a lone command's round
	sent     time.Time       // when it was written
	unsent   bool            // its dial failed: nothing of it went out
	deadline time.Time       // the latest of its commands' (duplex)
	barrier  bool            // it must be read before the next is written (duplex)
	duplex   bool            // it was written to a Duplex connection
}

// route hands j to the node, or to its WAIT lane: a node with WAIT
// (NodeConfig.Replicas) has a second goroutine and connection, the lane,
// for the writes followed by WAIT, which holds its connection until the
// replicas acknowledge (up to WaitTimeout when one is down), so that the
// node's other commands, from other locks, do not wait behind it. A
// release goes on the lane when a write of its key and token is still
// queued or unanswered there: behind the SET it undoes, as on one
// connection. Otherwise the write was answered, and the release goes on
// the node's connection.
func (n *node) route(j job) {
	if l := n.lane; l != nil {
		switch {
		case core.Waited(j.cmd.Op):
			l.offer(j, true)
			return
		case j.cmd.Op == core.OpRelease:
			if l.offer(j, false) {
				return
			}
		}
	}
	n.enqueue(j)
}

// laneKey is a write's key and token, which a lane counts until answered.
type laneKey struct {
	key string
	tok core.Token
}

// enqueue hands j to the node's goroutine, or answers it with
// core.ErrClosed once Close has begun.
func (n *node) enqueue(j job) { n.offer(j, true) }

// offer is enqueue if take; otherwise it enqueues j only on a lane that
// has a write of j's key and token outstanding. It reports whether it took
// j.
func (n *node) offer(j job, take bool) bool {
	if j.cmd.Fair && !n.e.fair.Load() {
		n.e.fair.Store(true) // from now on watches hear turns, whatever becomes of j
	}
	n.mu.Lock()
	if n.outstanding != nil {
		k := laneKey{j.cmd.Key, j.cmd.Token}
		if !take && n.outstanding[k] == 0 {
			n.mu.Unlock()
			return false
		}
		if !n.closing {
			n.outstanding[k]++
			j.lane = n
		}
	}
	if n.closing {
		n.mu.Unlock()
		j.b.deliver(n.e.fail(n.i, j.cmd.Op, core.ErrClosed, false))
		return true
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
	return true
}

// deliver answers j's round with r; on a lane, j is no longer
// outstanding from then on.
func (j *job) deliver(r core.Reply) {
	if l := j.lane; l != nil {
		k := laneKey{j.cmd.Key, j.cmd.Token}
		l.mu.Lock()
		if l.outstanding[k]--; l.outstanding[k] <= 0 {
			delete(l.outstanding, k)
		}
		l.mu.Unlock()
	}
	j.b.deliver(r)
}

// requeue puts j back for the node's next pipeline, ahead of the queue:
// a command of a Duplex connection that met NOSCRIPT, or a release whose
// connection failed before its turn (see abandon), or one that did not run
// (resend). It runs on the reader, or on the node's goroutine.
func (n *node) requeue(j job) {
	j.resent = true
	n.mu.Lock()
	n.again = append(n.again, j)
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
	_ = n.connect(context.Background(), n.e.clock.Now().Add(dialTimeout)) // ahead of the first command; a failed dial is made again, and reported, by pipeline
	for {
		p := n.next() // waits for a free pipe while the reader holds them all
		n.mu.Lock()
		for len(n.queue) == 0 && len(n.again) == 0 && !n.closing {
			n.idle = true
			n.mu.Unlock()
			<-n.wake
			// Woken by one round's commands, yield once before taking the
			// queue: the goroutines of other rounds made runnable with it
			// queue theirs meanwhile, and all go out in one write. Fewer,
			// larger pipelines cost the client and the servers fewer
			// system calls per command; alone, the yield returns at once.
			runtime.Gosched()
			n.coalesce()
			n.mu.Lock()
		}
		p.jobs = append(p.jobs[:0], n.again...)
		clear(n.again)
		n.again = n.again[:0]
		if len(p.jobs) == 0 {
			p.jobs, n.queue = n.queue, p.jobs[:0]
		} else {
			p.jobs = append(p.jobs, n.queue...)
			clear(n.queue)
			n.queue = n.queue[:0]
		}
		closing := n.closing
		n.mu.Unlock()
		n.many = len(p.jobs) > 1
		n.pipeline(p, closing)
		if n.dup.l == nil && !closing {
			// The pipeline's replies made its rounds runnable: yield
			// before taking the queue, so that the commands they send
			// next (a release after its acquire) go out in the next
			// pipeline, not in one of their own a round trip later.
			runtime.Gosched()
		}
		if closing {
			if !n.retire() { // releases to send again
				continue
			}
			if n.conn != nil {
				_ = n.conn.Close() // the engine is closing: every command is answered, no one is left to tell
				n.conn = nil
			}
			return
		}
	}
}

// coalesceYields bounds the yields of coalesce.
const coalesceYields = 3

// coalesce holds a woken Duplex node's next write while other rounds
// send to it (its last pipeline carried several commands): it yields
// again for as long as a yield brings more commands, up to
// coalesceYields times, and they go out in one write. The one yield
// before it lets the rounds runnable on this CPU queue first, but the
// rounds that one pipeline's replies woke also queue theirs on another
// CPU while the node runs, and without these yields each would go out
// in a write of its own. A node whose pipelines carry one command, a
// lone round's, writes at once: it waits for no more yields than before.
func (n *node) coalesce() {
	if n.dup.l == nil || !n.many {
		return
	}
	n.mu.Lock()
	had := len(n.queue)
	n.mu.Unlock()
	for range coalesceYields {
		runtime.Gosched()
		if n.yielded != nil {
			n.yielded()
		}
		n.mu.Lock()
		now := len(n.queue)
		n.mu.Unlock()
		if now == had {
			return
		}
		had = now
	}
}

// connect dials the node if it has no connection, and reports the dial's
// error.
func (n *node) connect(base context.Context, deadline time.Time) error {
	if n.conn != nil {
		return nil
	}
	c := dctxFor(base, &n.dctx, n.e.clock, deadline)
	conn, err := n.e.dial(c, n.i)
	if err == nil {
		if err = n.identify(c, conn); err != nil {
			_ = conn.Close() // the identify error is the one to report
		}
	}
	finishCtx(&n.dctx, c, err)
	if err != nil {
		return err
	}
	n.conn = conn
	n.scripts.Store(0) // a new connection may be a restarted server
	sp, ok := conn.(ShardedPublisher)
	n.sharded = ok && sp.ShardedPubSub()
	if d, ok := conn.(Duplex); ok {
		n.open(d)
	}
	return nil
}

// identify asks a new connection's server for its run_id (INFO server) and
// claims it for the node (Engine.claim). A server that does not tell (an
// ACL user without INFO, a server without run_id) is not checked. An
// Identifier names its servers itself. A WAIT lane (NodeConfig.Replicas)
// also asks how many replicas its master has (INFO replication), and
// refuses the connection if they are fewer: no write goes out whose WAIT
// cannot count enough. The node's own connection, which carries releases
// only, is not refused for that: a group left with too few replicas
// after a failover still releases its locks.
func (n *node) identify(c context.Context, conn Conn) error {
	var ids []string
	replicas := -1                                      // unknown
	check := n.cfg.Replicas > 0 && n.outstanding != nil // a lane
	if id, ok := conn.(Identifier); ok {
		var err error
		if ids, replicas, err = id.Identify(c); err != nil {
			return err
		}
	} else {
		cmds := [][]string{{"INFO", "server"}, {"INFO", "replication"}}
		if !check {
			cmds = cmds[:1]
		}
		r := make([]Reply, len(cmds))
		if err := conn.Exchange(c, cmds, r); err != nil {
			return err
		}
		if id := wire.InfoField(r[0].Text, "run_id"); id != "" {
			ids = []string{id}
		}
		if len(r) > 1 {
			replicas = wire.InfoCount(r[1].Text, "connected_slaves")
		}
	}
	if check && replicas < n.cfg.Replicas {
		have := "an unknown number of"
		if replicas >= 0 {
			have = strconv.Itoa(replicas)
		}
		// A failed vote, as a short WAIT's: not ErrInvalidConfig, which
		// would make the round's error match two kinds (a replica may
		// reconnect, and the member vote again).
		return fmt.Errorf("%w: node %d (%s): WAIT for %d replicas, but the master has %s connected",
			dialspec.ErrNotReplicated, n.i, n.e.names[n.i], n.cfg.Replicas, have)
	}
	if len(ids) > 0 {
		return n.e.claim(n.i, ids...)
	}
	return nil
}

// context returns the reusable context in *slot for a dial or a pipeline.
func dctxFor(base context.Context, slot **dctx, clock Clock, deadline time.Time) *dctx {
	if *slot == nil {
		*slot = newDctx(clock)
	}
	(*slot).start(base, deadline)
	return *slot
}

// finishCtx ends c's use; after a failure the client may still hold c, so
// it is not reused.
func finishCtx(slot **dctx, c *dctx, err error) {
	if !c.finish() || err != nil {
		*slot = nil
	}
}

// pipeline sends p.jobs as one pipeline and answers each job.
//
// Any command but a release (an acquire, fenced or not, an extend, a
// fence raise) whose deadline has passed is answered core.StatusTimeout
// and not sent: an unsent SET leaves nothing behind.
// While closing, it is answered core.ErrClosed. A release is always sent,
// in its place, with at least the time it had when queued: it may follow
// a SET that a hung node will run when it wakes, or one that went out on a
// connection given up since. The pipeline's deadline is the latest of its
// commands'; each round hears at its own deadline all the same (batch).
//
// Over a Duplex connection the pipeline is written and handed to the
// connection's reader, which answers it (write).
func (n *node) pipeline(p *pipe, closing bool) {
	if n.held.Swap(false) {
		n.pause(redialPause) // a command goes again that did not run (resend)
	}
	now := n.e.clock.Now()
	var dl time.Time
	p.live = p.live[:0]
	for k := range p.jobs {
		j := &p.jobs[k]
		d := j.deadline
		switch {
		case j.resent && !j.until.IsZero() && (j.cmd.Op == core.OpRelease || !closing):
			d = j.until // a resend goes only within its first send's time (resend)
			if !now.Before(d) {
				j.deliver(n.e.fail(n.i, j.cmd.Op, errNoReply, true))
				continue
			}
			if j.cmd.Op == core.OpRelease {
				// On the wire, a resent release has its budget again, as
				// a queued one: it may follow a straggling SET (a Duplex
				// pipe that hung ate its first send's time), and bounds
				// no lease, so the loss margin does not count its round.
				// An extension keeps its first send's end: a resend that
				// counts must have run within its round's bound.
				d = later(d, now.Add(j.budget))
			}
		case j.cmd.Op == core.OpRelease:
			d = later(d, now.Add(j.budget))
		case closing:
			j.deliver(n.e.fail(n.i, j.cmd.Op, core.ErrClosed, false))
			continue
		case !now.Before(d):
			j.deliver(n.e.fail(n.i, j.cmd.Op, errNoReply, true))
			continue
		}
		if err := n.refuse(&j.cmd); err != nil {
			j.deliver(n.e.fail(n.i, j.cmd.Op, err, false))
			continue
		}
		dl = later(dl, d)
		p.live = append(p.live, k)
	}
	if len(p.live) == 0 {
		n.done(p)
		return
	}
	p.base = nil
	if len(p.live) == 1 {
		p.base = p.jobs[p.live[0]].b.ctx
	}
	if n.dup.l != nil && n.dup.l.failed.Load() {
		n.retire() // the reader met a failure: a new connection
	}
	p.sent = now
	err := n.connect(p.base, dl)
	if err == nil && n.dup.l != nil {
		n.write(p, now, dl)
		return
	}
	p.unsent = err != nil
	if err == nil {
		err = n.exchange(p, dl)
	}
	n.answer(p, err)
	n.done(p)
}

// refuse returns why cmd cannot be sent to the node, or nil: on a
// Cluster, a key that cannot be named (wire.ErrUntaggable) or a
// multi-key lock's keys across hash slots (wire.CheckClusterKeys, which
// core.KeysChecker tells before the first round); a command no script
// runs (a reader's fence raise, which core never sends); a multi-key
// command without keys or with too many.
func (n *node) refuse(cmd *core.Command) error {
	switch {
	case cmd.Kind == core.KindMutex:
	case cmd.Kind == core.KindAll && (cmd.Keys.Len() == 0 || cmd.Keys.Len() > core.MaxKeys):
		return errors.New("a multi-key command of " + strconv.Itoa(cmd.Keys.Len()) + " keys")
	case cmd.Kind == core.KindAll && n.cfg.Cluster:
		return wire.CheckClusterKeys(cmd.Keys.All())
	default:
		if _, ok := wire.ScriptOf(cmd.Kind, cmd.Op, false); !ok {
			return errors.New("no " + cmd.Op.String() + " for a " + cmd.Kind.String() + " lock")
		}
	}
	if n.cfg.Cluster {
		_, err := wire.ClusterWrap(cmd.Key)
		return err
	}
	return nil
}

// done clears p and puts it back among the spare pipes.
func (n *node) done(p *pipe) {
	p.reset()
	n.dup.spare = append(n.dup.spare, p)
}

// reset clears p for its next use.
func (p *pipe) reset() {
	clear(p.jobs)
	p.jobs = p.jobs[:0]
	p.base = nil
	p.duplex, p.unsent = false, false
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// exchange sends p's live jobs and reads their replies into p.replies,
// then sends again as EVAL those that met NOSCRIPT. It returns the
// connection's failure, after which the connection is closed.
func (n *node) exchange(p *pipe, dl time.Time) error {
	n.encode(p, p.live, false)
	p.replies = grow(p.replies, len(p.cmds))
	c := dctxFor(p.base, &p.ctx, n.e.clock, dl)
	err := n.conn.Exchange(c, p.cmds, p.replies)
	if err == nil {
		err = n.retryNoScript(c, p)
	}
	finishCtx(&p.ctx, c, err)
	if err != nil {
		_ = n.conn.Close() // err is the failure to report; the connection is dropped
		n.conn = nil
		p.text, p.args, p.cmds = nil, nil, nil // the client may still read them
	}
	return err
}

// retryNoScript sends again, as EVAL, the scripts that met NOSCRIPT (a
// SCRIPT FLUSH, or a server that lost its cache without the connection
// breaking).
func (n *node) retryNoScript(c context.Context, p *pipe) error {
	var again []int // indexes in live
	for k := range p.live {
		if r := p.replies[p.at[k]]; r.Kind == KindError && wire.IsNoScript(r.Err) {
			again = append(again, k)
			cmd := &p.jobs[p.live[k]].cmd
			n.scripts.And(^scriptBit(cmd.Kind, cmd.Op))
		}
	}
	if again == nil {
		return nil
	}
	idx := make([]int, len(again))
	for m, k := range again {
		idx[m] = p.live[k]
	}
	at, wat := slices.Clone(p.at), slices.Clone(p.wat)
	n.encode(p, idx, true)
	rs := make([]Reply, len(p.cmds))
	err := n.conn.Exchange(c, p.cmds, rs)
	// The retry's WAITs answer for the writes retried; the first ones
	// still answer for the others. They go after the pipeline's replies.
	added := map[int]int{} // index in rs -> index in p.replies
	for m, k := range again {
		p.replies[at[k]] = rs[p.at[m]]
		if wat[k] >= 0 {
			i, ok := added[p.wat[m]]
			if !ok {
				p.replies = append(p.replies, rs[p.wat[m]])
				i = len(p.replies) - 1
				added[p.wat[m]] = i
			}
			wat[k] = i
		}
	}
	p.at, p.wat = append(p.at[:0], at...), append(p.wat[:0], wat...)
	return err
}

// answer decodes each live job's reply and delivers it; err is the
// connection's failure, if any. Over a Duplex connection (requeue), a
// command that met NOSCRIPT goes again as EVAL in a later pipeline
// instead, once.
func (n *node) answer(p *pipe, err error) {
	now := n.e.clock.Now()
	for k, i := range p.live {
		j := &p.jobs[i]
		late := !now.Before(j.deadline)
		var r core.Reply
		switch {
		case k < len(p.at) && p.at[k] < len(p.replies) && p.replies[p.at[k]].Kind != KindNone:
			rep := p.replies[p.at[k]]
			if rep.Kind == KindError && wire.IsNoScript(rep.Err) && p.duplex {
				n.scripts.And(^scriptBit(j.cmd.Kind, j.cmd.Op))
				if !j.resent {
					n.requeue(*j)
					continue
				}
			}
			if rep.Kind == KindError && wire.IsLoading(rep.Err) && n.resend(j, p, now, false) {
				continue // it did not run: it goes again once the data is loaded
			}
			st, fence, ttl, rerr := n.status(&j.cmd, rep)
			if rerr == nil && st == core.StatusOK && n.waits(j.cmd.Op) {
				if err != nil && p.replies[p.wat[k]].Kind == KindNone && n.resend(j, p, now, true) {
					continue // its WAIT is unanswered: it counts once a WAIT behind it again is met
				}
				rerr = n.replicated(p.replies[p.wat[k]])
			}
			if rerr != nil {
				r = n.e.fail(n.i, j.cmd.Op, rerr, false)
			} else {
				r = core.Reply{Node: n.i, Status: st, Fence: fence, TTL: ttl}
			}
		case err == nil:
			r = n.e.fail(n.i, j.cmd.Op, errors.New("no reply"), late)
		case n.resend(j, p, now, !p.unsent):
			continue
		default:
			r = n.e.fail(n.i, j.cmd.Op, err, late)
		}
		j.deliver(r)
	}
	clear(p.replies)
}

// resend puts j, whose connection failed before its reply (or, for a
// write followed by WAIT, before its WAIT's), back for the node's next
// pipeline, on a new connection, and reports whether it did. Only a
// command that a second run can change nothing a first run did not goes
// again: a release (a cleanup's included) or an extension, each a
// compare-and-do on its token, never an acquisition, which may have set
// the key the first time and would be refused, or take a key freed
// since, the second. It goes once, within the time on the wire its first
// send had: an extension's deadline, the round's, and a release's
// (pipeline), which then has its budget on the wire again. A send that surely did not run does not count (ran is
// false): one that never left (a failed dial, its first included), or
// one the server answered LOADING. The command goes again, a redialPause
// later, until its time ends.
//
// A Fair release that may have run goes again as itself, flagged as a
// resend (job.spent): release.lua then deletes only the caller's token,
// and hands the key on, announces the turn or queues the caller only if
// it did, so that a second run changes nothing a first run did not, and
// a first run that never happened has all its effects now. One that did
// not run (LOADING) goes again unflagged, as the first run it still is.
func (n *node) resend(j *job, p *pipe, now time.Time, ran bool) bool {
	op := j.cmd.Op
	if op != core.OpRelease && op != core.OpExtend {
		return false
	}
	if j.resent && j.until.IsZero() {
		return false // it went again for NOSCRIPT
	}
	if !j.resent {
		if p.unsent {
			// Its first dial failed: it fails at once, as any command
			// whose dial is refused does. A node that refuses
			// connections, dead or restarting, costs no node timeout.
			return false
		}
		j.until = j.deadline
		if op == core.OpRelease {
			j.until = later(j.deadline, p.sent.Add(j.budget))
		}
	}
	if ran {
		if j.spent {
			return false // it went out twice
		}
		j.spent = true
	}
	if !now.Before(j.until) {
		return false
	}
	if !ran {
		if !now.Add(2 * redialPause).Before(j.deadline) {
			// No time for another pause and a send after it before the
			// round's deadline: it fails now with what stopped it (a
			// refusal, LOADING), not at the deadline as a timeout, which
			// would hide that the node answered. A release's later
			// until is for a send that may be on the wire, not for one
			// that never went.
			return false
		}
		n.held.Store(true)
	}
	n.requeue(*j)
	return true
}

// redialPause is how long a node waits before it sends again a command
// that did not run (resend): after a failed dial, or a LOADING reply. A
// restarting server may refuse connections for a while, and one restarted
// over a large dataset takes them at once but answers LOADING until its
// data is loaded.
const redialPause = 20 * time.Millisecond

// pause waits d on the engine's clock, or until Close.
func (n *node) pause(d time.Duration) {
	ch := make(chan struct{}, 1)
	t := n.e.clock.AfterFunc(d, func() { ch <- struct{}{} })
	select {
	case <-ch:
	case <-n.wake: // Close (offer and requeue signal only an idle node, which a pausing one is not)
	}
	t.Stop()
}

// waits reports whether a command of op is followed by WAIT on this node:
// a write core.Waited names, when NodeConfig.Replicas is set.
func (n *node) waits(op core.Op) bool {
	return n.cfg.Replicas > 0 && core.Waited(op)
}

// replicated returns nil if the reply to WAIT counts at least
// NodeConfig.Replicas replicas, or an error that wraps
// drivers.ErrNotReplicated (or the WAIT's error reply).
func (n *node) replicated(r Reply) error {
	switch {
	case r.Kind == KindInt && core.Replicated(r.Int, n.cfg.Replicas):
		return nil
	case r.Kind == KindInt:
		return fmt.Errorf("%w: WAIT %d %v: %d acknowledged", dialspec.ErrNotReplicated, n.cfg.Replicas, n.cfg.WaitTimeout, r.Int)
	case r.Kind == KindError:
		return fmt.Errorf("%w: WAIT: %w", dialspec.ErrNotReplicated, r.Err)
	}
	return fmt.Errorf("%w: WAIT: no reply", dialspec.ErrNotReplicated)
}

// status decodes the reply to cmd, an OpAcquireFenced's fence, and the
// holder's TTL that a held acquire's script reports. The kinds beyond
// the mutex reply as its scripts do, but for a fenced reader's fence: a
// decimal string, "0" when no writer has had one (wire.ReadFence).
func (n *node) status(cmd *core.Command, r Reply) (core.Status, uint64, time.Duration, error) {
	if r.Kind == KindError || r.Kind == KindOther {
		return core.StatusError, 0, 0, r.Err
	}
	op := cmd.Op
	bit := scriptBit(cmd.Kind, op)
	switch op {
	case core.OpAcquire: // SET NX, or the probe script
		switch {
		case r.Kind == KindOK:
			if cmd.Kind != core.KindMutex {
				n.scripts.Or(bit) // only a script answers: it is cached
			}
			return core.StatusOK, 0, 0, nil
		case r.Kind == KindNil: // SET NX: the key exists
			return core.StatusHeld, 0, 0, nil
		case r.Kind == KindInt && r.Int <= 0:
			n.scripts.Or(bit) // it ran: the server has it cached
			return core.StatusHeld, 0, wire.HeldTTL(r.Int), nil
		}
	case core.OpAcquireFenced:
		var fence uint64
		var err error
		switch {
		case r.Kind == KindInt && r.Int <= 0:
			n.scripts.Or(bit)
			return core.StatusHeld, 0, wire.HeldTTL(r.Int), nil
		case r.Kind == KindString && cmd.Kind == core.KindRead:
			fence, err = wire.ReadFence(r.Text)
		case r.Kind == KindInt && cmd.Kind != core.KindRead:
			fence, err = wire.FenceInt(r.Int)
		case r.Kind == KindString && cmd.Kind != core.KindRead:
			fence, err = wire.FenceString(r.Text) // from 2^53 up
		default:
			return core.StatusError, 0, 0, unexpected(op, r)
		}
		n.scripts.Or(bit)
		if err != nil {
			return core.StatusError, 0, 0, err
		}
		return core.StatusOK, fence, 0, nil
	default: // release, extend, raise-fence: 1, 0 or -1
		if r.Kind == KindInt {
			n.scripts.Or(bit)
			st, err := wire.ScriptStatus(r.Int)
			return st, 0, 0, err
		}
	}
	return core.StatusError, 0, 0, unexpected(op, r)
}

func unexpected(op core.Op, r Reply) error {
	return errors.New("unexpected reply kind " + strconv.Itoa(int(r.Kind)) + " to " + op.String())
}

// scriptBit is the bit in node.scripts of the script of a command of kind
// k and op: every op runs a script (a mutex's OpAcquire only with Probe),
// one bit per op and kind, at most 32 of them (TestScriptBits). A
// writer's extension and fence raise run the mutex's scripts, and share
// their bits.
func scriptBit(k core.Kind, op core.Op) uint32 {
	if k == core.KindWrite && (op == core.OpExtend || op == core.OpRaiseFence) {
		k = core.KindMutex
	}
	return 1 << (uint(k)*opScripts + uint(op-core.OpAcquire))
}

// opScripts is how many bits a kind has in node.scripts: one per op.
const opScripts = uint(core.OpRaiseFence - core.OpAcquire + 1)

// encode builds p.cmds for the jobs at idx, each as EVAL rather than
// EVALSHA if eval is set or its script has not run on the connection.
// Tokens, TTLs, fences and fence counters' names are written into p.text
// and viewed as strings, which costs no allocation; p.text is rewritten
// only once the clients are done with it (see exchange). It reports
// whether a command other than a release went as EVALSHA.
func (n *node) encode(p *pipe, idx []int, eval bool) (sha bool) {
	text, args, cmds := p.text[:0], p.args[:0], p.cmds[:0]
	p.at, p.wat = p.at[:0], p.wat[:0]
	waits := false
	scripts := n.scripts.Load()
	for _, i := range idx {
		cmd := &p.jobs[i].cmd
		op := cmd.Op
		start := len(text)
		text = cmd.Token.AppendHex(text)
		tok := view(text[start:])
		first := len(args)
		switch {
		case kindScript(cmd):
			bit := scriptBit(cmd.Kind, op)
			text, args = n.appendKind(text, args, cmd, tok, eval || scripts&bit == 0)
			sha = sha || !eval && scripts&bit != 0 && op != core.OpRelease
		default:
			plain := op == core.OpAcquire && !cmd.Probe
			switch {
			case plain:
				args = append(args, "SET", cmd.Key, tok, "NX", "PX")
			case eval || scripts&scriptBit(core.KindMutex, op) == 0:
				args = append(args, "EVAL", n.script(core.KindMutex, op).Src)
			default:
				args = append(args, "EVALSHA", n.script(core.KindMutex, op).SHA1)
				sha = sha || op != core.OpRelease
			}
			if !plain {
				keys := wire.Keys(op)
				if cmd.Fair {
					keys += 2
				}
				args = append(args, keyCounts[keys], cmd.Key)
				if wire.Keys(op) == 2 {
					text, args = n.appendName(text, args, core.FenceKeyPrefix, cmd.Key)
				}
				if cmd.Fair {
					text, args = n.appendName(text, args, wire.QueuePrefix, cmd.Key)
					text, args = n.appendName(text, args, wire.QueueDuePrefix, cmd.Key)
				}
				args = append(args, tok)
			}
			switch op {
			case core.OpRelease:
				if cmd.Quiet && !cmd.Fair {
					args = append(args, "q") // release.lua: announce nothing
				}
			case core.OpAcquire, core.OpExtend, core.OpAcquireFenced:
				text, args = appendInt(text, args, wire.Millis(cmd.TTL))
			case core.OpRaiseFence:
				start = len(text)
				text = strconv.AppendUint(text, cmd.Fence, 10)
				args = append(args, view(text[start:]))
			}
			if cmd.Fair && op != core.OpExtend && op != core.OpRaiseFence {
				text, args = n.e.appendFairArgs(text, args, cmd, p.jobs[i].spent && op == core.OpRelease)
			}
		}
		p.at = append(p.at, len(cmds))
		cmds = append(cmds, args[first:len(args):len(args)])
		switch {
		case !n.waits(op):
			p.wat = append(p.wat, -1)
		case n.cfg.Cluster: // each write's own master: its WAIT right behind it
			p.wat = append(p.wat, len(cmds))
			text, args, cmds = n.appendWait(text, args, cmds)
		default:
			p.wat = append(p.wat, trailing)
			waits = true
		}
	}
	if waits {
		// One WAIT, behind the pipeline's last write, answers for every
		// write before it on the connection: one replication round trip
		// for the pipeline, not one per write.
		for k := range p.wat {
			if p.wat[k] == trailing {
				p.wat[k] = len(cmds)
			}
		}
		text, args, cmds = n.appendWait(text, args, cmds)
	}
	p.text, p.args, p.cmds = text, args, cmds
	return sha
}

// script returns the script of a command of kind k and op on the
// connection: wire.ScriptOf's, announcing with SPUBLISH on a Cluster
// with sharded pub/sub (wire.ReleaseSharded and its kin). refuse has
// turned away the commands no script runs.
func (n *node) script(k core.Kind, op core.Op) wire.Script {
	s, _ := wire.ScriptOf(k, op, n.sharded)
	return s
}

// kindScript reports whether cmd runs a script of its kind's own
// (appendKind): every command of a reader and of a multi-key lock, and
// a writer's acquire and release. A writer's extension and fence raise
// are the mutex's.
func kindScript(cmd *core.Command) bool {
	switch cmd.Kind {
	case core.KindMutex:
		return false
	case core.KindWrite:
		return cmd.Op != core.OpExtend && cmd.Op != core.OpRaiseFence
	}
	return true
}

// appendKind appends the words of cmd, a command of a kind's own script
// (kindScript), as EVAL if eval, else EVALSHA: its keys and their
// auxiliary keys' names (the key's reader set and writer's mark, and
// fence counters, named as the member names them), then its token and
// arguments (see the scripts in package wire). Fair and Quiet are the
// mutex's alone: core never sets them on another kind, and they are not
// sent. A writer's release sends its Ticket as "w" when positive: the
// cleanup of an attempt whose writer waits on, which keeps its mark.
func (n *node) appendKind(text []byte, args []string, cmd *core.Command, tok string, eval bool) ([]byte, []string) {
	s := n.script(cmd.Kind, cmd.Op)
	if eval {
		args = append(args, "EVAL", s.Src)
	} else {
		args = append(args, "EVALSHA", s.SHA1)
	}
	op := cmd.Op
	fenced := op == core.OpAcquireFenced || op == core.OpRaiseFence
	acquire := op == core.OpAcquire || op == core.OpAcquireFenced
	if cmd.Kind == core.KindAll {
		keys := cmd.Keys.Len()
		if fenced {
			keys *= 2
		}
		text, args = appendInt(text, args, int64(keys))
		args = append(args, cmd.Keys.All()...)
		if fenced {
			for _, k := range cmd.Keys.All() {
				text, args = n.appendName(text, args, core.FenceKeyPrefix, k)
			}
		}
	} else { // a reader, or a writer's acquire or release
		// A writer's release takes the key and its mark, no reader set.
		writeRelease := cmd.Kind == core.KindWrite && op == core.OpRelease
		keys := 2
		if acquire {
			keys++
		}
		if fenced {
			keys++
		}
		args = append(args, keyCounts[keys], cmd.Key)
		if !writeRelease {
			text, args = n.appendName(text, args, core.ReadersPrefix, cmd.Key)
		}
		if acquire || writeRelease {
			text, args = n.appendName(text, args, core.WriterWaitPrefix, cmd.Key)
		}
		if fenced {
			text, args = n.appendName(text, args, core.FenceKeyPrefix, cmd.Key)
		}
	}
	args = append(args, tok)
	switch op {
	case core.OpAcquire, core.OpAcquireFenced, core.OpExtend:
		text, args = appendInt(text, args, wire.Millis(cmd.TTL))
		if acquire && cmd.Kind == core.KindAll {
			text, args = appendInt(text, args, int64(cmd.Keys.Len()))
		}
	case core.OpRaiseFence:
		start := len(text)
		text = strconv.AppendUint(text, cmd.Fence, 10)
		args = append(args, view(text[start:]))
	case core.OpRelease:
		if cmd.Kind == core.KindWrite && cmd.Ticket > 0 {
			args = append(args, "w") // write_release.lua: the mark stays
		}
	}
	return text, args
}

// trailing marks, while encode runs, a write answered by the pipeline's
// last WAIT.
const trailing = -2

// appendWait appends WAIT Replicas WaitTimeout to cmds.
func (n *node) appendWait(text []byte, args []string, cmds [][]string) ([]byte, []string, [][]string) {
	first := len(args)
	args = append(args, "WAIT")
	text, args = appendInt(text, args, int64(n.cfg.Replicas))
	text, args = appendInt(text, args, max(wire.Millis(n.cfg.WaitTimeout), 1))
	return text, args, append(cmds, args[first:len(args):len(args)])
}

// appendName appends the name of key's auxiliary key under prefix: as
// wire.ClusterName on a Cluster (pipeline refused the keys it cannot
// name), prefix+key elsewhere.
func (n *node) appendName(text []byte, args []string, prefix, key string) ([]byte, []string) {
	if n.cfg.Cluster {
		if wrap, _ := wire.ClusterWrap(key); wrap {
			start := len(text)
			text = append(text, prefix...)
			text = append(text, '{')
			text = append(text, key...)
			text = append(text, '}')
			return text, append(args, view(text[start:]))
		}
	}
	return appendName(text, args, prefix, key)
}

// view returns b's bytes as a string without copying. A buffer that grows
// while encoding leaves earlier views on the old array, which nothing
// writes again.
func view(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) } //nolint:gosec // G103: p.text is not written again while a view is read (see exchange)

func grow(r []Reply, n int) []Reply {
	if cap(r) < n {
		return make([]Reply, n, 2*n)
	}
	return r[:n]
}
