package core

import "time"

// Room is the wait room of one key in one process: every decision about
// that process's Locks of the key that is not one Acquisition's or one
// Lease's. Its caller, the pump, keeps one Room per waited-for key, the
// Room's waiters in the order they joined (head first), a timer, and the
// key's watch (Announcer.Watch); it feeds the Room what happens, as
// events, and does what the Room's Ready says, then calls Advance, in the
// manner of a raft node's Ready and Advance:
//
//   - a waiter joins the room (Join) or leaves it (Leave), with or
//     without the lock; a Lock that never joined ends (Ended);
//   - a node's announcement is heard (Hear);
//   - the head, or a waiter behind it, looks at its wait (Look);
//   - a release of a Lock of the process starts (Release), is flushed
//     (Flushed: its commands are on their way) and is done (Released),
//     and may queue the process in the nodes' queue (Queued);
//   - time passes (Tick).
//
// Ready says what to do: wake the head (the pump's first waiter) to look
// at its wait again; start or stop watching the key (the watch lingers
// after the last waiter, until StopAt, and the Room is forgotten then);
// how a quiet release is made heard; and it carries what an event
// returns: a Lock's count, how a release hands the key on. A waiter's own
// wait (when to attempt, when to give up) is its Acquisition's; Look
// feeds it what the head heard.
//
// Only the head, the first waiter, hears the key's announcements and
// attempts: a release wakes one attempt per process, not one per waiter.
// A Lock that finds the room busy (Busy) waits behind it rather than
// attempt. The decisions and their reasons are the unexported queue's.
//
// The pump holds one mutex over the Room, its waiters and its Ready, and
// takes the Ready after each event under it. A Room is a value that
// allocates nothing; Spec.Room returns one, and a Room is used through a
// pointer that stays put (Held and Releasing name it).
type Room struct {
	q       queue
	waiters int           // waiters in the room: the pump keeps their order
	watch   bool          // the key's watch runs: from the first Join to Ready.Unwatch
	stopAt  time.Time     // no waiter: the watch stops at it; zero: a waiter is in
	linger  time.Duration // how long the watch outlives the last waiter
	rd      Ready
}

// WatchLinger is how long, at most, a key's watch outlives its last
// waiter (Ready.StopAt): a waiter that comes back within it (a goroutine
// that locks the key again and again) finds its subscriptions
// confirmed, rather than subscribe again and miss what is announced
// meanwhile, such as its Fair turn. A key whose TTL is shorter lingers
// its TTL: a Lock of it comes back within that, or its holder's keys
// expire first; and a simulation, whose times are scaled down, keeps the
// same proportion.
const WatchLinger = time.Second

// Room returns the empty wait room of a key over the Spec's nodes, for
// its Locks through the Spec, with or without Config.Fair. Its first
// Join starts the key's watch. A key with no Room is in no room: a
// release of its Lock is told to a new Room (Release, Released), whose
// Ready then says all there is to do.
func (s Spec) Room() Room {
	return Room{q: s.queue(), linger: min(WatchLinger, s.cfg.TTL)}
}

// Ready is what a Room's events ask of the pump, since the last Advance.
type Ready struct {
	// Wake: wake the head, the first waiter, if any, to look at its wait
	// again (Look): it heard something, or its predecessor left.
	Wake bool
	// Watch: start watching the key (Announcer.Watch), whose
	// announcements are heard (Hear): its first waiter joined.
	Watch bool
	// StopAt, when not zero: the last waiter left; tell the Room (Tick)
	// once the clock reads StopAt. A later StopAt replaces it, and a Join
	// makes it moot.
	StopAt time.Time
	// Unwatch: stop watching the key and forget the Room: no waiter came
	// back within the linger. The pump's handles on it (Held,
	// Releasing) go on naming it, and change nothing in a new Room.
	Unwatch bool
	// Held: the Lock that took the key (Leave, Ended with the lock) is
	// counted, as held: pass it to Release.
	Held Held
	// HandOn, Try: a quiet release of the process (Releasing.Handoff)
	// left the key to nobody of it: make it heard. HandOn: with Config.Fair,
	// a Spec.HandOn round, which hands the nodes' free key to the first
	// process in their queue; Try: without, a TryLock of the key (through
	// a Spec without Fair) and, if it takes the key, its release at once,
	// announced. Both are cleanups: they run whatever the caller's context
	// says, and a key found taken needs nothing more.
	HandOn, Try bool
}

// Held is a Lock of the process that a Room counts (Ready.Held): while
// valid, a new waiter waits behind it rather than attempt, and, without
// Config.Fair, announcements of releases before it are dropped. The zero
// Held counts nothing.
type Held struct {
	room *Room
	n    uint64
}

// Releasing is one release of a Lock of the process, as its Room follows
// it from Release through Flushed to Released: the pump keeps it and
// passes it back. The zero Releasing is a release of a Lock of a key
// nobody of the process waits for.
type Releasing struct {
	held      Held
	followed  bool  // waiters of the process follow it (Grant.WithFollowers)
	handoff   bool  // it hands the key on within the process (Grant.WithHandoff)
	toldRoom  *Room // told early (Flushed) to this Room; nil: not
	toldTells uint64
}

// Handoff reports whether the release hands the key on within the
// process (Grant.WithHandoff): its commands are to be flushed (Flushed)
// as soon as they are on their way, where the driver says when.
func (r Releasing) Handoff() bool { return r.handoff }

// Grant returns g as the release is to release it: with its followers
// (Grant.WithFollowers) and its handoff (Grant.WithHandoff) as Release
// decided.
func (r Releasing) Grant(g Grant) Grant {
	return g.WithFollowers(r.followed).WithHandoff(r.handoff)
}

// Ready returns what the events since the last Advance ask for.
func (r *Room) Ready() Ready { return r.rd }

// Advance records that the pump did what Ready said.
func (r *Room) Advance() { r.rd = Ready{} }

// Busy reports whether a Lock that starts at now waits behind the
// process's others rather than attempt (Acquisition.WaitAgain, then
// Join): the room has waiters, or a Lock of the process holds the key,
// valid (Held). Its attempt would find the key taken, and someone of the
// process will take the key, or has it.
func (r *Room) Busy(now time.Time) bool { return r.waiters > 0 || r.q.holding(now) }

// Join records that a waiter joined the room, last. The first one ever
// starts the key's watch (Ready.Watch); one that comes back within the
// linger stops it from ending.
func (r *Room) Join() {
	r.waiters++
	r.stopAt = time.Time{}
	if !r.watch {
		r.watch = true
		r.rd.Watch = true
	}
}

// Hear records node's announcement (Announcer.Watch's notify) at now:
// the head hears it (Ready.Wake), or, without Config.Fair, it is dropped
// while a Lock of the process holds the key: a release before that Lock
// took it, whose attempt would fail.
func (r *Room) Hear(node int, now time.Time) {
	r.q.announce(node, now)
	r.rd.Wake = true
}

// Look is a waiter's look at its wait, in PhaseWait, at now; head: it is
// the pump's first waiter; listening: the nodes whose subscription of
// the key's watch is confirmed (Acquisition.SetListening). The head
// learns what it heard since its last look (Acquisition.Announce), and
// waits afresh (Acquisition.WaitAgain) if its predecessor took the lock;
// with Config.Fair it takes the process's place in the nodes' queue.
// Look returns the nodes heard and whether it waits afresh. A waiter
// behind the head waits for its turn, its own ticket dropped: the
// process's place is the head's. Only the head's WakeAt counts: the
// others sleep until Ready.Wake wakes them as head.
func (r *Room) Look(a *Acquisition, now time.Time, listening uint32, head bool) (heard uint32, fresh bool) {
	if !head {
		r.q.behind(a)
		return 0, false
	}
	return r.q.look(a, now, listening, r.waiters > 1)
}

// Leave records that a waiter left the room at now, the head if head,
// with g, the lock it took, or the zero Grant if it gave up or failed. A
// lock is counted (Ready.Held). A head that leaves wakes its successor
// (Ready.Wake): after a lock taken, to wait afresh for its release; after
// none, to attempt at once. A waiter that leaves without the lock, the
// last of the process after a quiet release, makes that release heard
// (Ready.HandOn, Ready.Try). The last waiter's leave starts the linger
// (Ready.StopAt).
func (r *Room) Leave(head bool, g Grant, now time.Time) {
	locked := g.Key() != ""
	if locked {
		r.rd.Held = Held{r, r.q.hold(g)}
	}
	if r.waiters > 0 {
		r.waiters--
	}
	if head {
		r.q.handover(locked)
		r.rd.Wake = true
	}
	if !locked {
		r.makeHeard(r.q.left(r.waiters > 0))
	}
	if r.waiters == 0 {
		r.stopAt = now.Add(r.linger)
		r.rd.StopAt = r.stopAt
	}
}

// Ended records that a, an acquisition of the key through this process
// that never joined the room (a Lock that attempted at once, or a
// TryLock), ended at now. A lock it took is counted (Ready.Held). One
// that ended without the lock, with Config.Fair, may have taken the
// process out of a node's queue, where the head queued it meanwhile: its
// attempt took the key on some node, or its cleanup freed it there; the
// head then attempts at once (Ready.Wake), unless a Lock of the process
// holds the key.
func (r *Room) Ended(a *Acquisition, now time.Time) {
	g, err := a.Result()
	switch {
	case err == nil:
		r.rd.Held = Held{r, r.q.hold(g)}
	case r.q.freed(a, now):
		r.rd.Wake = true
	}
}

// Release records that the release of the Lock h counts starts, and
// returns it for the release's Flushed and Released; its Grant method
// says how it hands the key on. With Config.Fair, the Lock is counted no
// more before the release counts its followers, so that a waiter that
// comes later attempts rather than wait for a turn the release does not
// ask for. A release that the process's waiters follow hands the key on
// within the process (Releasing.Handoff): quiet, and with Fair outside
// the nodes' queue, the head told as soon as its commands are on their
// way; after MaxChain such releases in a row, one is open to every
// process (announced; with Fair, to the first process in the nodes'
// queue), so that a process that always has a waiter does not keep the
// key for ever.
func (r *Room) Release(h Held) Releasing {
	if r.q.fair {
		r.unhold(h)
	}
	rel := Releasing{held: h, followed: r.waiters > 0}
	rel.handoff = rel.followed && r.q.follow()
	return rel
}

// Queued records, with Config.Fair, that the round of a release that
// waiters of the process follow queued the process in the nodes' queue
// under ticket (its Command.Ticket): the process's place, which the head
// takes at once (Ready.Wake) and keeps until a Lock of the process takes
// the key.
func (r *Room) Queued(ticket int64) {
	r.q.queued(ticket)
	r.rd.Wake = true
}

// Flushed records that every command of rel, a release that hands the
// key on (Releasing.Handoff), is on its way, before any reply: an attempt
// sent after them follows them on each node. The head hears every node
// and attempts at once (Ready.Wake). The pump flushes only where the
// driver says when (Flusher), and never a sequential round's: without a
// Flushed, the head is told once the release is done (Released).
func (r *Room) Flushed(rel *Releasing) {
	if !r.q.fair {
		r.unhold(rel.held)
	}
	r.q.handover(false)
	r.rd.Wake = true
	rel.toldRoom, rel.toldTells = r, r.q.tellEarly(r.waiters > 0)
}

// Released records that rel is done, at now; now is read only for a
// release that hands the key on (Releasing.Handoff): another may pass the
// zero time.
//
// Without Config.Fair, the released Lock is counted no more. A release
// told early (Flushed) wakes the head again (Ready.Wake) if the head it
// told, or a successor that left without the lock, is the head, and no
// later release was told early since: a node may still have run the
// head's attempt before the release (on another connection, or after a
// redirect), and the quiet release tells nobody else. Another, without
// Fair or handing the key on, wakes the head to attempt (with Fair, the
// nodes hand the key to a waiter, which hears its turn). A release that
// handed the key on, whose waiters all left without it, is made heard
// (Ready.HandOn, Ready.Try): nobody outside the process heard it, and
// with Fair it was outside the nodes' queue; while waiters remain, it is
// pending until one takes the key or the last leaves (Leave).
func (r *Room) Released(rel *Releasing, now time.Time) {
	switch {
	case rel.toldRoom != nil:
		if rel.toldRoom == r && r.q.retell(rel.toldTells, r.waiters > 0) {
			r.rd.Wake = true
		}
	default:
		if !r.q.fair {
			r.unhold(rel.held)
		}
		if !r.q.fair || rel.handoff {
			r.q.handover(false)
			r.rd.Wake = true
		}
	}
	if rel.handoff {
		r.makeHeard(r.q.reannounce(r.waiters > 0, now))
	}
}

// Tick records that the clock reads now: the watch stops (Ready.Unwatch)
// if the linger the last waiter started (Ready.StopAt) is over and no
// waiter came back. A linger not over yet is asked for again
// (Ready.StopAt): a timer the pump set for an earlier one fired.
func (r *Room) Tick(now time.Time) {
	switch {
	case !r.watch || r.waiters > 0 || r.stopAt.IsZero():
	case now.Before(r.stopAt):
		r.rd.StopAt = r.stopAt
	default:
		r.watch, r.stopAt = false, time.Time{}
		r.rd.Unwatch = true
	}
}

// unhold counts h no more, if it is this Room's.
func (r *Room) unhold(h Held) {
	if h.room == r {
		r.q.unhold(h.n)
	}
}

// makeHeard adds a decision to make a quiet release heard to Ready.
func (r *Room) makeHeard(handOn, try bool) {
	r.rd.HandOn = r.rd.HandOn || handOn
	r.rd.Try = r.rd.Try || try
}
