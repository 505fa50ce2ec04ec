package core

import "time"

// queue is the wait decisions of one process's waiters of one key. Only
// the first waiter, the head, hears the key's announcements and attempts;
// the others wait their turn, so that a release wakes one attempt per
// process, not one per waiter. The caller keeps its waiters in order;
// queue decides what the head has heard:
//
//   - announcements of releases reach the head (announce);
//   - a release by this process is heard from every node at once, without
//     the announcement's round trip (handover(false));
//   - a head that leaves having taken the lock hands its successor a
//     clean slate, to wait for that lock's release or expiry; one that gave
//     up hands it every node, since it cannot pass on what it heard
//     (handover);
//   - while a lock of this process holds the key, valid, a new waiter
//     waits behind it rather than attempt (holding), and, without
//     Config.Fair, announcements are dropped: each is of a release before
//     that lock took the key (the late echo of the process's own release,
//     typically), and would only make the head attempt in vain. The
//     lock's own release wakes the head (handover(false)). With Fair, an
//     announcement is the process's turn, never stale so.
//
// Its zero value hears nothing; Spec.queue returns one for the Spec's
// nodes. It is a small value that allocates nothing.
type queue struct {
	all      uint32    // every node's bit
	heard    uint32    // heard by the head and not yet taken
	fresh    bool      // the head must wait afresh: its predecessor took the lock
	fair     bool      // Config.Fair: announcements are turns
	held     bool      // a lock of the process holds the key (hold), not yet released
	holds    uint64    // counts the holds: the latest one's number, which unhold names
	until    time.Time // its validity end
	chain    int32     // releases in a row handed on within the process (follow)
	tells    uint64    // counts the early releases (tellEarly): the last one's number
	toldHead bool      // the head was told of release tells early, or succeeded one that was and left without the lock
	place    int64     // Config.Fair: the ticket the nodes queued the process under (queued); 0: none known
	took     int64     // Config.Fair: the ticket at the end of the latest hold's round: tickets before it are stale
	// unheard: a quiet release of the process (follow) left the key free
	// for its waiters, none of which has taken it yet (reannounce, left)
	unheard bool
}

// MaxChain is how many releases in a row queue.follow hands on within
// the process before one is open to every process.
const MaxChain = 16

// queue returns an empty queue over the Spec's nodes.
func (s Spec) queue() queue { return queue{all: 1<<s.n - 1, fair: s.cfg.Fair} }

// announce records node's announcement (Announcer.Watch), heard at now,
// for the head; without Config.Fair, it drops it while holding(now).
func (q *queue) announce(node int, now time.Time) {
	if !q.fair && q.holding(now) {
		return
	}
	if node >= 0 && node < MaxNodes {
		q.heard |= 1 << node & q.all
	}
}

// hold records that a lock of this process took the key with g, valid
// until g.ValidUntil(), and returns its number for unhold. It replaces
// any earlier hold: a new grant of the key means that every earlier
// one's validity has ended, so an earlier lock that is never released (a
// leak) stops counting at once.
//
// Announcements not yet taken are of releases before g: they are
// forgotten, so that a head that comes later waits for g's release
// rather than attempt against g.
//
// With Config.Fair, taking the key took the process out of the nodes'
// queue: its place is gone, and so is every ticket a waiter of the
// process took before g's round ended, which would queue the process
// ahead of the waiters that queued since (look replaces them with one
// taken then).
func (q *queue) hold(g Grant) uint64 {
	q.holds++
	q.held, q.until, q.unheard = true, g.ValidUntil(), false // its release will be heard
	q.heard = 0                                              // releases before g: a head that comes later must not attempt on them
	q.place, q.took = 0, TicketAt(g.end)
	return q.holds
}

// unhold records that the lock hold numbered n is being released; a lock
// that a later hold replaced changes nothing. Without Config.Fair, call
// it with handover(false), once the release is on its way; with Fair,
// before the release counts its followers (Grant.WithFollowers), so that
// a waiter that comes later attempts rather than wait for a turn the
// release does not ask for.
func (q *queue) unhold(n uint64) {
	if n == q.holds {
		q.held, q.until = false, time.Time{}
	}
}

// follow decides whether the release of a lock of this process that the
// process's waiters follow hands the key on within the process
// (Grant.WithHandoff): announced to nobody and, with Config.Fair, outside
// the nodes' queue, with the head woken right behind it to attempt
// (handover(false) as soon as its commands are on their way). Other
// processes' waiters, which then hear nothing, would wait for ever behind
// a process that always has a waiter: after MaxChain such releases in a
// row, follow returns false once, and that release is open: announced to
// every process (with Fair, handing the key to the first process in the
// nodes' queue), the head woken only once it is done (with Fair, by its
// turn), so that the other processes get their turn.
func (q *queue) follow() bool {
	if q.chain >= MaxChain && !mutChainNeverOpens {
		q.chain = 0
		return false
	}
	q.chain++
	return true
}

// holding reports whether a lock of this process holds the key at now,
// valid: a new waiter then waits behind it (Acquisition.WaitAgain) rather
// than attempt. A lock that is never released stops counting at the end
// of its validity.
func (q *queue) holding(now time.Time) bool { return q.held && now.Before(q.until) }

// handover records that the head left the queue having taken the lock
// (locked), or that the lock was released: by this process, or by a head
// that gave up. The caller wakes the head either way. After a release the
// head hears every node and attempts at once. After a head that took the
// lock, the new head waits afresh (take's fresh; Acquisition.WaitAgain):
// for that lock's release to be announced, or a retry delay from now,
// when its next attempt learns the new holder's expiry; so a holder that
// never unlocks keeps it no longer than that, and a handoff costs it no
// attempt while the new holder works.
func (q *queue) handover(locked bool) {
	if locked {
		q.heard, q.fresh, q.toldHead, q.place, q.unheard = 0, true, false, 0, false
		return
	}
	q.heard, q.fresh = q.all, false
}

// look is the head's look at its wait, in PhaseWait, at now: what it
// heard since its last look (take) and, if its predecessor took the lock,
// a wait afresh (Acquisition.WaitAgain); with Config.Fair the process's
// place in the nodes' queue (queued), which its failed attempts keep
// (and, followed, the place they took becomes the process's), and
// whether other waiters of the process follow it (followed), to whom it
// leaves that place if it gives up; the nodes whose announcements it
// hears (Acquisition.SetListening); and each node heard
// (Acquisition.Announce). It returns the nodes heard and whether it
// waits afresh.
func (q *queue) look(a *Acquisition, now time.Time, listening uint32, followed bool) (heard uint32, fresh bool) {
	heard, fresh = q.take()
	if fresh {
		a.WaitAgain(now) // the head before took the lock: wait for its release
	}
	if a.ticket != 0 && a.ticket < q.took {
		// Taken before a lock of the process took the key (hold): no place
		// to keep, but its cleanup may have queued the process again after
		// that lock's attempt, so it is a ticket still, a fresh one, and a
		// head that gives up leaves.
		a.ticket = TicketAt(now)
	}
	a.queued(q.place)
	// Followed, the head's place (its own failed attempts', or the one
	// it took) is the process's: others keep it if it gives up. Followed
	// by nobody, it takes the process out of the queue if it gives up,
	// and leaves no place behind.
	switch t := a.ticket; {
	case !followed && !mutPlaceOutlivesHead:
		q.place = 0
	case t > 0 && (q.place == 0 || t < q.place):
		q.place = t
	}
	a.followed = followed
	a.SetListening(listening)
	for i, h := 0, heard; h != 0; i, h = i+1, h>>1 {
		if h&1 != 0 {
			a.Announce(i, now)
		}
	}
	return heard, fresh
}

// queued records, with Config.Fair, that a release of the process's
// lock queued the process under ticket (the release round's
// Command.Ticket, Grant.WithFollowers): its place in the nodes' queue,
// which the head keeps (look) until a lock of the process takes the key
// (hold, handover(true)), which takes the process out of the nodes'
// queue, or a head that nobody follows looks (it leaves if it gives
// up). Without it, a head that never attempted would
// queue the process at the back at its first failed attempt: after a
// turn it missed on a node, say.
func (q *queue) queued(ticket int64) {
	if ticket > 0 && q.place == 0 {
		q.place = ticket
	}
}

// tellEarly records a release by this process that hands the key on within it
// (follow), heard by the head as soon as its commands were on their way
// (handover(false) then), and returns its number for retell; waiting:
// the process has a waiter, which was told.
func (q *queue) tellEarly(waiting bool) uint64 {
	q.tells++
	q.toldHead = waiting
	return q.tells
}

// retell decides, once the release tellEarly numbered n is done, whether the
// head hears every node again (handover(false)), and returns true if so:
// the caller wakes the head. The release's commands were on their way,
// but a node may still have run the head's attempt first (on another
// connection, as a WAIT lane's, or after a redirect), and the release,
// quiet, tells nobody else; an attempt that failed so is made again at
// once. It does so if the head it told, or a successor of that head that
// left without the lock, is the head (waiting: the process has a
// waiter), and no later early release was told since: that one's head is
// its own to tell.
func (q *queue) retell(n uint64, waiting bool) bool {
	if n != q.tells {
		return false
	}
	told := q.toldHead && waiting
	q.toldHead = false
	if told {
		q.handover(false)
	}
	return told
}

// reannounce decides, once a release that follow handed on within the
// process (Grant.WithHandoff) is done, whether and how the caller makes
// it heard. A quiet release is heard by nobody outside the process, and
// with Fair it is outside the nodes' queue: if no lock of the process
// takes the key, the other processes' waiters would wait for the old
// key's expiry. So it must be made heard when nobody of the process
// waits (waiting false) or holds the key at now; while waiters of the
// process remain, it is pending until one takes the key (hold,
// handover) or the last leaves without it (left). How depends on
// Config.Fair:
//
//   - handOn, with Fair: a Spec.HandOn round, which hands the nodes' free
//     key to the first process in their queue, as any release there
//     does: the caller's process does not take it ahead of the processes
//     queued.
//   - try, without Fair: a release of a key that is gone announces
//     nothing, so the caller tries the key once and, if it takes it,
//     releases it, announced. A key found taken needs nothing more: its
//     holder's release will be heard.
func (q *queue) reannounce(waiting bool, now time.Time) (handOn, try bool) {
	// A lock of the process may hold the key already: a waiter told
	// early won before the release's last node answered. Its release will
	// be heard, and nothing is pending.
	q.unheard = !q.holding(now)
	return q.makeHeard(waiting)
}

// left decides, after a waiter of the process left the queue without the
// key, whether and how the caller makes a pending quiet release heard,
// as reannounce does; waiting: waiters of the process remain. A pending
// release means no lock of the process took the key since (hold ends
// it), so no clock is read.
func (q *queue) left(waiting bool) (handOn, try bool) {
	if mutNeverReannounceAtLeave {
		return false, false
	}
	return q.makeHeard(waiting)
}

// freed decides, with Config.Fair, for a, an acquisition of this
// process that ended without the lock and never waited in the queue (a
// Lock that attempted at once, the queue looking empty), whether the
// head attempts at once, as after a release by the process
// (handover(false)), and returns true if so: the caller wakes the head.
//
// It does if a's last cleanup queued nobody (a caller that gave up, or
// no try left) and a's last attempt took the key on some node, or the
// cleanup freed it on some node or may have (a node that did not answer
// it), unless a lock of the process holds the key at now. Taking the key,
// or a cleanup freeing a key a node had handed to the process, takes the
// process out of that node's queue, where the head may have queued it
// while a's attempt was on its way: no quorum may then give the head its
// turn, and the cleanup hands the free key to nobody and announces
// nothing. The head's attempt takes the key, or its cleanup queues the
// process again, under its place. A head yet to come hears it at its
// first look.
//
// Without Fair, in the queue or in a (a TryLock's), a's attempt took
// nobody out of a queue and its cleanup's release is announced: nothing
// to do.
//
// A cleanup or leave round of a's that took the process out of the
// queue (a cancelled attempt that had queued it, Command.Ticket) took
// every waiter of the process out with it: the process's place is gone,
// and a ticket taken before now would queue it again ahead of the
// waiters that queued since (look replaces such a ticket).
func (q *queue) freed(a *Acquisition, now time.Time) bool {
	if q.fair && a.leftQueue() {
		q.place, q.took = 0, max(q.took, TicketAt(now))
	}
	if !q.fair || !a.spec.cfg.Fair || mutFreedUnheard || !a.freedKey() || q.holding(now) {
		return false
	}
	q.handover(false)
	return true
}

// makeHeard is reannounce's and left's decision.
func (q *queue) makeHeard(waiting bool) (handOn, try bool) {
	if !q.unheard || waiting || mutNeverReannounce {
		return false, false
	}
	q.unheard = false
	return q.fair, !q.fair
}

// take returns what the head has heard since it last took, bit i for node
// i, and whether it must wait afresh (Acquisition.WaitAgain), and clears
// both: feed each node heard to the head's Acquisition.Announce.
func (q *queue) take() (heard uint32, fresh bool) {
	heard, fresh = q.heard, q.fresh
	q.heard, q.fresh = 0, false
	return heard, fresh
}

// behind records that a waits behind the head, in PhaseWait: the
// process's place in the nodes' queue is the head's, which a takes when
// its turn comes (look). A ticket a's own failed attempt took before it
// joined the others is dropped, so that a gives up without a leave round,
// which would take the process out of the queue while its head waits.
func (q *queue) behind(a *Acquisition) {
	if !mutBehindKeepsTicket {
		a.ticket = 0
	}
}
