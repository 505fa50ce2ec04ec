package redlock

import (
	"context"
	"errors"
	"sync"

	"github.com/redlock-go/redlock/core"
)

// A waiter of a reader/writer lock or of a multi-key lock waits for the
// release of what refused it, as Lock does, but alone: it never enters
// the Client's wait room, whose queue lets one waiter of a key attempt
// at a time and whose handoff passes the key on quietly. Readers of a key
// share it, so one reader waiting behind another would only wait longer;
// a writer's release must be heard by every waiting reader, of this
// process or another; and a multi-key waiter must not hold up another
// whose keys are free. Each of them listens to its own keys' channels
// (a writer to its key's, which a reader's release announces once the
// key's reader set is empty; a multi-key waiter to every key's), from
// its first wait until its acquisition ends, and feeds what it hears to
// its Acquisition, which decides when to try again.

// listener hears the release announcements of one acquisition's keys:
// a reader/writer or multi-key waiter's, or a semaphore's slots
// (LockPermit).
type listener struct {
	watches []core.Watch // one per key

	mu    sync.Mutex
	heard []uint32      // per key, the nodes heard since the last arm, bit i for node i
	ch    chan struct{} // closed at the next announcement; nil: not armed
}

// listen starts the watches of t's keys for one waiter.
func (r *waitRoom) listen(t core.Target) *listener {
	keys := t.Keys
	if keys == nil {
		keys = []string{t.Key}
	}
	return r.listenKeys(keys)
}

// listenKeys starts the watches of keys for one waiter.
func (r *waitRoom) listenKeys(keys []string) *listener {
	l := &listener{watches: make([]core.Watch, 0, len(keys)), heard: make([]uint32, len(keys))}
	for i, k := range keys {
		// A watch's first notifications (its subscriptions starting) come
		// at once, maybe from within Watch: a release may have gone
		// unheard before.
		l.watches = append(l.watches, r.ann.Watch(k, func(node int) { l.notify(i, node) }))
	}
	return l
}

// notify records that node announced a release of key i, or that its
// subscription to it changed (core.Announcer.Watch).
func (l *listener) notify(i, node int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.heard[i] |= 1 << node
	if l.ch != nil {
		close(l.ch)
		l.ch = nil
	}
}

// arm hands each key's nodes heard since the last arm to heard, if any,
// and returns a channel closed at the next announcement: none is lost
// between the two.
func (l *listener) arm(heard func(key int, nodes uint32)) <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	ch := make(chan struct{})
	l.ch = ch
	for i, nodes := range l.heard {
		if nodes != 0 {
			heard(i, nodes)
			l.heard[i] = 0
		}
	}
	return ch
}

// listening returns the nodes whose subscriptions to every key are
// active: only there would every key's release be heard.
func (l *listener) listening() uint32 {
	nodes := ^uint32(0)
	for _, w := range l.watches {
		nodes &= w.Listening()
	}
	return nodes
}

// stop ends the watches: nothing is heard once it returns.
func (l *listener) stop() {
	for _, w := range l.watches {
		w.Stop()
	}
}

// waitAlone is one wait of PhaseWait for a waiter that listens alone (or,
// l nil, polls): until WakeAt, an announcement, or ctx's end. What was
// heard since the last wait is told to a first (core's
// Acquisition.SetListening and Announce), which may bring WakeAt forward.
func (c *Client) waitAlone(ctx context.Context, a *core.Acquisition, l *listener, vl *voteLog) {
	var poke <-chan struct{}
	if l != nil {
		listening := l.listening() // before the heard nodes: a change after it is heard
		var heard uint32
		poke = l.arm(func(_ int, nodes uint32) { heard |= nodes })
		now := c.now(vl)
		a.SetListening(listening)
		for i := 0; heard != 0; i, heard = i+1, heard>>1 {
			if heard&1 != 0 {
				a.Announce(i, now)
			}
		}
	}
	d := max(a.WakeAt().Sub(c.clock.Now()), 0)
	switch c.sleep(d, poke, ctx.Done()) {
	case slept:
		a.Wake(c.now(vl))
	case cancelled:
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			a.GiveUp(c.now(vl)) // the keys were still held: the last attempt's error
		} else {
			a.Cancel(c.now(vl), ctx.Err())
		}
	}
	// poked: hear what came
}

// checkKeys asks the driver, if it can tell (core.KeysChecker), whether
// its nodes can take keys in one script, before anything is sent: on a
// Redis cluster member, keys in more than one hash slot cannot be. Its
// refusal is an ErrInvalidConfig error that names the first key and
// wraps the driver's, which names the node.
func (c *Client) checkKeys(keys []string) error {
	kc, ok := c.drv.(core.KeysChecker)
	if !ok {
		return nil
	}
	if err := kc.CheckKeys(keys); err != nil {
		return &core.Error{Op: core.OpAcquire, Kind: ErrInvalidConfig, Key: keys[0], Cause: err}
	}
	return nil
}
