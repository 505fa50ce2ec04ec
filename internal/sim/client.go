package sim

import (
	"context"
	"time"

	"github.com/redlock-go/redlock/core"
)

type clientState uint8

const (
	idle clientState = iota
	acquiring
	holding
	extending
	releasing
)

// client is one process contending for the key through the real core.
type client struct {
	w         *world
	id        int
	ppm       int64     // clock-rate error
	spec      core.Spec // acquires and releases through it
	leaseSpec core.Spec // leases through it: Config.LeaseFraction set, maybe another TTL
	watchSpec core.Spec // watches (no extension of its own) through it
	tokens    simTokens

	crashed, paused bool
	pausedAt        int64 // real time of the last pause's start
	grantAt         int64 // real time the current grant arrived (acquired or extended)
	resumedAt       int64 // real time of the last resume
	deferred        []event

	state   clientState
	acq     core.Acquisition
	own     core.Round  // the release round
	round   *core.Round // the round being driven
	roundID uint64
	roundAt int64                  // real time the round started
	got     [core.MaxNodes]bool    // a reply or timeout came in for node
	replies [core.MaxNodes]message // the replies fed, for the hygiene check
	// gathered holds, in arrival order, the nodes whose replies came in
	// and wait, as the root's runner waits (core.Gatherer), until the
	// round needs no more than are at hand (Round.Needed).
	gathered  [core.MaxNodes]int
	nGathered int

	acqID      int        // global id of the current acquisition
	trying     bool       // the current acquisition is a reannouncement's TryLock (proc.go)
	lease      core.Lease // the held lock's lease: core decides when to extend and when it is lost
	leasing    bool       // this lock's lease extends (the schedule drew Faults.Extend)
	workEnd    time.Time  // local
	using      bool
	useStart   int64
	lastSetEnd int64 // real end of the last round that set or extended the keys
	timerGen   uint64

	// The wait between attempts, and announcements (announce.go).
	wakeGen          uint64    // the current evWake's generation
	wakeAt           time.Time // local: the WakeAt the current evWake was set for
	retryEnd         time.Time // local: the retry delay's end
	attemptAnnounced bool      // an announcement started the current attempt
	heard            bool      // announcements fed since the attempt started
	annSince         uint32    // nodes announced since the attempt started
	attempts         int       // attempts of the acquisition under way
	ours             uint32    // nodes the last failed attempt took: its cleanup frees them
	listener         bool      // watches the key from its first wait
	watching         bool
	listening        uint32                // the nodes the acquisition was told it hears
	confirmed        uint32                // nodes whose subscription is confirmed
	subGen           [core.MaxNodes]uint64 // each node's latest SUBSCRIBE
	// firstDraw is the first Jitter draw since draws was zeroed: the
	// retry delay's, in the cleanup's RoundDone.
	firstDraw uint64
	draws     int

	// cancelPending: its caller gave up during a cleanup, which goes on;
	// the wait after it acts on it (cancel).
	cancelPending bool
	// outside: the ticket this acquisition took before it joined its
	// process's room, joinedAt: when it did (fair.go's checkJump).
	outside  int64
	joinedAt int64

	// With Config.Fair (fair.go): the ticket of this acquisition's first
	// cleanup, and how often others overtook it since.
	ticket    int64
	overtaken int

	// With Config.Waiters (proc.go): its process; whether it waits in the
	// process's queue; the pokes on their way to it; the wake generation
	// last set (armed == wakeGen: a wake is set); the room's count of its
	// lock (Ready.Held; zero: none); and its release as the Room follows
	// it (Releasing), to tell early (Room.Flushed), told early.
	p                *proc
	queued           bool
	pokes            int
	armed            uint64
	held             core.Held
	rel              core.Releasing
	early, toldEarly bool

	// With a Primitive other than the mutex (kinds.go): what the current
	// acquisition takes, its keys as a bit set (bit i: allKeys[i]), and
	// when it started (real time), for the writer's wait.
	target  core.Target
	mask    uint32
	startAt int64
	// permits: the acquisition is perm's, not acq's (client.a).
	permits bool
	perm    core.Permits
	annSlot int // the slot of the announcement being fed (evAnnounce)
}

// use is one stretch of real time during which a client used a lock.
type use struct {
	client, acq int
	start, end  int64
	kind        core.Kind // what it held (kinds.go)
	mask        uint32    // PrimAll: its keys, bit i for allKeys[i]
}

func (c *client) now() time.Time { return localAt(c.w.now, c.ppm) }

// simTokens draws tokens from the schedule's generator. With
// SharedAttemptToken it repeats one token until the next acquisition.
type simTokens struct {
	c   *client
	cur core.Token
}

func (t *simTokens) NewToken() core.Token {
	if t.c.w.cfg.Faults.SharedAttemptToken && t.cur != (core.Token{}) {
		return t.cur
	}
	t.cur = core.TokenFromUint64s(t.c.w.rng.Uint64()|1<<63, t.c.w.rng.Uint64())
	return t.cur
}

// jitter draws a client's jitter from the schedule's generator, and notes
// the first draw after c.draws was zeroed.
type jitter struct{ c *client }

func (j jitter) Uint64() uint64 {
	v := j.c.w.rng.Uint64()
	if j.c.draws == 0 {
		j.c.firstDraw = v
	}
	j.c.draws++
	return v
}

// names is the Driver a simulated client hands core.NewSpec: it names the
// nodes; the simulation does the I/O.
type names int

func (n names) Nodes() int                       { return int(n) }
func (n names) NodeName(i int) string            { return "sim:" + string(rune('0'+i)) } //nolint:gosec // G115: 0 <= i < Nodes <= core.MaxNodes
func (n names) Begin(context.Context) core.Batch { panic("sim: the core is driven step by step") }

func newClient(w *world, id int, ppm int64) *client {
	c := &client{w: w, id: id, ppm: ppm}
	c.tokens.c = c
	cfg := w.cfg
	mk := func(ttl time.Duration, driftPPM int64, fraction float64) core.Spec {
		s, err := core.NewSpec(names(cfg.Nodes), core.Config{TTL: ttl, DriftPPM: driftPPM, NodeTimeout: cfg.NodeTimeout, FanOut: cfg.FanOut,
			Retry: cfg.Retry, Fencing: cfg.Fencing, Fair: cfg.Fair, Tokens: &c.tokens, Jitter: jitter{c},
			LeaseFraction: fraction, MaxHold: cfg.Lease.MaxHold, MaxExtensions: cfg.Lease.MaxExtensions})
		if err != nil {
			panic("sim: " + err.Error())
		}
		return s
	}
	c.spec = mk(cfg.TTL, 0, 0)
	c.watchSpec = c.spec
	// With ExtendTTL, the Spec that leases has the drift allowance of a
	// TTL of ExtendTTL (1% of it, as core's default): what a Spec brings
	// to an extension is its drift, which a lease must not take for the
	// lock's (core.ExtendWithSpecDrift, in its tests). Its TTL stays the locks': a
	// Spec with a TTL that short could not keep its own grants, which
	// core.NewSpec refuses.
	var extPPM int64
	if ext := cfg.Faults.ExtendTTL; ext > 0 {
		extPPM = max(int64(10_000*ext/cfg.TTL), 1)
	}
	c.leaseSpec = mk(cfg.TTL, extPPM, cfg.Lease.fraction())
	return c
}

// handle runs a client event, or defers it while the client is paused.
func (c *client) handle(e event) {
	if c.crashed {
		return
	}
	if c.paused && e.kind != evResume {
		c.deferred = append(c.deferred, e)
		return
	}
	switch e.kind {
	case evStart:
		c.start()
	case evReply:
		c.answer(e.n, e.msg, e.msg.status)
	case evTimeout:
		c.answer(e.n, e.msg, core.StatusTimeout)
	case evWake:
		if e.gen == c.wakeGen && c.state == acquiring && c.a().Phase() == core.PhaseWait {
			c.wake()
		}
	case evPoke:
		c.pokes--
		c.step()
	case evLinger:
		c.p.tick()
	case evCancel:
		if e.gen == uint64(c.acqID) && c.state == acquiring { //nolint:gosec // G115: ids count up from 1
			c.cancel()
		}
	case evUnheard:
		c.checkUnheard(e.gen)
	case evSubConfirm, evSubLost:
		c.subEvent(e)
	case evAnnounce:
		c.annSlot = int(e.dur)
		c.announcement(e.n)
	case evTimer:
		if e.gen == c.timerGen {
			c.timer()
		}
	case evPause:
		for _, m := range c.process() {
			m.pause(time.Duration(e.dur))
		}
	case evResume:
		c.resume()
	case evClientCrash:
		for _, m := range c.process() {
			m.crash()
		}
	}
}

// start begins an acquisition.
func (c *client) start() {
	if c.state != idle {
		return
	}
	c.begin(&c.spec)
	if f := &c.w.cfg.Faults; c.w.chance(f.Cancels) {
		c.w.schedule(event{at: c.w.now + c.w.between(0, f.CancelWithin), kind: evCancel, c: c.id, gen: uint64(c.acqID)}) //nolint:gosec // G115: ids count up from 1
	}
	if p := c.room(); p != nil && p.busy(c) {
		// Others of its process wait for the key or hold it: it waits
		// behind them rather than attempt.
		p.join(c)
		c.draws = 0
		c.a().WaitAgain(c.now())
		c.restartWait(c.now())
		c.step()
		return
	}
	c.attempt()
}

// begin starts an acquisition through spec.
func (c *client) begin(spec *core.Spec) {
	c.w.acqs++
	c.acqID = c.w.acqs
	c.tokens.cur = core.Token{}
	c.drawTarget()
	c.startAt = c.w.now
	c.permits = c.w.cfg.Primitive == PrimPermits && !c.w.cfg.Faults.CountSemaphore
	var a core.Acquisition
	var err error
	if c.permits {
		c.perm, err = spec.AcquirePermit(permitKeys[:c.w.cfg.Permits], core.Token{}, c.now())
	} else {
		a, err = spec.AcquireTarget(c.target, core.Token{}, c.now())
	}
	if err != nil {
		panic("sim: " + err.Error())
	}
	c.state, c.acq, c.trying = acquiring, a, false
	c.ticket, c.overtaken, c.held = 0, 0, core.Held{}
	c.attemptAnnounced, c.heard, c.annSince, c.attempts = false, false, 0, 0
	c.cancelPending, c.outside = false, 0
}

// attempt sends the acquisition's first attempt.
func (c *client) attempt() {
	c.attempts = 1
	c.w.res.Attempts++
	c.drive(c.a().Round())
}

// process returns the clients of c's process: c alone without
// Config.Waiters.
func (c *client) process() []*client {
	if c.p != nil {
		return c.p.members
	}
	return []*client{c}
}

// drive starts a round and sends what it can.
func (c *client) drive(r *core.Round) {
	c.round = r
	c.w.rounds++
	c.roundID, c.roundAt = c.w.rounds, c.w.now
	c.got = [core.MaxNodes]bool{}
	c.nGathered = 0
	c.pump()
}

// pump sends every command the round has due, then checks whether it is
// done.
func (c *client) pump() {
	for sent := 0; ; sent++ {
		node, cmd, deadline, ok := c.round.Next(c.now())
		if planted.roundNeverEnds && sent > 0 {
			node, cmd, ok = 0, c.round.Command(), true // stuck.go
		}
		if ok && sent >= maxPump {
			c.w.halt("stuck: client %d's round had a command due after %d in one step, past the bound", c.id, sent)
			return
		}
		if !ok {
			break
		}
		c.noteTicket(cmd)
		if c.p != nil && (cmd.Op == core.OpAcquire || cmd.Op == core.OpAcquireFenced || cmd.Op == core.OpRelease && cmd.Fair) {
			c.w.heard(c.p) // its quiet releases are followed: an attempt, or a Fair release, which hands a free key on (an announced one: deliver)
		}
		m := message{round: c.roundID, cmd: cmd, node: node, deadline: realAt(deadline, c.ppm), acq: c.acqID}
		c.w.send(c.id, m)
		c.w.schedule(event{at: m.deadline, kind: evTimeout, c: c.id, n: node, msg: m})
	}
	if c.early && c.state == releasing {
		c.tellEarly() // every command of the release is on its way
	}
	if c.round.Done() {
		c.roundDone()
	}
}

// answer takes node's reply, or its timeout, for the current round. A
// reply is gathered with the others until the round needs no more than
// are at hand; a timeout, at the round's deadline, goes in after every
// reply gathered, as the engine's batch returns them.
func (c *client) answer(n int, m message, s core.Status) {
	if c.round == nil || m.round != c.roundID {
		return // a straggler of an earlier round
	}
	if s == core.StatusTimeout && !c.gather(true) { // the deadline: the replies held go in first
		return // and ended the round
	}
	if c.got[n] {
		return // already answered or timed out
	}
	c.got[n] = true
	c.replies[n] = m
	c.replies[n].status = s
	switch {
	case s == core.StatusTimeout, c.w.cfg.FanOut == core.Sequential: // the runner gathers multiplexed rounds only
		c.feed(n)
	default:
		c.gathered[c.nGathered] = n
		c.nGathered++
		c.gather(false)
	}
}

// gather feeds the replies gathered, first come first, while the round
// needs no more of them than are at hand (all: every one). It reports
// whether the round is still under way. Those left must not decide the
// round or release its next command: a reply held back that would have
// is a violation (Violations.Gathered), since the runner decides later
// for it.
func (c *client) gather(all bool) bool {
	id := c.roundID
	for c.nGathered > 0 && (all || c.nGathered >= c.round.Needed()) {
		n := c.gathered[0]
		copy(c.gathered[:], c.gathered[1:c.nGathered])
		c.nGathered--
		c.feed(n)
		if c.round == nil || c.roundID != id {
			return false
		}
	}
	if c.nGathered > 0 {
		r := *c.round
		for _, n := range c.gathered[:c.nGathered] {
			r.Receive(c.reply(n))
		}
		_, _, _, next := r.Next(c.now())
		if r.Done() || next {
			c.w.violation(&c.w.res.Violations.Gathered, "client %d: replies of nodes %v held back, though they end the round or send its next command (Needed %d)",
				c.id, c.gathered[:c.nGathered], c.round.Needed())
		}
	}
	return true
}

// feed feeds node n's reply, or its timeout, to the current round, then
// sends what the round has due. A timeout's message is the one sent,
// never applied: its fence and TTL are 0.
func (c *client) feed(n int) {
	c.round.Receive(c.reply(n))
	c.pump()
}

func (c *client) reply(n int) core.Reply {
	m := &c.replies[n]
	return core.Reply{Node: n, Status: m.status, Fence: m.fence, TTL: m.ttl}
}

func (c *client) roundDone() {
	r, w := c.round, c.w
	c.round = nil
	switch c.state {
	case acquiring:
		if c.a().Round().Command().Op == core.OpRelease { // a cleanup
			c.checkHygiene(r)
		} else {
			c.ours = c.okNodes()
		}
		c.draws = 0
		c.a().RoundDone(c.now())
		switch c.a().Phase() {
		case core.PhaseRound:
			if c.a().Round().Command().Op == core.OpRaiseFence {
				w.res.Raises++
			}
			c.drive(c.a().Round())
		case core.PhaseWait:
			if op := r.Command().Op; op == core.OpAcquire || op == core.OpAcquireFenced {
				w.res.Queue.QueuedByAttempt++ // it queued the client everywhere: no cleanup round
			}
			c.startWait()
		case core.PhaseDone:
			c.finished()
		}
	case extending:
		err := c.lease.RoundDone(c.now())
		c.state = holding
		if err == nil {
			w.res.Extensions++
			c.lastSetEnd, c.grantAt = w.now, w.now
		} else if c.provedLost() && c.lease.Phase() != core.PhaseDone {
			w.violation(&w.res.Violations.LostValid, "client %d: extend proved the lock lost (%v) but its lease goes on", c.id, err)
		}
		c.leaseStep()
	case releasing:
		c.checkHygiene(r)
		if c.room() != nil {
			handOn, try := c.released()
			if c.rel.Handoff() && c.reannounce(handOn, try) {
				return
			}
		}
		c.idle()
	}
}

// finished ends the acquisition, in PhaseDone: it leaves its process's
// queue or stops its watch, then holds the lock or goes idle.
func (c *client) finished() {
	lock, err := c.a().Result()
	waited := c.queued
	c.checkWriterWait(err == nil)
	var handOn, try bool
	if p := c.room(); p != nil {
		switch {
		case c.queued:
			handOn, try = p.leave(c, lock, err == nil)
		case p.kr != nil:
			p.kr.Ended(&c.acq, c.now()) // a lock counted, or a head woken
			rd := p.ready(c.w, true)
			c.held = rd.Held
			if rd.Wake {
				c.w.res.Queue.Freed++ // it took the process out of a queue: the head attempts at once
			}
		}
	} else {
		c.unwatch()
	}
	if err != nil {
		c.checkStayed(err)
		if c.room() != nil {
			c.noteUnheard()
			if c.makeHeard(handOn, try) {
				return
			}
		}
		c.idle()
		return
	}
	c.acquired(lock, waited)
}

// cancel gives the acquisition under way up, as redlock's Client does
// when its ctx ends (Client.wait, Client.advance): in a wait, by
// Acquisition.Cancel, or GiveUp for a deadline, or, for the head of its
// process or a client alone, by waking for the next attempt and
// cancelling it before it is sent; in an attempt, by Cancel, which
// abandons it for its cleanup (its replies are stragglers from then). A
// cleanup is never cancelled: the Client runs it detached from ctx and
// acts on ctx in the wait that follows, once the waiter has joined its
// Client's room and looked (proc.go's step): so does the simulation
// (cancelPending). Whatever core decides then is driven to its end.
func (c *client) cancel() {
	w := c.w
	n := &w.res.Faults.Cancelled
	if !c.cancelPending {
		w.res.Faults.Cancels++
		if c.a().Phase() == core.PhaseRound && c.a().Round().Command().Op == core.OpRelease {
			n.Cleanup++
			c.cancelPending = true // acted on in the wait the cleanup leads to, if any
			return
		}
	} else {
		n = &CancelCounts{} // counted when it came
	}
	c.cancelPending = false
	now := c.now()
	head := c.queued && c.p.waiters[0] == c // of its process's room
	ticket := c.ticket
	if c.p != nil {
		ticket = 0 // its process's place is its head's
		if head {
			ticket = c.p.ticket
		}
	}
	if ticket != 0 {
		n.Queued++
	}
	if c.a().Phase() == core.PhaseWait {
		c.wakeGen++ // the wake set, if any, is void
		switch k := w.rng.IntN(3); {
		case k == 0:
			n.GiveUp++
			c.a().GiveUp(now)
		case k == 1 && (head || c.room() == nil):
			n.Unsent++
			c.a().Wake(now)
			c.a().Cancel(now, context.Canceled)
		default:
			n.Wait++
			c.a().Cancel(now, context.Canceled)
		}
	} else {
		n.Attempt++
		c.a().Cancel(now, context.Canceled)
	}
	switch c.a().Phase() {
	case core.PhaseRound:
		c.drive(c.a().Round())
	case core.PhaseDone:
		c.finished()
	}
}

// checkStayed: a Fair acquisition that ended without the lock is in no
// queue of a node that answered its last round (the round its end
// followed: a leave, a cleanup, or the cleanup before the wait it was
// given up in), unless a command delivered late or reordered queued it
// there again. Within a process (Config.Waiters) the entry is the
// process's, which its other waiters keep: not checked.
func (c *client) checkStayed(err error) {
	w := c.w
	if !w.cfg.Fair || c.p != nil {
		return
	}
	for n := range w.cfg.Nodes {
		if !c.got[n] || c.replies[n].status == core.StatusTimeout || c.replies[n].status == core.StatusError {
			continue
		}
		nd := &w.nodes[n]
		now := nd.clock(w.now)
		for _, e := range nd.queue {
			if e.c == c.id && e.acq == c.acqID && !e.late && e.due > now {
				w.violation(&w.res.Violations.Stayed, "client %d: acquisition %d ended without the lock (%v) still queued on node %d, which answered its last round",
					c.id, c.acqID, err, n)
			}
		}
	}
}

// okNodes returns the nodes that answered StatusOK to the round just
// done, bit i for node i.
func (c *client) okNodes() uint32 {
	var b uint32
	for n := range c.w.cfg.Nodes {
		if c.got[n] && c.replies[n].status == core.StatusOK {
			b |= 1 << n
		}
	}
	return b
}

// provedLost reports whether the answers to the extend round just done
// alone prove that too few nodes hold the lock: the nodes that answered
// missing or held by another token leave less than a quorum, whatever
// the rest would say.
func (c *client) provedLost() bool {
	gone := 0
	for n := range c.w.cfg.Nodes {
		if s := c.replies[n].status; c.got[n] && (s == core.StatusMissing || s == core.StatusHeld) {
			gone++
		}
	}
	return c.w.cfg.Nodes-gone < core.Quorum(c.w.cfg.Nodes)
}

// checkHygiene: after a release round, no node that answered still holds
// the token, unless a command applied late (after its deadline) set it,
// or a failover since brought it back from a replica the release had not
// reached (releases are not waited for).
func (c *client) checkHygiene(r *core.Round) {
	tok := r.Command().Token
	if tok == (core.Token{}) {
		return // a HandOn round: no lock's token, and a key it hands on holds none
	}
	for n := range c.w.cfg.Nodes {
		if !c.got[n] || c.replies[n].status == core.StatusTimeout || c.replies[n].status == core.StatusError {
			continue
		}
		nd := &c.w.nodes[n]
		if nd.alive(c.w.now) && nd.tok == tok && !nd.setLate && !nd.restored || nd.holdsToken(tok, c.w.now) {
			c.w.violation(&c.w.res.Violations.Hygiene, "client %d: node %d still holds token %v after answering its release", c.id, n, tok)
		}
	}
}

// startWait schedules the end of the wait after a failed attempt's
// cleanup, or starts the next attempt at once when announcements heard
// during the attempt already warrant one.
func (c *client) startWait() {
	if c.trying { // a TryLock gives up at its first wait
		c.a().GiveUp(c.now())
		if c.a().Phase() != core.PhaseDone {
			panic("sim: a TryLock's GiveUp did not end it")
		}
		c.finished()
		return
	}
	c.retryEnd = c.retryEndAt(c.now())
	if c.room() != nil {
		if !c.queued {
			c.p.join(c)
		}
		c.step()
		return
	}
	if !c.watching {
		c.watch() // the first wait: as redlock's Lock, which joins then
	}
	if c.cancelPending {
		c.cancel()
		return
	}
	c.checkWait() // announcements heard during the attempt count
	if !c.a().WakeAt().After(c.now()) {
		c.wake()
		return
	}
	c.scheduleWake()
}

// retryEndAt returns the end of the retry delay that the Acquisition
// drew first since c.draws was zeroed (a cleanup's RoundDone, or
// WaitAgain), counted from now.
func (c *client) retryEndAt(now time.Time) time.Time {
	retry := c.w.cfg.Retry
	if retry == (core.RetryPolicy{}) {
		retry = core.DefaultRetry
	}
	return now.Add(retry.Delay(max(c.attempts, 1), c.firstDraw))
}

func (c *client) idle() {
	c.state = idle
	c.w.schedule(event{at: c.w.now + c.w.between(c.w.cfg.Think[0], c.w.cfg.Think[1]), kind: evStart, c: c.id})
}

// acquired holds the lock g; waited: its acquisition waited in its
// process's room.
func (c *client) acquired(g core.Grant, waited bool) {
	w := c.w
	w.res.Acquisitions++
	if c.attemptAnnounced {
		w.res.Announce.Won++
	}
	c.state = holding
	w.checkOvertakes(c, waited)
	c.leasing = !c.trying && w.chance(w.cfg.Faults.Extend) && !c.shortReader()
	if c.leasing {
		c.lease = c.leaseSpec.Lease(g)
	} else {
		c.lease = c.watchSpec.Lease(g)
	}
	c.lastSetEnd, c.grantAt = w.now, w.now
	c.workEnd = c.now()
	if !c.trying { // a reannouncement unlocks at once
		work := w.cfg.Work
		if c.shortReader() {
			work = w.cfg.RW.ReaderWork
		}
		c.workEnd = c.workEnd.Add(time.Duration(w.between(work[0], work[1])))
	}
	w.noteAcquired(c)
	if !c.trying && w.chance(w.cfg.Faults.PauseAfterAcquire) {
		d := time.Duration(w.between(0, w.cfg.Faults.MaxPause))
		for _, m := range c.process() {
			m.pause(d)
		}
		return
	}
	c.use()
}

// use starts using the lock unless its lease has declared it lost (or,
// with UsePastValidity, whatever the lease says), and sets the timer for
// what comes next. The lease's decision is the Lock's Context: a holder
// uses the lock while its Context is not done.
func (c *client) use() {
	if c.w.cfg.Faults.UsePastValidity || c.lease.Phase() != core.PhaseDone {
		c.lease.Wake(c.now()) // a pause may have carried it past its wake
		if c.w.cfg.Faults.UsePastValidity || c.lease.Phase() != core.PhaseDone {
			c.using, c.useStart = true, c.w.now
			c.leaseStep()
			return
		}
	}
	c.lost()
}

func (c *client) stopUsing() {
	if c.using {
		c.w.holdEnded(c, c.expiresBy()) // lost, or crashed: its keys stay until they expire
		c.w.uses = append(c.w.uses, use{client: c.id, acq: c.acqID, start: c.useStart, end: c.w.now, kind: c.target.Kind, mask: c.mask})
		c.using = false
		// A running process that used the lock to the end of its validity
		// was told of the loss too late, or never: its lease's fault.
		if until := c.lease.Grant().ValidUntil(); !c.w.cfg.Faults.UsePastValidity && !c.now().Before(until) {
			c.w.violation(&c.w.res.Violations.LateLoss, "client %d: used the lock until %v, not before the end of its validity %v",
				c.id, c.now(), until)
		}
	}
}

// setTimer schedules the next moment the holder must act: its work done,
// or the lease's WakeAt (an extension, or the loss).
func (c *client) setTimer() {
	c.timerGen++
	at := realAt(c.workEnd, c.ppm)
	if !c.w.cfg.Faults.UsePastValidity && c.lease.Phase() != core.PhaseDone {
		at = min(at, realAt(c.lease.WakeAt(), c.ppm)) // in a round: LoseAt
	}
	if planted.leaseTimerStalls && c.state == extending {
		at = c.w.now // stuck.go
	}
	c.w.schedule(event{at: max(at, c.w.now), kind: evTimer, c: c.id, gen: c.timerGen})
}

// leaseStep acts on the lease's phase: an extension round to drive, a
// loss to act on, or a wait until the next timer.
func (c *client) leaseStep() {
	switch c.lease.Phase() {
	case core.PhaseRound:
		if c.state == holding {
			c.state = extending
			c.setTimer() // the work may end while the round runs
			c.drive(c.lease.Round())
		}
	case core.PhaseDone:
		c.lost()
	default:
		c.setTimer()
	}
}

// lost acts on the lease's loss, as a Lock's Context cancelled does: the
// holder stops using the lock at once and releases it. The loss must come
// strictly before the end of validity: a Context cancelled at or after
// Until tells its holder too late.
func (c *client) lost() {
	c.w.res.Faults.LeaseLosses++
	// A process paused across LoseAt (its last pause began before and
	// ended after) declares the loss when it resumes, after Until: no
	// process can act while paused, and it uses nothing after (resume
	// re-checks). A loss due while the process ran and declared late is
	// the lease's fault.
	// The loss is due at LoseAt, or when the grant arrived if LoseAt was
	// past already (a grant with less validity than a round's bound).
	due := max(realAt(c.lease.LoseAt(), c.ppm), c.grantAt)
	late := due < c.pausedAt || due >= c.resumedAt // due while it ran
	if now, until := c.now(), c.lease.Grant().ValidUntil(); late && !now.Before(until) && !c.w.cfg.Faults.UsePastValidity {
		c.w.violation(&c.w.res.Violations.LateLoss, "client %d: lease declared the loss (%v) at %v, not before the end of validity %v",
			c.id, c.lease.Err(), now, until)
	}
	if c.state == holding {
		c.release()
		return
	}
	c.stopUsing()
}

func (c *client) timer() {
	if c.state != holding && c.state != extending {
		return
	}
	now := c.now()
	switch {
	case !now.Before(c.workEnd):
		c.unlock()
	case c.w.cfg.Faults.UsePastValidity:
		c.setTimer()
	case c.state == holding:
		c.lease.Wake(now)
		c.leaseStep()
	case !now.Before(c.lease.LoseAt()):
		// An extension still in flight at LoseAt (the process was paused):
		// the lease abandons it and declares the loss, as the Client's
		// runner does between two replies.
		c.lease.Wake(now)
		c.state = holding
		c.leaseStep()
	default:
		c.setTimer()
	}
}

// unlock ends the work: as redlock's Unlock, an extension in flight is
// abandoned (core.Lease.Cancel) and the release round starts at once;
// the extension's commands may still reach the nodes, behind it or not.
func (c *client) unlock() {
	if c.state == extending {
		_ = c.lease.Cancel(nil) // its ErrCancelled is Unlock's business; the release follows
		c.w.res.Faults.UnlockRaces++
	}
	c.state = holding
	c.release()
}

func (c *client) release() {
	c.w.holdEnded(c, c.w.now+c.w.cfg.roundBound()) // its release round frees the keys
	c.stopUsing()
	c.timerGen++
	c.w.noteRelease(c)
	g := c.lease.Grant()
	if c.room() != nil {
		g = c.releaseGrant(g)
	}
	r, err := c.spec.Release(g, c.now())
	if err != nil {
		panic("sim: " + err.Error())
	}
	if t := r.Command().Ticket; t > 0 && c.room() != nil && c.p.kr != nil {
		c.p.kr.Queued(t) // the process's place, which its head takes at its next look
		c.p.ready(c.w, true)
	}
	c.state, c.own = releasing, r
	c.drive(&c.own)
}

func (c *client) pause(d time.Duration) {
	if c.paused || c.crashed {
		return
	}
	if c.p == nil || c.p.anchor == c { // once per process: its clients pause together
		c.w.res.Faults.ClientPauses++
	}
	c.paused = true
	if c.w.now != c.resumedAt || c.resumedAt == 0 {
		c.pausedAt = c.w.now // a pause deferred by the last one continues it
	}
	c.stopUsing() // a paused process uses nothing
	c.w.schedule(event{at: c.w.now + int64(d), kind: evResume, c: c.id})
}

// resume replays the events that came during the pause, then, if the
// client holds the lock, re-checks its validity before using it again.
func (c *client) resume() {
	c.paused, c.resumedAt = false, c.w.now
	for _, e := range c.deferred {
		e.at = c.w.now
		c.w.schedule(e)
	}
	c.deferred = c.deferred[:0]
	if c.state == holding && !c.using {
		c.use()
	}
}

func (c *client) crash() {
	if c.p == nil || c.p.anchor == c { // once per process: its clients crash together
		c.w.res.Faults.ClientCrashes++
	}
	c.stopUsing()
	c.unwatch() // its connections close
	c.crashed = true
	if p := c.p; p != nil {
		p.waiters, c.queued = nil, false
	}
}
