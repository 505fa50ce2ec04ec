package memnode

import (
	"time"

	"github.com/redlock-go/redlock/core"
)

// The kinds beyond the mutex (core.Kind) run as the drivers' scripts do
// (drivers/wire: read_*.lua, write_*.lua, all_*.lua), on the same
// keys as the mutex's:
//
//   - a reader (core.KindRead) is an entry of the key's reader set, with
//     an expiry of its own; it is admitted while neither the key (a
//     writer) nor a waiting writer's mark lives, and its release is
//     announced on the key when it leaves no unexpired reader;
//   - a writer (core.KindWrite) takes the key as the mutex does, once no
//     unexpired reader is left; refused for readers, it marks the key as
//     waited for, for its TTL, which keeps new readers out. Its release
//     is the mutex's, and deletes its own mark too (core.SameAcquisition)
//     unless its Ticket is positive (the cleanup of an attempt whose
//     writer waits on); either deletion is announced. Its extension and
//     fence raise are the mutex's;
//   - a multi-key lock (core.KindAll) takes every key of Command.Keys or
//     none, and releases (announcing each key), extends or raises the
//     fences of the keys only as a whole.
//
// A reader set has no expiry of its own here: the scripts keep it at
// least as long as its longest-lived entry, which is all that can be
// seen of it.

// mark is a waiting writer's mark on a key.
type mark struct {
	token   core.Token
	expires instant
}

// kindCommand reports whether cmd runs a kind's own semantics
// (applyKind) rather than the mutex's: every command of a reader and of
// a multi-key lock, and a writer's acquire and release.
func kindCommand(cmd *core.Command) bool {
	switch cmd.Kind {
	case core.KindMutex:
		return false
	case core.KindWrite:
		return cmd.Op != core.OpExtend && cmd.Op != core.OpRaiseFence
	}
	return true
}

// applyKind runs cmd, a command of kindCommand, at now, and writes its
// status, fence and TTL into *r; it reports whether the command frees
// keys to announce: cmd.Key, or for a multi-key lock the keys of
// n.annKeys. A status left 0 is an op the kind has not (a reader's
// fence raise). c.nmu is held.
func (n *node) applyKind(cmd *core.Command, now instant, r *core.Reply) bool {
	switch cmd.Kind {
	case core.KindRead:
		return n.applyRead(cmd, now, r)
	case core.KindWrite:
		if cmd.Op == core.OpRelease {
			return n.writeRelease(cmd, now, r)
		}
		n.applyWrite(cmd, now, r)
	case core.KindAll:
		return n.applyAll(cmd, now, r)
	}
	return false
}

// liveReaders returns key's reader set without its expired entries, or
// nil if none is left. An empty set is kept for the key's next reader,
// which then costs no allocation, unless the node keeps many. c.nmu is
// held.
func (n *node) liveReaders(key string, now instant) map[core.Token]instant {
	rs := n.readers[key]
	for t, exp := range rs {
		if exp <= now {
			delete(rs, t)
		}
	}
	if len(rs) == 0 {
		if rs != nil && len(n.readers) > maxEmptySets {
			delete(n.readers, key)
		}
		return nil
	}
	return rs
}

// maxEmptySets bounds the reader sets a node keeps for keys with no
// reader (liveReaders): beyond, an emptied set is forgotten.
const maxEmptySets = 1024

// liveMark returns key's writer's mark if it lives at now. c.nmu is held.
func (n *node) liveMark(key string, now instant) (mark, bool) {
	m, ok := n.marks[key]
	if ok && now >= m.expires {
		delete(n.marks, key)
		return m, false
	}
	return m, ok
}

func (n *node) applyRead(cmd *core.Command, now instant, r *core.Reply) bool {
	switch cmd.Op {
	case core.OpAcquire, core.OpAcquireFenced:
		e := n.lookup(cmd.Key, now)
		m, marked := n.liveMark(cmd.Key, now)
		if e != nil || marked {
			r.Status = core.StatusHeld
			if e != nil {
				r.TTL = e.expires.sub(now)
			}
			if marked {
				r.TTL = max(r.TTL, m.expires.sub(now))
			}
			return false
		}
		n.liveReaders(cmd.Key, now)
		rs := n.readers[cmd.Key]
		if rs == nil {
			if n.readers == nil {
				n.readers = make(map[string]map[core.Token]instant)
			}
			rs = make(map[core.Token]instant)
			n.readers[cmd.Key] = rs
		}
		rs[cmd.Token] = now.add(cmd.TTL)
		r.Status = core.StatusOK
		if cmd.Op == core.OpAcquireFenced {
			r.Fence = n.fences[cmd.Key] // read, never raised
		}
	case core.OpRelease:
		r.Status = core.StatusMissing
		if exp, ok := n.readers[cmd.Key][cmd.Token]; ok {
			if exp > now {
				r.Status = core.StatusOK
			}
			delete(n.readers[cmd.Key], cmd.Token)
		}
		// Only a release that removed a live reader announces: a refused
		// reader's cleanup would wake every waiter, itself included.
		return n.liveReaders(cmd.Key, now) == nil && r.Status == core.StatusOK
	case core.OpExtend:
		r.Status = core.StatusMissing
		if rs := n.readers[cmd.Key]; rs[cmd.Token] > now {
			rs[cmd.Token] = now.add(cmd.TTL)
			r.Status = core.StatusOK
		}
	}
	return false
}

// applyWrite runs a writer's acquire. c.nmu is held.
func (n *node) applyWrite(cmd *core.Command, now instant, r *core.Reply) {
	e := n.entry(cmd.Key)
	if n.alive(e, now) {
		r.Status, r.TTL = core.StatusHeld, e.expires.sub(now)
		return
	}
	if rs := n.liveReaders(cmd.Key, now); rs != nil {
		var last instant
		for _, exp := range rs {
			last = max(last, exp)
		}
		if n.marks == nil {
			n.marks = make(map[string]mark)
		}
		n.marks[cmd.Key] = mark{token: cmd.Token, expires: now.add(cmd.TTL)}
		r.Status, r.TTL = core.StatusHeld, last.sub(now)
		return
	}
	if cmd.Op == core.OpAcquireFenced {
		r.Fence = n.fences[cmd.Key] + 1
		n.fences[cmd.Key] = r.Fence
	}
	n.set(e, cmd.Key, cmd.Token, now.add(cmd.TTL))
	if m, ok := n.liveMark(cmd.Key, now); ok && core.SameAcquisition(m.token, cmd.Token) {
		delete(n.marks, cmd.Key)
	}
	r.Status = core.StatusOK
}

// writeRelease runs a writer's release: the mutex's compare-and-delete,
// then, unless cmd.Ticket is positive (the cleanup of an attempt whose
// writer waits on), the deletion of the key's mark if it is the
// writer's own. It reports whether it deleted either, to announce.
// c.nmu is held.
func (n *node) writeRelease(cmd *core.Command, now instant, r *core.Reply) bool {
	r.Status = n.apply(cmd, now)
	freed := r.Status == core.StatusOK
	if m, ok := n.liveMark(cmd.Key, now); ok && cmd.Ticket <= 0 && core.SameAcquisition(m.token, cmd.Token) {
		delete(n.marks, cmd.Key)
		freed = true
	}
	return freed
}

// applyAll runs a multi-key command; a release sets n.annKeys. c.nmu is
// held.
func (n *node) applyAll(cmd *core.Command, now instant, r *core.Reply) bool {
	switch cmd.Op {
	case core.OpAcquire, core.OpAcquireFenced:
		held := false
		for _, k := range cmd.Keys.All() {
			if e := n.lookup(k, now); e != nil {
				held, r.TTL = true, max(r.TTL, e.expires.sub(now))
			}
		}
		if held {
			r.Status = core.StatusHeld
			return false
		}
		if cmd.Op == core.OpAcquireFenced {
			for _, k := range cmd.Keys.All() {
				r.Fence = max(r.Fence, n.fences[k])
			}
			r.Fence++
			for _, k := range cmd.Keys.All() {
				n.fences[k] = r.Fence
			}
		}
		for _, k := range cmd.Keys.All() {
			n.set(n.entry(k), k, cmd.Token, now.add(cmd.TTL))
		}
		r.Status = core.StatusOK
	case core.OpRelease:
		n.annKeys = 0
		other := false
		for j, k := range cmd.Keys.All() {
			switch e := n.lookup(k, now); {
			case e == nil:
			case e.token == cmd.Token && !e.handed:
				n.kill(e)
				n.annKeys |= 1 << j
			default:
				other = true
			}
		}
		switch {
		case n.annKeys != 0:
			r.Status = core.StatusOK
			return true
		case other:
			r.Status = core.StatusHeld
		default:
			r.Status = core.StatusMissing
		}
	case core.OpExtend, core.OpRaiseFence:
		missing := false
		for _, k := range cmd.Keys.All() {
			switch e := n.lookup(k, now); {
			case e == nil:
				missing = true
			case e.token != cmd.Token || e.handed:
				r.Status = core.StatusHeld
				return false
			}
		}
		if missing {
			r.Status = core.StatusMissing
			return false
		}
		for _, k := range cmd.Keys.All() {
			if cmd.Op == core.OpExtend {
				n.entry(k).expires = now.add(cmd.TTL)
			} else if cmd.Fence > n.fences[k] {
				n.fences[k] = cmd.Fence
			}
		}
		r.Status = core.StatusOK
	}
	return false
}

// announceKeys announces the release of cmd's keys on node i: cmd.Key,
// or, for a multi-key lock, the keys of mask (a bit per key of Keys, in
// order).
func (c *Cluster) announceKeys(i int, cmd *core.Command, mask uint64) {
	if cmd.Kind != core.KindAll {
		c.announce(i, cmd.Key)
		return
	}
	for j, k := range cmd.Keys.All() {
		if mask&(1<<j) != 0 {
			c.announce(i, k)
		}
	}
}

// Readers returns the unexpired readers of key on node i (core.KindRead)
// and the time each has left; nil if none.
func (c *Cluster) Readers(i int, key string) map[core.Token]time.Duration {
	now := c.now()
	var out map[core.Token]time.Duration
	c.with(i, func(n *node) {
		for t, exp := range n.readers[key] {
			if exp > now {
				if out == nil {
					out = make(map[core.Token]time.Duration)
				}
				out[t] = exp.sub(now)
			}
		}
	})
	return out
}

// Mark returns the token of the writer waiting for key's readers on node
// i (core.KindWrite) and the time its mark has left, or ok == false if
// no mark lives.
func (c *Cluster) Mark(i int, key string) (token core.Token, ttl time.Duration, ok bool) {
	now := c.now()
	c.with(i, func(n *node) {
		if m, live := n.marks[key]; live && now < m.expires {
			token, ttl, ok = m.token, m.expires.sub(now), true
		}
	})
	return token, ttl, ok
}
