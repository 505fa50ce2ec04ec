package sim

import (
	"slices"
	"time"

	"github.com/redlock-go/redlock/core"
)

// The waiter queue of core.Config.Fair, as the drivers' scripts keep it
// on each node (drivers/wire): a failed attempt that will wait, or its
// cleanup, queues its client under the Ticket of its first, keeping its
// place; entries past their deadline (the node's clock) leave; a release
// or cleanup that leaves the key free hands it to the first waiter
// (lowest ticket, then client), which leaves the queue, and announces it
// to that client alone; the key then holds no token, for Handoff, and
// only that client's acquire takes it, leaving the queue. A release by
// the client a key is handed to frees it too.
//
// Queue faults: a crash of a node that is not Persistent empties its
// queue; QueueLoss drops a queue write; QueueSkew moves a joining
// waiter's ticket, so that nodes order the waiters differently. None of
// them may cost exclusion. The skipped-waiter checker counts, for every
// waiting client with a ticket, the acquisitions won by others with a
// later ticket or none; more than Config.MaxOvertaken in one wait is a
// violation (Violations.Skipped).

// entry is one waiter in a node's queue.
type entry struct {
	c      int
	ticket int64
	due    int64 // node clock
	acq    int   // the acquisition whose cleanup wrote it last
	// late: a command delivered late or reordered wrote it last, maybe
	// after its acquisition's leave round (Violations.Stayed does not
	// count it).
	late bool
}

// maxOvertaken returns how often a waiter of a Fair queue may be
// overtaken in one wait (Config.MaxOvertaken): by acquisitions that found
// the key free after a handoff expired, or that won on nodes whose queue
// lost or reordered its entry. A queue that skips its head overtakes it
// at every release while two or more wait.
//
// With Config.Waiters, a waiter is its process's head, and each other
// process may take up to MaxChain+1 turns in a row (core.Room.Release)
// before its open release serves the nodes' queue: the bound adds that
// chain once per other process, and once more for a chain that another
// process's timed attempt started by taking the key in the moment a
// handed-on release left it free (a quiet release is outside the
// queue, and a free key is anyone's).
func (c Config) maxOvertaken() int {
	bound := 8
	if c.MaxOvertaken > 0 {
		bound = c.MaxOvertaken
	}
	if c.Waiters > 1 {
		procs := (c.Clients + c.Waiters - 1) / c.Waiters
		bound += (core.MaxChain + 1) * procs
	}
	return bound
}

// applyFair runs a Fair acquire or release from client c at real time t.
func (n *node) applyFair(m *message, c int, t int64, w *world) core.Status {
	cmd, now := m.cmd, n.clock(t)
	if len(n.queue) > 0 && now >= n.queueExp {
		n.queue = nil // the queue's keys expired, stale entries and all
	}
	switch cmd.Op {
	case core.OpAcquire, core.OpAcquireFenced:
		if n.has && n.handed != c+1 {
			m.ttl = time.Duration(n.exp-now) / time.Millisecond * time.Millisecond
			if cmd.Ticket > 0 { // an attempt that will wait queues its client
				n.join(c, m, now+int64(cmd.EntryLife()), w)
			}
			return core.StatusHeld
		}
		n.has, n.handed, n.tok, n.exp, n.setAt, n.setLate, n.restored = true, 0, cmd.Token, now+int64(cmd.TTL), t, m.late, false
		if cmd.Op == core.OpAcquireFenced {
			n.fence++
			m.fence = n.fence
		}
		n.leave(c)
		return core.StatusOK
	case core.OpRelease:
		st := core.StatusHeld
		switch {
		case !n.has:
			st = core.StatusMissing
		case n.handed == c+1 && !m.resent || n.handed == 0 && n.tok == cmd.Token:
			n.has, n.handed = false, 0
			st = core.StatusOK
		}
		// A resend (message.resent) has the effects of a first run only
		// if it deleted the token: its first run never ran.
		first := !m.resent || st == core.StatusOK
		switch {
		case cmd.Ticket > 0 && (first || n.queued(c)):
			n.join(c, m, now+int64(cmd.EntryLife()), w)
		case cmd.Ticket < 0: // a waiter that gives up
			n.leave(c)
		}
		n.queue = slices.DeleteFunc(n.queue, func(e entry) bool { return e.due <= now })
		if !n.has && first {
			n.handOn(t, cmd.Handoff, w)
		}
		return st
	}
	panic("sim: Fair " + cmd.Op.String())
}

// join queues client c, or refreshes its entry, keeping its ticket, for
// m's cleanup.
func (n *node) join(c int, m *message, due int64, w *world) {
	f, ticket := &w.cfg.Faults, m.cmd.Ticket
	late := m.late || m.reordered
	if w.chance(f.QueueLoss) {
		w.res.Queue.Lost++
		return
	}
	if w.chance(f.QueueSkew) {
		w.res.Queue.Skewed++
		skew := w.between(0, 2*f.SkewBy) - int64(f.SkewBy) // ns, either way
		ticket = max(ticket+skew/int64(core.TicketUnit), 1)
	}
	n.queueExp = due // the script's PEXPIRE of the queue's keys
	for k := range n.queue {
		if e := &n.queue[k]; e.c == c {
			e.due, e.acq, e.late = due, m.acq, late
			return
		}
	}
	n.queue = append(n.queue, entry{c: c, ticket: ticket, due: due, acq: m.acq, late: late})
}

// queued reports whether client c has an entry in the queue, stale or
// not (the script's ZSCORE).
func (n *node) queued(c int) bool {
	return slices.ContainsFunc(n.queue, func(e entry) bool { return e.c == c })
}

// leave takes client c out of the queue.
func (n *node) leave(c int) {
	n.queue = slices.DeleteFunc(n.queue, func(e entry) bool { return e.c == c })
}

// handOn hands the free key to the first waiter, if any, at real time t.
func (n *node) handOn(t int64, handoff time.Duration, w *world) {
	if len(n.queue) == 0 {
		return
	}
	slices.SortFunc(n.queue, func(a, b entry) int {
		if a.ticket != b.ticket {
			return int(min(max(a.ticket-b.ticket, -1), 1))
		}
		return a.c - b.c
	})
	k := 0
	if w.cfg.Faults.SkipHead && len(n.queue) > 1 {
		k = 1
	}
	head := n.queue[k].c
	n.queue = slices.Delete(n.queue, k, k+1)
	n.has, n.handed, n.tok, n.exp, n.setAt, n.setLate, n.restored = true, head+1, core.Token{}, n.clock(t)+int64(handoff), t, false, false
	w.res.Queue.Handoffs++
	if gen := n.subs[head]; gen != 0 {
		w.res.Announce.Published++
		w.sendAnnouncement(head, n.i, 0)
	}
}

// noteTicket records the ticket of client c's attempt or cleanup: its
// place in the queues while it waits.
//
// With Config.Waiters the place is the process's: the nodes keep one
// entry per process, under the ticket that queued it first (a failed
// attempt's cleanup, or a release its waiters follow), until one of its
// clients acquires.
func (c *client) noteTicket(cmd core.Command) {
	t := &c.ticket
	if c.p != nil {
		t = &c.p.ticket
	}
	switch {
	case !cmd.Fair || cmd.Op == core.OpExtend || cmd.Op == core.OpRaiseFence:
	case cmd.Ticket > 0: // a cleanup, a followed release, or an attempt that will wait
		if *t == 0 {
			*t = cmd.Ticket
		}
		if c.p != nil {
			if !c.queued {
				c.outside = cmd.Ticket
			}
			c.checkJump(cmd.Ticket)
		}
	case cmd.Ticket < 0:
		*t = 0 // it leaves the queue: nobody waits in that place
		if c.p != nil && c.queued {
			// A Lock that attempted at once, outside the room, and was
			// cancelled leaves too (its attempt may have queued the
			// process), which the room hears of only once it ends
			// (core.Room.Ended), as it does of such a Lock's win
			// (checkProcOvertakes: not an out either).
			c.p.out = c.w.now
		}
	}
}

// checkJump: a process that comes back to the queue (its place was
// taken by an acquisition, or it left) queues under a ticket taken since
// then, at the back, never under an older one, which would put it ahead
// of the waiters that queued meanwhile. Tickets are the clients' clock
// readings in ms: the clients of a process may disagree by their rate
// errors, and one round's bound more is allowed. Left out: the ticket of
// a Lock that attempted at once (the room was empty) and joined the room
// after the process left the queue: the room's Queue does not know when
// the process left, and that Lock's place is older (a race of Locks
// that attempt at once, stretched by pauses).
func (c *client) checkJump(ticket int64) {
	w, p := c.w, c.p
	switch {
	case p.out == 0, c.roundAt < p.out:
		return // a round under way when the place was taken: its commands were decided before
	case ticket == c.outside && p.out < c.joinedAt:
		return // taken outside the room, which the process left before it joined
	}
	slack := 2*w.cfg.Faults.ClientPPM*p.out/1_000_000 + int64(time.Millisecond) + w.cfg.roundBound()
	if since := core.TicketAt(localAt(p.out-slack, c.ppm)); ticket < since {
		w.violation(&w.res.Violations.Jumped, "process %d: queued again under ticket %d, taken before it last left the queue (at ticket %d)",
			p.id, ticket, since)
	}
}

// checkOvertakes counts, when client x acquires, an overtake of every
// other waiting client with an earlier ticket, and reports one overtaken
// more than maxOvertaken times in this wait; waited: x's acquisition
// waited in its process's room (checkProcOvertakes).
func (w *world) checkOvertakes(x *client, waited bool) {
	if !w.cfg.Fair {
		return
	}
	if len(w.procs) > 0 {
		w.checkProcOvertakes(x.p, waited)
		return
	}
	for _, c := range w.clients {
		if c == x || c.crashed || c.state != acquiring || c.ticket == 0 || (x.ticket != 0 && x.ticket <= c.ticket) {
			continue
		}
		w.overtake(&c.overtaken, "client", c.id, c.ticket, x.id, x.ticket)
	}
}

// overtake counts one overtake, by what has id by and ticket byTicket,
// of a waiter (a client, or a process: what) overtaken *n times so far,
// and reports it once past maxOvertaken.
func (w *world) overtake(n *int, what string, id int, ticket int64, by int, byTicket int64) {
	*n++
	w.res.Queue.Overtakes++
	w.res.Queue.MaxOvertaken = max(w.res.Queue.MaxOvertaken, *n)
	if *n == w.cfg.maxOvertaken()+1 {
		w.violation(&w.res.Violations.Skipped, "%s %d (ticket %d) was overtaken %d times while it waited; the last by %s %d (ticket %d)",
			what, id, ticket, *n, what, by, byTicket)
	}
}

// checkProcOvertakes is checkOvertakes for processes (Config.Waiters),
// when a client of x acquires: an overtake of every other process with a
// waiting head and an earlier ticket, and a violation for one overtaken
// more than maxOvertaken times while it waited. x's place in the queue
// is taken; waited: by a client that waited in x's room, whose Room
// counts it (Ready.Held). A client that attempted at once (the room was
// empty) races the others of x that did too: their cleanups may still
// use a ticket from before its win (checkJump does not count them).
func (w *world) checkProcOvertakes(x *proc, waited bool) {
	for _, p := range w.procs {
		if p == x || p.ticket == 0 || len(p.waiters) == 0 || p.waiters[0].crashed || (x.ticket != 0 && x.ticket <= p.ticket) {
			continue
		}
		w.overtake(&p.overtaken, "process", p.id, p.ticket, x.id, x.ticket)
	}
	x.ticket, x.overtaken = 0, 0
	if waited {
		x.out = w.now
	}
}
