// Package memnode is an in-memory reference implementation of core.Driver:
// N independent "Redis masters" with real key-expiry semantics on an
// injected clock, plus fault switches (latency, down, hung, restart) and a
// manual clock for deterministic tests. It imports the standard library and
// core only, so it runs wherever core does (WebAssembly, TinyGo).
//
// A batch buffers its commands, as a pipelining driver does, and they take
// effect together at its next Receive or Close, at one instant and under
// one lock of the cluster's; each reply becomes ready after its node's
// latency, or at the deadline as core.StatusTimeout if that comes first.
// Receive returns the earliest ready reply and sleeps on the clock until
// then, so with a ManualClock a round's timing is exact and repeatable.
package memnode

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redlock-go/redlock/core"
)

// ErrDown is the error of a node switched down, like a refused connection.
var ErrDown = errors.New("memnode: connection refused")

// ErrTimeout is the error of a reply that missed its deadline.
var ErrTimeout = errors.New("memnode: deadline exceeded")

// Cluster is N in-memory nodes. It is safe for concurrent use.
type Cluster struct {
	clock core.Clock
	// epoch is the clock's reading at New: the cluster keeps its times as
	// instants, nanoseconds since it, which compare and add as integers.
	// With the system clock it reads the monotonic clock alone, as the
	// time since epoch, which costs one clock read where time.Now costs
	// two (wall and monotonic).
	epoch  time.Time
	system bool // clock is core.SystemClock
	nodes  []*node
	// nmu guards every node's state: a batch's commands, one per node,
	// take it once, where a lock per node would cost one per command.
	nmu sync.Mutex

	spare atomic.Pointer[batch] // one reused batch, without a lock
	mu    sync.Mutex
	free  []*batch // more reused batches: Begin allocates nothing in steady state

	watching atomic.Int32 // live watches: releases skip wmu while there are none
	wmu      sync.Mutex
	watches  map[string][]*watch
}

// entry is one key. Entries are kept by pointer and reused after release
// or expiry, so that each command costs one map lookup and a steady
// workload allocates nothing; sweep bounds the dead ones.
type entry struct {
	token   core.Token
	expires instant
	live    bool
	handed  bool // Fair: handed to the cluster's waiter, holding no token
}

// node is one node's state; the cluster's nmu guards it.
type node struct {
	c    *Cluster
	name string

	data    map[string]*entry
	fences  map[string]uint64 // fence counters, by locked key: they never expire
	dead    int               // entries in data that are not live
	latency time.Duration
	down    bool
	hung    bool
	muted   bool // releases are not announced (lost announcements)
	calls   int
	queued  map[string]instant // Fair: keys the cluster's waiter is queued for, until then
	// resending: the command runs as a resend (Cluster.Resend).
	resending bool
	// The kinds beyond the mutex (kinds.go): reader sets, by key, each
	// reader's token with its expiry; waiting writers' marks, by key;
	// the keys a multi-key release freed, a bit per key of Keys in
	// order, which the batch announces.
	readers map[string]map[core.Token]instant
	marks   map[string]mark
	annKeys uint64
	// lastKey's entry is last: the entry the last command found or
	// made, so that the next command on the key (a release after an
	// acquire) finds it without a map lookup. last is nil when unknown;
	// entries leave data only in the sweep and Restart, which forget it.
	lastKey string
	last    *entry
}

// New returns a cluster of n empty nodes on clock.
func New(n int, clock core.Clock) *Cluster {
	c := &Cluster{clock: clock, nodes: make([]*node, n)}
	if _, ok := clock.(core.SystemClock); ok {
		c.epoch, c.system = time.Now(), true
	} else if clock != nil { // a nil clock fails at the first command, not here
		c.epoch = clock.Now()
	}
	for i := range c.nodes {
		c.nodes[i] = &node{c: c, name: "mem:" + strconv.Itoa(i), data: make(map[string]*entry), fences: make(map[string]uint64)}
	}
	return c
}

// Nodes returns N.
func (c *Cluster) Nodes() int { return len(c.nodes) }

// NodeName returns "mem:i".
func (c *Cluster) NodeName(i int) string { return c.nodes[i].name }

// SetLatency makes node i answer d after each command.
func (c *Cluster) SetLatency(i int, d time.Duration) { c.with(i, func(n *node) { n.latency = d }) }

// SetDown makes node i refuse every command at once with ErrDown. A down
// node announces nothing, and its watches are not listening; going down
// and coming back up notify every watch, as a lost and restarted
// subscription would.
func (c *Cluster) SetDown(i int, down bool) {
	changed := false
	c.with(i, func(n *node) { changed, n.down = n.down != down, down })
	if changed {
		c.announceAll(i)
	}
}

// SetMuted makes node i's releases go unannounced while muted, though its
// watches stay listening: announcements lost on the way.
func (c *Cluster) SetMuted(i int, muted bool) { c.with(i, func(n *node) { n.muted = muted }) }

// Announce makes node i announce a release of key whether or not one took
// place: a forged or duplicated announcement.
func (c *Cluster) Announce(i int, key string) { c.announce(i, key) }

// SetHung makes node i ignore commands: each one times out at its deadline
// and has no effect, like a SIGSTOPped server.
func (c *Cluster) SetHung(i int, hung bool) { c.with(i, func(n *node) { n.hung = hung }) }

// Restart empties node i, fence counters included, like a Redis restart
// without persistence.
func (c *Cluster) Restart(i int) {
	c.with(i, func(n *node) {
		clear(n.data)
		clear(n.fences)
		clear(n.readers)
		clear(n.marks)
		n.dead, n.last = 0, nil
	})
}

// Fence returns key's fence counter on node i: 0 if it was never
// incremented (core.OpAcquireFenced).
func (c *Cluster) Fence(i int, key string) uint64 {
	var f uint64
	c.with(i, func(n *node) { f = n.fences[key] })
	return f
}

// Calls returns how many commands node i has received.
func (c *Cluster) Calls(i int) int {
	var k int
	c.with(i, func(n *node) { k = n.calls })
	return k
}

// Set stores key with token on node i for ttl, as another client would.
func (c *Cluster) Set(i int, key string, token core.Token, ttl time.Duration) {
	now := c.now()
	c.with(i, func(n *node) {
		e := n.entry(key)
		n.alive(e, now)
		n.set(e, key, token, now.add(ttl))
	})
}

// Get returns the token of key on node i and its remaining time to live,
// or ok == false if the key does not exist (or has expired).
func (c *Cluster) Get(i int, key string) (token core.Token, ttl time.Duration, ok bool) {
	now := c.now()
	c.with(i, func(n *node) {
		if e := n.lookup(key, now); e != nil {
			token, ttl, ok = e.token, e.expires.sub(now), true
		}
	})
	return token, ttl, ok
}

// Holders returns how many nodes hold key with token.
func (c *Cluster) Holders(key string, token core.Token) int {
	k := 0
	for i := range c.nodes {
		if t, _, ok := c.Get(i, key); ok && t == token {
			k++
		}
	}
	return k
}

// instant is a time on the cluster's clock: nanoseconds since its epoch.
type instant int64

// maxInstant is the largest instant.
const maxInstant instant = 1<<63 - 1

// add returns t plus d, saturated at the largest instant.
func (t instant) add(d time.Duration) instant {
	if d > 0 && t > maxInstant-instant(d) {
		return maxInstant
	}
	return t + instant(d)
}

// sub returns t minus u.
func (t instant) sub(u instant) time.Duration { return time.Duration(t - u) }

// now reads the cluster's clock. With the system clock it reads the
// monotonic clock alone: the cluster compares its readings, and the
// deadlines it is given, by their monotonic readings, as time.Time does.
func (c *Cluster) now() instant {
	if c.system {
		return instant(time.Since(c.epoch))
	}
	return c.instant(c.clock.Now())
}

// instant returns t, a reading of the cluster's clock, as an instant.
// time.Time's Sub saturates about 292 years from the epoch, and so does
// an instant.
func (c *Cluster) instant(t time.Time) instant { return instant(t.Sub(c.epoch)) }

func (c *Cluster) with(i int, f func(*node)) {
	c.nmu.Lock()
	defer c.nmu.Unlock()
	f(c.nodes[i])
}

// exec applies cmd on node i at now, writes the reply to *r and returns
// its delay. hung reports a node that never answers; announce, a release
// to announce (once nmu is unlocked). It takes the command by pointer and
// writes the reply in place, into the batch's slot: this is the reference
// driver's hot path. c.nmu is held.
func (n *node) exec(i int, cmd *core.Command, now instant, r *core.Reply) (delay time.Duration, hung, announce bool) {
	*r = core.Reply{Node: i}
	n.calls++
	if n.hung || n.down {
		if !n.hung {
			r.Status, r.Err = core.StatusError, &NodeError{Node: i, Name: n.name, Err: ErrDown}
		}
		return 0, n.hung, false
	}
	if kindCommand(cmd) {
		announce = n.applyKind(cmd, now, r) && !n.muted
		if r.Status == 0 {
			r.Status, r.Err = core.StatusError, &NodeError{Node: i, Name: n.name, Err: errors.New("memnode: no " + cmd.Op.String() + " for a " + cmd.Kind.String() + " lock")}
		}
		return n.latency, false, announce
	}
	var handed bool
	if cmd.Fair {
		r.Status, handed = n.applyFair(cmd, now)
	} else {
		r.Status = n.apply(cmd, now)
	}
	switch {
	case r.Status == core.StatusOK && cmd.Op == core.OpAcquireFenced:
		r.Fence = n.fences[cmd.Key] + 1
		n.fences[cmd.Key] = r.Fence
	case r.Status == core.StatusHeld && (cmd.Op == core.OpAcquire && cmd.Probe || cmd.Op == core.OpAcquireFenced):
		r.TTL = n.entry(cmd.Key).expires.sub(now) // live: apply found it
	}
	announce = (handed || r.Status == core.StatusOK && cmd.Op == core.OpRelease && !cmd.Fair && !cmd.Quiet) && !n.muted
	if r.Status == 0 {
		r.Status, r.Err = core.StatusError, &NodeError{Node: i, Name: n.name, Err: errors.New("memnode: unknown op " + cmd.Op.String())}
	}
	return n.latency, false, announce
}

// entry returns key's entry, live or dead, or nil: data[key], from last
// when it is key's. c.nmu is held.
func (n *node) entry(key string) *entry {
	if n.last != nil && key == n.lastKey {
		return n.last
	}
	e := n.data[key]
	if e != nil {
		n.lastKey, n.last = key, e
	}
	return e
}

// lookup returns key's live entry at now, or nil; an entry found expired
// is marked dead, as Redis would forget the key. c.nmu is held.
func (n *node) lookup(key string, now instant) *entry {
	e := n.entry(key)
	if !n.alive(e, now) {
		return nil
	}
	return e
}

// alive reports whether e (which may be nil) is live at now, marking an
// expired entry dead. c.nmu is held.
func (n *node) alive(e *entry, now instant) bool {
	if e == nil || !e.live {
		return false
	}
	if now >= e.expires {
		e.live = false
		n.dead++
		return false
	}
	return true
}

// set makes key live with token until expires in e, key's entry, which is
// nil when the key was never seen or dead otherwise, and returns the
// entry. c.nmu is held.
func (n *node) set(e *entry, key string, token core.Token, expires instant) *entry {
	switch {
	case e == nil:
		e = new(entry)
		n.data[key] = e
		n.lastKey, n.last = key, e
	case !e.live:
		n.dead--
	}
	e.token, e.expires, e.live, e.handed = token, expires, true, false
	return e
}

// kill marks e dead and sweeps the dead entries once they outnumber the
// live ones by far, so that memory stays bounded by the live keys. c.nmu
// is held.
func (n *node) kill(e *entry) {
	e.live = false
	n.dead++
	if n.dead > 1024 && n.dead > 2*(len(n.data)-n.dead) {
		for k, d := range n.data {
			if !d.live {
				delete(n.data, k)
			}
		}
		n.dead, n.last = 0, nil
	}
}

// apply runs cmd against the data with Redis's semantics, with one map
// lookup; c.nmu is held.
func (n *node) apply(cmd *core.Command, now instant) core.Status {
	e := n.entry(cmd.Key)
	live := n.alive(e, now)
	switch cmd.Op {
	case core.OpAcquire, core.OpAcquireFenced:
		if live {
			return core.StatusHeld
		}
		n.set(e, cmd.Key, cmd.Token, now.add(cmd.TTL))
		return core.StatusOK
	case core.OpRelease, core.OpExtend, core.OpRaiseFence:
		switch {
		case !live:
			return core.StatusMissing
		case e.token != cmd.Token:
			return core.StatusHeld
		case cmd.Op == core.OpRelease:
			n.kill(e)
		case cmd.Op == core.OpExtend:
			e.expires = now.add(cmd.TTL)
		case cmd.Fence > n.fences[cmd.Key]:
			n.fences[cmd.Key] = cmd.Fence
		}
		return core.StatusOK
	}
	return 0
}

var _ core.Announcer = (*Cluster)(nil)

// Watch relays the releases of key: notify(i) is called when node i
// deletes key in a release (core.OpRelease), unless muted, synchronously
// from the batch's Receive or Close that ran it; for every node up, from Watch itself, as
// its subscription starts; and when node i goes down or comes back up
// (SetDown). Listening returns the nodes that are not down.
func (c *Cluster) Watch(key string, notify func(node int)) core.Watch {
	w := &watch{c: c, key: key, notify: notify}
	c.wmu.Lock()
	if c.watches == nil {
		c.watches = make(map[string][]*watch)
	}
	c.watches[key] = append(c.watches[key], w)
	c.watching.Add(1)
	c.wmu.Unlock()
	up := w.Listening()
	for i := range c.nodes {
		if up&(1<<i) != 0 {
			w.fire(i) // subscribed: a release may have gone unheard before
		}
	}
	return w
}

type watch struct {
	c      *Cluster
	key    string
	notify func(int)
	mu     sync.Mutex // held while notify runs: Stop waits for it
	done   bool
}

func (w *watch) Listening() uint32 {
	var up uint32
	w.c.nmu.Lock()
	for i, n := range w.c.nodes {
		if !n.down {
			up |= 1 << i
		}
	}
	w.c.nmu.Unlock()
	return up
}

func (w *watch) Stop() {
	c := w.c
	c.wmu.Lock()
	ws := c.watches[w.key]
	for j, x := range ws {
		if x == w {
			ws = append(ws[:j], ws[j+1:]...)
			c.watching.Add(-1)
			break
		}
	}
	if len(ws) == 0 {
		delete(c.watches, w.key)
	} else {
		c.watches[w.key] = ws
	}
	c.wmu.Unlock()
	w.mu.Lock()
	w.done = true
	w.mu.Unlock()
}

// announce calls the notify of every watch of key for node i.
func (c *Cluster) announce(i int, key string) {
	if c.watching.Load() == 0 {
		return
	}
	c.wmu.Lock()
	ws := append([]*watch(nil), c.watches[key]...)
	c.wmu.Unlock()
	for _, w := range ws {
		w.fire(i)
	}
}

// announceAll notifies every watch, of every key, for node i.
func (c *Cluster) announceAll(i int) {
	c.wmu.Lock()
	var ws []*watch
	for _, k := range c.watches {
		ws = append(ws, k...)
	}
	c.wmu.Unlock()
	for _, w := range ws {
		w.fire(i)
	}
}

func (w *watch) fire(i int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.notify(i)
	}
}

// NodeError is a failure of one node, naming it.
type NodeError struct {
	Node int
	Name string
	Err  error
}

func (e *NodeError) Error() string {
	return "node " + strconv.Itoa(e.Node) + " (" + e.Name + "): " + e.Err.Error()
}
func (e *NodeError) Unwrap() error { return e.Err }

// pending is one command of a batch: buffered until the batch's next
// Receive or Close runs it, then its reply.
type pending struct {
	cmd   core.Command
	node  int
	dl    instant // the deadline
	ann   uint64  // a multi-key release's keys to announce (node.annKeys)
	reply core.Reply
	ready instant
}

type batch struct {
	c    *Cluster
	n    int // commands pending: in the slots at[:n]
	done int // commands run: at[:done], the others wait for run
	sent [core.MaxNodes]pending
	// at orders the slots of sent: at[:n] are the pending commands, in
	// the order Receive searches them, at[n:] the free slots. Receive
	// moves the last one into the place of the reply it takes, one byte
	// rather than a slot.
	at [core.MaxNodes]uint8
	// now is the clock reading of the last run: commands sent back to
	// back execute at one instant, which saves a clock read per command
	// (about 50 ns each on a VM).
	now instant
	// same reports that every pending reply is ready at one instant, the
	// common case (no latency, no timeout): Receive then takes the first
	// without searching, which is the one its search would find.
	same bool
	// deadline is the last deadline a send was given, and dl it as an
	// instant: a multiplexed round gives every node the same one.
	deadline time.Time
	dl       instant
}

// Begin returns a batch; ctx is not used.
func (c *Cluster) Begin(ctx context.Context) core.Batch {
	if b := c.spare.Swap(nil); b != nil {
		return b
	}
	c.mu.Lock()
	var b *batch
	if k := len(c.free); k > 0 {
		b = c.free[k-1]
		c.free = c.free[:k-1]
	}
	c.mu.Unlock()
	if b == nil {
		b = &batch{c: c}
		for k := range b.at {
			b.at[k] = uint8(k)
		}
	}
	return b
}

func (b *batch) Send(i int, cmd core.Command, deadline time.Time) {
	if b.n >= len(b.sent) {
		b.overflow(i, &cmd)
		return
	}
	if deadline != b.deadline || b.n == 0 {
		b.deadline, b.dl = deadline, b.c.instant(deadline)
	}
	p := &b.sent[b.at[b.n]]
	p.cmd, p.node, p.dl = cmd, i, b.dl
	b.n++
}

// run executes the commands sent since the last run, at one reading of
// the clock and under one lock of the nodes, and then announces the
// releases among them.
func (b *batch) run() {
	if b.done == b.n {
		return
	}
	c := b.c
	b.now = c.now()
	var announce uint32 // bit k: the command in slot at[k] is a release to announce
	c.nmu.Lock()
	first := &b.sent[b.at[0]]
	for k := b.done; k < b.n; k++ {
		p := &b.sent[b.at[k]]
		delay, hung, ann := c.nodes[p.node].exec(p.node, &p.cmd, b.now, &p.reply)
		p.ready = b.now.add(delay)
		if hung || p.ready > p.dl {
			p.reply.Status, p.reply.Err = core.StatusTimeout, &NodeError{Node: p.node, Name: c.nodes[p.node].name, Err: ErrTimeout}
			p.ready = p.dl
		}
		b.same = k == 0 || b.same && p.ready == first.ready
		if ann {
			announce |= 1 << k // bit k: at[k]
			p.ann = c.nodes[p.node].annKeys
		}
	}
	c.nmu.Unlock()
	for k := b.done; announce != 0; k++ {
		if announce&(1<<k) != 0 {
			announce &^= 1 << k
			p := &b.sent[b.at[k]]
			c.announceKeys(p.node, &p.cmd, p.ann)
		}
	}
	b.done = b.n
}

// Flush runs the commands sent so far (core.Flusher): a later batch's
// commands run after them.
func (b *batch) Flush() { b.run() }

// Resend runs cmd on node i at once and returns its reply, as a driver
// sends a release again on a new connection after its first send's broke
// (drivers/engine), whether or not that first send ran. A Fair release
// then deletes only the waiter's token, not a key handed to the waiter,
// and hands the key on or queues the waiter only if it did (renewing an
// entry the waiter still has): a second run changes nothing a first run
// did not. Any other command runs as Send runs it.
func (c *Cluster) Resend(i int, cmd core.Command) core.Reply {
	var r core.Reply
	c.nmu.Lock()
	n := c.nodes[i]
	n.resending = true
	_, hung, ann := n.exec(i, &cmd, c.now(), &r)
	n.resending = false
	mask := n.annKeys
	c.nmu.Unlock()
	if ann {
		c.announceKeys(i, &cmd, mask)
	}
	if hung {
		r.Status, r.Err = core.StatusTimeout, &NodeError{Node: i, Name: n.name, Err: ErrTimeout}
	}
	return r
}

// overflow runs a send past MaxNodes, which the core never makes: it
// takes effect at once, and is never answered.
func (b *batch) overflow(i int, cmd *core.Command) {
	var r core.Reply
	c := b.c
	c.nmu.Lock()
	_, _, ann := c.nodes[i].exec(i, cmd, c.now(), &r)
	mask := c.nodes[i].annKeys
	c.nmu.Unlock()
	if ann {
		c.announceKeys(i, cmd, mask)
	}
}

func (b *batch) Receive(cancel <-chan struct{}) (core.Reply, bool) {
	b.run()
	if b.n == 0 {
		return core.Reply{}, false
	}
	first := 0
	for j := 1; j < b.n && !b.same; j++ {
		if b.sent[b.at[j]].ready < b.sent[b.at[first]].ready {
			first = j
		}
	}
	p := &b.sent[b.at[first]]
	// A reply ready no later than the last run needs no clock read.
	if p.ready <= b.now {
		if closed(cancel) {
			return core.Reply{}, false
		}
	} else if wait := p.ready.sub(b.c.now()); wait > 0 {
		if !sleep(b.c.clock, wait, cancel) {
			return core.Reply{}, false
		}
	} else if closed(cancel) {
		return core.Reply{}, false
	}
	b.n--
	b.done = b.n
	b.at[first], b.at[b.n] = b.at[b.n], b.at[first]
	return p.reply, true
}

func (b *batch) Close() {
	b.run() // a cleanup's releases that nobody awaits
	b.n, b.done = 0, 0
	if b.c.spare.CompareAndSwap(nil, b) {
		return
	}
	b.c.mu.Lock()
	b.c.free = append(b.c.free, b)
	b.c.mu.Unlock()
}

// closed reports whether cancel is closed; a nil cancel (a release, a
// cleanup, a context that is never done) is not, without a select.
func closed(cancel <-chan struct{}) bool {
	if cancel == nil {
		return false
	}
	select {
	case <-cancel:
		return true
	default:
		return false
	}
}

// sleep waits d on clock, or until cancel is closed: with the clock's own
// Sleep when it has one (ManualClock's advances at once), else on a timer.
func sleep(clock core.Clock, d time.Duration, cancel <-chan struct{}) bool {
	if s, ok := clock.(interface {
		Sleep(time.Duration, <-chan struct{}) bool
	}); ok {
		return s.Sleep(d, cancel)
	}
	done := make(chan struct{})
	t := clock.AfterFunc(d, func() { close(done) })
	select {
	case <-done:
		return true
	case <-cancel:
		t.Stop()
		return false
	}
}

// Clock returns the clock the cluster reads: the deadlines of its
// batches are readings of it.
func (c *Cluster) Clock() core.Clock { return c.clock }

// ManualClock is a Clock that moves only when told to, or when Sleep or
// AfterFunc is called: they advance it by d at once. It is safe for concurrent use;
// its zero value starts at the zero time.
type ManualClock struct {
	mu  sync.Mutex
	now time.Time
}

// NewManualClock returns a clock reading start.
func NewManualClock(start time.Time) *ManualClock { return &ManualClock{now: start} }

// Now returns the clock's reading.
func (m *ManualClock) Now() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.now
}

// Advance moves the clock by d, which may be negative (a clock running
// backwards).
func (m *ManualClock) Advance(d time.Duration) {
	m.mu.Lock()
	m.now = m.now.Add(d)
	m.mu.Unlock()
}

// Sleep advances the clock by d and returns true, unless cancel is already
// closed.
func (m *ManualClock) Sleep(d time.Duration, cancel <-chan struct{}) bool {
	select {
	case <-cancel:
		return false
	default:
	}
	if d > 0 {
		m.Advance(d)
	}
	return true
}

// AfterFunc advances the clock by d at once and calls f in a goroutine of
// its own. The Timer it returns stops nothing: f is already on its way.
func (m *ManualClock) AfterFunc(d time.Duration, f func()) core.Timer {
	if d > 0 {
		m.Advance(d)
	}
	go f()
	return spentTimer{}
}

// spentTimer is a ManualClock's timer, which has always fired.
type spentTimer struct{}

func (spentTimer) Stop() bool               { return false }
func (spentTimer) Reset(time.Duration) bool { return false }
