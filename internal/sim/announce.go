package sim

import (
	"math/bits"
	"time"

	"github.com/redlock-go/redlock/core"
)

// Release announcements (core.Announcer), as the drivers make them: the
// release script PUBLISHes after its compare-and-delete, and each
// listening client holds one subscription per node while it waits
// (Announcer.Watch at the acquisition's first wait, as redlock's Lock
// does, Stop at the acquisition's end). A
// subscription is confirmed a round trip after the client sends it, drops
// with its node's crash or by Announcements.SubDrops, and is dialled
// again after Announcements.Redial (refused while the node is down).
// Every confirmation, and every loss of a confirmed subscription, is a
// "maybe missed" announcement of its node, as Watch's notify is. Every
// announcement is fed to the client's Acquisition whatever it says, as a
// real driver cannot tell a forged, late or duplicated one from a true
// one: they are hints, and the checkers must see nothing come of them.

// defaultRedial bounds the delay before a lost subscription is dialled
// again when Announcements.Redial is unset.
var defaultRedial = [2]time.Duration{10 * ms, 40 * ms}

func (w *world) latency() int64 { return w.between(w.cfg.Latency[0], w.cfg.Latency[1]) }

// publishSlot announces a release on node n to every client subscribed
// there: of permit slot slot (kinds.go), or, with slot 0, of the key or
// of any key.
func (w *world) publishSlot(n, slot int) {
	for c, gen := range w.nodes[n].subs {
		if gen != 0 {
			w.res.Announce.Published++
			w.sendAnnouncement(c, n, slot)
		}
	}
}

// sendAnnouncement puts one announcement from node n to client c on the
// wire, with Announcements' faults.
func (w *world) sendAnnouncement(c, n, slot int) {
	a := &w.cfg.Announce
	if w.chance(a.Drop) {
		w.res.Announce.Dropped++
		return
	}
	copies := 1
	if w.chance(a.Dup) {
		w.res.Announce.Duplicated++
		copies = 2
	}
	for range copies {
		at := w.now + w.latency()
		if w.chance(a.Late) {
			w.res.Announce.Late++
			at += w.between(0, a.LateBy)
		}
		w.schedule(event{at: at, kind: evAnnounce, c: c, n: n, dur: int64(slot)}) // dur: the slot
	}
}

// subscribe applies client c's SUBSCRIBE at node n: a node that is down
// refuses the connection, one that is up confirms.
func (w *world) subscribe(e event) {
	c := w.clients[e.c]
	if !c.watching || c.subGen[e.n] != e.gen {
		return // the client gave this subscription up (Stop, or a newer dial)
	}
	nd := &w.nodes[e.n]
	kind := evSubConfirm
	if nd.up {
		nd.subs[e.c] = e.gen
	} else {
		kind = evSubLost
	}
	w.schedule(event{at: w.now + w.latency(), kind: kind, c: e.c, n: e.n, gen: e.gen})
}

// dropSub ends client c's subscription on node n, if it has one: the
// client notices a latency later.
func (w *world) dropSub(n, c int) bool {
	nd := &w.nodes[n]
	gen := nd.subs[c]
	if gen == 0 {
		return false
	}
	nd.subs[c] = 0
	w.schedule(event{at: w.now + w.latency(), kind: evSubLost, c: c, n: n, gen: gen})
	return true
}

// watch starts a listening client's Watch of the key: a SUBSCRIBE to
// every node. Each node is heard once its subscription is confirmed; the
// confirmation is also a "maybe missed" announcement, which ends the
// first wait at once (when enough of the holder's nodes confirm), as
// redlock's Lock does.
func (c *client) watch() {
	if !c.listener {
		return
	}
	c.watching, c.confirmed = true, 0
	c.setListening()
	for n := range c.w.cfg.Nodes {
		c.dial(n, 0)
	}
}

// dial sends a SUBSCRIBE to node n after a delay, under a new generation:
// replies to earlier ones are stale.
func (c *client) dial(n int, after int64) {
	c.subGen[n]++
	c.w.schedule(event{at: c.w.now + after + c.w.latency(), kind: evSubscribe, c: c.id, n: n, gen: c.subGen[n]})
}

// unwatch stops the Watch: every subscription goes, and whatever is in
// flight for it is stale.
func (c *client) unwatch() {
	if !c.watching {
		return
	}
	c.watching, c.confirmed = false, 0
	for n := range c.w.cfg.Nodes {
		c.subGen[n]++
		c.w.nodes[n].subs[c.id] = 0
	}
	c.setListening() // to none: the next acquisition starts from none
}

// subEvent handles a subscription's confirmation or loss at the client.
func (c *client) subEvent(e event) {
	if !c.watching || e.gen != c.subGen[e.n] {
		return
	}
	bit := uint32(1) << e.n
	was := c.confirmed&bit != 0
	if e.kind == evSubConfirm {
		c.confirmed |= bit
	} else {
		c.confirmed &^= bit
		redial := c.w.cfg.Announce.Redial
		if redial == ([2]time.Duration{}) {
			redial = defaultRedial
		}
		c.dial(e.n, c.w.between(redial[0], redial[1]))
	}
	if was != (c.confirmed&bit != 0) {
		// The subscription started, or a confirmed one was lost: a release
		// may have gone unannounced around it.
		c.w.res.Announce.Missed++
		c.announce(e.n)
	}
	c.setListening()
	c.rewake()
}

// announcement feeds an announcement from node n, true, late, duplicated
// or forged, to the acquisition under way.
func (c *client) announcement(n int) {
	if !c.watching {
		return // nothing to wake: the Watch was stopped
	}
	c.w.res.Announce.Fed++
	c.announce(n)
	c.rewake()
}

func (c *client) announce(n int) {
	if c.room() != nil {
		c.p.notify(n) // c carries its process's watch: the head hears it
		return
	}
	c.heard = true
	c.annSince |= 1 << n
	c.a().Announce(n, c.now())
	c.checkWait()
}

// setListening tells the acquisition which nodes' subscriptions are
// confirmed.
func (c *client) setListening() {
	if c.room() != nil {
		return // the process's head reads its watch at each look (proc.step)
	}
	l := c.confirmed
	if !c.watching {
		l = 0
	}
	if l != c.listening {
		c.listening = l
		c.a().SetListening(l)
	}
}

// rewake, after an announcement or a change of listening in PhaseWait,
// starts the next attempt if WakeAt has come, or moves the wake to it.
func (c *client) rewake() {
	if c.room() != nil || c.state != acquiring || c.a().Phase() != core.PhaseWait {
		return
	}
	at := c.a().WakeAt()
	switch {
	case !at.After(c.now()):
		c.wake()
	case !at.Equal(c.wakeAt):
		c.scheduleWake()
	}
}

// scheduleWake (re)schedules the end of the wait at WakeAt; earlier
// wakes are stale.
func (c *client) scheduleWake() {
	c.wakeGen++
	c.armed = c.wakeGen
	c.wakeAt = c.a().WakeAt()
	c.w.schedule(event{at: max(realAt(c.wakeAt, c.ppm), c.w.now), kind: evWake, c: c.id, gen: c.wakeGen})
}

// announcedWake reports whether an announcement brought the wake
// forward: the wait ends before the retry delay's end after
// announcements were fed. (A wait may also end early at the holders'
// expiry; a listening waiter that heard something counts it as
// announced: a statistic, not a check.)
func (c *client) announcedWake() bool {
	return c.heard && c.a().WakeAt().Before(c.retryEnd)
}

// checkWait is the waiters' liveness check: once the nodes announced
// free since the attempt started, with those the failed attempt took
// (its cleanup frees them), make a quorum, the wait must end no later
// than the retry delay's end, as polling would have (once at least one
// node other than the attempt's own announced). Announcements are what
// the client fed, forged ones included: the check is of the decision,
// given its inputs. A semaphore's permit is not checked: it wakes for a
// quorum of one slot's announcements, after a retry delay of its own
// per sweep (core.Permits, whose tests hold it to that).
func (c *client) checkWait() {
	if c.state != acquiring || c.a().Phase() != core.PhaseWait || c.permits {
		return
	}
	free := c.annSince | c.ours
	if bits.OnesCount32(free) < core.Quorum(c.w.cfg.Nodes) || c.annSince&^c.ours == 0 {
		return
	}
	if at := c.a().WakeAt(); at.After(c.retryEnd) {
		c.w.violation(&c.w.res.Violations.LongWait, "client %d: nodes %b announced free, a quorum, yet its wait ends at %v, after the retry delay's end %v",
			c.id, free, at, c.retryEnd)
	}
}

// wake ends the wait and starts the next attempt.
func (c *client) wake() {
	c.wakeGen++
	c.attemptAnnounced = c.heard && c.announcedWake()
	if c.attemptAnnounced {
		c.w.res.Announce.Wakes++
	}
	c.heard, c.annSince = false, 0
	c.attempts++
	c.w.res.Attempts++
	c.a().Wake(c.now())
	c.drive(c.a().Round())
}
