// Package fanout adapts a blocking Redis client to core.Batch.
//
// A Redis client such as rueidis or radix answers one command per call and
// blocks the calling goroutine until the reply (or the context's deadline).
// A Redlock round in multiplexed mode must have a command outstanding on
// every node at once. Fanout gets there without starting a goroutine per
// node per operation:
//
//   - New starts a fixed set of long-lived workers per node (Config.Workers,
//     64 by default), each blocked on its node's job queue; Close stops them.
//   - A batch buffers the commands given to Send until the next Receive.
//     One buffered command alone (the sequential shape) runs inline, on the
//     caller's goroutine: no handoff at all. Several (the multiplexed shape)
//     all go to the nodes' workers and Receive returns each reply as it
//     arrives. None of them runs inline: the caller would then wait for
//     that node, however slow or hung, even once the others had decided
//     the round.
//   - A pipelined Fanout (Config.ExecMulti set, for clients that can send
//     several commands to one server in one call, such as rueidis's
//     DoMulti) has one worker per node instead, which takes every command
//     queued for its node, from any number of rounds, and runs them as one
//     pipeline: the pipelines grow with the load, a node's commands run in
//     the order they were queued, and a loaded node costs one round trip
//     and one write per pipeline rather than per command.
//   - Workers put replies in the batch's reply channel, buffered for N
//     replies, so a worker never blocks on a batch whose caller has stopped
//     listening. A closed batch is reused (pooled) only once every reply has
//     been delivered: by Close itself, or by the worker that delivers the
//     last straggler.
//   - Every command runs under the equivalent of context.WithDeadline(
//     context.WithoutCancel(beginCtx), deadline): the Begin context's values
//     reach the client, its cancellation does not, and the Send deadline
//     bounds the command itself. The context is reused from one command to
//     the next when that is safe, so it costs no allocation (see dctx).
//     A command whose deadline has already passed answers
//     core.StatusTimeout and, unless it is a release, is not executed; so
//     does a command that fails after its deadline, whatever the client's
//     error says.
//   - Releases are never dropped for lateness. A release that waited past
//     its deadline in a node's queue (behind a hung node's SET, typically:
//     the cleanup of an attempt abandoned there) still goes to the node
//     after the commands queued before it, given again the time it had when
//     queued; and after a pipeline on the node missed its deadline (the
//     client then usually replaces its connection, which takes a dial) a
//     release gets that time from when it goes out even if its own
//     deadline comes first. Its caller hears core.StatusTimeout at its
//     deadline as before. Otherwise the node, once it wakes, would run the
//     SET and nothing after it, leaving the key until its TTL. Releases
//     still buffered when a batch is closed (a cleanup that awaits none of
//     its nodes closes without a Receive) are sent too; acquires and
//     extends are not.
//
// Deadlines are compared with time.Now: a driver built on fanout assumes the
// Locker runs on the system clock (core.SystemClock), as every real Redis
// deployment does.
package fanout

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers/internal/wire"
)

// DefaultWorkers is the number of workers per node when Config.Workers is 0.
// A worker is one blocked client call; clients that pipeline concurrent calls
// on a shared connection (rueidis, radix) turn them into one pipeline.
const DefaultWorkers = 64

// ErrClosed is the error of a command issued through a closed Fanout.
var ErrClosed = errors.New("redlock: driver closed")

// Call is one command of a pipeline handed to ExecMulti. With
// Config.WireStrings its wire arguments are also given as strings, encoded
// once per round rather than once per node.
type Call struct {
	Cmd core.Command
	// Token is wire.Token(Cmd.Token) with Config.WireStrings, else "".
	Token string
	// TTL is wire.MillisString(Cmd.TTL) for OpAcquire and OpExtend with
	// Config.WireStrings, else "".
	TTL string
}

// Result is the outcome of one Call: as Exec's results.
type Result struct {
	Status core.Status
	Err    error
}

// ExecMulti runs calls on one node, in order, as one pipeline, blocks until
// every reply, and sets res[i] to calls[i]'s outcome (len(res) ==
// len(calls)). ctx's deadline is the earliest of the calls' deadlines:
// ExecMulti must return by then. Errors map as Exec's do, call by call.
type ExecMulti func(ctx context.Context, node int, calls []Call, res []Result)

// Exec runs one command on one node and blocks until its reply. ctx carries
// the command's deadline; Exec must return by then (a client that cannot
// guarantee it must be made to, for instance by closing the connection).
// A non-nil error becomes a core.StatusError reply, or core.StatusTimeout
// when the error is a deadline, when Exec returned StatusTimeout, or when
// ctx's deadline had passed by the time Exec returned.
type Exec func(ctx context.Context, node int, cmd core.Command) (core.Status, error)

// Config configures a Fanout.
type Config struct {
	// Names holds one name per node (its address), used in errors. N is
	// len(Names).
	Names []string
	// Exec runs a command. It is called concurrently, from the workers and
	// from the goroutines calling Receive.
	Exec Exec
	// ExecMulti, when set, makes the Fanout pipelined: each node has one
	// worker, which takes every command queued for its node (from any
	// number of rounds, up to MaxPipeline) and runs them with one
	// ExecMulti call, in the order they were queued. Exec still runs the
	// inline commands of sequential rounds.
	ExecMulti ExecMulti
	// WireStrings fills Call.Token and Call.TTL, for clients whose command
	// builders take strings (rueidis). A client that encodes from Call.Cmd
	// itself (radix) leaves it false and saves the allocations.
	WireStrings bool
	// Workers is the number of workers per node; 0 means DefaultWorkers.
	// A pipelined Fanout has one per node and ignores it.
	Workers int
	// Queue is the capacity of each node's job queue; 0 means 4*Workers,
	// or 4*MaxPipeline for a pipelined Fanout.
	// When a node's queue is full, Receive waits for room after handing the
	// other nodes their jobs.
	Queue int
}

// Fanout is a set of per-node workers that serves core.Batch values for a
// blocking Exec. It implements core.Driver; it is safe for concurrent use.
type Fanout struct {
	names []string
	exec  Exec
	multi ExecMulti

	wireStrings bool
	n           int

	queues []chan job
	// missed[i] is set while node i's last command or pipeline ended past
	// its deadline: its client has probably given up the connection, and
	// the next one may have to wait for a new one (see runPipeline).
	missed []atomic.Bool
	done   chan struct{}
	closed atomic.Bool
	once   sync.Once
	wg     sync.WaitGroup

	batches sync.Pool
}

// job is one command handed to a worker.
type job struct {
	b        *batch // nil once the job's caller has been answered
	node     int
	cmd      core.Command
	deadline time.Time
	// budget is how long the command had when it was queued (deadline
	// minus that time): the time a late release is given on the wire.
	budget   time.Duration
	tok, ttl string // wire arguments, set for a pipelined Fanout
}

// MaxPipeline is the most commands a pipelined Fanout's worker hands to
// one ExecMulti call.
const MaxPipeline = 256

// New starts the workers. Callers must Close the Fanout to stop them.
func New(cfg Config) *Fanout {
	w := cfg.Workers
	if w <= 0 {
		w = DefaultWorkers
	}
	if cfg.ExecMulti != nil {
		w = 1
	}
	q := cfg.Queue
	if q <= 0 {
		q = 4 * w
		if cfg.ExecMulti != nil {
			q = 4 * MaxPipeline
		}
	}
	n := len(cfg.Names)
	f := &Fanout{
		names: append([]string(nil), cfg.Names...),
		exec:  cfg.Exec,
		multi: cfg.ExecMulti,
		n:     n,

		wireStrings: cfg.ExecMulti != nil && cfg.WireStrings,
		queues:      make([]chan job, n),
		missed:      make([]atomic.Bool, n),
		done:        make(chan struct{}),
	}
	f.batches.New = func() any {
		return &batch{f: f, pend: make([]job, 0, n), replies: make(chan core.Reply, n)}
	}
	for i := range f.queues {
		f.queues[i] = make(chan job, q)
	}
	f.wg.Add(n * w)
	for i := 0; i < n; i++ {
		for k := 0; k < w; k++ {
			if f.multi != nil {
				go f.pipeliner(i, f.queues[i])
			} else {
				go f.worker(f.queues[i])
			}
		}
	}
	return f
}

// Nodes returns N.
func (f *Fanout) Nodes() int { return f.n }

// NodeName returns the name of node i.
func (f *Fanout) NodeName(i int) string { return f.names[i] }

// Close stops the workers and waits for them to return. A worker busy with
// a command returns once the command does, by its deadline (a late
// release's: by the time it was given, see runPipeline). Commands still
// queued, and commands issued after Close, answer core.StatusError with
// ErrClosed. Close is idempotent.
func (f *Fanout) Close() {
	f.once.Do(func() {
		f.closed.Store(true)
		close(f.done)
		f.wg.Wait()
	})
}

func (f *Fanout) worker(q chan job) {
	defer f.wg.Done()
	var ctx *dctx
	for {
		select {
		case j := <-q:
			if now := time.Now(); late(j, now) && !f.closed.Load() {
				// Answered at its deadline, sent all the same: see
				// runPipeline.
				j.b.deliver(f.timeout(j.node, j.cmd.Op, context.DeadlineExceeded))
				j.b, j.deadline = nil, now.Add(j.budget)
				f.run(j, &ctx)
				continue
			}
			j.b.deliver(f.run(j, &ctx))
		case <-f.done:
			f.drain(q)
			return
		}
	}
}

// pipeliner is a pipelined Fanout's worker for one node: it takes every
// job queued for the node, up to MaxPipeline, and runs them as one
// pipeline. While that pipeline is on the wire the next jobs queue up, so
// the pipelines grow with the load: one round trip carries the commands of
// every round that reached the node meanwhile.
func (f *Fanout) pipeliner(node int, q chan job) {
	defer f.wg.Done()
	p := &pipeline{
		jobs:  make([]job, 0, MaxPipeline),
		live:  make([]int, 0, MaxPipeline),
		calls: make([]Call, 0, MaxPipeline),
		res:   make([]Result, MaxPipeline),
	}
	for {
		select {
		case j := <-q:
			p.jobs = append(p.jobs, j)
		case <-f.done:
			f.drain(q)
			return
		}
	gather:
		for len(p.jobs) < MaxPipeline {
			select {
			case j := <-q:
				p.jobs = append(p.jobs, j)
			default:
				break gather
			}
		}
		f.runPipeline(node, p)
	}
}

// pipeline is a pipeliner's reusable state.
type pipeline struct {
	jobs  []job
	live  []int // indexes in jobs of the jobs sent
	calls []Call
	res   []Result
	ctx   *dctx
	timer *time.Timer // answers callers at their deadlines (await)
}

// late reports whether j is a release whose deadline passed before it
// could be sent, and that is still to be sent (see runPipeline).
func late(j job, now time.Time) bool {
	return j.cmd.Op == core.OpRelease && j.budget > 0 && !now.Before(j.deadline)
}

// runPipeline runs p.jobs on node and delivers their replies.
//
// Jobs whose deadline has passed answer core.StatusTimeout. Acquires and
// extends among them are not sent: an unsent SET leaves nothing behind.
// Releases are sent all the same, in their place, with a deadline of now
// plus the time they had when queued (their budget): a release that waited
// behind a hung node's SET must follow that SET, which the node may still
// run when it wakes, or the key stays until its TTL. For the same reason,
// while the node's last pipeline missed its deadline (its client has
// probably given up the connection, and the next command waits for a new
// one), a release is given its budget from now even if its own deadline
// comes first; its caller is still answered at that deadline (await).
//
// The others run under one context whose deadline is the earliest of
// theirs, or the latest of the releases' extended ones if that is later.
// A pipeline of one command carries its Begin context's values; a pipeline
// of several rounds' commands carries none, since it cannot carry them
// all.
func (f *Fanout) runPipeline(node int, p *pipeline) {
	now := time.Now()
	closed := f.closed.Load()
	suspect := f.missed[node].Load()
	var (
		first   time.Time // the earliest deadline of a caller
		last    time.Time // the latest extended deadline of a release
		callers int       // live jobs whose caller waits for the reply
		base    context.Context
	)
	for i := range p.jobs {
		j := &p.jobs[i]
		switch {
		case closed:
			j.b.deliver(f.fail(node, j.cmd.Op, ErrClosed))
			continue
		case !now.Before(j.deadline):
			j.b.deliver(f.timeout(node, j.cmd.Op, context.DeadlineExceeded))
			if !late(*j, now) {
				continue
			}
			j.b = nil // answered: sent for the node's sake only
			if g := now.Add(j.budget); g.After(last) {
				last = g
			}
		default:
			if suspect && j.cmd.Op == core.OpRelease {
				if g := now.Add(j.budget); g.After(j.deadline) && g.After(last) {
					last = g
				}
			}
			if callers == 0 || j.deadline.Before(first) {
				first = j.deadline
			}
			callers++
			base = j.b.base
		}
		p.live = append(p.live, i)
		p.calls = append(p.calls, Call{Cmd: j.cmd, Token: j.tok, TTL: j.ttl})
	}
	if len(p.live) > 0 {
		if len(p.live) > 1 || callers == 0 {
			base = context.Background()
		}
		dl := first
		if callers == 0 || last.After(dl) {
			dl = last
		}
		c := p.ctx
		if c == nil {
			c = new(dctx)
			p.ctx = c
		}
		res := p.res[:len(p.calls)]
		clear(res)
		c.start(base, dl)
		if callers > 0 && dl.After(first) {
			// Some caller must hear before the pipeline ends.
			done := make(chan struct{})
			go func() {
				f.multi(c, node, p.calls, res)
				close(done)
			}()
			f.await(node, p, done)
		} else {
			f.multi(c, node, p.calls, res)
		}
		late := c.Err() != nil
		end := time.Now()
		failed, missed := false, late
		for k, i := range p.live {
			j := &p.jobs[i]
			r := res[k]
			timedOut := r.Err != nil && (r.Status == core.StatusTimeout || late || !end.Before(j.deadline))
			missed = missed || timedOut
			failed = failed || r.Err != nil
			if j.b == nil {
				continue // answered already
			}
			var reply core.Reply
			switch {
			case r.Err == nil:
				reply = core.Reply{Node: node, Status: r.Status}
			case timedOut:
				reply = f.timeout(node, j.cmd.Op, r.Err)
			default:
				reply = f.fail(node, j.cmd.Op, r.Err)
			}
			j.b.deliver(reply)
		}
		if missed != suspect {
			f.missed[node].Store(missed)
		}
		if !c.finish() || failed {
			p.ctx = nil // the client may still hold it
		}
		clear(res)
	}
	clear(p.jobs)
	clear(p.calls)
	p.jobs, p.live, p.calls = p.jobs[:0], p.live[:0], p.calls[:0]
}

// await waits for done, the end of p's pipeline on node, and meanwhile
// answers core.StatusTimeout to each caller whose deadline passes first.
// Only the pipeliner touches p.jobs; the pipeline's goroutine touches only
// p.calls and the results.
func (f *Fanout) await(node int, p *pipeline, done <-chan struct{}) {
	if p.timer == nil {
		p.timer = time.NewTimer(time.Hour)
		p.timer.Stop()
	}
	for {
		var next time.Time
		now := time.Now()
		for _, i := range p.live {
			j := &p.jobs[i]
			switch {
			case j.b == nil:
			case !now.Before(j.deadline):
				j.b.deliver(f.timeout(node, j.cmd.Op, context.DeadlineExceeded))
				j.b = nil
			case next.IsZero() || j.deadline.Before(next):
				next = j.deadline
			}
		}
		if next.IsZero() {
			<-done
			return
		}
		p.timer.Reset(next.Sub(now))
		select {
		case <-done:
			p.timer.Stop()
			return
		case <-p.timer.C:
		}
	}
}

// drain answers every job left in q with ErrClosed. It is called by the
// workers once Close has begun and by a dispatcher that may have raced with
// them; between them no job is left behind.
func (f *Fanout) drain(q chan job) {
	for {
		select {
		case j := <-q:
			j.b.deliver(f.fail(j.node, j.cmd.Op, ErrClosed))
		default:
			return
		}
	}
}

// run executes one job and returns its reply. *ctx is the runner's
// reusable context; run replaces it with nil when it must not be reused.
func (f *Fanout) run(j job, ctx **dctx) core.Reply {
	if f.closed.Load() {
		return f.fail(j.node, j.cmd.Op, ErrClosed)
	}
	if !time.Now().Before(j.deadline) {
		return f.timeout(j.node, j.cmd.Op, context.DeadlineExceeded)
	}
	c := *ctx
	if c == nil {
		c = new(dctx)
		*ctx = c
	}
	base := context.Background()
	if j.b != nil {
		base = j.b.base
	}
	c.start(base, j.deadline)
	st, err := f.exec(c, j.node, j.cmd)
	late := c.Err() != nil
	if !c.finish() || err != nil {
		*ctx = nil // the client may still hold it
	}
	timedOut := err != nil && (st == core.StatusTimeout || late)
	if m := &f.missed[j.node]; m.Load() != timedOut && (timedOut || err == nil) {
		m.Store(timedOut)
	}
	switch {
	case err == nil:
		return core.Reply{Node: j.node, Status: st}
	case timedOut:
		return f.timeout(j.node, j.cmd.Op, err)
	}
	return f.fail(j.node, j.cmd.Op, err)
}

func (f *Fanout) fail(node int, op core.Op, err error) core.Reply {
	return wire.Fail(node, f.names[node], op, err)
}

func (f *Fanout) timeout(node int, op core.Op, err error) core.Reply {
	r := wire.Fail(node, f.names[node], op, err)
	r.Status = core.StatusTimeout
	return r
}

// Begin returns a batch for one round. ctx's values reach Exec; its
// cancellation does not (see core.Driver).
func (f *Fanout) Begin(ctx context.Context) core.Batch {
	b := f.batches.Get().(*batch)
	b.ctx = ctx
	return b
}

// batch is one round. It is used by one goroutine at a time; workers touch
// only its replies channel and read base, which is set before any job is
// handed to them.
type batch struct {
	f    *Fanout
	ctx  context.Context // Begin's context
	base context.Context // ctx without its cancellation; set at first flush
	dctx *dctx           // the inline command's reusable context

	pend    []job           // sent, not yet flushed
	replies chan core.Reply // capacity N: a worker never blocks on it
	queued  int             // replies that will land in replies
	taken   int             // replies taken out of replies

	// inflight counts the jobs handed to workers whose reply is not yet
	// delivered, plus abandoned once Close has run. Whoever brings it to
	// exactly abandoned (Close, or the worker delivering the last reply)
	// recycles the batch: no worker touches it after that.
	inflight atomic.Int64
}

const abandoned = 1 << 40

// deliver puts a worker's reply in the batch and recycles the batch if it
// was closed and this was the last reply it awaited.
func (b *batch) deliver(r core.Reply) {
	b.replies <- r
	if b.inflight.Add(-1) == abandoned {
		b.recycle()
	}
}

func (b *batch) Send(node int, cmd core.Command, deadline time.Time) {
	if node < 0 || node >= b.f.n || b.queued+len(b.pend) >= b.f.n {
		return // outside the contract (one command per node); ignore
	}
	b.pend = append(b.pend, job{b: b, node: node, cmd: cmd, deadline: deadline})
}

func (b *batch) Receive(cancel <-chan struct{}) (core.Reply, bool) {
	if len(b.pend) > 0 {
		if isClosed(cancel) {
			// Cancelled before anything went out: send nothing.
			clear(b.pend)
			b.pend = b.pend[:0]
			return core.Reply{}, false
		}
		if r, direct := b.flush(); direct {
			return r, true
		}
	}
	if b.taken == b.queued {
		return core.Reply{}, false // nothing outstanding: outside the contract
	}
	select {
	case r := <-b.replies:
		b.taken++
		return r, true
	case <-cancel:
		return core.Reply{}, false
	}
}

// flush starts the buffered jobs. A single job (the sequential shape) runs
// inline and its reply is returned directly (direct == true). Several jobs
// (the multiplexed shape) all go to the workers, so that Receive returns
// each reply as soon as it arrives: running one of them inline would make
// every round wait for that node, however slow, even when the others have
// already decided it.
func (b *batch) flush() (r core.Reply, direct bool) {
	if len(b.pend) == 1 && b.taken == b.queued {
		b.setBase()
		j := b.pend[0]
		clear(b.pend)
		b.pend = b.pend[:0]
		return b.f.run(j, &b.dctx), true
	}
	b.prepare()
	b.queued += b.dispatch()
	return core.Reply{}, false
}

// setBase sets the context the batch's commands carry.
func (b *batch) setBase() {
	if b.base == nil {
		if b.ctx.Done() == nil {
			b.base = b.ctx // nothing to detach from
		} else {
			b.base = context.WithoutCancel(b.ctx)
		}
	}
}

// prepare readies the buffered jobs for the workers: the batch's context,
// and the wire strings of a pipelined Fanout that wants them.
func (b *batch) prepare() {
	b.setBase()
	if b.f.wireStrings {
		for i := range b.pend {
			j, prev := &b.pend[i], (*job)(nil)
			if i > 0 {
				prev = &b.pend[i-1]
			}
			if prev != nil && prev.cmd.Token == j.cmd.Token {
				j.tok = prev.tok
			} else {
				j.tok = wire.Token(j.cmd.Token)
			}
			switch {
			case j.cmd.Op == core.OpRelease:
			case prev != nil && prev.cmd.Op != core.OpRelease && prev.cmd.TTL == j.cmd.TTL:
				j.ttl = prev.ttl
			default:
				j.ttl = wire.MillisString(j.cmd.TTL)
			}
		}
	}
}

// dispatch hands the buffered jobs to the workers and empties pend. It
// returns how many it handed over.
func (b *batch) dispatch() int {
	now := time.Now()
	var full uint64 // jobs whose queue had no room, by index in pend
	for i := range b.pend {
		j := &b.pend[i]
		j.budget = j.deadline.Sub(now)
		if !b.f.dispatch(*j, false) {
			full |= 1 << i
		}
	}
	for i := 0; full != 0; i++ {
		if full&(1<<i) != 0 {
			b.f.dispatch(b.pend[i], true)
			full &^= 1 << i
		}
	}
	n := len(b.pend)
	clear(b.pend)
	b.pend = b.pend[:0]
	return n
}

// dispatch queues j for its node's workers. Without wait it returns false
// if the queue is full; with wait it blocks until there is room or the
// Fanout closes. A job that cannot be queued because the Fanout is closed
// is answered with ErrClosed at once.
func (f *Fanout) dispatch(j job, wait bool) bool {
	q := f.queues[j.node]
	if f.closed.Load() {
		j.b.replies <- f.fail(j.node, j.cmd.Op, ErrClosed)
		return true
	}
	j.b.inflight.Add(1)
	if wait {
		select {
		case q <- j:
		case <-f.done:
			j.b.inflight.Add(-1)
			j.b.replies <- f.fail(j.node, j.cmd.Op, ErrClosed)
			return true
		}
	} else {
		select {
		case q <- j:
		default:
			j.b.inflight.Add(-1)
			return false
		}
	}
	if f.closed.Load() {
		// Close may have begun after the check above, and its workers may
		// have drained q before j landed in it: drain it ourselves.
		f.drain(q)
	}
	return true
}

// Close ends the round without waiting for replies. Releases still
// buffered (sent, never received: a cleanup that awaits none of its nodes
// ends without a Receive) go to the workers all the same, as stragglers:
// each may be what undoes an earlier SET on its node. Acquires and extends
// still buffered are dropped: nothing was sent for them. If a node's queue
// is full, Close waits for room, as Receive does. The batch is
// recycled (pooled for another Begin) as soon as no worker holds it: at
// once if every reply has been delivered, otherwise by the worker that
// delivers the last straggler. Until then the stragglers' replies land in
// its buffer, unread.
func (b *batch) Close() {
	k := 0
	for _, j := range b.pend {
		if j.cmd.Op == core.OpRelease {
			b.pend[k] = j
			k++
		}
	}
	clear(b.pend[k:])
	b.pend = b.pend[:k]
	if k > 0 {
		b.prepare()
		b.dispatch()
	}
	if b.inflight.Add(abandoned) == abandoned {
		b.recycle()
	}
}

// recycle empties the batch and returns it to the pool. It runs once no
// worker holds the batch.
func (b *batch) recycle() {
	for {
		select {
		case <-b.replies:
			continue
		default:
		}
		break
	}
	b.ctx, b.base = nil, nil
	b.queued, b.taken = 0, 0
	b.inflight.Store(0)
	b.f.batches.Put(b)
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
