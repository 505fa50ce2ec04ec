package sim

import (
	"slices"
	"time"

	"github.com/redlock-go/redlock/core"
)

// Processes of several waiters (Config.Waiters): the clients of one
// process are the Locks of one redlock.Client, and share what the Client
// shares among them (wake.go's wait room), every decision of which is
// core.Queue's:
//
//   - one connection to each node, in order: the nodes know the process
//     by its first client's id (its Fair waiter id, its subscription);
//   - one watch of the key, which the first client carries: it starts
//     with the key's first waiter and stops a linger after its last
//     (the room forgets the key then, and its Queue);
//   - the waiters in order: only the head attempts and hears the key's
//     announcements (Queue.Announce, dropped while a lock of the process
//     holds the key, without Fair); the others wait to be poked;
//   - a new acquisition waits behind the key's waiters or its holder in
//     the process (Acquisition.WaitAgain) rather than attempt;
//   - a release that the process's waiters follow hands the key on
//     within it (Queue.Follow, Grant.WithHandoff): quiet, with Fair
//     outside the nodes' queue, the head told as soon as its commands
//     are sent and again once it is done (Queue.Told, Queue.Retell);
//     every MaxChain+1st is open to the other processes;
//   - a quiet release whose waiter left without the key, nobody of the
//     process left to take it, is made heard once done (Queue.Reannounce):
//     with Fair, its release again, open, which hands the free key to the
//     first process in the nodes' queue (Client.handOn); without, a
//     TryLock through the Spec without Fair, and its release at once if
//     it won (Client.reannounce). The Unheard checker looks for a quiet
//     release that its own view of the process says nobody follows, with
//     another process waiting and no attempt or Fair release after it.
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
	exists  bool   // the wait room has the key: from a join until the linger after the last leave
	gen     uint64 // counts the room's Queues of the key: a Hold or Told of an earlier one names nothing in q
	lingers uint64
	q       core.Queue
	waiters []*client // head first
	// With Fair (fair.go): the ticket the nodes queued the process under,
	// 0 once it acquired or left the queue, and how often others overtook
	// it since; out: the real time its ticket last became 0.
	ticket    int64
	overtaken int
	out       int64
	// unheard: the number of the process's last quiet release that left
	// the key to nobody of it (checkUnheard), until an attempt of the
	// process or anyone's acquisition follows; 0: none; quiets counts them.
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
	return p.exists && (len(p.waiters) > 0 || p.q.Holding(c.now()))
}

// join queues c, the room making the key's Queue and starting its watch
// if it has none.
func (p *proc) join(c *client) {
	if !p.exists {
		p.exists = true
		p.gen++
		p.q = c.spec.Queue()
		p.anchor.watch()
	}
	p.lingers++ // a linger under way stops nothing
	c.queued, c.joinedAt = true, c.w.now
	p.waiters = append(p.waiters, c)
}

// leave takes c out of the queue with its lock g, if locked, which the
// room counts (Queue.Hold); a head that leaves hands over (Queue.Handover)
// and its successor is poked. The watch lingers after the last waiter.
func (p *proc) leave(c *client, g core.Grant, locked bool) {
	c.queued = false
	if locked {
		c.hold, c.holdGen = p.q.Hold(g), p.gen
	}
	if j := slices.Index(p.waiters, c); j >= 0 {
		p.waiters = slices.Delete(p.waiters, j, j+1)
		if j == 0 {
			p.q.Handover(locked)
			if !c.w.cfg.Faults.ForgetSuccessor {
				p.pokeHead(c.w)
			}
		}
	}
	if len(p.waiters) == 0 {
		p.lingers++
		linger := c.w.cfg.TTL // redlock's watchLinger (1 s), scaled as the schedules' times are
		c.w.schedule(event{at: c.w.now + int64(linger), kind: evLinger, c: p.id, gen: p.lingers})
	}
}

// expire forgets the key and stops its watch, unless a waiter came since
// the linger n started.
func (p *proc) expire(n uint64) {
	if p.exists && len(p.waiters) == 0 && p.lingers == n {
		p.exists = false
		p.anchor.unwatch()
	}
}

// notify records node n's announcement, or a "maybe missed" one, for the
// head (Queue.Announce) and pokes it.
func (p *proc) notify(n int) {
	p.q.Announce(n, p.anchor.now())
	p.pokeHead(p.anchor.w)
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

// step is a queued waiter's look at its wait (redlock's Client.wait):
// the head looks (Queue.Look) and sleeps until WakeAt; the others wait
// for a poke.
func (c *client) step() {
	p := c.p
	if !c.queued || c.state != acquiring || c.acq.Phase() != core.PhaseWait {
		return
	}
	if p.waiters[0] != c {
		p.q.Behind(&c.acq)
		if c.cancelPending {
			c.cancel()
		}
		return
	}
	now := c.now()
	c.draws = 0 // a wait afresh draws its retry delay first
	heard, fresh := p.q.Look(&c.acq, now, p.listening(), len(p.waiters) > 1)
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
	switch at := c.acq.WakeAt(); {
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

// unhold takes back the room's count of c's lock (Queue.Unhold).
func (c *client) unhold() {
	if c.hold != 0 && c.holdGen == c.p.gen {
		c.p.q.Unhold(c.hold)
	}
	c.hold = 0
}

// releaseGrant returns g as c's release hands it on (redlock's Unlock):
// with Fair the lock is uncounted first; the release of a key whose
// process has waiters queues the process again (WithFollowers) or hands
// the key on within it (Queue.Follow, WithHandoff).
func (c *client) releaseGrant(g core.Grant) core.Grant {
	p, w := c.p, c.w
	if w.cfg.Fair {
		c.unhold()
	}
	waiting := p.exists && len(p.waiters) > 0
	c.handoff = waiting && p.q.Follow()
	c.early = c.handoff && w.cfg.FanOut != core.Sequential
	c.told = 0
	switch {
	case c.handoff:
		w.res.Queue.Chained++
	case waiting:
		w.res.Queue.Opened++
	}
	return g.WithFollowers(waiting).WithHandoff(c.handoff)
}

// tellEarly, once every command of a release that hands the key on is
// sent, tells the head, whose attempt then follows the release on each
// node's connection.
func (c *client) tellEarly() {
	c.early = false
	p := c.p
	if !c.w.cfg.Fair {
		c.unhold()
	}
	if p.exists {
		p.q.Handover(false)
		p.pokeHead(c.w)
		c.told, c.toldGen = p.q.Told(len(p.waiters) > 0), p.gen
	}
}

// released tells the room, once c's release is done, what Unlock does:
// the early tell retold if Queue.Retell says so; otherwise, without
// Fair or for a release that handed the key on, the head hears every
// node.
func (c *client) released() {
	p, w := c.p, c.w
	if c.told != 0 {
		if c.toldGen == p.gen && p.q.Retell(c.told, len(p.waiters) > 0) {
			w.res.Queue.Retold++
			p.pokeHead(w)
		}
		c.told = 0
		return
	}
	if !w.cfg.Fair {
		c.unhold()
	}
	if (!w.cfg.Fair || c.handoff) && p.exists {
		p.q.Handover(false)
		p.pokeHead(w)
	}
}

// reannounce, once c's release that handed the key on within its
// process (c.handoff) is done, asks the key's Queue whether and how to
// make it heard (Queue.Reannounce; an empty one if the room forgot the
// key) and does it, as redlock's Unlock does, detached from any
// cancellation: with Fair, the release of the grant again, open
// (Client.handOn); without, a TryLock through the Spec without Fair,
// unlocked at once if it wins (Client.reannounce). It returns true if
// so. It first notes, for the unheard checker, a release that its own
// view of the process says nobody of it will follow.
func (c *client) reannounce() bool {
	p, w := c.p, c.w
	if !p.busyFor(c) {
		p.quiets++
		p.unheard = p.quiets
		w.schedule(event{at: w.now, kind: evUnheard, c: c.id, gen: p.unheard})
	}
	q := &p.q
	if !p.exists {
		gone := c.spec.Queue()
		q = &gone
	}
	handOn, try := q.Reannounce(p.exists && len(p.waiters) > 0, c.now())
	switch {
	case handOn:
		r, err := c.spec.Release(c.releasing.WithHandoff(false).WithFollowers(false), c.now())
		if err != nil {
			panic("sim: " + err.Error())
		}
		c.handoff, c.early, c.told = false, false, 0
		c.own = r
		c.drive(&c.own)
	case try:
		c.begin(&c.trySpec)
		c.trying = true
		c.attempt()
	default:
		return false
	}
	w.res.Queue.Reannounced++
	return true
}

// busyFor reports, from the simulation's own state, whether a client of
// the process other than c will take the key, holds it, or releases it:
// a waiter, or a lock held or in its release, which will be heard unless
// it is quiet too.
func (p *proc) busyFor(c *client) bool {
	if p.exists && len(p.waiters) > 0 {
		return true
	}
	for _, m := range p.members {
		if m != c && (m.state == holding || m.state == extending || m.state == releasing) {
			return true
		}
	}
	return false
}

// heard notes that the key's quiet releases were followed: an attempt or
// a Fair release of process p (nil: any acquisition, by anyone) came
// after them.
func (w *world) heard(p *proc) {
	if p != nil {
		p.unheard = 0
		return
	}
	for _, q := range w.procs {
		q.unheard = 0
	}
}

// checkUnheard: a quiet release (Grant.WithHandoff) that left the key to
// nobody of its process, while a waiter of another process waits on, is
// followed at once by an attempt or a Fair release of its process, or by
// anyone's acquisition: the waiters that heard nothing would otherwise
// wait for the old key's expiry.
func (c *client) checkUnheard(n uint64) {
	p, w := c.p, c.w
	if p.unheard != n {
		return
	}
	p.unheard = 0
	for _, o := range w.clients {
		if o.p != p && !o.crashed && o.state == acquiring && o.acq.Phase() == core.PhaseWait && o.acq.WakeAt().After(o.now()) {
			w.violation(&w.res.Violations.Unheard, "process %d: client %d's quiet release left the key to nobody of it, and no attempt followed, while client %d waits (until %v)",
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
