package sim

import (
	"slices"

	"github.com/redlock-go/redlock/core"
)

// Members that survive failover (Config.Replication): each node is a
// master with replicas, as a Sentinel group or a Cluster shard is, and
// counts once in the quorum (drivers.Member).
//
// Replication is asynchronous. Every write the master applies (a command
// answered StatusOK, a stale key set) gets the next replication offset
// and travels to each connected replica, in order, after a delay in
// Replication.Delay (plus up to LagBy with probability Lag); the replica
// then holds exactly the master's data as of that write (the key, its
// absolute expiry, the fence counter) and acknowledges the offset, the
// acknowledgement taking a delay of its own back. A replica whose link
// drops loses the writes in flight and, when it reconnects, resyncs in
// full: it is sent the master's data as of then, and acknowledges that.
// Expiries travel as absolute times on the master's clock (Redis 7's
// PXAT), and every server has its own clock offset (Replication.Skew), so
// a promoted replica expires a key when its own clock reaches that time.
//
// A failover takes the master down, drops its replicas' links and every
// WAIT in progress (their clients time out), and after FailoverDelay
// promotes one of the running replicas, at random, whatever it holds:
// the node's data becomes exactly the replica's. The old master comes
// back after Rejoin as a replica of the new one (with its data only if
// Faults.Persistent, its fence counter unless Faults.LoseCounters), down
// and not promotable until then.
//
// WAIT (Replication.Wait) is the driver's: after a write that the master
// applied and core.Waited names (an acquisition, an extension or a fence
// raise), the reply waits until every replica has acknowledged the write,
// or WaitTimeout passes; then the number of replicas that acknowledged
// is judged by core.Replicated, the engine's own count, and a reply it
// refuses is a failure (core.StatusError): core sees no vote, as from a
// node that failed. Releases are not waited for. The simulation
// decides nothing else: the votes, the quorum, the validity and the
// fences are core's, from the replies.
//
// The release hygiene check forgives a key a failover brought back from a
// replica the release had not reached (node.restored). Fair queues are
// not replicated: Config.Fair and Replication do not go together.

// replica is one replica of a node.
type replica struct {
	data
	off       int64  // clock offset, as node.off
	up        bool   // running: a failed master is down until it rejoins
	linked    bool   // connected to the master, receiving its writes
	dropped   bool   // its link dropped (Replication.Drops), not yet back
	dropUntil int64  // real time before which the dropped link stays down
	gen       uint64 // the link's generation: older writes and acks are void
	pending   []shipped
	last      int64  // real time the latest write in flight arrives
	applied   uint64 // replication offset of the last write applied
	acked     uint64 // the master's view: offset acknowledged on this link
}

// shipped is one write in flight to a replica: the master's data after
// it, at replication offset off.
type shipped struct {
	data
	off uint64
}

// pendingWait is a reply held until WAIT returns.
type pendingWait struct {
	id     uint64
	c, n   int
	m      message
	target uint64 // the replication offset every replica must acknowledge
}

// replication gives every node its replicas and draws the schedule's
// failovers and link drops.
func (w *world) replication() {
	r, length := &w.cfg.Replication, int64(w.cfg.Length)
	if r.Replicas <= 0 {
		return
	}
	if w.cfg.Fair {
		panic("sim: Fair queues are not replicated: Config.Fair and Replication do not go together")
	}
	skew := func() int64 { return w.between(-r.Skew, r.Skew) }
	for i := range w.nodes {
		n := &w.nodes[i]
		n.off = skew()
		n.reps = make([]replica, r.Replicas)
		for k := range n.reps {
			n.reps[k] = replica{off: skew(), up: true}
			w.link(i, k)
		}
	}
	for range r.Failovers {
		w.schedule(event{at: w.rng.Int64N(length), kind: evFailover, n: w.rng.IntN(w.cfg.Nodes)})
	}
	for range r.Drops {
		w.schedule(event{at: w.rng.Int64N(length), kind: evReplDrop, n: w.rng.IntN(w.cfg.Nodes), c: w.rng.IntN(r.Replicas)})
	}
}

// replDelay draws one trip between a master and a replica.
func (w *world) replDelay() int64 {
	r := &w.cfg.Replication
	d := w.between(r.Delay[0], r.Delay[1])
	if w.chance(r.Lag) {
		d += w.between(0, r.LagBy)
	}
	return d
}

// replicate ships node i's write just applied to every linked replica.
func (w *world) replicate(i int) {
	n := &w.nodes[i]
	n.offset++
	for k := range n.reps {
		if n.reps[k].linked {
			w.ship(i, k)
		}
	}
}

// ship sends node i's data, as of now, to replica k, behind the writes
// already in flight.
func (w *world) ship(i, k int) {
	n := &w.nodes[i]
	r := &n.reps[k]
	at := max(w.now+w.replDelay(), r.last+1)
	r.last = at
	d := n.data
	d.xd = d.xd.clone() // the replica's copy shares nothing with the master
	r.pending = append(r.pending, shipped{data: d, off: n.offset})
	w.schedule(event{at: at, kind: evReplWrite, n: i, c: k, gen: r.gen})
}

// replWrite applies the write in flight that reaches its replica now, and
// sends the acknowledgement back.
func (w *world) replWrite(e event) {
	r := &w.nodes[e.n].reps[e.c]
	if e.gen != r.gen || len(r.pending) == 0 {
		return // the link dropped since
	}
	s := r.pending[0]
	r.pending = slices.Delete(r.pending, 0, 1)
	r.data, r.applied = s.data, s.off
	w.schedule(event{at: w.now + w.replDelay(), kind: evReplAck, n: e.n, c: e.c, gen: r.gen, dur: int64(s.off)}) //nolint:gosec // G115: an offset counts one schedule's writes, far below 2^63
}

// replAck records a replica's acknowledgement and returns the WAITs it
// completes.
func (w *world) replAck(e event) {
	r := &w.nodes[e.n].reps[e.c]
	if e.gen != r.gen || !r.linked {
		return
	}
	r.acked = max(r.acked, uint64(e.dur)) //nolint:gosec // G115: dur holds an offset here (replWrite), never negative
	w.waits = slices.DeleteFunc(w.waits, func(p pendingWait) bool {
		if p.n != e.n || !w.acked(p.n, p.target) {
			return false
		}
		w.reply(p.c, p.n, p.m)
		return true
	})
}

// acked reports whether every replica of node i acknowledged offset off
// on its current link: WAIT numreplicas with every replica returns.
func (w *world) acked(i int, off uint64) bool {
	return w.ackedBy(i, off) >= int64(len(w.nodes[i].reps))
}

// ackedBy returns how many replicas of node i acknowledged offset off on
// their current link: WAIT's reply.
func (w *world) ackedBy(i int, off uint64) int64 {
	var k int64
	for _, r := range w.nodes[i].reps {
		if r.linked && r.acked >= off {
			k++
		}
	}
	return k
}

// wait holds node n's reply m to client c until every replica has
// acknowledged the write just applied, or the WAIT timeout passes.
func (w *world) wait(c, n int, m message) {
	w.waitIDs++
	w.waits = append(w.waits, pendingWait{id: w.waitIDs, c: c, n: n, m: m, target: w.nodes[n].offset})
	w.schedule(event{at: w.now + int64(w.cfg.Replication.WaitTimeout), kind: evWaitEnd, gen: w.waitIDs})
}

// replicated is the driver's decision on WAIT's reply: core's, the
// engine's own. Only tests change it (TestCampaignSeesAShortWaitCount),
// to plant a defect in that count.
var replicated = core.Replicated

// waitEnd fails WAIT id if it is still held: the reply is an error, no
// vote, as the driver makes it.
func (w *world) waitEnd(id uint64) {
	k := slices.IndexFunc(w.waits, func(p pendingWait) bool { return p.id == id })
	if k < 0 {
		return
	}
	p := w.waits[k]
	w.waits = slices.Delete(w.waits, k, k+1)
	// WAIT returns, at its timeout, the replicas that acknowledged; the
	// driver's count decides (core.Replicated, as the engine's).
	if replicated(w.ackedBy(p.n, p.target), len(w.nodes[p.n].reps)) {
		w.reply(p.c, p.n, p.m)
		return
	}
	w.res.Faults.WaitsShort++
	p.m.status, p.m.fence, p.m.ttl = core.StatusError, 0, 0
	w.reply(p.c, p.n, p.m)
}

// masterDown drops what node i's master held in memory for others when
// it stops: its WAITs (the clients' connections reset) and its replicas'
// links.
func (w *world) masterDown(i int) {
	n := &w.nodes[i]
	if len(n.reps) == 0 {
		return
	}
	w.waits = slices.DeleteFunc(w.waits, func(p pendingWait) bool { return p.n == i })
	for k := range n.reps {
		w.unlink(i, k)
	}
}

// unlink drops replica k's link to node i's master, and the writes and
// acknowledgements in flight on it.
func (w *world) unlink(i, k int) {
	r := &w.nodes[i].reps[k]
	r.linked, r.acked, r.last = false, 0, 0
	r.gen++
	r.pending = r.pending[:0]
}

// link connects replica k to node i's master if both run and its drop
// is over, and starts the full resync: the master's data as of now.
func (w *world) link(i, k int) {
	n := &w.nodes[i]
	r := &n.reps[k]
	switch {
	case !n.up || !r.up || r.linked:
		return
	case w.now < r.dropUntil:
		w.schedule(event{at: r.dropUntil, kind: evReplLink, n: i, c: k})
		return
	}
	r.linked, r.dropped = true, false
	r.gen++
	w.ship(i, k)
}

// relinkAll reconnects node i's replicas a trip after its master starts.
func (w *world) relinkAll(i int) {
	n := &w.nodes[i]
	for k := range n.reps {
		w.schedule(event{at: w.now + w.replDelay(), kind: evReplLink, n: i, c: k})
	}
}

// replDrop drops replica k's link to node i's master for a while
// (Replication.Drops).
func (w *world) replDrop(i, k int) {
	r := &w.nodes[i].reps[k]
	if !r.linked {
		return
	}
	w.res.Faults.ReplicaDrops++
	w.unlink(i, k)
	d := w.cfg.Replication.DropFor
	r.dropped, r.dropUntil = true, w.now+w.between(d[0], d[1])
	w.schedule(event{at: r.dropUntil, kind: evReplLink, n: i, c: k})
}

// failover takes node i's master down; a replica is promoted after the
// failover delay.
func (w *world) failover(i int) {
	n := &w.nodes[i]
	if !n.up || len(n.reps) == 0 {
		return // already down: its own failover or restart is under way
	}
	w.res.Faults.Failovers++
	n.up = false
	for c := range n.subs {
		w.dropSub(i, c)
	}
	w.masterDown(i)
	d := w.cfg.Replication.FailoverDelay
	w.schedule(event{at: w.now + w.between(d[0], d[1]), kind: evPromote, n: i})
}

// promote makes a running replica of node i, drawn at random, its
// master, with exactly the data the replica holds; the old master takes
// the replica's place, down until it rejoins.
func (w *world) promote(i int) {
	n, rc := &w.nodes[i], &w.cfg.Replication
	var up []int
	for k := range n.reps {
		if n.reps[k].up {
			up = append(up, k)
		}
	}
	if len(up) == 0 { // nothing to promote yet: the Sentinels try again
		w.schedule(event{at: w.now + max(int64(rc.FailoverDelay[1]), int64(ms)), kind: evPromote, n: i})
		return
	}
	k := up[w.rng.IntN(len(up))]
	r := &n.reps[k]
	if r.applied < n.offset {
		w.res.Faults.Behind++
	}
	if r.dropped {
		w.res.Faults.Dropped++
	}
	old, oldOff := n.data, n.off
	n.data, n.off, n.restored = r.data, r.off, r.has
	if n.xd != nil {
		n.xd.restored = true
	}
	n.up = true
	f := &w.cfg.Faults
	if !f.Persistent {
		old = data{fence: old.fence, xd: old.xd.persisted(false)} // the process restarts empty, counter persisted
	}
	if f.LoseCounters {
		old.fence = 0
		old.xd.loseFences()
	}
	*r = replica{data: old, off: oldOff, gen: r.gen + 1, pending: r.pending[:0]}
	w.schedule(event{at: w.now + w.between(rc.Rejoin[0], rc.Rejoin[1]), kind: evRejoin, n: i, c: k})
	w.relinkAll(i)
}

// rejoin starts node i's failed master again, as its replica k.
func (w *world) rejoin(i, k int) {
	w.nodes[i].reps[k].up = true
	w.link(i, k)
}
