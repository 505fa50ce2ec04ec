package redlock

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/redlock-go/redlock/core"
)

// A Client's Lock waits for release announcements (core.Announcer) rather
// than sleep out random retry delays. The waiters of one key within a
// Client queue up: only the first, the head, hears the key's announcements
// and makes attempts; the others sleep until they become the head, so that
// a release wakes one attempt per Client, not one per goroutine. When the
// head takes the lock, the next waiter becomes the head and waits for its
// release, which Unlock tells it of at once, without waiting for the
// announcement's round trip; when the head gives up instead, the next
// attempts at once, since it cannot know what its predecessor heard.
// Across Clients, core spreads the attempts that follow a lost race.

// waitRoom holds a Client's queues of waiters, one per waited-for key.
type waitRoom struct {
	ann core.Announcer
	mu  sync.Mutex // guards keys; held while calling Watch and Stop
	all uint32     // every node's bit
	// keys' queues. A queue's notify runs under the Announcer's own lock
	// and takes only the queue's mutex, which is never held while calling
	// the Announcer: the lock order is mu, then the Announcer's, then a
	// queue's.
	keys map[string]*keyQueue
}

func newWaitRoom(ann core.Announcer) *waitRoom {
	return &waitRoom{ann: ann, all: 1<<ann.Nodes() - 1, keys: make(map[string]*keyQueue)}
}

// keyQueue is the waiters of one key, head first.
type keyQueue struct {
	watch core.Watch

	mu      sync.Mutex
	waiters []*waiter // joined under waitRoom.mu too, so that leave's emptiness check holds
}

// waiter is one Lock call waiting for a key.
type waiter struct {
	q *keyQueue

	unhook func() bool // stops the ctx hook (cancelled)

	// Under q.mu.
	heard uint32        // nodes announced since the last take
	poked bool          // something happened since the last arm
	ch    chan struct{} // closed by the next poke; nil: not armed
}

// notify records node's announcement for the head.
func (q *keyQueue) notify(node int) { q.notifyAll(1 << node) }

// notifyAll records announcements from nodes (a bit each) for the head.
func (q *keyQueue) notifyAll(nodes uint32) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.waiters) > 0 {
		w := q.waiters[0]
		w.heard |= nodes
		w.poke()
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

// join queues a waiter for key: the head if the queue is new, in which
// case the key's watch starts, and its subscriptions' first confirmations
// wake the head to attempt again, as a release may have gone unheard.
func (r *waitRoom) join(key string) *waiter {
	r.mu.Lock()
	defer r.mu.Unlock()
	q := r.keys[key]
	fresh := q == nil
	if fresh {
		q = &keyQueue{}
		r.keys[key] = q
	}
	w := &waiter{q: q}
	q.mu.Lock()
	q.waiters = append(q.waiters, w)
	q.mu.Unlock()
	if fresh {
		q.watch = r.ann.Watch(key, q.notify)
	}
	return w
}

// leave takes w out of its queue; locked says whether w took the lock. A
// new head after a head that did not hears every node at once (it
// attempts again); the key's watch stops with its last waiter.
func (r *waitRoom) leave(key string, w *waiter, locked bool) {
	q := w.q
	q.mu.Lock()
	for j, x := range q.waiters {
		if x == w {
			q.waiters = append(q.waiters[:j], q.waiters[j+1:]...)
			if j == 0 && len(q.waiters) > 0 && !locked {
				h := q.waiters[0]
				h.heard = r.all
				h.poke()
			}
			break
		}
	}
	q.mu.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	q.mu.Lock()
	empty := len(q.waiters) == 0 // none joined since: join holds r.mu
	q.mu.Unlock()
	if empty && r.keys[key] == q {
		delete(r.keys, key)
		q.watch.Stop()
	}
}

// released tells key's head, if the key has waiters, that this Client
// released key: it hears every node at once.
func (r *waitRoom) released(key string) {
	r.mu.Lock()
	q := r.keys[key]
	r.mu.Unlock()
	if q != nil {
		q.notifyAll(r.all)
	}
}

// take returns and clears what w heard, and whether it is the head.
func (w *waiter) take() (heard uint32, head bool) {
	q := w.q
	q.mu.Lock()
	defer q.mu.Unlock()
	heard, w.heard = w.heard, 0
	return heard, len(q.waiters) > 0 && q.waiters[0] == w
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

// idle is how long a waiter that is not the head sleeps, unless poked (it
// becomes the head, or its ctx ends).
const idle = 24 * time.Hour

// acquireWaking is Locker.Acquire over l with the wait of PhaseWait
// shortened by announcements: see waitRoom.
func (c *Client) acquireWaking(ctx context.Context, l *core.Locker, key string) (core.Lock, error) {
	clock := c.clock
	a, err := l.StartAcquire(key, clock.Now())
	if err != nil {
		return core.Lock{}, err
	}
	// No SetDeadline: a wait may end early, so whether the next attempt
	// fits is known only when the deadline comes (see GiveUp below).
	var w *waiter // joined at the first wait: the uncontended path allocates nothing here
	for {
		switch a.Phase() {
		case core.PhaseRound:
			l.Advance(ctx, &a)
		case core.PhaseWait:
			if w == nil {
				w = c.room.join(key)
				w.unhook = context.AfterFunc(ctx, w.cancelled)
			}
			ch := w.arm()
			heard, head := w.take()
			now := clock.Now()
			d := idle
			if head {
				a.SetListening(w.q.watch.Listening())
				for i := 0; heard != 0; i, heard = i+1, heard>>1 {
					if heard&1 != 0 {
						a.Announce(i, now)
					}
				}
				d = a.WakeAt().Sub(now)
			}
			if d > 0 && !clock.Sleep(d, ch) {
				switch {
				case errors.Is(ctx.Err(), context.DeadlineExceeded):
					a.GiveUp() // the key was still held: the last attempt's error
				case ctx.Err() != nil:
					a.Cancel(clock.Now(), ctx.Err())
				}
				continue // poked: hear what came
			}
			a.Wake(clock.Now())
		default:
			lock, err := a.Result()
			if w != nil {
				w.unhook()
				c.room.leave(key, w, err == nil)
			}
			return lock, err
		}
	}
}
