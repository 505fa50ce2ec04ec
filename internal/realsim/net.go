package realsim

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/core/memnode"
)

// errKilled is the error of every command once a stuck schedule is being
// torn down: it makes every round end at once.
var errKilled = errors.New("realsim: schedule torn down")

// network is the Driver every Client of a schedule uses: memnode's
// in-memory nodes behind a network of its own, which loses, delays and
// duplicates commands, replies and announcements, pauses nodes, and keeps
// each node's commands in the order they were sent (the order the Driver
// contract asks of a real driver's one connection per node). It runs
// inside a synctest bubble: its delays are time.Sleep and timers, which
// the bubble's virtual clock makes instant.
type network struct {
	cl     *memnode.Cluster
	cfg    *Config
	seed   uint64
	mu     sync.Mutex
	tail   []chan struct{} // per node: closed once its last command is applied
	paused []time.Time     // per node: commands wait until then (a SIGSTOPped server)
	down   []bool          // per node: crashed
	// released[node][key]: the key's last change on the node was a
	// release (free and announced), not an acquire (held, or expired
	// without a word).
	released []map[string]bool
	// slots[node][token]: the permit slot the node took for the token,
	// under DefectCountSemaphore.
	slots  []map[core.Token]string
	steps  int
	killed bool
	stuck  func(string) // reports a step bound passed
	bg     *group       // counts the goroutines of messages in flight
}

func newNetwork(cfg *Config, seed uint64, stuck func(string), bg *group) *network {
	n := &network{bg: bg, cl: memnode.New(cfg.Nodes, core.SystemClock{}), cfg: cfg, seed: seed,
		tail: make([]chan struct{}, cfg.Nodes), paused: make([]time.Time, cfg.Nodes), down: make([]bool, cfg.Nodes), stuck: stuck,
		released: make([]map[string]bool, cfg.Nodes)}
	for i := range n.released {
		n.released[i] = map[string]bool{}
	}
	if cfg.Defect == DefectCountSemaphore {
		n.slots = make([]map[core.Token]string, cfg.Nodes)
		for i := range n.slots {
			n.slots[i] = map[core.Token]string{}
		}
	}
	for i := range n.tail {
		ch := make(chan struct{})
		close(ch)
		n.tail[i] = ch
	}
	return n
}

// front is one process's view of the network: its Driver.
type front struct {
	n    *network
	proc int
}

var (
	_ core.Announcer = front{}
	_ core.Flusher   = (*batch)(nil)
)

func (f front) Nodes() int            { return f.n.cl.Nodes() }
func (f front) NodeName(i int) string { return f.n.cl.NodeName(i) }

func (f front) Begin(ctx context.Context) core.Batch {
	return &batch{n: f.n, proc: f.proc, ctx: ctx, replies: make(chan core.Reply, 2*core.MaxNodes)}
}

// setDown crashes node i, or brings it back. It reports false, doing
// nothing, for a crash of a node that is down already: two crashes of one
// node overlap into one, whose restart comes at the first one's end, and
// does not empty the node again once it is back (an instant restart
// without keys, outside the assumptions).
func (n *network) setDown(i int, down bool) bool {
	n.mu.Lock()
	if down && n.down[i] {
		n.mu.Unlock()
		return false
	}
	n.down[i] = down
	n.mu.Unlock()
	n.cl.SetDown(i, down)
	return true
}

// freeOn returns how many nodes, up and not paused, have key free now by
// a release, which announces it: a key that expired is not counted, as a
// waiter learns of it only from the expiry a failed attempt read.
func (n *network) freeOn(key string) int {
	n.mu.Lock()
	now := time.Now()
	usable := make([]bool, len(n.down))
	for i := range usable {
		usable[i] = !n.down[i] && !now.Before(n.paused[i]) && n.released[i][key]
	}
	n.mu.Unlock()
	k := 0
	for i, ok := range usable {
		if _, _, held := n.cl.Get(i, key); ok && !held {
			k++
		}
	}
	return k
}

// kill makes every later command fail at once, and ends every pause.
func (n *network) kill() {
	n.mu.Lock()
	n.killed = true
	clear(n.paused)
	n.mu.Unlock()
}

// pause makes node i hold its commands until d from now.
func (n *network) pause(i int, d time.Duration) {
	n.mu.Lock()
	if !n.killed {
		n.paused[i] = time.Now().Add(d)
	}
	n.mu.Unlock()
}

// fate is what the network does to one command.
type fate struct {
	reqDelay, repDelay time.Duration
	lostReq, lostRep   bool
	dup                bool
}

// draw decides a command's fate. Its randomness is keyed by what the
// command is and when it is sent, in virtual time, rather than drawn from
// one stream in the order goroutines happen to send: a replay of the seed
// gives a command the fate it had, as long as the schedule reaches it at
// the same instant.
func (n *network) draw(proc, node int, cmd *core.Command) (f fate, killed bool, over bool) {
	c := &n.cfg.Faults
	n.mu.Lock()
	n.steps++
	killed, over = n.killed, n.steps > n.cfg.stepBound()
	n.mu.Unlock()
	if killed || over {
		return f, true, over
	}
	r := n.keyed(1, proc, node, cmd.Key, uint64(cmd.Op))
	f.reqDelay = r.between(n.cfg.Latency[0], n.cfg.Latency[1])
	f.repDelay = r.between(n.cfg.Latency[0], n.cfg.Latency[1])
	f.lostReq = r.chance(c.LostRequest)
	f.lostRep = r.chance(c.LostReply)
	f.dup = r.chance(c.Dup)
	if r.chance(c.Late) {
		f.reqDelay += r.between(0, c.LateBy) // applied late, past its deadline perhaps
	}
	if r.chance(c.Late) {
		f.repDelay += r.between(0, c.LateBy)
	}
	return f, false, false
}

// keyed returns a generator seeded by the schedule's seed, what a fault
// is about and the virtual time.
func (n *network) keyed(kind uint64, proc, node int, key string, more uint64) *prng {
	h := n.seed ^ kind*0x9e3779b97f4a7c15
	for _, v := range []uint64{uint64(proc), uint64(node), more, uint64(time.Now().UnixNano())} { //nolint:gosec // G115: hashed
		h = (h ^ v) * 0x100000001b3
		h ^= h >> 29
	}
	for i := 0; i < len(key); i++ {
		h = (h ^ uint64(key[i])) * 0x100000001b3
	}
	p := newPRNG(h)
	p.Uint64()
	return p
}

// deliver sends cmd to node for process proc: it is applied after the
// request's delay, after every earlier command to the node and once the
// node is not paused, and its reply goes to out after the reply's delay,
// unless lost.
func (n *network) deliver(proc, node int, cmd core.Command, out chan<- core.Reply) {
	f, killed, over := n.draw(proc, node, &cmd)
	if over {
		n.stuck("step bound passed: more than " + itoa(n.cfg.stepBound()) + " commands")
		n.kill()
	}
	if killed {
		out <- core.Reply{Node: node, Status: core.StatusError, Err: errKilled}
		return
	}
	n.mu.Lock()
	prev := n.tail[node]
	mine := make(chan struct{})
	n.tail[node] = mine
	n.mu.Unlock()
	n.bg.add()
	go func() {
		defer n.bg.done()
		time.Sleep(f.reqDelay)
		<-prev
		for {
			n.mu.Lock()
			until := n.paused[node]
			n.mu.Unlock()
			d := time.Until(until)
			if d <= 0 {
				break
			}
			time.Sleep(d)
		}
		var r core.Reply
		if !f.lostReq {
			r = n.apply(node, cmd)
			trace("process %d: node %d: %v %s fair=%v ticket=%d: %v%s", proc, node, cmd.Op, cmd.Key, cmd.Fair, cmd.Ticket, r.Status, map[bool]string{true: " (reply lost)"}[f.lostRep])
			if f.dup {
				n.apply(node, cmd) // a retransmission: its reply is dropped
			}
		}
		close(mine)
		if f.lostReq || f.lostRep {
			if f.lostReq {
				trace("process %d: node %d: %v %s: request lost", proc, node, cmd.Op, cmd.Key)
			}
			return
		}
		time.Sleep(f.repDelay)
		out <- r
	}()
}

// apply runs cmd on the node, with the planted defect of a broken
// configuration if any.
func (n *network) apply(node int, cmd core.Command) core.Reply {
	d := n.cfg.Defect
	acquire := cmd.Op == core.OpAcquire || cmd.Op == core.OpAcquireFenced
	if d == DefectFastNodeClock && (acquire || cmd.Op == core.OpExtend) {
		cmd.TTL /= 2 // the node's clock runs twice as fast: its keys expire early
	}
	if d == DefectSubsetAll && acquire && cmd.Kind == core.KindAll {
		cmd.Keys = core.NewKeyList([]string{cmd.Keys.At(0)}) // the script takes the first key alone
	}
	if d == DefectCountSemaphore {
		cmd = n.countSlot(node, cmd)
	}
	b := n.cl.Begin(context.Background())
	b.Send(node, cmd, time.Now().Add(time.Hour))
	r, _ := b.Receive(nil) // no latency in memnode: ready at once
	b.Close()
	r.Node = node
	if r.Status == core.StatusOK {
		switch cmd.Op {
		case core.OpRelease, core.OpAcquire, core.OpAcquireFenced:
			n.mu.Lock()
			n.released[node][cmd.Key] = cmd.Op == core.OpRelease
			n.mu.Unlock()
		}
	}
	if d == DefectCountSemaphore {
		n.countedSlot(node, &cmd, &r)
	}
	switch {
	case d == DefectReaderBesideWriter && acquire && cmd.Kind == core.KindRead && r.Status == core.StatusHeld:
		if _, _, writer := n.cl.Get(node, cmd.Key); writer {
			// The writer's key is held: a reader is admitted beside it
			// (without entering the reader set: writers that come later
			// are not held back by it either).
			r.Status, r.TTL = core.StatusOK, 0
			if cmd.Op == core.OpAcquireFenced {
				r.Fence = n.cl.Fence(node, cmd.Key)
			}
		}
	case d == DefectReaderNoFence && cmd.Kind == core.KindRead && cmd.Op == core.OpAcquireFenced && r.Status == core.StatusOK:
		r.Fence = 0 // the counter is not read
	case d == DefectLyingNodes && node < n.cfg.Nodes/2+1 && node > 0 &&
		(cmd.Op == core.OpAcquire || cmd.Op == core.OpAcquireFenced) && r.Status == core.StatusHeld:
		// A node that says yes to a held key: with node 0 honest, a
		// minority of honest nodes makes a quorum.
		r.Status, r.TTL = core.StatusOK, 0
		if cmd.Op == core.OpAcquireFenced {
			r.Fence = n.cl.Fence(node, cmd.Key) + 1
		}
	case d == DefectLyingExtend && cmd.Op == core.OpExtend && r.Status != core.StatusOK && r.Status != core.StatusError:
		r.Status, r.Err = core.StatusOK, nil // an extension that failed, reported done
	case d == DefectFlatFence && cmd.Op == core.OpAcquireFenced && r.Status == core.StatusOK:
		r.Fence = 1 // a counter that is never raised
	case d == DefectDeafWatch && r.Status == core.StatusHeld && r.TTL > 0:
		r.TTL = time.Hour // the holder's expiry, misreported
	}
	return r
}

// batch is one round over the network.
type batch struct {
	n       *network
	proc    int
	ctx     context.Context
	cmds    []sent
	flushed int
	replies chan core.Reply
	pending []sent // sent, not yet answered
}

type sent struct {
	node     int
	cmd      core.Command
	deadline time.Time
}

func (b *batch) Send(node int, cmd core.Command, deadline time.Time) {
	b.cmds = append(b.cmds, sent{node, cmd, deadline})
}

// Flush puts the commands sent so far on the network.
func (b *batch) Flush() {
	for ; b.flushed < len(b.cmds); b.flushed++ {
		s := b.cmds[b.flushed]
		b.pending = append(b.pending, s)
		b.n.deliver(b.proc, s.node, s.cmd, b.replies)
	}
}

func (b *batch) Receive(cancel <-chan struct{}) (core.Reply, bool) {
	b.Flush()
	for len(b.pending) > 0 {
		first := 0
		for j, p := range b.pending {
			if p.deadline.Before(b.pending[first].deadline) {
				first = j
			}
		}
		t := time.NewTimer(time.Until(b.pending[first].deadline))
		select {
		case r := <-b.replies:
			t.Stop()
			if j := b.find(r.Node); j >= 0 {
				b.drop(j)
				return r, true
			}
			// a reply to a command that already timed out: dropped
		case <-t.C:
			p := b.pending[first]
			b.drop(first)
			return core.Reply{Node: p.node, Status: core.StatusTimeout, Err: &memnode.NodeError{Node: p.node, Name: b.n.cl.NodeName(p.node), Err: memnode.ErrTimeout}}, true
		case <-cancel:
			t.Stop()
			return core.Reply{}, false
		}
	}
	return core.Reply{}, false
}

func (b *batch) find(node int) int {
	for j, p := range b.pending {
		if p.node == node {
			return j
		}
	}
	return -1
}

func (b *batch) drop(j int) { b.pending = append(b.pending[:j], b.pending[j+1:]...) }

// Close puts any buffered command on the network (a cleanup's releases);
// replies still due land in the buffered channel and are dropped.
func (b *batch) Close() { b.Flush() }

// Watch relays the memnode cluster's announcements of key through the
// network's faults: each is lost, late or duplicated at the configured
// rates.
func (f front) Watch(key string, notify func(node int)) core.Watch {
	w := &watch{n: f.n, proc: f.proc, key: key, notify: notify}
	w.inner = f.n.cl.Watch(key, w.deliver)
	return w
}

type watch struct {
	n      *network
	proc   int
	key    string
	notify func(int)
	inner  core.Watch
	mu     sync.Mutex
	done   bool
	count  uint64
}

func (w *watch) deliver(node int) {
	c := &w.n.cfg.Faults
	w.mu.Lock()
	w.count++ // announcements at one instant differ
	r := w.n.keyed(2, w.proc, node, w.key, w.count)
	w.mu.Unlock()
	lost, late, dup := r.chance(c.AnnLost), r.chance(c.AnnLate), r.chance(c.AnnDup)
	by := r.between(0, c.LateBy)
	switch {
	case lost || w.n.cfg.Defect == DefectDeafWatch:
	case late:
		time.AfterFunc(by, func() { w.fire(node) })
	default:
		w.fire(node)
		if dup {
			w.fire(node)
		}
	}
}

func (w *watch) fire(node int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		trace("process %d: announcement of %s from node %d", w.proc, w.key, node)
		w.notify(node)
	}
}

func (w *watch) Listening() uint32 { return w.inner.Listening() }

func (w *watch) Stop() {
	w.inner.Stop()
	w.mu.Lock()
	w.done = true
	w.mu.Unlock()
}

// countSlot is the per-node count semaphore's admission
// (DefectCountSemaphore): an acquire of a permit slot that the node holds
// for another token takes, instead, a free slot of the node's choosing
// while the node holds fewer than K of them; a command of a token the
// node gave a slot of its choosing goes to that slot.
func (n *network) countSlot(node int, cmd core.Command) core.Command {
	key, slot, ok := slotOf(cmd.Key)
	if !ok || cmd.Kind != core.KindMutex || slot >= n.cfg.Permits {
		return cmd
	}
	n.mu.Lock()
	mine, took := n.slots[node][cmd.Token]
	n.mu.Unlock()
	if took {
		cmd.Key = mine
		return cmd
	}
	if cmd.Op != core.OpAcquire && cmd.Op != core.OpAcquireFenced {
		return cmd
	}
	if _, _, held := n.cl.Get(node, cmd.Key); !held {
		return cmd
	}
	for j := range n.cfg.Permits {
		if _, _, held := n.cl.Get(node, permitKey(key, j)); !held {
			cmd.Key = permitKey(key, j) // fewer than K held: admitted
			break
		}
	}
	return cmd
}

// countedSlot keeps the slot a node took for a token (countSlot) for the
// token's later commands, until its release.
func (n *network) countedSlot(node int, cmd *core.Command, r *core.Reply) {
	if _, _, ok := slotOf(cmd.Key); !ok || r.Status != core.StatusOK {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	switch cmd.Op {
	case core.OpAcquire, core.OpAcquireFenced:
		n.slots[node][cmd.Token] = cmd.Key
	case core.OpRelease:
		delete(n.slots[node], cmd.Token)
	}
}
