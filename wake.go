package redlock

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redlock-go/redlock/core"
)

// A Client's Lock waits for release announcements (core.Announcer) rather
// than sleep out random retry delays. The waiters of one key within a
// Client queue up (core.Queue): only the first, the head, hears the key's
// announcements and makes attempts; the others sleep until they become
// the head, so that a release wakes one attempt per Client, not one per
// goroutine. Across Clients, core spreads the attempts that follow a lost
// race.

// waitRoom holds a Client's queues of waiters, one per waited-for key.
// What a queue's head has heard is core.Queue's decision; the room keeps
// the waiters in order and wakes them.
type waitRoom struct {
	ann     core.Announcer
	spec    core.Spec
	clock   Clock
	waiters func(WaitersEvent) // Observer.Waiters; nil: none
	mu      sync.Mutex         // guards keys; held while calling Watch and Stop
	// keys' queues. A queue's notify runs under the Announcer's own lock
	// and takes only the queue's mutex, which is never held while calling
	// the Announcer: the lock order is mu, then the Announcer's, then a
	// queue's.
	keys map[string]*keyQueue
	// queues is len(keys), stored under mu and read without it: the
	// release of an uncontended key, when no key has a queue, costs a
	// load rather than mu and a lookup.
	queues atomic.Int32
}

func newWaitRoom(ann core.Announcer, spec core.Spec, clock Clock, waiters func(WaitersEvent)) *waitRoom {
	return &waitRoom{ann: ann, spec: spec, clock: clock, waiters: waiters, keys: make(map[string]*keyQueue)}
}

// watchLinger is how long a key's watch outlives its last waiter: a
// waiter that comes back within it (a goroutine that locks the key again
// and again) finds its subscriptions confirmed, rather than subscribe
// again and miss what is announced meanwhile, such as its Fair turn.
const watchLinger = time.Second

// keyQueue is the waiters of one key, head first.
type keyQueue struct {
	clock   Clock
	watch   core.Watch
	linger  core.Timer // while it has no waiter: stops the watch; under waitRoom.mu
	lingers int        // counts the lingers started, so that a late one stops nothing

	mu      sync.Mutex
	q       core.Queue
	waiters []*waiter // joined under waitRoom.mu too, so that leave's emptiness check holds
}

// held is a Lock that the wait room counts (core.Queue.Hold): the key's
// queue and the Hold's number; the zero held counts nothing.
type held struct {
	q *keyQueue
	n uint64
}

// release takes back the Lock h counts.
func (h held) release() {
	if h.q != nil {
		h.q.mu.Lock()
		h.q.q.Unhold(h.n)
		h.q.mu.Unlock()
	}
}

// waiter is one Lock call waiting for a key.
type waiter struct {
	q      *keyQueue
	unhook func() bool // stops the ctx hook

	// Under q.mu.
	poked bool          // something happened since the last arm
	ch    chan struct{} // closed by the next poke; nil: not armed

	heardAt time.Time // when, as the head, it last heard a release; only its own goroutine touches it
}

// notify records node's announcement for the head (core.Queue.Announce,
// which drops it while a Lock of this Client holds the key).
func (q *keyQueue) notify(node int) {
	now := q.clock.Now()
	q.mu.Lock()
	defer q.mu.Unlock()
	q.q.Announce(node, now)
	q.pokeHead()
}

// pokeHead wakes the head, if any; q.mu is held.
func (q *keyQueue) pokeHead() {
	if len(q.waiters) > 0 {
		q.waiters[0].poke()
	}
}

// cancelled wakes w when its ctx ends.
func (w *waiter) cancelled() {
	w.q.mu.Lock()
	defer w.q.mu.Unlock()
	w.poke()
}

// poke wakes w's sleep, or the next one; q.mu is held.
func (w *waiter) poke() {
	if w.ch != nil {
		close(w.ch)
		w.ch = nil
	} else {
		w.poked = true
	}
}

// join queues a waiter for key, woken when ctx ends: the head if the
// queue is new, in which case the key's watch starts, and its
// subscriptions' first confirmations wake the head to attempt again, as a
// release may have gone unheard.
func (r *waitRoom) join(ctx context.Context, key string) *waiter {
	r.mu.Lock()
	defer r.mu.Unlock()
	q := r.keys[key]
	fresh := q == nil
	if fresh {
		q = &keyQueue{q: r.spec.Queue(), clock: r.clock}
		r.keys[key] = q
		r.queues.Store(int32(len(r.keys))) //nolint:gosec // G115: fewer keys wait than an int32 counts
	}
	if q.linger != nil {
		q.linger.Stop() // if it fires all the same, it finds a waiter
		q.linger = nil
	}
	w := &waiter{q: q}
	q.mu.Lock()
	q.waiters = append(q.waiters, w)
	if r.waiters != nil {
		r.waiters(WaitersEvent{Key: key, Waiters: len(q.waiters), Delta: 1})
	}
	q.mu.Unlock()
	if fresh {
		q.watch = r.ann.Watch(key, q.notify)
	}
	w.unhook = context.AfterFunc(ctx, w.cancelled)
	return w
}

// leave takes w out of its queue, with the grant it took, if any (the
// zero Grant: none). What the new head hears is core.Queue.Handover's,
// and the new head is woken either way; the key's watch stops with its
// last waiter. A grant is counted as hold counts one, at once, and leave
// returns it; the zero held: no grant. Without a grant, it returns how
// to make a quiet release heard that w's process left unheard
// (Queue.Left), if any: the caller does it (Client.makeHeard).
func (r *waitRoom) leave(key string, w *waiter, g core.Grant) (counted held, handOn, try bool) {
	w.unhook()
	q := w.q
	locked := g.Key() != ""
	q.mu.Lock()
	if locked {
		counted = held{q, q.q.Hold(g)}
	}
	for j, x := range q.waiters {
		if x == w {
			q.waiters = append(q.waiters[:j], q.waiters[j+1:]...)
			if r.waiters != nil {
				r.waiters(WaitersEvent{Key: key, Waiters: len(q.waiters), Delta: -1})
			}
			if j == 0 {
				q.q.Handover(locked) // the successor, if any, looks at its own wait again
				q.pokeHead()
			}
			break
		}
	}
	if !locked { // a quiet release it followed may be left unheard
		handOn, try = q.q.Left(len(q.waiters) > 0)
	}
	q.mu.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	q.mu.Lock()
	empty := len(q.waiters) == 0 // none joined since: join holds r.mu
	q.mu.Unlock()
	if empty && r.keys[key] == q && q.linger == nil {
		q.lingers++
		n := q.lingers
		q.linger = r.clock.AfterFunc(watchLinger, func() { r.expire(key, q, n) })
	}
	return counted, handOn, try
}

// expire stops q's watch and forgets q, unless a waiter joined since its
// last one left, or the linger n has been stopped since it fired (a later
// one runs).
func (r *waitRoom) expire(key string, q *keyQueue, n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	q.mu.Lock()
	empty := len(q.waiters) == 0
	q.mu.Unlock()
	if empty && r.keys[key] == q && q.lingers == n {
		delete(r.keys, key)
		r.queues.Store(int32(len(r.keys))) //nolint:gosec // G115: fewer keys wait than an int32 counts
		q.watch.Stop()
	}
}

// queue returns key's queue, or nil. When no key has a queue it costs a
// load rather than mu and a lookup: the uncontended path pays that.
func (r *waitRoom) queue(key string) *keyQueue {
	if r.queues.Load() == 0 { // as mu and an empty keys would say
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.keys[key]
}

// hold counts a Lock of this Client with g, if its key has a queue; the
// zero held: not counted. A key with no queue has no waiter to tell: the
// uncontended path pays a load.
func (r *waitRoom) hold(g core.Grant) held {
	q := r.queue(g.Key())
	if q == nil {
		return held{}
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	return held{q, q.q.Hold(g)}
}

// reannounce asks the key's Queue whether and how a release that it
// handed on within this Client, now done, must be made heard
// (Queue.Reannounce). A key the room forgot has neither waiter nor lock:
// an empty Queue decides.
func (r *waitRoom) reannounce(key string, now time.Time) (handOn, try bool) {
	q := r.queue(key)
	if q == nil {
		gone := r.spec.Queue()
		return gone.Reannounce(false, now)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.q.Reannounce(len(q.waiters) > 0, now)
}

// freed tells key's queue, if any, that a, a Fair Lock of this Client
// that never waited in it, ended without the key, and wakes the head if
// core.Queue.Freed says so: a's attempt may have taken the Client out of
// the nodes' queue where the head queued it, and the head's attempt
// queues it again. A key with no queue has no waiter to tell; one that
// joins later looks afresh (join).
func (r *waitRoom) freed(key string, a *core.Acquisition) {
	q := r.queue(key)
	if q == nil {
		return
	}
	now := r.clock.Now()
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.q.Freed(a, now) {
		q.pokeHead()
	}
}

// busy reports whether key has waiters in the room or, at now, a valid
// Lock of this Client: a new waiter's attempt would find it taken, and
// someone of this Client will take the key, or has it.
func (r *waitRoom) busy(key string, now time.Time) bool {
	q := r.queue(key)
	if q == nil {
		return false
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.waiters) > 0 || q.q.Holding(now)
}

// follows reports whether key has waiters in the room, and whether a
// release hands the key on to them (core.Queue.Follow).
func (r *waitRoom) follows(key string) (waiting, handoff bool) {
	q := r.queue(key)
	if q == nil {
		return false, false
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.waiters) == 0 {
		return false, false
	}
	return true, q.q.Follow()
}

// roomNews is what an Unlock tells the wait room of its release: the
// Lock that counted is counted no more, and key's head tries at once. A
// release that hands the key on within the Client (core.Queue.Follow)
// tells it as soon as its commands are on their way (early), and again
// once it is done (retell); another without Fair, once it is done;
// another with Fair, nothing (the nodes hand the key to a waiter, which
// hears its turn). A value, so that telling it makes nothing escape; the
// zero roomNews tells nothing.
type roomNews struct {
	room    *waitRoom
	counted held
	key     string
	early   bool
}

// told is an early release as told: the queue told and the release's
// number there (core.Queue.Told); the zero told: none.
type told struct {
	q *keyQueue
	n uint64
}

// tell tells it, and returns the early release as told (released).
func (n roomNews) tell() told {
	n.counted.release()
	if n.room != nil {
		return n.room.released(n.key, n.early)
	}
	return told{}
}

// retell is for the release told early as t, once it is done: the head
// hears every node again if core.Queue.Retell says so. It asks the queue
// it told, which a queue made for the key since would not know.
func (t told) retell() {
	if q := t.q; q != nil {
		q.mu.Lock()
		defer q.mu.Unlock()
		if q.q.Retell(t.n, len(q.waiters) > 0) {
			q.pokeHead()
		}
	}
}

// released tells key's head, if the key has waiters, that this Client
// released key (core.Queue.Handover(false)); early: as soon as the
// release was on its way, to be told again once it is done (retell),
// which needs what released returns; the zero told: none.
func (r *waitRoom) released(key string, early bool) told {
	q := r.queue(key)
	if q == nil {
		return told{}
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.q.Handover(false) // released: the head hears every node
	q.pokeHead()
	if !early {
		return told{}
	}
	return told{q, q.q.Told(len(q.waiters) > 0)}
}

// look is the head's look at its wait (core.Queue.Look), if w is the
// head, at now, hearing the nodes listening; it returns the nodes heard
// and whether w is the head.
func (w *waiter) look(a *core.Acquisition, now time.Time, listening uint32) (heard uint32, head bool) {
	q := w.q
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.waiters) == 0 || q.waiters[0] != w {
		q.q.Behind(a)
		return 0, false
	}
	heard, _ = q.q.Look(a, now, listening, len(q.waiters) > 1)
	return heard, true
}

// queued records that a release queued the Client under ticket in the
// nodes' queue of key (core.Queue.Queued), if key has a queue, and pokes
// the head to take that place (look).
func (r *waitRoom) queued(key string, ticket int64) {
	q := r.queue(key)
	if q == nil {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.q.Queued(ticket)
	q.pokeHead()
}

// arm returns a channel closed at the next poke, closed already if one
// came since the last arm.
func (w *waiter) arm() <-chan struct{} {
	q := w.q
	q.mu.Lock()
	defer q.mu.Unlock()
	ch := make(chan struct{})
	if w.poked {
		w.poked = false
		close(ch)
	} else {
		w.ch = ch
	}
	return ch
}
