package sim

import (
	"slices"
	"time"

	"github.com/redlock-go/redlock/core"
)

// Processes of several waiters (Config.Waiters): the clients of one
// process are the Locks of one redlock.Client, and share what the Client
// shares among them (wake.go's wait room): a core.Room of the key, which
// the process pumps as the wait room does (join, leave, ready), and
// whose every decision is the Room's:
//
//   - one connection to each node, in order: the nodes know the process
//     by its first client's id (its Fair waiter id, its subscription);
//   - one watch of the key, which the first client carries: it starts
//     with the key's first waiter and stops a linger after its last
//     (Ready.StopAt, Room.Tick, on the first client's clock; the room
//     forgets the key then, and its Room);
//   - the waiters in order: only the head attempts and hears the key's
//     announcements (Room.Hear, dropped while a lock of the process
//     holds the key, without Fair); the others wait to be poked;
//   - a new acquisition waits behind the key's waiters or its holder in
//     the process (Room.Busy, Acquisition.WaitAgain) rather than attempt;
//   - a release that the process's waiters follow hands the key on
//     within it (Room.Release, Grant.WithHandoff): quiet, with Fair
//     outside the nodes' queue, the head told as soon as its commands
//     are sent and again once it is done (Room.Flushed, Room.Released);
//     every MaxChain+1st is open to the other processes;
//   - a quiet release whose waiters leave without the key, nobody of the
//     process left to take it, is made heard: once done, if they left
//     already (Room.Released), or as the last of them leaves
//     (Room.Leave); with Fair by the Spec.HandOn round, which hands the
//     free key to the first process in the nodes' queue, without by a
//     TryLock and its release at once if it won (Client.makeHeard). The
//     Unheard checker looks, at both moments, for a quiet release that
//     its own view of the process says nobody of it follows, with another
//     process waiting on and no attempt or heard release of the process,
//     nor anyone's acquisition, at once;
//   - with Fair, a lock of the process that attempted at once (the room
//     looked empty) and ended without the key, having taken it on some
//     node or freed it there, wakes the head to attempt at once
//     (Room.Ended): that took the process out of the node's queue,
//     where the head may have queued it meanwhile.
//
// A pause or a crash takes the whole process. The Stuck checker looks,
// at the end of each schedule, for a process whose head waits with
// nothing to wake it: no wake set, no poke on its way.

// proc is one process of Config.Waiters clients.
type proc struct {
	id     int     // its first client's id: the nodes know the process by it
	anchor *client // its first client, which carries the process's watch (announce.go)
	// room: the process listens (Config.Announce.Listen draws it), so its
	// Client has a wait room; one that polls (Options.Poll, or a driver
	// with no announcements) has none, and its clients wait each on its
	// own, sharing only the connections.
	room    bool
	members []*client
	// kr is the key's Room in the wait room: from a join until its linger
	// after the last leave ends (Ready.Unwatch); nil: none. A Held or a
	// Releasing of an earlier one names nothing in it.
	kr      *core.Room
	waiters []*client // head first
	// With Fair (fair.go): the ticket the nodes queued the process under,
	// 0 once it acquired or left the queue, and how often others overtook
	// it since; out: the real time its ticket last became 0.
	ticket    int64
	overtaken int
	out       int64
	// The unheard checker's own view: quietOpen, a quiet release of the
	// process is done and its waiters have not taken the key yet; unheard,
	// the number of the last moment (checkUnheard) the process left such a
	// release to nobody of it, until an attempt or a release of the
	// process or anyone's acquisition follows; 0: none; quiets counts them.
	quietOpen       bool
	unheard, quiets uint64
}

// conn returns the id the nodes know client c by: its process's, which
// has one connection to each node.
func (w *world) conn(c int) int {
	if len(w.procs) > 0 {
		return w.clients[c].p.id
	}
	return c
}

// groupProcs groups the world's clients into processes of cfg.Waiters.
func (w *world) groupProcs() {
	k := w.cfg.Waiters
	if k <= 1 {
		return
	}
	var p *proc
	for i, c := range w.clients {
		if i%k == 0 {
			p = &proc{id: i, anchor: c, room: c.listener}
			w.procs = append(w.procs, p)
		}
		p.members = append(p.members, c)
		c.p, c.listener = p, p.room
	}
}

// room returns c's process if its Client has a wait room, nil if not.
func (c *client) room() *proc {
	if c.p != nil && c.p.room {
		return c.p
	}
	return nil
}

// busy reports whether a new acquisition of the process waits behind
// others of it: the key has waiters in the room or, at now, a lock of
// the process holds it (redlock's waitRoom.busy).
func (p *proc) busy(c *client) bool {
	return p.kr != nil && p.kr.Busy(c.now())
}

// join queues c (core.Room.Join), the room making the key's Room if it
// has none.
func (p *proc) join(c *client) {
	if p.kr == nil {
		r := c.spec.Room()
		p.kr = &r
	}
	c.queued, c.joinedAt = true, c.w.now
	p.waiters = append(p.waiters, c)
	p.kr.Join()
	p.ready(c.w, true)
}

// ready does what the Room's Ready says, as redlock's wait room does,
// and returns it for the rest: it pokes the head (if wake: the fault
// ForgetSuccessor drops it), starts or stops the key's watch, which the
// first client carries, and sets the linger's event, on the first
// client's clock, which reads the Room's time (Tick).
func (p *proc) ready(w *world, wake bool) core.Ready {
	rd := p.kr.Ready()
	p.kr.Advance()
	if rd.Wake && wake {
		p.pokeHead(w)
	}
	if rd.Watch {
		p.anchor.watch()
	}
	if !rd.StopAt.IsZero() {
		w.schedule(event{at: max(realAt(rd.StopAt, p.anchor.ppm), w.now), kind: evLinger, c: p.id})
	}
	if rd.Unwatch {
		p.kr = nil
		p.anchor.unwatch()
	}
	return rd
}

// leave takes c out of the queue (core.Room.Leave) with its lock g, if
// locked, which the Room counts. Without the lock, it returns how to make
// a quiet release heard that the process leaves unheard, if any: c does
// it (makeHeard).
func (p *proc) leave(c *client, g core.Grant, locked bool) (handOn, try bool) {
	c.queued = false
	j := slices.Index(p.waiters, c)
	if j >= 0 {
		p.waiters = slices.Delete(p.waiters, j, j+1)
	}
	if !locked {
		g = core.Grant{}
	}
	p.kr.Leave(j == 0, g, p.anchor.now())
	rd := p.ready(c.w, !c.w.cfg.Faults.ForgetSuccessor)
	if locked {
		c.held = rd.Held
	}
	return rd.HandOn, rd.Try
}

// tick tells the key's Room the time, at its linger's event
// (core.Room.Tick).
func (p *proc) tick() {
	if p.kr != nil {
		p.kr.Tick(p.anchor.now())
		p.ready(p.anchor.w, true)
	}
}

// notify feeds node n's announcement, or a "maybe missed" one, to the
// key's Room (core.Room.Hear).
func (p *proc) notify(n int) {
	if p.kr != nil {
		p.kr.Hear(n, p.anchor.now())
		p.ready(p.anchor.w, true)
	}
}

// pokeHead wakes the head, if any, to look at its wait.
func (p *proc) pokeHead(w *world) {
	if len(p.waiters) > 0 {
		h := p.waiters[0]
		h.pokes++
		w.schedule(event{at: w.now, kind: evPoke, c: h.id})
	}
}

// listening returns the nodes whose subscription of the process's watch
// is confirmed.
func (p *proc) listening() uint32 {
	if a := p.anchor; a.watching {
		return a.confirmed
	}
	return 0
}

// step is a queued waiter's look at its wait (redlock's Client.wait,
// core.Room.Look): the head sleeps until WakeAt; the others wait for a
// poke.
func (c *client) step() {
	p := c.p
	if !c.queued || c.state != acquiring || c.a().Phase() != core.PhaseWait {
		return
	}
	if p.waiters[0] != c {
		p.kr.Look(&c.acq, c.now(), p.listening(), false)
		if c.cancelPending {
			c.cancel()
		}
		return
	}
	now := c.now()
	c.draws = 0 // a wait afresh draws its retry delay first
	heard, fresh := p.kr.Look(&c.acq, now, p.listening(), true)
	if fresh {
		c.restartWait(now)
	}
	if heard != 0 {
		c.heard = true
		c.annSince |= heard
	}
	if c.cancelPending {
		c.cancel()
		return
	}
	c.checkWait()
	switch at := c.a().WakeAt(); {
	case !at.After(now):
		c.wake()
	case c.armed != c.wakeGen || !at.Equal(c.wakeAt):
		c.scheduleWake()
	}
}

// restartWait notes a wait started afresh at now (Acquisition.WaitAgain):
// a retry delay from now, nothing learnt before.
func (c *client) restartWait(now time.Time) {
	c.retryEnd = c.retryEndAt(now)
	c.ours, c.annSince, c.heard = 0, 0, false
}

// releaseGrant returns g as c's release hands it on (redlock's Unlock,
// core.Room.Release): the Room counts c's lock no more, and says whether
// the release is followed (WithFollowers) and hands the key on within the
// process (WithHandoff).
func (c *client) releaseGrant(g core.Grant) core.Grant {
	p, w := c.p, c.w
	c.rel, c.toldEarly = core.Releasing{}, false
	waiting := p.kr != nil && len(p.waiters) > 0
	if p.kr != nil {
		c.rel = p.kr.Release(c.held)
		p.ready(w, true)
	}
	c.held = core.Held{}
	c.early = c.rel.Handoff() && w.cfg.FanOut != core.Sequential
	switch {
	case c.rel.Handoff():
		w.res.Queue.Chained++
	case waiting:
		w.res.Queue.Opened++
	}
	return c.rel.Grant(g)
}

// tellEarly, once every command of a release that hands the key on is
// sent, tells the key's Room (core.Room.Flushed): the head's attempt then
// follows the release on each node's connection.
func (c *client) tellEarly() {
	c.early = false
	if p := c.p; p.kr != nil {
		p.kr.Flushed(&c.rel)
		p.ready(c.w, true)
		c.toldEarly = true
	}
}

// released tells the key's Room, once c's release is done, what Unlock
// does (core.Room.Released; a new Room if the room forgot the key), and
// returns how to make a quiet release heard, if it must be.
func (c *client) released() (handOn, try bool) {
	p, w := c.p, c.w
	if p.kr == nil {
		gone := c.spec.Room()
		gone.Released(&c.rel, c.now())
		rd := gone.Ready()
		return rd.HandOn, rd.Try
	}
	p.kr.Released(&c.rel, c.now())
	rd := p.ready(w, true)
	if rd.Wake && c.toldEarly {
		w.res.Queue.Retold++
	}
	return rd.HandOn, rd.Try
}

// reannounce, once c's release that handed the key on within its
// process is done, makes it heard if the Room said so (handOn, try), as
// redlock's Unlock does, and returns true if so. It first notes, for the
// unheard checker, a release that its own view of the process says
// nobody of it will follow, or that waiters follow (quietOpen).
func (c *client) reannounce(handOn, try bool) bool {
	c.p.quietOpen = true
	c.noteUnheard()
	return c.makeHeard(handOn, try)
}

// makeHeard does what core.Ready.HandOn or Ready.Try said, as redlock's
// Client.makeHeard does, detached from any cancellation: with Fair
// (handOn), the Spec.HandOn round; without (try), a TryLock, unlocked at
// once if it wins. It returns true if it started one.
func (c *client) makeHeard(handOn, try bool) bool {
	switch {
	case handOn:
		r, err := c.spec.HandOn(key, c.now())
		if err != nil {
			panic("sim: " + err.Error())
		}
		c.rel, c.early, c.toldEarly, c.trying = core.Releasing{}, false, false, false
		c.state, c.own = releasing, r
		c.drive(&c.own)
	case try:
		c.rel = core.Releasing{}
		c.begin(&c.spec)
		c.trying = true
		c.attempt()
	default:
		return false
	}
	c.w.res.Queue.Reannounced++
	return true
}

// noteUnheard arms the unheard checker when, in the simulation's own
// view, a quiet release of c's process is open and nobody of the process
// but c will take the key: no waiter, and no other member holding the
// lock or releasing it, whose release will be heard (or, quiet, be open
// in its turn).
func (c *client) noteUnheard() {
	p, w := c.p, c.w
	if !p.quietOpen {
		return
	}
	waiting, held := p.busyFor(c)
	switch {
	case held:
		p.quietOpen = false
		return
	case waiting:
		return
	}
	p.quietOpen = false
	p.quiets++
	p.unheard = p.quiets
	w.schedule(event{at: w.now, kind: evUnheard, c: c.id, gen: p.unheard})
}

// busyFor reports, from the simulation's own state, whether the process
// has waiters, and whether a client of it other than c holds the lock,
// extends it or releases it.
func (p *proc) busyFor(c *client) (waiting, held bool) {
	for _, m := range p.members {
		if m != c && (m.state == holding || m.state == extending || m.state == releasing) {
			held = true
		}
	}
	return p.kr != nil && len(p.waiters) > 0, held
}

// heard notes that the key's quiet releases were followed: an attempt or
// a Fair release of process p, or an announced one as a node deletes the
// key, or any acquisition, by anyone (p nil), which also ends every
// quiet release still open.
func (w *world) heard(p *proc) {
	if p != nil {
		p.unheard = 0
		return
	}
	for _, q := range w.procs {
		q.unheard, q.quietOpen = 0, false
	}
}

// checkUnheard: a quiet release (Grant.WithHandoff) that left the key to
// nobody of its process, while a waiter of another process waits on, is
// followed at once by an attempt or a heard release of its process
// (announced, or Fair: a free key handed on), or by anyone's acquisition:
// the waiters that heard nothing would otherwise wait for the old key's
// expiry. Whether what follows is fair to the processes queued is the
// skipped-waiter checker's to see.
func (c *client) checkUnheard(n uint64) {
	p, w := c.p, c.w
	if p.unheard != n {
		return
	}
	p.unheard = 0
	for _, o := range w.clients {
		if o.p != p && !o.crashed && o.state == acquiring && o.acq.Phase() == core.PhaseWait && o.acq.WakeAt().After(o.now()) {
			w.violation(&w.res.Violations.Unheard, "process %d: client %d's quiet release left the key to nobody of it, and nothing followed, while client %d waits (until %v)",
				p.id, c.id, o.id, o.acq.WakeAt())
			return
		}
	}
}

// checkStuck, at the end of a schedule, reports a process whose head
// waits with nothing to wake it.
func (w *world) checkStuck() {
	for _, p := range w.procs {
		if !p.room || len(p.waiters) == 0 {
			continue
		}
		h := p.waiters[0]
		if h.crashed || h.paused || h.pokes > 0 || h.state != acquiring || h.acq.Phase() != core.PhaseWait {
			continue
		}
		if h.armed != h.wakeGen {
			w.violation(&w.res.Violations.Stuck, "process %d: its head, client %d, waits with no wake set and no poke coming (%d waiters)",
				p.id, h.id, len(p.waiters))
		}
	}
}
