// Package sim is a deterministic simulation of Redlock that drives the
// real step values (core.Acquisition, core.Round, core.Lease: the values
// the root package's Client runs, with the same decisions) against
// simulated Redis nodes, a simulated network and simulated clients, in
// virtual time, single-threaded, reproducible from a seed. It has no rule
// of its own for when to attempt, wait, extend or give a lock up: those
// are the step values' decisions.
//
// A schedule is one run: N nodes, several clients contending for one key,
// and faults drawn from the seed: message latency and loss, timed-out
// commands applied late (what core.Batch allows), node crashes and
// restarts with or without their data, clock-rate errors per client and
// per node, client pauses and client crashes, and callers that give
// their acquisitions up (Faults.Cancels). Checkers watch every schedule:
//
//   - mutual exclusion: no two acquisitions are in use at the same real
//     instant;
//   - liveness: after a holder crashes, another client acquires within the
//     key's expiry plus one think time or retry delay and four rounds
//     (five with Fencing);
//   - release hygiene: no key of a released or cleaned-up token survives
//     on a node that answered the release, unless a timed-out command set
//     it late;
//   - no lease goes on after an extension round proved a majority lost;
//   - a lease declares its lock lost strictly before the end of its
//     validity (a Lock's Context is cancelled before Until), unless the
//     process was paused across the moment it was due;
//   - a waiter whose announced-free nodes (with those its failed attempt
//     took) make a quorum never waits past the end of its retry delay:
//     listening is never slower than polling;
//   - a Fair acquisition that ended without the lock is in no queue of
//     a node that answered its last round, and a Fair process that comes
//     back to the queue queues under a ticket taken since (fair.go);
//   - a quiet release that leaves the key to nobody of its process,
//     while another process waits, is followed at once by an attempt or,
//     with Fair, a release that hands the key on (proc.go);
//   - fences (with Config.Fencing): every acquisition's fence is strictly
//     greater than the fence of every acquisition completed before it,
//     in the real-time order in which the acquisitions reached
//     core.PhaseDone with a lock;
//   - a schedule ends: one whose virtual time stops is ended as stuck,
//     with its seed, rather than left to hang the campaign (stuck.go).
//
// The nodes apply commands as the drivers' scripts do, and
// drivers/engine's TestScriptsMatchSimModel holds them to it
// (ScriptModel, model.go).
//
// Simulated nodes keep the fence counter of core.OpAcquireFenced and
// core.OpRaiseFence next to the key; it never expires and survives node
// crashes (counters persisted, as Fencing requires) unless
// Faults.LoseCounters.
//
// Nodes reply the holder key's PTTL, on their own clock and rounded down
// to the millisecond, to an acquire it refuses that asks for it (fenced,
// or probing: core.Reply.TTL, core.Command.Probe), and
// announce every release they apply to the clients subscribed to the key
// (core.Announcer), as the release script's PUBLISH does. Listening
// clients (Config.Announce) watch the key from their acquisition's first
// wait to its end and feed
// what they hear to their Acquisition (Announce, SetListening), waking
// when its WakeAt comes; announcements may be lost, late, duplicated or
// forged and subscriptions may drop, and since announcements are only
// hints the checkers must find nothing more for it. Result.Handoff and
// Result.Announce measure what they are for: the time from a release to
// the next acquisition, and the acquisitions an announcement woke.
//
// Holders lease their locks (core.Lease, Config.Lease; Faults.Extend
// draws which) or only watch them (LeaseFraction 0, as a Lock's Context
// does), and use a lock only until the lease declares it lost, re-checked
// after every pause: the "work within validity" assumption. Work that
// ends while an extension is in flight abandons it (Lease.Cancel) and
// releases at once, as Unlock does. Faults.Outages take a majority of the
// nodes down together while locks are leased; Faults.StaleKeys leave
// foreign keys on a minority while waiters wait. Config.Replication makes
// every node a master with replicas that fail over (failover.go), with
// or without the drivers' WAIT. Config can break each of the algorithm's assumptions, so that
// tests can show the checkers find what then goes wrong.
package sim

import (
	"math/rand/v2"
	"time"

	"github.com/redlock-go/redlock/core"
)

// epoch is where every clock's local reading starts.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

const key = "sim"

// world is one schedule's state. Time is real time in nanoseconds since the
// schedule began; clients and nodes read it through their own rates.
type world struct {
	cfg     Config
	seed    uint64
	rng     *rand.Rand
	now     int64
	seq     uint64
	queue   []slot  // a binary min-heap on (at, seq)
	slab    []event // the queued events, by slot index
	free    []int32 // free slab indices
	nodes   []node
	clients []*client
	procs   []*proc // with Config.Waiters (proc.go)
	res     Result
	// lastDelivery[c][n] is when the latest in-order message from client c
	// reached node n: in-order messages never overtake each other, as on
	// one connection (core.Batch's order rule).
	lastDelivery [][]int64
	uses         []use
	rounds       uint64 // round ids, so stale replies are recognised
	acqs         int    // acquisition ids
	crash        *holderCrash
	grants       []grant // fenced acquisitions, in the order they completed
	topGrant     int     // index in grants of the largest fence
	// kindFences are the fence checker's for the kinds beyond the mutex
	// (kinds.go): the largest fence completed per key, a writer's at 0.
	kindFences [maxKeys]kindGrant
	// main and xnames name the nodes' keys (kinds.go's keyIndex): the
	// schedule's own, and the others of its kind.
	main   string
	xnames [maxKeys]string
	// releasedAt is when the last release started while another client
	// waited, until the next acquisition; -1: none pending.
	releasedAt int64
	// waits are the replies held until WAIT returns (failover.go).
	waits   []pendingWait
	waitIDs uint64
	// The stuck checker's (stuck.go): events run, events run at the
	// current instant, and whether the schedule was ended as stuck.
	steps, sameInstant int
	halted             bool
}

// event is something that happens at a real instant.
type event struct {
	at   int64
	kind eventKind
	c    int // client
	n    int // node
	msg  message
	gen  uint64 // a client timer's, wake's or subscription's generation
	dur  int64  // a pause's length
}

type eventKind uint8

const (
	evRequest     eventKind = iota + 1 // msg reaches node n
	evReply                            // msg's reply reaches client c
	evTimeout                          // msg's deadline passes at client c
	evWake                             // client c's retry delay ends
	evTimer                            // client c's work or validity timer fires
	evPause                            // client c pauses
	evResume                           // client c resumes
	evClientCrash                      // client c crashes
	evNodeCrash                        // node n crashes
	evNodeRestart                      // node n restarts
	evStart                            // client c starts its next acquisition
	evSubscribe                        // client c's SUBSCRIBE (generation gen) reaches node n
	evSubConfirm                       // node n's confirmation reaches client c
	evSubLost                          // client c notices its subscription on node n is gone
	evAnnounce                         // an announcement from node n reaches client c
	evSubDrop                          // client c's subscription on node n drops (fault)
	evForge                            // a forged announcement from node n reaches client c
	evOutage                           // a majority of the nodes crash together
	evStale                            // a stale key appears on a minority of the nodes
	evFailover                         // node n's master fails; a replica is promoted later
	evPromote                          // node n promotes a replica
	evReplWrite                        // a write of node n's master reaches replica c (link gen)
	evReplAck                          // replica c's acknowledgement of offset dur reaches node n
	evReplDrop                         // replica c of node n disconnects
	evReplLink                         // replica c of node n (re)connects and resyncs
	evRejoin                           // node n's failed master comes back, as its replica c
	evWaitEnd                          // WAIT gen's timeout passes
	evPoke                             // client c's process pokes it to look at its wait (proc.go)
	evLinger                           // the linger gen of process c's watch ends (proc.go)
	evCancel                           // the caller of client c's acquisition gen gives up
	evUnheard                          // the unheard checker looks at client c's quiet release gen (proc.go)
)

// message is one command and, once applied, its reply.
type message struct {
	round     uint64
	cmd       core.Command
	node      int
	status    core.Status
	appliedAt int64         // real time the node applied it, or -1
	fence     uint64        // the reply's Fence: the counter after an OK OpAcquireFenced
	ttl       time.Duration // the reply's TTL: the holder's PTTL after a held acquire
	late      bool          // delivered after its deadline, out of order
	reordered bool          // delivered ahead of the client's earlier requests (Faults.Reorder)
	resent    bool          // a Fair release sent again after a broken connection (ScriptModel.ApplyResent)
	silent    bool          // a release that announces nothing (kinds.go: readers remain, or nothing deleted)
	unmarked  bool          // a writer's release that deleted its mark: it announces, whatever its status
	acq       int           // the id of the acquisition that sent it; 0: none
	deadline  int64         // real time
}

// slot orders one event in the queue. It holds no pointer, so the heap's
// swaps cost no write barriers; the event itself stays in w.slab.
type slot struct {
	at  int64
	seq uint64
	idx int32
}

func (a slot) before(b slot) bool { return a.at < b.at || (a.at == b.at && a.seq < b.seq) }

func (w *world) schedule(e event) {
	w.seq++
	var idx int32
	if n := len(w.free); n > 0 {
		idx, w.free = w.free[n-1], w.free[:n-1]
		w.slab[idx] = e
	} else {
		idx = int32(len(w.slab)) //nolint:gosec // G115: the slab holds the events in flight, far below 2^31
		w.slab = append(w.slab, e)
	}
	w.queue = append(w.queue, slot{at: e.at, seq: w.seq, idx: idx})
	q := w.queue
	for i := len(q) - 1; i > 0; {
		p := (i - 1) / 2
		if !q[i].before(q[p]) {
			break
		}
		q[i], q[p] = q[p], q[i]
		i = p
	}
}

// pop removes and returns the earliest event.
func (w *world) pop() event {
	q := w.queue
	top := q[0]
	last := len(q) - 1
	q[0] = q[last]
	q = q[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < last && q[l].before(q[m]) {
			m = l
		}
		if r < last && q[r].before(q[m]) {
			m = r
		}
		if m == i {
			break
		}
		q[i], q[m] = q[m], q[i]
		i = m
	}
	w.queue = q
	e := w.slab[top.idx]
	w.slab[top.idx] = event{}
	w.free = append(w.free, top.idx)
	return e
}

// between returns a uniform duration in [lo, hi].
func (w *world) between(lo, hi time.Duration) int64 {
	if hi <= lo {
		return int64(lo)
	}
	return int64(lo) + w.rng.Int64N(int64(hi-lo)+1)
}

func (w *world) chance(p float64) bool { return p > 0 && w.rng.Float64() < p }

// ppm returns a clock-rate error in [-max, max] parts per million.
func (w *world) ppm(max int64) int64 {
	if max <= 0 {
		return 0
	}
	return w.rng.Int64N(2*max+1) - max
}

// localAt returns the reading of a clock with rate error ppm at real time t.
func localAt(t, ppm int64) time.Time {
	return epoch.Add(time.Duration(t + t*ppm/1_000_000))
}

// realAt returns the earliest real time at which a clock with rate error ppm
// reads at least l.
func realAt(l time.Time, ppm int64) int64 {
	d := int64(l.Sub(epoch))
	if d <= 0 {
		return 0
	}
	num, den := d*1_000_000, 1_000_000+ppm
	t := num / den
	if num%den != 0 {
		t++
	}
	// localAt truncates: step to the exact earliest reading.
	for t > 0 && (t-1)+(t-1)*ppm/1_000_000 >= d {
		t--
	}
	for t+t*ppm/1_000_000 < d {
		t++
	}
	return t
}

// data is what a server holds: at most the one key, and its fence
// counter. A replica holds a copy (failover.go).
type data struct {
	has   bool
	tok   core.Token
	exp   int64 // node-clock nanoseconds at which the key expires
	setAt int64 // real time the key's value was set
	// setLate: the command that set it was applied after its deadline.
	setLate bool
	// fence is the key's fence counter (core.FenceKey): it never expires,
	// and survives a crash unless Faults.LoseCounters.
	fence uint64
	// xd holds the kinds beyond the mutex (kinds.go); nil until one is
	// used. A copy of data must clone it (xdata.clone).
	xd *xdata
}

// node is one Redis master holding at most the one key: a quorum member,
// which may have replicas (Config.Replication, failover.go).
type node struct {
	i   int
	ppm int64 // clock-rate error: expiry runs on the node's clock
	off int64 // clock offset of the server that is the master (failover.go)
	up  bool
	data
	// restored: the key came with a failover, from the promoted replica,
	// not from a command a client's round saw applied.
	restored bool
	// With Config.Replication (failover.go): the replicas, and the
	// replication offset of the master's last write.
	reps   []replica
	offset uint64
	// subs[c] is the generation of client c's subscription to the key's
	// announcements on this node, 0 if none.
	subs []uint64
	// With Config.Fair: the client the key is handed to, plus 1 (the key
	// then holds no token), and the waiter queue.
	handed int
	queue  []entry
	// queueExp is when the queue's keys expire (node clock): each join
	// PEXPIREs them by its entry's life, as the release script does.
	queueExp int64
}

func (n *node) clock(t int64) int64 { return t + t*n.ppm/1_000_000 + n.off }

func (n *node) alive(t int64) bool { return n.has && n.clock(t) < n.exp }

// apply runs cmd at real time t, as redis-server and the scripts do, and
// sets m.fence for an OpAcquireFenced that set the key, and m.ttl for an
// acquire the key refused that reports it (an OpAcquireFenced, or an
// OpAcquire with Command.Probe, as the drivers' scripts do): the holder
// key's PTTL, on the node's clock, rounded down to the millisecond as
// redis-server's is (0 when less than a millisecond is left, which the
// core takes as unknown).
func (n *node) apply(m *message, c int, t int64, w *world) core.Status {
	cmd, f := m.cmd, &w.cfg.Faults
	if n.has && !n.alive(t) {
		n.has, n.handed = false, 0
	}
	if cmd.Kind == core.KindRead || cmd.Kind == core.KindAll || w.keyIndex(cmd.Key) != mainKey || f.CountSemaphore ||
		cmd.Kind == core.KindWrite && (cmd.Op == core.OpAcquire || cmd.Op == core.OpAcquireFenced || cmd.Op == core.OpRelease) {
		return n.applyKind(m, t, w)
	}
	if cmd.Fair {
		return n.applyFair(m, c, t, w)
	}
	switch cmd.Op {
	case core.OpAcquire, core.OpAcquireFenced:
		if n.has {
			if cmd.Probe || cmd.Op == core.OpAcquireFenced {
				m.ttl = time.Duration(n.exp-n.clock(t)) / time.Millisecond * time.Millisecond
			}
			return core.StatusHeld
		}
		n.has, n.tok, n.exp, n.setAt, n.setLate, n.restored = true, cmd.Token, n.clock(t)+int64(cmd.TTL), t, m.late, false
		if cmd.Op == core.OpAcquireFenced {
			n.fence++
			m.fence = n.fence
		}
		return core.StatusOK
	}
	switch {
	case !n.has:
		return core.StatusMissing
	case n.tok != cmd.Token:
		return core.StatusHeld
	}
	switch cmd.Op {
	case core.OpRelease:
		n.has = false
	case core.OpExtend:
		n.exp = n.clock(t) + int64(cmd.TTL)
	case core.OpRaiseFence:
		if cmd.Fence > n.fence && !f.SkipRaise {
			n.fence = cmd.Fence
		}
	default:
		panic("sim: unknown op " + cmd.Op.String())
	}
	return core.StatusOK
}

// send puts m from client c on the wire to its node at the current time.
func (w *world) send(c int, m message) {
	f := &w.cfg.Faults
	lat := w.between(w.cfg.Latency[0], w.cfg.Latency[1])
	switch {
	case w.chance(f.Loss):
		w.res.Faults.Lost++
		return
	case w.chance(f.Late):
		// Held up past its deadline and delivered out of order, as when a
		// driver gives up a connection and the server reads it later.
		w.res.Faults.Late++
		m.late = true
		w.schedule(event{at: max(m.deadline, w.now) + 1 + w.between(0, f.LateBy), kind: evRequest, c: c, n: m.node, msg: m})
		return
	}
	if w.chance(f.Reorder) && m.deadline > w.now+lat {
		m.reordered = true
		w.schedule(event{at: w.now + lat, kind: evRequest, c: c, n: m.node, msg: m})
		return
	}
	conn := w.conn(c)
	at := max(w.now+lat, w.lastDelivery[conn][m.node]+1)
	w.lastDelivery[conn][m.node] = at
	w.schedule(event{at: at, kind: evRequest, c: c, n: m.node, msg: m})
}

// deliver applies a request at its node and sends the reply back.
func (w *world) deliver(e event) {
	n := &w.nodes[e.n]
	m := e.msg
	m.appliedAt = -1
	if n.up {
		m.status = n.apply(&m, w.conn(e.c), w.now, w)
		m.appliedAt = w.now
		if m.status == core.StatusOK && m.cmd.Op == core.OpRelease && !m.cmd.Fair && !m.cmd.Quiet && !m.silent || m.unmarked {
			w.publishSlot(e.n, max(w.keyIndex(m.cmd.Key), 0)) // the release script PUBLISHes after its delete
			if p := w.clients[e.c].p; p != nil {
				w.heard(p) // its quiet releases are followed
			}
		}
		if m.ttl > 0 && w.chance(w.cfg.Announce.UnknownTTL) {
			w.res.Announce.UnknownTTL++
			m.ttl = 0
		}
		if len(n.reps) > 0 && m.status == core.StatusOK {
			w.replicate(e.n)
			if w.cfg.Replication.Wait && core.Waited(m.cmd.Op) {
				w.wait(e.c, e.n, m) // the reply comes once WAIT returns
				return
			}
		}
	} else {
		m.status = core.StatusError // connection refused
	}
	w.reply(e.c, e.n, m)
}

// reply sends node n's reply m back to client c.
func (w *world) reply(c, n int, m message) {
	if w.chance(w.cfg.Faults.Loss) {
		w.res.Faults.Lost++
		return
	}
	w.schedule(event{at: w.now + w.between(w.cfg.Latency[0], w.cfg.Latency[1]), kind: evReply, c: c, n: n, msg: m})
}
