package sim

import (
	"math/rand/v2"
	"slices"
	"time"

	"github.com/redlock-go/redlock/core"
)

// ScriptModel is one simulated node alone, as the schedules' nodes apply
// commands (node.apply, applyFair): the simulation's model of the
// drivers' scripts, exposed so that a differential test can run the same
// commands through it and through the real scripts on redis-server and
// require the same replies and the same state
// (drivers/engine's TestScriptsMatchSimModel). It holds the one
// key of a schedule, its fence counter and its waiter queue; waiters are
// the schedule's clients, numbered from 0. Times are the node's clock,
// read as durations since an epoch the caller chooses.
type ScriptModel struct {
	w *world
	n *node
}

// NewScriptModel returns an empty node for waiters waiters, with faults
// (the node-side ones: Faults.SkipHead, SkipRaise, QueueLoss, QueueSkew
// are defects of the model that a differential test must see).
func NewScriptModel(waiters int, faults Faults) *ScriptModel {
	w := &world{cfg: Config{Nodes: 1, Clients: waiters, Faults: faults}, releasedAt: -1,
		rng: rand.New(rand.NewPCG(1, 0x5eed))} //nolint:gosec // G404: reproducible draws of the faults; nothing secret
	w.nodes = []node{{up: true, subs: make([]uint64, waiters)}}
	return &ScriptModel{w: w, n: &w.nodes[0]}
}

// Apply runs cmd from waiter at now and returns the node's reply: its
// Status, an OpAcquireFenced's Fence, and a refused acquire's holder TTL.
func (m *ScriptModel) Apply(waiter int, cmd core.Command, now time.Duration) core.Reply {
	msg := message{cmd: cmd, appliedAt: -1}
	st := m.n.apply(&msg, waiter, int64(now), m.w)
	return core.Reply{Status: st, Fence: msg.fence, TTL: msg.ttl}
}

// ApplyResent is Apply for a Fair release that a driver sends again on a
// new connection after its first send's broke (drivers/engine's resend,
// wire.Resent), whether or not that first send ran: it deletes only the
// caller's token, not a key handed to the caller, and hands the key on or
// queues the caller only if it did (renewing an entry the caller still
// has). The simulation's schedules do not break connections under a
// command, so only the differential test sends it.
func (m *ScriptModel) ApplyResent(waiter int, cmd core.Command, now time.Duration) core.Reply {
	msg := message{cmd: cmd, appliedAt: -1, resent: cmd.Fair && cmd.Op == core.OpRelease}
	st := m.n.apply(&msg, waiter, int64(now), m.w)
	return core.Reply{Status: st, Fence: msg.fence, TTL: msg.ttl}
}

// ScriptState is what a ScriptModel holds.
type ScriptState struct {
	// Held: the key exists at the time State was asked for, with Token,
	// or handed to waiter Handed (Handed >= 0, Token zero), until
	// Expires.
	Held    bool
	Token   core.Token
	Handed  int
	Expires time.Duration
	// Fence is the key's fence counter.
	Fence uint64
	// Queue is the waiter queue as stored, its stale entries included,
	// ordered by waiter, until QueueExpires, when its keys expire.
	Queue        []QueueEntry
	QueueExpires time.Duration
}

// QueueEntry is one waiter in the queue, with its ticket and the node
// time at which it leaves.
type QueueEntry struct {
	Waiter int
	Ticket int64
	Due    time.Duration
}

// State returns the node's state at now.
func (m *ScriptModel) State(now time.Duration) ScriptState {
	n := m.n
	s := ScriptState{Handed: -1, Fence: n.fence}
	if n.alive(int64(now)) {
		s.Held, s.Token, s.Handed, s.Expires = true, n.tok, n.handed-1, time.Duration(n.exp)
	}
	if len(n.queue) > 0 && int64(now) < n.queueExp {
		s.QueueExpires = time.Duration(n.queueExp)
	}
	for _, e := range n.queue {
		if s.QueueExpires == 0 {
			break
		}
		s.Queue = append(s.Queue, QueueEntry{Waiter: e.c, Ticket: e.ticket, Due: time.Duration(e.due)})
	}
	slices.SortFunc(s.Queue, func(a, b QueueEntry) int { return a.Waiter - b.Waiter })
	return s
}

// Shift moves every time the node holds (the key's expiry, the queue's
// deadlines) d earlier: as its clock moving d forward.
func (m *ScriptModel) Shift(d time.Duration) {
	n := m.n
	n.exp -= int64(d)
	n.queueExp -= int64(d)
	for k := range n.queue {
		n.queue[k].due -= int64(d)
	}
}

// SetExpires sets the key's expiry, and SetDue waiter's deadline: a
// differential test sets them to the server's, which ran its command at
// an instant the test knows only within a window.
func (m *ScriptModel) SetExpires(at time.Duration) { m.n.exp = int64(at) }

// SetQueueExpires sets when the queue's keys expire.
func (m *ScriptModel) SetQueueExpires(at time.Duration) { m.n.queueExp = int64(at) }

// SetDue sets waiter's deadline in the queue, if it is queued.
func (m *ScriptModel) SetDue(waiter int, at time.Duration) {
	for k := range m.n.queue {
		if m.n.queue[k].c == waiter {
			m.n.queue[k].due = int64(at)
		}
	}
}

// SetKeys names the node's keys for the kinds beyond the mutex
// (core.KindRead, KindWrite, KindAll): main is the key of the mutex and
// of the reader/writer lock (its reader set and writer's mark are
// main's), others are the other keys a multi-key command or a mutex
// command may name, at most 8. Until SetKeys, every command's key is the
// one key, as for the mutex alone.
func (m *ScriptModel) SetKeys(main string, others ...string) {
	if len(others) > maxKeys {
		panic("sim: more keys than a node holds")
	}
	m.w.main, m.w.xnames = main, [maxKeys]string{}
	copy(m.w.xnames[:], others)
}

// KindState is what a ScriptModel holds of the kinds beyond the mutex,
// at some time: the keys that exist and their holders (the main key
// among them), the non-zero fence counters, the reader set's unexpired
// readers and the waiting writer's mark, each with when it expires on
// the node's clock. Keys named only by SetKeys.
type KindState struct {
	Keys    map[string]KeyState
	Fences  map[string]uint64
	Readers map[core.Token]time.Duration
	Mark    KeyState
}

// KeyState is a key's (or the mark's) holder and expiry; the zero value
// is a key that does not exist.
type KeyState struct {
	Token   core.Token
	Expires time.Duration
}

// KindState returns the node's state of its named keys at now.
func (m *ScriptModel) KindState(now time.Duration) KindState {
	n, t := m.n, int64(now)
	s := KindState{Keys: map[string]KeyState{}, Fences: map[string]uint64{}, Readers: map[core.Token]time.Duration{}}
	name := func(i int) string {
		if i == mainKey {
			return m.w.main
		}
		return m.w.xnames[i]
	}
	for i := mainKey; i < maxKeys; i++ {
		if name(i) == "" {
			continue
		}
		if has, tok, exp := n.get(i, t); has {
			s.Keys[name(i)] = KeyState{tok, time.Duration(exp)}
		}
		if f := *n.fenceOf(i); f != 0 {
			s.Fences[name(i)] = f
		}
	}
	x := n.x()
	if x.mark != (core.Token{}) && t < x.markExp {
		s.Mark = KeyState{x.mark, time.Duration(x.markExp)}
	}
	if t < x.rexp {
		for _, r := range x.readers {
			if r.exp > t {
				s.Readers[r.tok] = time.Duration(r.exp)
			}
		}
	}
	return s
}
