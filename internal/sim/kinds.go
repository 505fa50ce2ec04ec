package sim

import (
	"cmp"
	"slices"
	"strconv"
	"time"

	"github.com/redlock-go/redlock/core"
)

// The kinds beyond the mutex (core.Kind): a reader/writer lock on the
// schedule's key, a multi-key lock of some of allKeys, and a semaphore of
// permit slots, each a mutex key of its own (core.Permits). A node holds
// their state beside the mutex's key (xdata): the key itself is the
// writer's, as the scripts keep it.

// Primitive is what a schedule's clients take.
type Primitive uint8

const (
	// PrimMutex means every acquisition takes the key (core.KindMutex).
	PrimMutex Primitive = iota
	// PrimRW means every acquisition is a reader (core.KindRead) or a writer
	// (core.KindWrite) of the key (Config.RW).
	PrimRW
	// PrimAll means every acquisition takes a random non-empty subset of the
	// first Config.Keys of allKeys, in a random order (core.KindAll).
	PrimAll
	// PrimPermits means every acquisition takes one of Config.Permits permits
	// of the key (core.Permits), or, with Faults.CountSemaphore, the key
	// from nodes that count their holders.
	PrimPermits
)

// String names the primitive.
func (p Primitive) String() string {
	switch p {
	case PrimMutex:
		return "mutex"
	case PrimRW:
		return "rw"
	case PrimAll:
		return "all"
	case PrimPermits:
		return "permits"
	}
	return "primitive(" + strconv.Itoa(int(p)) + ")"
}

// RWConfig says which acquisitions of a PrimRW schedule read.
type RWConfig struct {
	// Writers, when above zero, makes clients 0 to Writers-1 writers and
	// the others readers, for the whole schedule; otherwise each
	// acquisition is a reader with probability ReadShare.
	Writers   int
	ReadShare float64
	// ReaderWork, when set, bounds the readers' work instead of
	// Config.Work, and they never lease: a stream of readers, each
	// holding under a TTL, that a writer waits behind within WriterBound.
	ReaderWork [2]time.Duration
	// WriterBound, when set, is the longest a writer's acquisition may
	// take, from its start to its grant (or to the schedule's end): the
	// checker of Violations.WriterWait. It counts waits behind writers
	// too, so it is meant for schedules of one writer (Writers 1).
	WriterBound time.Duration
}

const (
	// maxKeys bounds the keys of a PrimAll schedule and the permits of a
	// PrimPermits one.
	maxKeys = 8
	// maxReaders bounds the entries of a node's reader set: every client's
	// reader tokens that are not released yet, and the count semaphore's
	// holders.
	maxReaders = 256
)

// allKeys are the keys of PrimAll schedules: one hash tag, as a Cluster
// member requires.
var allKeys = func() (k [maxKeys]string) {
	for i := range k {
		k[i] = "{" + key + "}:" + strconv.Itoa(i)
	}
	return k
}()

// permitKeys are the permit slots' keys of PrimPermits schedules.
var permitKeys = func() (k [maxKeys]string) {
	for i := range k {
		k[i] = core.PermitKey(key, i)
	}
	return k
}()

// xdata is what a node holds for the kinds beyond the mutex: the keys of
// KindAll or of permit slots (each a mutex key), their fence counters,
// the reader set of the key (ReadersPrefix) with each entry's expiry and
// the set's own, and the waiting writer's mark (WriterWaitPrefix). The
// count semaphore (Faults.CountSemaphore) keeps its holders in the reader
// set. Every time is the node's clock, absolute, as replicas hold them.
type xdata struct {
	keys    [maxKeys]xkey
	fences  [maxKeys]uint64
	readers []xreader
	rexp    int64
	mark    core.Token
	markExp int64
	// restored: it came with a failover (failover.go), as node.restored.
	restored bool
}

type xkey struct {
	has  bool
	tok  core.Token
	exp  int64
	late bool // set by a command applied after its deadline
}

type xreader struct {
	tok  core.Token
	exp  int64
	late bool
}

// clone returns a copy of x that shares nothing with it: what a replica
// is sent.
func (x *xdata) clone() *xdata {
	if x == nil {
		return nil
	}
	y := *x
	y.readers = append([]xreader(nil), x.readers...)
	return &y
}

// persisted returns what survives of x when its server restarts empty:
// the fence counters, unless lost.
func (x *xdata) persisted(lose bool) *xdata {
	if x == nil || lose {
		return nil
	}
	return &xdata{fences: x.fences}
}

// loseFences forgets the counters (Faults.LoseCounters).
func (x *xdata) loseFences() {
	if x != nil {
		x.fences = [maxKeys]uint64{}
	}
}

// mainKey is the index keyIndex gives the node's own key: the mutex's,
// the writer's, the one of the reader set and the mark.
const mainKey = -1

// keyIndex returns the index of the node's key name: mainKey for the
// schedule's key (for any key, on a ScriptModel whose keys were not
// named), else its index among the other keys (allKeys, or permitKeys
// in a PrimPermits schedule, or a ScriptModel's), or -2 for none.
func (w *world) keyIndex(name string) int {
	if w.main == "" || name == w.main {
		return mainKey
	}
	for i, k := range w.xnames {
		if k == name && k != "" {
			return i
		}
	}
	return -2
}

// The node's keys by index (keyIndex): its own key, or one of xd's.
// get reads key i at node time now: whether it is set and unexpired,
// with which token, until when.
func (n *node) get(i int, now int64) (bool, core.Token, int64) {
	if i == mainKey {
		return n.has && now < n.exp, n.tok, n.exp
	}
	k := &n.x().keys[i]
	return k.has && now < k.exp, k.tok, k.exp
}

// set sets key i to tok until exp (node time), at real time t, by a
// command applied late or not.
func (n *node) set(i int, tok core.Token, exp, t int64, late bool) {
	if i == mainKey {
		n.has, n.tok, n.exp, n.setAt, n.setLate, n.restored, n.handed = true, tok, exp, t, late, false, 0
		return
	}
	n.x().keys[i] = xkey{has: true, tok: tok, exp: exp, late: late}
}

func (n *node) del(i int) {
	if i == mainKey {
		n.has, n.handed = false, 0
		return
	}
	n.x().keys[i].has = false
}

func (n *node) expire(i int, exp int64) {
	if i == mainKey {
		n.exp = exp
		return
	}
	n.x().keys[i].exp = exp
}

// fenceOf returns key i's fence counter.
func (n *node) fenceOf(i int) *uint64 {
	if i == mainKey {
		return &n.fence
	}
	return &n.x().fences[i]
}

// x returns the node's state of the other kinds, made if need be.
func (n *node) x() *xdata {
	if n.xd == nil {
		n.xd = &xdata{}
	}
	return n.xd
}

// pttl returns a remaining time on the node's clock as the reply's TTL:
// rounded down to the millisecond, as redis-server's PTTL is.
func pttl(exp, now int64) time.Duration {
	return time.Duration(exp-now) / time.Millisecond * time.Millisecond
}

// heldTTL is the TTL the scripts of the kinds beyond the mutex reply to
// an acquire they refuse, whatever its Probe: pttl, at least 1 ms.
func heldTTL(exp, now int64) time.Duration { return max(pttl(exp, now), time.Millisecond) }

// liveReaders drops the expired entries of the reader set (and the set,
// once its own expiry passed) at node time now, and returns how many
// remain and the latest expiry among them.
func (x *xdata) liveReaders(now int64) (int, int64) {
	if len(x.readers) > 0 && now >= x.rexp {
		x.readers = x.readers[:0]
	}
	k, top := 0, int64(0)
	for _, r := range x.readers {
		if r.exp > now {
			x.readers[k] = r
			k++
			top = max(top, r.exp)
		}
	}
	x.readers = x.readers[:k]
	return k, top
}

// readerAt returns the index of tok's unexpired entry in the reader set,
// or -1.
func (x *xdata) readerAt(tok core.Token, now int64) int {
	x.liveReaders(now)
	for i, r := range x.readers {
		if r.tok == tok {
			return i
		}
	}
	return -1
}

// setReader adds tok's entry, or renews it, until now+ttl, and keeps the
// set itself at least that long (the script's PEXPIRE when PTTL < ttl).
func (x *xdata) setReader(tok core.Token, now int64, ttl time.Duration, late bool) {
	e := xreader{tok: tok, exp: now + int64(ttl), late: late}
	if i := x.readerAt(tok, now); i >= 0 {
		x.readers[i] = e
	} else {
		if len(x.readers) >= maxReaders {
			panic("sim: a node's reader set outgrew maxReaders")
		}
		x.readers = append(x.readers, e)
	}
	x.rexp = max(x.rexp, now+int64(ttl))
}

// applyKind runs a command of a kind beyond the mutex, or a mutex
// command on a permit slot or on a counting node (Faults.CountSemaphore),
// as the scripts do (core.Kind's semantics, one truth for the Lua,
// core/memnode and this model). It sets m.fence and m.ttl as apply does,
// and m.silent for a release that announces nothing.
func (n *node) applyKind(m *message, t int64, w *world) core.Status {
	cmd, f := m.cmd, &w.cfg.Faults
	now, x := n.clock(t), n.x()
	switch {
	case cmd.Kind == core.KindRead:
		return n.applyRead(m, now, x, f)
	case cmd.Kind == core.KindWrite && cmd.Op == core.OpRelease:
		return n.applyWriteRelease(m, t, now, x, f)
	case cmd.Kind == core.KindWrite: // its acquire; its extend and raise are the mutex's
		return n.applyWrite(m, t, now, x, w)
	case cmd.Kind == core.KindAll:
		return n.applyAll(m, t, now, w)
	case f.CountSemaphore && cmd.Key == key:
		return n.applyCount(m, now, x, w.cfg.Permits)
	}
	i := w.keyIndex(cmd.Key)
	if i < 0 {
		panic("sim: no key " + cmd.Key)
	}
	return n.applyMutex(m, t, now, i, f.SkipRaise)
}

// applyMutex runs a mutex command on key i.
func (n *node) applyMutex(m *message, t, now int64, i int, skipRaise bool) core.Status {
	cmd := m.cmd
	has, tok, exp := n.get(i, now)
	switch cmd.Op {
	case core.OpAcquire, core.OpAcquireFenced:
		if has {
			if cmd.Probe || cmd.Op == core.OpAcquireFenced {
				m.ttl = pttl(exp, now)
			}
			return core.StatusHeld
		}
		n.set(i, cmd.Token, now+int64(cmd.TTL), t, m.late)
		if cmd.Op == core.OpAcquireFenced {
			f := n.fenceOf(i)
			*f++
			m.fence = *f
		}
		return core.StatusOK
	}
	switch {
	case !has:
		return core.StatusMissing
	case tok != cmd.Token:
		return core.StatusHeld
	}
	switch cmd.Op {
	case core.OpRelease:
		n.del(i)
	case core.OpExtend:
		n.expire(i, now+int64(cmd.TTL))
	case core.OpRaiseFence:
		if f := n.fenceOf(i); cmd.Fence > *f && !skipRaise {
			*f = cmd.Fence
		}
	default:
		panic("sim: unknown op " + cmd.Op.String())
	}
	return core.StatusOK
}

// applyRead runs a reader's command on the key's reader set.
func (n *node) applyRead(m *message, now int64, x *xdata, f *Faults) core.Status {
	cmd := m.cmd
	if x.mark != (core.Token{}) && now >= x.markExp {
		x.mark = core.Token{}
	}
	switch cmd.Op {
	case core.OpAcquire, core.OpAcquireFenced:
		writer := n.has && now < n.exp && !f.ReaderBesideWriter
		marked := x.mark != (core.Token{})
		if writer || marked {
			var exp int64
			if writer {
				exp = n.exp
			}
			if marked {
				exp = max(exp, x.markExp)
			}
			m.ttl = heldTTL(exp, now)
			return core.StatusHeld
		}
		x.setReader(cmd.Token, now, cmd.TTL, m.late)
		if cmd.Op == core.OpAcquireFenced {
			m.fence = n.fence // the last writer's: a reader never raises it
		}
		return core.StatusOK
	case core.OpRelease:
		st := core.StatusMissing
		if i := x.readerAt(cmd.Token, now); i >= 0 {
			x.readers = append(x.readers[:i], x.readers[i+1:]...)
			st = core.StatusOK
		}
		if left, _ := x.liveReaders(now); left > 0 {
			m.silent = true // readers remain: no writer's wake-up
		} else if st != core.StatusOK {
			m.silent = true
		}
		return st
	case core.OpExtend:
		if x.readerAt(cmd.Token, now) < 0 {
			return core.StatusMissing
		}
		x.setReader(cmd.Token, now, cmd.TTL, m.late)
		return core.StatusOK
	}
	panic("sim: a reader's " + cmd.Op.String())
}

// applyWrite runs a writer's acquire: the mutex's SET NX on the key, once
// no unexpired reader is left; a writer refused for readers marks the
// key as waited for. Its other commands are the mutex's (node.apply).
func (n *node) applyWrite(m *message, t, now int64, x *xdata, w *world) core.Status {
	cmd := m.cmd
	if x.mark != (core.Token{}) && now >= x.markExp {
		x.mark = core.Token{}
	}
	if n.has && now < n.exp {
		m.ttl = heldTTL(n.exp, now)
		return core.StatusHeld
	}
	if left, top := x.liveReaders(now); left > 0 {
		if !w.cfg.Faults.NoWriterMark {
			x.mark, x.markExp = cmd.Token, now+int64(cmd.TTL)
			w.res.Kinds.Marks++
		}
		m.ttl = heldTTL(top, now)
		return core.StatusHeld
	}
	n.has, n.tok, n.exp, n.setAt, n.setLate, n.restored = true, cmd.Token, now+int64(cmd.TTL), t, m.late, false
	if cmd.Op == core.OpAcquireFenced {
		n.fence++
		m.fence = n.fence
	}
	if x.mark != (core.Token{}) && core.SameAcquisition(x.mark, cmd.Token) {
		x.mark = core.Token{} // its own mark, left by an earlier attempt of its acquisition
	}
	return core.StatusOK
}

// applyWriteRelease runs a writer's release (write_release.lua): the
// mutex's compare-and-delete of the key, then, unless it is the cleanup
// of a writer that waits on (Command.Ticket > 0, which keeps its mark),
// the key's mark if an attempt of the caller's acquisition left it
// (core.SameAcquisition), whatever the key's status. It announces if it
// deleted either.
func (n *node) applyWriteRelease(m *message, t, now int64, x *xdata, f *Faults) core.Status {
	st := n.applyMutex(m, t, now, mainKey, f.SkipRaise)
	if x.mark != (core.Token{}) && now >= x.markExp {
		x.mark = core.Token{}
	}
	if m.cmd.Ticket <= 0 && x.mark != (core.Token{}) && core.SameAcquisition(x.mark, m.cmd.Token) {
		x.mark, m.unmarked = core.Token{}, true
	}
	return st
}

// applyAll runs a multi-key command on every key of cmd.Keys at once.
func (n *node) applyAll(m *message, t, now int64, w *world) core.Status {
	cmd, f := m.cmd, &w.cfg.Faults
	if cmd.Keys.Len() > maxKeys+1 {
		panic("sim: more keys than a node holds")
	}
	var buf [maxKeys + 1]int
	idx := buf[:cmd.Keys.Len()]
	mine, other := 0, false
	for j, name := range cmd.Keys.All() {
		if idx[j] = w.keyIndex(name); idx[j] < mainKey {
			panic("sim: no key " + name)
		}
		switch has, tok, _ := n.get(idx[j], now); {
		case has && tok == cmd.Token:
			mine++
		case has:
			other = true
		}
	}
	switch cmd.Op {
	case core.OpAcquire, core.OpAcquireFenced:
		take := idx
		if f.TakeSubset && len(idx) > 1 {
			take = idx[:1] // the planted defect: the first key alone
		}
		var top int64
		held := false
		for _, i := range take {
			if has, _, exp := n.get(i, now); has {
				held = true
				top = max(top, exp)
			}
		}
		if held {
			m.ttl = heldTTL(top, now)
			return core.StatusHeld
		}
		var fence uint64
		for _, i := range take {
			n.set(i, cmd.Token, now+int64(cmd.TTL), t, m.late)
			fence = max(fence, *n.fenceOf(i))
		}
		if cmd.Op == core.OpAcquireFenced {
			fence++
			for _, i := range take {
				*n.fenceOf(i) = fence
			}
			m.fence = fence
		}
		return core.StatusOK
	case core.OpRelease:
		for _, i := range idx {
			if has, tok, _ := n.get(i, now); has && tok == cmd.Token {
				n.del(i)
			}
		}
		switch {
		case mine > 0:
			return core.StatusOK
		case other:
			m.silent = true
			return core.StatusHeld
		}
		m.silent = true
		return core.StatusMissing
	}
	if mine < len(idx) {
		if other {
			return core.StatusHeld
		}
		return core.StatusMissing
	}
	switch cmd.Op {
	case core.OpExtend:
		for _, i := range idx {
			n.expire(i, now+int64(cmd.TTL))
		}
	case core.OpRaiseFence:
		if !f.SkipRaise {
			for _, i := range idx {
				fp := n.fenceOf(i)
				*fp = max(*fp, cmd.Fence)
			}
		}
	default:
		panic("sim: unknown op " + cmd.Op.String())
	}
	return core.StatusOK
}

// applyCount is the unsound semaphore (Faults.CountSemaphore): the node
// counts the holders of the key in its holder set and admits one while
// fewer than permits hold; a client holds where a quorum admitted it.
func (n *node) applyCount(m *message, now int64, x *xdata, permits int) core.Status {
	cmd := m.cmd
	switch cmd.Op {
	case core.OpAcquire, core.OpAcquireFenced:
		left, top := x.liveReaders(now)
		if x.readerAt(cmd.Token, now) < 0 && left >= permits {
			if cmd.Probe || cmd.Op == core.OpAcquireFenced {
				m.ttl = pttl(top, now)
			}
			return core.StatusHeld
		}
		x.setReader(cmd.Token, now, cmd.TTL, m.late)
		if cmd.Op == core.OpAcquireFenced {
			n.fence++
			m.fence = n.fence
		}
		return core.StatusOK
	}
	i := x.readerAt(cmd.Token, now)
	if i < 0 {
		return core.StatusMissing
	}
	switch cmd.Op {
	case core.OpRelease:
		x.readers = append(x.readers[:i], x.readers[i+1:]...)
	case core.OpExtend:
		x.setReader(cmd.Token, now, cmd.TTL, m.late)
	case core.OpRaiseFence:
		n.fence = max(n.fence, cmd.Fence)
	}
	return core.StatusOK
}

// holdsToken reports whether the node still holds tok for a kind beyond
// the mutex, set by a command applied in time and not brought back by a
// failover: the release hygiene check's (client.checkHygiene).
func (n *node) holdsToken(tok core.Token, t int64) bool {
	x := n.xd
	if x == nil || x.restored {
		return false
	}
	now := n.clock(t)
	for i := range x.keys {
		if k := &x.keys[i]; k.has && now < k.exp && k.tok == tok && !k.late {
			return true
		}
	}
	if len(x.readers) > 0 && now < x.rexp {
		for _, r := range x.readers {
			if r.tok == tok && r.exp > now && !r.late {
				return true
			}
		}
	}
	return false
}

// drawTarget draws what the client's next acquisition takes.
func (c *client) drawTarget() {
	w := c.w
	c.target, c.mask = core.Target{Kind: core.KindMutex, Key: key}, 1
	switch w.cfg.Primitive {
	case PrimRW:
		c.target.Kind = core.KindWrite
		if rw := &w.cfg.RW; rw.Writers > 0 && c.id >= rw.Writers || rw.Writers == 0 && w.chance(rw.ReadShare) {
			c.target.Kind = core.KindRead
		}
	case PrimAll:
		n := w.cfg.Keys
		var mask uint32
		for mask == 0 {
			mask = uint32(w.rng.IntN(1 << n)) //nolint:gosec // G115: n <= maxKeys
		}
		keys := make([]string, 0, n)
		for _, i := range w.rng.Perm(n) {
			if mask&(1<<i) != 0 {
				keys = append(keys, allKeys[i])
			}
		}
		c.target, c.mask = core.Target{Kind: core.KindAll, Keys: keys}, mask
	}
}

// shortReader reports whether the client's lock is a reader of a stream
// of short readers (RWConfig.ReaderWork): it holds under a TTL, without
// a lease.
func (c *client) shortReader() bool {
	return c.target.Kind == core.KindRead && c.w.cfg.RW.ReaderWork[1] > 0
}

// checkWriterWait: a writer's acquisition, ending now (with the lock or
// not) or still under way when the schedule ends, waited at most
// RWConfig.WriterBound.
func (c *client) checkWriterWait(got bool) {
	w := c.w
	if got {
		k := &w.res.Kinds
		switch c.target.Kind {
		case core.KindRead:
			k.Reads++
		case core.KindWrite:
			d := w.now - c.startAt
			k.Writes++
			k.WriterWaits++
			k.WriterWaitTotal += d
			k.WriterWaitMax = max(k.WriterWaitMax, d)
		case core.KindAll:
			k.Alls++
		}
		if w.cfg.Primitive == PrimPermits {
			k.Permits++
		}
	}
	bound := w.cfg.RW.WriterBound
	if bound == 0 || c.target.Kind != core.KindWrite || w.now-c.startAt <= int64(bound) {
		return
	}
	w.violation(&w.res.Violations.WriterWait, "client %d: writer acquisition %d waited %v (lock: %v), past its bound %v",
		c.id, c.acqID, time.Duration(w.now-c.startAt), got, bound)
}

// checkKinds is checkExclusion for the kinds beyond the mutex: no writer
// overlaps another holder; no two multi-key locks with intersecting key
// sets overlap; at most Config.Permits holders of a semaphore at once.
func (w *world) checkKinds() {
	us := w.uses
	slices.SortFunc(us, func(a, b use) int { return cmp.Compare(a.start, b.start) })
	if w.cfg.Primitive == PrimPermits {
		w.checkPermits()
		return
	}
	for i, a := range us {
		for _, b := range us[i+1:] {
			if b.start >= a.end {
				break
			}
			if a.acq == b.acq || b.end <= b.start || a.end <= a.start {
				continue
			}
			switch {
			case w.cfg.Primitive == PrimRW && a.kind == core.KindRead && b.kind == core.KindRead,
				w.cfg.Primitive == PrimAll && a.mask&b.mask == 0:
				w.res.Kinds.Shared++
			case w.cfg.Primitive == PrimRW && (a.kind == core.KindWrite || b.kind == core.KindWrite):
				w.violation(&w.res.Violations.Writer, "client %d (%v, acquisition %d) used the lock in [%v, %v) while client %d (%v, acquisition %d) used it from %v",
					a.client, a.kind, a.acq, time.Duration(a.start), time.Duration(a.end), b.client, b.kind, b.acq, time.Duration(b.start))
			case w.cfg.Primitive == PrimAll && a.mask&b.mask != 0:
				w.violation(&w.res.Violations.KeySets, "client %d (acquisition %d, keys %b) used its keys in [%v, %v) while client %d (acquisition %d, keys %b) used its from %v",
					a.client, a.acq, a.mask, time.Duration(a.start), time.Duration(a.end), b.client, b.acq, b.mask, time.Duration(b.start))
			}
		}
	}
}

// checkPermits counts the times more than Config.Permits uses overlap.
func (w *world) checkPermits() {
	type edge struct {
		at    int64
		delta int
		u     int
	}
	var edges []edge
	for i, u := range w.uses {
		if u.end > u.start {
			edges = append(edges, edge{u.start, 1, i}, edge{u.end, -1, i})
		}
	}
	slices.SortFunc(edges, func(a, b edge) int {
		if c := cmp.Compare(a.at, b.at); c != 0 {
			return c
		}
		return cmp.Compare(a.delta, b.delta) // an end before a start at one instant
	})
	held, over := 0, false
	for _, e := range edges {
		held += e.delta
		if e.delta > 0 && held > 1 {
			w.res.Kinds.Shared++
		}
		switch {
		case held > w.cfg.Permits && !over:
			over = true
			u := w.uses[e.u]
			w.violation(&w.res.Violations.Permits, "client %d (acquisition %d) used a permit from %v: %d holders of %d permits",
				u.client, u.acq, time.Duration(u.start), held, w.cfg.Permits)
		case held <= w.cfg.Permits:
			over = false
		}
	}
}

// kindGrant is the largest fence of the acquisitions of a key completed
// so far: by whom, when.
type kindGrant struct {
	fence       uint64
	at          int64
	client, acq int
}

// checkKindFence is checkFence for the kinds beyond the mutex, in the
// order acquisitions completed (as checkFence, under the clock
// assumption): a writer's fence is above every writer's completed
// before, and a reader's, the last writer's, is no less than theirs; a
// multi-key lock's fence, or a permit slot's, is above that of every
// lock completed before that shares one of its keys.
func (w *world) checkKindFence(c *client) {
	g := c.lease.Grant()
	f := g.Fence()
	if f > 0 {
		w.res.Fenced++
	}
	var mask uint32
	switch t := g.Target(); {
	case t.Kind == core.KindRead || t.Kind == core.KindWrite:
		mask = 1
	case t.Kind == core.KindAll:
		mask = c.mask
	case w.keyIndex(t.Key) >= 0:
		mask = 1 << w.keyIndex(t.Key)
	default:
		mask = 1
	}
	reader := g.Target().Kind == core.KindRead
	for i := range maxKeys {
		if mask&(1<<i) == 0 {
			continue
		}
		top := &w.kindFences[i]
		if top.acq != 0 && (f < top.fence || f == top.fence && !reader) {
			w.violation(&w.res.Violations.Fence, "client %d (%v, acquisition %d) acquired with fence %d, below or at fence %d of client %d (acquisition %d) at %v",
				c.id, g.Target().Kind, c.acqID, f, top.fence, top.client, top.acq, time.Duration(top.at))
		}
		if !reader && (top.acq == 0 || f > top.fence) {
			*top = kindGrant{fence: f, at: w.now, client: c.id, acq: c.acqID}
		}
	}
}

// acquirer is what a client drives: a core.Acquisition, or the
// core.Permits of a semaphore's permit.
type acquirer interface {
	Phase() core.Phase
	Round() *core.Round
	RoundDone(now time.Time)
	Result() (core.Grant, error)
	Wake(now time.Time)
	WakeAt() time.Time
	WaitAgain(now time.Time)
	GiveUp(now time.Time)
	Cancel(now time.Time, cause error)
	SetListening(nodes uint32)
	Announce(node int, now time.Time)
}

// a returns the acquisition under way.
func (c *client) a() acquirer {
	if c.permits {
		return permitAcq{c}
	}
	return &c.acq
}

// permitAcq is a client's core.Permits as an acquirer: announcements are
// of the slot the event carried (client.annSlot).
type permitAcq struct{ c *client }

func (p permitAcq) Phase() core.Phase               { return p.c.perm.Phase() }
func (p permitAcq) Round() *core.Round              { return p.c.perm.Round() }
func (p permitAcq) RoundDone(now time.Time)         { p.c.perm.RoundDone(now) }
func (p permitAcq) Result() (core.Grant, error)     { return p.c.perm.Result() }
func (p permitAcq) Wake(now time.Time)              { p.c.perm.Wake(now) }
func (p permitAcq) WakeAt() time.Time               { return p.c.perm.WakeAt() }
func (p permitAcq) GiveUp(now time.Time)            { p.c.perm.GiveUp(now) }
func (p permitAcq) Cancel(now time.Time, err error) { p.c.perm.Cancel(now, err) }
func (p permitAcq) SetListening(nodes uint32)       { p.c.perm.SetListening(nodes) }
func (p permitAcq) Announce(node int, now time.Time) {
	p.c.perm.Announce(p.c.annSlot, node, now)
}

// WaitAgain is the rooms' (Config.Waiters), which a semaphore's permits
// do not join.
func (p permitAcq) WaitAgain(time.Time) { panic("sim: a permit waits in no room") }
