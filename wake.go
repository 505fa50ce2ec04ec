package redlock

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redlock-go/redlock/core"
)

// A Client's Lock waits for release announcements (core.Announcer) rather
// than sleep out random retry delays. The waiters of one key within a
// Client queue up in the key's core.Room: only the first, the head, hears
// the key's announcements and makes attempts; the others sleep until they
// become the head, so that a release wakes one attempt per Client, not
// one per goroutine. Across Clients, core spreads the attempts that
// follow a lost race.
//
// The wait room is a pump: it feeds each key's core.Room what happens
// (a waiter joins, looks, leaves; an announcement; a release starts, is
// flushed, is done; the linger's timer fires) and does what the Room's
// Ready says (wake the head, start or stop the key's watch, count a Lock,
// make a quiet release heard). It decides nothing.

// waitRoom holds a Client's keys' Rooms, one per waited-for key.
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

// keyQueue is one key's Room and its waiters, head first.
type keyQueue struct {
	clock  Clock
	watch  core.Watch
	linger core.Timer // while it has no waiter: tells the Room the time (Ready.StopAt); under waitRoom.mu

	mu      sync.Mutex
	room    core.Room
	waiters []*waiter // joined under waitRoom.mu too, so that a linger's Tick sees them
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

// ready takes the Room's Ready and wakes the head if it says so; q.mu is
// held. The rest of it is the caller's to do.
func (q *keyQueue) ready() core.Ready {
	rd := q.room.Ready()
	q.room.Advance()
	if rd.Wake && len(q.waiters) > 0 && !mutWakeDropped {
		q.waiters[0].poke()
	}
	return rd
}

// notify feeds node's announcement to the Room (core.Room.Hear).
func (q *keyQueue) notify(node int) {
	now := q.clock.Now()
	q.mu.Lock()
	defer q.mu.Unlock()
	q.room.Hear(node, now)
	q.ready()
}

// cancelled wakes w when its ctx ends: its wait ends (Client.wait).
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

// join queues a waiter for key (core.Room.Join), woken when ctx ends,
// making the key's Room if it has none, and starting the key's watch if
// the Room says so: its subscriptions' first confirmations wake the head
// to attempt again, as a release may have gone unheard.
func (r *waitRoom) join(ctx context.Context, key string) *waiter {
	r.mu.Lock()
	defer r.mu.Unlock()
	q := r.keys[key]
	if q == nil {
		q = &keyQueue{room: r.spec.Room(), clock: r.clock}
		r.keys[key] = q
		r.queues.Store(int32(len(r.keys))) //nolint:gosec // G115: fewer keys wait than an int32 counts
	}
	if q.linger != nil {
		q.linger.Stop() // the Join makes it moot; if it fires all the same, the Room sees the waiter
		q.linger = nil
	}
	w := &waiter{q: q}
	q.mu.Lock()
	q.waiters = append(q.waiters, w)
	q.room.Join()
	rd := q.ready()
	if r.waiters != nil {
		r.waiters(WaitersEvent{Key: key, Waiters: len(q.waiters), Delta: 1})
	}
	q.mu.Unlock()
	if rd.Watch {
		q.watch = r.ann.Watch(key, q.notify)
	}
	w.unhook = context.AfterFunc(ctx, w.cancelled)
	return w
}

// leave takes w out of its queue with the grant it took, if any (the
// zero Grant: none), as core.Room.Leave: it returns the Lock counted, if
// any, and how to make a quiet release heard that w's process left
// unheard, if any: the caller does it (Client.makeHeard).
func (r *waitRoom) leave(key string, w *waiter, g core.Grant) (counted core.Held, handOn, try bool) {
	w.unhook()
	q := w.q
	now := r.clock.Now()
	q.mu.Lock()
	j := slices.Index(q.waiters, w)
	if j >= 0 {
		q.waiters = slices.Delete(q.waiters, j, j+1)
		if r.waiters != nil {
			r.waiters(WaitersEvent{Key: key, Waiters: len(q.waiters), Delta: -1})
		}
	}
	q.room.Leave(j == 0, g, now)
	rd := q.ready()
	q.mu.Unlock()
	r.lingerUntil(key, q, rd.StopAt, now)
	return rd.Held, rd.HandOn, rd.Try
}

// lingerUntil sets q's timer to tell its Room the time at stopAt (zero:
// no timer asked for), read at now.
func (r *waitRoom) lingerUntil(key string, q *keyQueue, stopAt, now time.Time) {
	if stopAt.IsZero() {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.keys[key] != q {
		return // forgotten
	}
	if q.linger != nil {
		q.linger.Stop()
	}
	q.linger = r.clock.AfterFunc(max(stopAt.Sub(now), 0), func() { r.tick(key, q) })
}

// tick tells q's Room the time (core.Room.Tick): it stops the key's
// watch and forgets the Room if the Room says so, or sets the timer again.
func (r *waitRoom) tick(key string, q *keyQueue) {
	r.mu.Lock()
	if r.keys[key] != q {
		r.mu.Unlock()
		return
	}
	q.linger = nil
	now := r.clock.Now()
	q.mu.Lock()
	q.room.Tick(now)
	rd := q.ready()
	q.mu.Unlock()
	if rd.Unwatch {
		delete(r.keys, key)
		r.queues.Store(int32(len(r.keys))) //nolint:gosec // G115: fewer keys wait than an int32 counts
		q.watch.Stop()
	}
	r.mu.Unlock()
	r.lingerUntil(key, q, rd.StopAt, now)
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

// ended tells key's Room, if any, that a, an acquisition of this Client
// that never joined it, ended (core.Room.Ended), and returns the Lock it
// counts, if any. A key with no Room has no waiter to tell: one that
// joins later looks afresh.
func (r *waitRoom) ended(key string, a *core.Acquisition) core.Held {
	q := r.queue(key)
	if q == nil {
		return core.Held{}
	}
	now := r.clock.Now()
	q.mu.Lock()
	defer q.mu.Unlock()
	q.room.Ended(a, now)
	return q.ready().Held
}

// busy reports whether a Lock of key starting at now waits behind the
// Client's others rather than attempt (core.Room.Busy).
func (r *waitRoom) busy(key string, now time.Time) bool {
	q := r.queue(key)
	if q == nil {
		return false
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.room.Busy(now)
}

// roomNews is a release as key's Room follows it (core.Releasing);
// early: it hands the key on within the Client, and is told as soon as
// its commands are on their way (tell), where the driver says when. A
// value, so that telling it makes nothing escape; the zero roomNews tells
// nothing.
type roomNews struct {
	room  *waitRoom
	key   string
	rel   core.Releasing
	early bool
}

// told is an early release as told (core.Room.Flushed); ok false: not
// told.
type told struct {
	rel core.Releasing
	ok  bool
}

// release starts the release of the Lock counted as h (core.Room.Release)
// and returns it as the wait room follows it.
func (r *waitRoom) release(key string, h core.Held) roomNews {
	q := r.queue(key)
	if q == nil {
		return roomNews{room: r, key: key} // nobody waits: nothing to count, nobody follows
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	rel := q.room.Release(h)
	q.ready()
	return roomNews{room: r, key: key, rel: rel, early: rel.Handoff()}
}

// tell tells key's Room that the release's commands are on their way
// (core.Room.Flushed), and returns the release as told.
func (n roomNews) tell() told {
	q := n.room.queue(n.key)
	if q == nil {
		return told{}
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.room.Flushed(&n.rel)
	q.ready()
	return told{rel: n.rel, ok: true}
}

// released tells key's Room that rel is done (core.Room.Released), and
// returns how to make it heard, if it must be: the caller does it
// (Client.makeHeard). A key with no Room tells a new one.
func (r *waitRoom) released(key string, rel core.Releasing) (handOn, try bool) {
	var now time.Time
	if rel.Handoff() { // the only release that reads it
		now = r.clock.Now()
	}
	q := r.queue(key)
	if q == nil {
		gone := r.spec.Room()
		gone.Released(&rel, now)
		rd := gone.Ready()
		return rd.HandOn, rd.Try
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.room.Released(&rel, now)
	rd := q.ready()
	return rd.HandOn, rd.Try
}

// look is w's look at its wait (core.Room.Look), at now, hearing the
// nodes listening; it returns the nodes heard and whether w is the head.
func (w *waiter) look(a *core.Acquisition, now time.Time, listening uint32) (heard uint32, head bool) {
	q := w.q
	q.mu.Lock()
	defer q.mu.Unlock()
	head = len(q.waiters) > 0 && q.waiters[0] == w
	heard, _ = q.room.Look(a, now, listening, head)
	return heard, head
}

// queued tells key's Room, if any, that a release queued the Client
// under ticket in the nodes' queue (core.Room.Queued).
func (r *waitRoom) queued(key string, ticket int64) {
	q := r.queue(key)
	if q == nil {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.room.Queued(ticket)
	q.ready()
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
