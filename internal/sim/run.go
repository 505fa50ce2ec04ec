package sim

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/redlock-go/redlock/core"
)

// holderCrash is the liveness checker's state: which holder crashed, and
// by when another client must have acquired.
type holderCrash struct {
	done     bool
	client   int
	at       int64
	deadline int64 // real time
	met      bool
	// beside is the other clients that held when it crashed, bit i for
	// client i (readers, a semaphore's other slots, disjoint key sets):
	// until each is freed, a contender may wait for it as for any holder
	// (holdEnded).
	beside uint64
}

// Run runs one schedule of cfg drawn from seed and returns what it did
// and found. The same cfg and seed always give the same Result.
func Run(cfg Config, seed uint64) Result {
	w := newWorld(cfg, seed)
	length := int64(cfg.Length)
	for len(w.queue) > 0 && !w.halted {
		e := w.pop()
		if e.at > length {
			w.now = length // time reached the end: nothing is stuck
			break
		}
		w.step(e)
		w.now = e.at
		if !w.halted {
			w.dispatch(e)
		}
	}
	w.checkDrained(length)
	if w.halted { // stuck.go: what ran until then is still checked
		for _, c := range w.clients {
			c.stopUsing()
		}
		w.checkExclusion()
		return w.res
	}
	w.now = length
	for _, c := range w.clients {
		c.stopUsing()
	}
	w.checkExclusion()
	w.checkStuck()
	for _, c := range w.clients {
		if c.state == acquiring && !c.crashed {
			c.checkWriterWait(false)
		}
	}
	if cr := w.crash; cr != nil && cr.done && !cr.met && cr.beside == 0 && length > cr.deadline {
		w.violation(&w.res.Violations.Liveness, "client %d crashed holding the lock at %v; nobody acquired by %v",
			cr.client, time.Duration(cr.at), time.Duration(cr.deadline))
	}
	return w.res
}

// newWorld builds the schedule of cfg drawn from seed, its first events
// queued.
func newWorld(cfg Config, seed uint64) *world {
	w := &world{cfg: cfg, seed: seed, rng: rand.New(rand.NewPCG(seed, 0x5eed)), releasedAt: -1} //nolint:gosec // G404: a seeded, reproducible schedule; nothing secret
	w.res.Schedules = 1
	if cfg.Keys > maxKeys || cfg.Permits > maxKeys {
		panic("sim: Config.Keys and Config.Permits are at most 8")
	}
	w.main, w.xnames = key, allKeys
	if cfg.Primitive == PrimPermits {
		w.xnames = permitKeys
	}
	f := &cfg.Faults
	w.nodes = make([]node, cfg.Nodes)
	for i := range w.nodes {
		w.nodes[i] = node{i: i, ppm: w.ppm(f.NodePPM), up: true, subs: make([]uint64, cfg.Clients)}
		if f.WorstClocks {
			w.nodes[i].ppm = f.NodePPM
		}
	}
	w.lastDelivery = make([][]int64, cfg.Clients)
	for i := range cfg.Clients {
		w.lastDelivery[i] = make([]int64, cfg.Nodes)
		ppm := w.ppm(f.ClientPPM)
		if f.WorstClocks {
			ppm = -f.ClientPPM
		}
		w.clients = append(w.clients, newClient(w, i, ppm))
		w.schedule(event{at: w.between(0, cfg.Think[1]), kind: evStart, c: i})
	}
	a := &cfg.Announce
	for _, c := range w.clients {
		c.listener = w.chance(a.Listen)
	}
	w.groupProcs()
	length := int64(cfg.Length)
	for range f.NodeCrashes {
		w.schedule(event{at: w.rng.Int64N(length), kind: evNodeCrash, n: w.rng.IntN(cfg.Nodes)})
	}
	for range f.Pauses {
		w.schedule(event{at: w.rng.Int64N(length), kind: evPause, c: w.rng.IntN(cfg.Clients),
			dur: w.between(0, f.MaxPause)})
	}
	for range f.Outages {
		w.schedule(event{at: w.rng.Int64N(length), kind: evOutage})
	}
	w.replication()
	for range f.StaleKeys {
		w.schedule(event{at: w.rng.Int64N(length), kind: evStale})
	}
	for range a.Forged {
		w.schedule(event{at: w.rng.Int64N(length), kind: evForge, c: w.rng.IntN(cfg.Clients), n: w.rng.IntN(cfg.Nodes)})
	}
	for range a.SubDrops {
		w.schedule(event{at: w.rng.Int64N(length), kind: evSubDrop, c: w.rng.IntN(cfg.Clients), n: w.rng.IntN(cfg.Nodes)})
	}
	if f.HolderCrash {
		// Early enough that the keys expire, and someone reacquires,
		// well within the schedule.
		w.schedule(event{at: w.rng.Int64N(length / 3), kind: evClientCrash, c: -1})
	}
	return w
}

func (w *world) dispatch(e event) {
	switch e.kind {
	case evRequest:
		w.deliver(e)
	case evSubscribe:
		w.subscribe(e)
	case evSubDrop:
		if w.dropSub(e.n, w.conn(e.c)) {
			w.res.Announce.SubDrops++
		}
	case evForge:
		w.res.Announce.Forged++
		e.kind = evAnnounce
		w.clients[w.conn(e.c)].handle(e)
	case evNodeCrash:
		w.crashNode(e.n, w.cfg.Faults.RestartDelay)
	case evNodeRestart:
		w.nodes[e.n].up = true
		w.relinkAll(e.n)
	case evFailover:
		w.failover(e.n)
	case evPromote:
		w.promote(e.n)
	case evReplWrite:
		w.replWrite(e)
	case evReplAck:
		w.replAck(e)
	case evReplDrop:
		w.replDrop(e.n, e.c)
	case evReplLink:
		w.link(e.n, e.c)
	case evRejoin:
		w.rejoin(e.n, e.c)
	case evWaitEnd:
		w.waitEnd(e.gen)
	case evOutage:
		w.outage()
	case evStale:
		w.staleKey()
	case evClientCrash:
		if e.c < 0 {
			w.crashHolder()
			return
		}
		w.clients[e.c].handle(e)
	default:
		w.clients[e.c].handle(e)
	}
}

// crashNode crashes node i, if it is up, and restarts it after a delay
// drawn in d.
func (w *world) crashNode(i int, d [2]time.Duration) {
	n := &w.nodes[i]
	if !n.up {
		return
	}
	w.res.Faults.NodeCrashes++
	n.up = false
	if !w.cfg.Faults.Persistent {
		n.has, n.handed, n.queue = false, 0, nil // the data set is gone with the process
		n.xd = n.xd.persisted(w.cfg.Faults.LoseCounters)
		w.res.Faults.EmptyRestarts++
	}
	if w.cfg.Faults.LoseCounters {
		n.fence = 0 // the counter was not persisted either
		n.xd.loseFences()
		w.res.Faults.CountersLost++
	}
	for c := range n.subs {
		w.dropSub(i, c) // the subscribers' connections reset
	}
	w.masterDown(i)
	w.schedule(event{at: w.now + w.between(d[0], d[1]), kind: evNodeRestart, n: i})
}

// outage crashes a majority of the nodes at once (Faults.Outages).
func (w *world) outage() {
	w.res.Faults.Outages++
	d := w.cfg.Faults.OutageFor
	if d[1] == 0 {
		d = w.cfg.Faults.RestartDelay
	}
	for _, i := range w.rng.Perm(w.cfg.Nodes)[:core.Quorum(w.cfg.Nodes)] {
		w.crashNode(i, d)
	}
}

// staleKey sets the key, with a token no client holds, on a minority of
// the nodes where it is free (Faults.StaleKeys): what a crashed client or
// a release that failed on those nodes leaves behind.
func (w *world) staleKey() {
	f := &w.cfg.Faults
	tok := core.TokenFromUint64s(w.rng.Uint64()|1<<63, w.rng.Uint64())
	ttl := time.Duration(w.between(f.StaleTTL[0], f.StaleTTL[1]))
	k := 1 + w.rng.IntN(max(core.Quorum(w.cfg.Nodes)-1, 1))
	set := false
	for _, i := range w.rng.Perm(w.cfg.Nodes)[:k] {
		n := &w.nodes[i]
		if n.up && !n.alive(w.now) {
			n.has, n.tok, n.exp, n.setAt, n.setLate, n.handed, n.restored = true, tok, n.clock(w.now)+int64(ttl), w.now, false, 0, false
			set = true
			if len(n.reps) > 0 {
				w.replicate(i)
			}
		}
	}
	if set {
		w.res.Faults.StaleKeys++
	}
}

// crashHolder crashes a client that is using the lock, or tries again a
// little later, and sets the liveness deadline: the keys expire at most
// TTL after the round that last set them ended, on the fastest node clock;
// then a contender needs at most one think time or retry delay and four
// rounds (the attempt under way, its cleanup, a new acquisition's first
// attempt and its cleanup, the winning one), five with Fencing (the
// winning attempt's raise round), each bounded by the node timeout, or by
// one node timeout per node when sequential.
//
// A client that held beside the crashed one (a reader, the holder of
// another slot or of a disjoint key set) holds the others up as any
// holder does: the deadline moves to the same slack after it is freed
// (holdEnded).
func (w *world) crashHolder() {
	for _, c := range w.clients {
		if c.using && !c.crashed && !c.paused {
			var beside uint64
			for _, o := range w.clients {
				if o != c && o.using && !o.crashed {
					beside |= 1 << o.id
				}
			}
			w.crash = &holderCrash{done: true, client: c.id, at: w.now, deadline: c.expiresBy() + w.livenessSlack(), beside: beside}
			c.handle(event{kind: evClientCrash, c: c.id})
			if w.cfg.Faults.DownAfterCrash {
				for i := range w.nodes {
					w.nodes[i].up = false
				}
			}
			return
		}
	}
	w.schedule(event{at: w.now + int64(time.Millisecond), kind: evClientCrash, c: -1})
}

// livenessSlack is how long after the keys that held the others up are
// freed another client must have acquired (crashHolder).
func (w *world) livenessSlack() int64 {
	cfg := w.cfg
	rounds := int64(4)
	if cfg.Fencing {
		rounds++ // the winning attempt's raise round
	}
	return max(int64(cfg.Think[1]), int64(cfg.Retry.Delay(1, ^uint64(0)))) + rounds*cfg.roundBound()
}

// expiresBy is when c's keys expire at the latest: TTL after the round
// that last set them ended, on the fastest node clock.
func (c *client) expiresBy() int64 {
	cfg := c.w.cfg
	return c.lastSetEnd + int64(cfg.TTL)*1_000_000/(1_000_000-cfg.Faults.NodePPM) + 1
}

// holdEnded records that c, which held beside the crashed holder, is
// freed by freed (its release's round, or its keys' expiry): another
// client must acquire within the liveness slack after it.
func (w *world) holdEnded(c *client, freed int64) {
	cr := w.crash
	if cr == nil || cr.met || cr.beside&(1<<c.id) == 0 {
		return
	}
	cr.beside &^= 1 << c.id
	cr.deadline = max(cr.deadline, freed+w.livenessSlack())
}

// noteRelease starts a handoff when c gives the lock up while another
// client waits for it.
func (w *world) noteRelease(c *client) {
	for _, o := range w.clients {
		if o != c && !o.crashed && o.state == acquiring {
			w.releasedAt = w.now
			return
		}
	}
}

// noteAcquired feeds the liveness and fence checkers and ends a handoff.
func (w *world) noteAcquired(c *client) {
	w.heard(nil) // its release will be heard
	if w.releasedAt >= 0 {
		h := &w.res.Handoff
		d := w.now - w.releasedAt
		h.N++
		h.Total += d
		if c.attemptAnnounced {
			h.Announced++
			h.AnnouncedTime += d
		}
		w.releasedAt = -1
	}
	if w.cfg.Fencing && w.cfg.Primitive == PrimMutex {
		w.checkFence(c)
	} else if w.cfg.Fencing {
		w.checkKindFence(c)
	}
	if cr := w.crash; cr != nil && cr.done && !cr.met && c.id != cr.client {
		cr.met = true
		// While a hold beside the crashed one lasts, the deadline is
		// still to come: holdEnded sets it past that hold's end.
		if cr.beside == 0 && w.now > cr.deadline {
			w.violation(&w.res.Violations.Liveness, "client %d (%v) crashed holding the lock at %v; client %d (%v) acquired only at %v, after %v",
				cr.client, w.clients[cr.client].target.Kind, time.Duration(cr.at), c.id, c.target.Kind, time.Duration(w.now), time.Duration(cr.deadline))
		}
	}
}

// grant is one successful fenced acquisition: when it completed (the
// Acquisition reached PhaseDone with a lock), by whom, with which fence.
type grant struct {
	at          int64 // real time
	fence       uint64
	client, acq int
}

// checkFence records c's new lock and counts a violation when its fence is
// not above the fence of every acquisition completed before it. Events run
// one at a time in real-time order, so "before" is the order of w.grants;
// two completions at one instant are ordered as they ran.
//
// Completion order is the claim's order only under the clock assumption:
// an acquisition's keys then outlive its validity, so on the node where a
// later holder's quorum meets an earlier holder's raised majority the later
// SET came after the earlier key left, after the raise. Without clocks the
// claim holds for acquisitions that began after the earlier one completed;
// with clocks too far apart a slow attempt may complete after another
// although its SETs came first (TestFenceOrderRestsOnClocks).
func (w *world) checkFence(c *client) {
	g := grant{at: w.now, fence: c.lease.Grant().Fence(), client: c.id, acq: c.acqID}
	if g.fence > 0 {
		w.res.Fenced++
	}
	if len(w.grants) > 0 {
		if top := w.grants[w.topGrant]; g.fence <= top.fence {
			w.violation(&w.res.Violations.Fence, "client %d (acquisition %d) acquired with fence %d, not above fence %d of client %d (acquisition %d) at %v",
				g.client, g.acq, g.fence, top.fence, top.client, top.acq, time.Duration(top.at))
		}
	}
	w.grants = append(w.grants, g)
	if n := len(w.grants) - 1; n == 0 || g.fence > w.grants[w.topGrant].fence {
		w.topGrant = n
	}
}

// checkExclusion counts pairs of uses by different acquisitions that
// overlap in real time.
func (w *world) checkExclusion() {
	if w.cfg.Primitive != PrimMutex {
		w.checkKinds()
		return
	}
	slices.SortFunc(w.uses, func(a, b use) int {
		switch {
		case a.start < b.start:
			return -1
		case a.start > b.start:
			return 1
		}
		return 0
	})
	for i, a := range w.uses {
		for _, b := range w.uses[i+1:] {
			if b.start >= a.end {
				break
			}
			if a.acq != b.acq && b.end > b.start && a.end > a.start {
				w.violation(&w.res.Violations.Exclusion, "client %d (acquisition %d) used the lock in [%v, %v) while client %d (acquisition %d) used it from %v",
					a.client, a.acq, time.Duration(a.start), time.Duration(a.end), b.client, b.acq, time.Duration(b.start))
			}
		}
	}
}

// Campaign runs schedules seeds first, first+1, ... of cfg on every CPU and
// adds up their results.
func Campaign(cfg Config, first uint64, schedules int) Result {
	workers := min(runtime.GOMAXPROCS(0), max(schedules, 1))
	results := make([]Result, workers)
	var wg sync.WaitGroup
	for k := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s := k; s < schedules; s += workers {
				results[k].add(Run(cfg, first+uint64(s))) //nolint:gosec // G115: 0 <= s < schedules
			}
		}()
	}
	wg.Wait()
	var total Result
	for _, r := range results {
		total.add(r)
	}
	return total
}
