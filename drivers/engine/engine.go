// Package engine is the core.Driver behind every Redis client driver of
// this module. A driver supplies two things specific to its client: how to
// dial one node, and how to exchange a pipeline of commands for their
// replies on the connection it dialled (Conn). The engine does the rest,
// once for every client:
//
//   - Connections: one per node (two for a node with WAIT: see
//     NodeConfig), dialled when the engine starts and again
//     after any failure (a broken connection, a missed deadline, a
//     restart), and closed by Close. Each new connection's server is asked
//     its run_id (INFO server): a connection to a server another node
//     already reaches is refused with drivers.ErrMisconfigured, since one
//     server listed under two addresses would vote twice.
//   - Pipelines: each node has one goroutine that takes every command
//     queued for the node, from any number of rounds, and exchanges them
//     as one pipeline; while it is on the wire the next commands queue, so
//     pipelines grow with the load. A node's commands reach it in the
//     order their rounds queued them, on one connection: the straggling
//     SET of a decided round cannot be overtaken by the release that
//     undoes it. Over a Conn that is a Duplex, the goroutine writes each
//     pipeline without waiting for the replies to the ones before, which
//     a reader per connection reads in order, up to duplexDepth pipelines
//     in flight; beyond, the commands queue and go out together. When
//     that connection fails, every pipeline on it is answered as an
//     exchange's would be (Resends). A script other than a release sent
//     as EVALSHA is read before anything is written after it, so that a
//     NOSCRIPT sends it again, as EVAL, in its place. A client that cannot
//     write without reading (go-redis) implements Conn alone, and its
//     node carries one pipeline at a time.
//   - Resends: a command whose connection breaks before its reply (a
//     server restarting, a reset) is redialled and sent again, once, on
//     the next connection, when a second run can change nothing a first
//     run did not: a release (an attempt's cleanup included) or an
//     extension, each a compare-and-do on its token; an acquisition,
//     which may have set the key, fails. The resend keeps its round's
//     deadline (a release, the time on the wire its first send had,
//     and then its whole budget on the wire again: it bounds no lease), so
//     that the round still ends within its bound, the node timeout, which
//     the loss margin counts on: an extension that a resend counts ran
//     between the round's start and its deadline, as a first send's
//     would have. Until then a failed dial is tried again every
//     redialPause, and a LOADING reply (a server restarted over a large
//     dataset, which ran nothing) sends the command again a redialPause
//     later, as often as it comes; an acquisition answered LOADING fails.
//     The price: a restarting server cannot be told from a dead one, so
//     the first release or extension whose connection to a dead node
//     broke under it redials until a pause and a send no longer fit
//     before its round's deadline, then fails with the refusal, where it would
//     fail at once; with Sequential fan-out each such node adds
//     it to Extend and Unlock in turn, and Close may wait up to a
//     release's budget. A command whose first dial is refused fails at
//     once, as any does: a node that keeps refusing connections costs
//     no node timeout.
//     A Fair release goes again as itself, flagged (wire.Resent), so
//     that the script hands the key on, announces and queues only if it
//     deletes the caller's own token: run twice, it never hands the key
//     on twice. An extension on a node with WAIT goes again with a WAIT
//     behind it, and counts only once that WAIT is met: after a
//     failover, on the new master's replicas.
//   - Deadlines, on the Config's Clock: a round hears core.StatusTimeout
//     at a command's deadline, whatever its node does. Any other command
//     than a release whose deadline passed before it was sent is not sent. A
//     release is always sent, after the commands queued before it, and is
//     given on the wire at least the time it had when queued: the cleanup
//     of an attempt abandoned on a hung node must follow the SET that the
//     node will run when it wakes.
//   - Scripts: a node's commands carry the script's source (EVAL) until
//     the script has run on the current connection, and its SHA1 (EVALSHA)
//     after; NOSCRIPT is answered by sending the command again as EVAL.
//   - Fencing: core.OpAcquireFenced and core.OpRaiseFence run the fenced
//     scripts (wire.AcquireFenced, wire.RaiseFence) on the key and its
//     fence counter, whose name is written into the node's buffer as
//     tokens are, so that they cost no allocation either.
//   - Kinds (core.Kind): a reader's commands, a writer's acquire and a
//     multi-key lock's commands run scripts of their own (wire.ScriptOf),
//     on the key, its reader set and writer's mark (core.ReadersPrefix,
//     core.WriterWaitPrefix) and fence counters, named as the member
//     names auxiliary keys; a writer's release, extension and fence
//     raise are the mutex's. The mutex's commands go as they always
//     have. The engine is a core.KeysChecker: on a Cluster member a
//     multi-key lock's keys must share one hash slot (CheckKeys).
//   - Replies: decoded into core.Status, with an OpAcquireFenced's fence
//     in core.Reply.Fence; failures name the node. A batch is a
//     core.Gatherer: the round's goroutine is woken once the replies it
//     needs are in, not once per reply.
//
// Deadline, reply decoding and naming rules are tested here against a fake
// connection on a manual clock; the drivers' conformance suites test them
// against real servers.
package engine

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers/internal/dialspec"
	"github.com/redlock-go/redlock/drivers/wire"
)

// Conn is one connection to one node, as its client provides it. The
// engine uses it from one goroutine at a time (a Duplex: one writer and
// one reader).
type Conn interface {
	// Exchange sends cmds, in order, as one pipeline and reads one reply
	// per command into replies (len(replies) == len(cmds), zeroed). Each
	// command is its words: name first, such as
	// ["SET", key, token, "NX", "PX", "10000"].
	//
	// Error replies are replies (KindError), not errors. Exchange returns
	// an error when the connection failed: a network error, or ctx's
	// deadline, by which it must return. Replies read before the failure
	// may be filled in; the engine then closes the connection and dials a
	// new one for the next pipeline. The strings in cmds are valid until
	// Exchange returns; a client that may still write them after a failed
	// Exchange may keep them, since the engine never reuses their memory
	// after a failure.
	Exchange(ctx context.Context, cmds [][]string, replies []Reply) error
	// Close closes the connection. The engine calls it once, never during
	// an Exchange (a Duplex's may come during a Write or a Read).
	Close() error
}

// Dialer opens a connection to node i, within ctx's deadline.
type Dialer func(ctx context.Context, node int) (Conn, error)

// Kind is the type of a reply.
type Kind uint8

const (
	// KindNone means no reply was read (the zero value).
	KindNone Kind = iota
	// KindOK is the simple string OK.
	KindOK
	// KindNil is a nil reply (RESP2 null bulk or array, RESP3 null).
	KindNil
	// KindInt is an integer, in Reply.Int.
	KindInt
	// KindError is an error reply, in Reply.Err (such as NOSCRIPT, WRONGPASS).
	KindError
	// KindString is a string other than OK, simple or bulk, in Reply.Text.
	KindString
	// KindOther is any other reply; Reply.Err describes it.
	KindOther
)

// Reply is a node's reply to one command, as its client decoded it.
type Reply struct {
	Kind Kind
	Int  int64
	Text string
	Err  error
}

// String returns the reply for the string s: KindOK for "OK".
func String(s string) Reply {
	if s == "OK" {
		return Reply{Kind: KindOK}
	}
	return Reply{Kind: KindString, Text: s}
}

// Other returns the reply for an unexpected value v.
func Other(v any) Reply {
	return Reply{Kind: KindOther, Err: fmt.Errorf("unexpected reply %T %v", v, v)}
}

// DefaultDialTimeout bounds the dial each node makes when the engine
// starts, when Config.DialTimeout is 0.
const DefaultDialTimeout = 2 * time.Second

// Config configures an Engine.
type Config struct {
	// Names holds one name per node (its address), used in errors. N is
	// len(Names).
	Names []string
	// Dial opens a connection to a node.
	Dial Dialer
	// DialTimeout bounds the dial each node makes when the engine starts.
	// A dial made for a pipeline is bounded by the pipeline's deadline.
	// 0 means DefaultDialTimeout.
	DialTimeout time.Duration
	// Clock is the clock of the deadlines given to Send: the Client's
	// (redlock.Options.Clock). Nil means the system clock.
	Clock Clock
	// Subscribe opens a node's subscription connection, over which Watch
	// hears releases; nil: the client cannot subscribe, and Watch never
	// listens (waiters poll).
	Subscribe SubscribeDialer
	// Nodes, when not nil, holds what each node (as Names) asks beyond a
	// plain master: WAIT after its writes, the Cluster's names.
	Nodes []NodeConfig
	// Logger gets the one warning that release notifications are
	// unavailable (drivers.Options.Logger); nil logs nothing.
	Logger *slog.Logger
}

// NodeConfig is what a node asks beyond a plain master.
type NodeConfig struct {
	// Replicas, when positive, makes every acquisition, extension and
	// fence raise on the node (core.Waited) count only once WAIT Replicas
	// WaitTimeout, sent behind it on its connection, says enough replicas
	// hold it (core.Replicated): one WAIT behind a
	// pipeline's last write answers for all its writes (on a Cluster,
	// whose writes go to several masters, each write has its own). A WAIT
	// that replies fewer replicas (it timed out) fails the vote with
	// drivers.ErrNotReplicated. These writes
	// go on a second connection of the node, its WAIT lane, so that a
	// WAIT that blocks does not hold up the node's other commands; a
	// release follows its write there while that is unanswered (see
	// node.route). A connection whose master has fewer connected
	// replicas is refused, with drivers.ErrNotReplicated (a failed vote),
	// before any command goes on it.
	Replicas int
	// WaitTimeout is WAIT's timeout, sent in whole milliseconds (at least
	// 1); it must be positive when Replicas is.
	WaitTimeout time.Duration
	// Cluster: the node is a Redis Cluster, whose keys of one script must
	// share a hash slot: a key's fence counter and queues get the names
	// of wire.ClusterName, and a key that has none (wire.ErrUntaggable)
	// is refused without being sent.
	Cluster bool
}

// Identifier is a Conn over several servers (a Cluster client) that
// identifies them itself, in place of the engine's INFO on the
// connection.
type Identifier interface {
	// Identify returns the run_id of every master the connection reaches,
	// and the fewest replicas connected to any of them.
	Identify(ctx context.Context) (runIDs []string, replicas int, err error)
}

// Engine is a core.Driver over the connections Config.Dial makes. It is safe
// for concurrent use. Its zero value is not usable: call New.
type Engine struct {
	names []string
	clock Clock
	dial  Dialer
	nodes []*node

	// batches holds the idle batches, up to idleBatches (more, after a
	// burst of rounds, are left to the collector). Not a sync.Pool: a
	// pool drops its batches at every garbage collection, keeps one per P
	// out of the other Ps' reach and allocates to take one after a
	// collection, so that an uncontended round now and then made a new
	// batch, ten allocations.
	batches chan *batch
	once    sync.Once
	wg      sync.WaitGroup

	mu     sync.Mutex
	runIDs [][]string // per node: the run_ids of its connection's servers

	log     *slog.Logger
	watcher watcher
	waiter  string      // this engine's id in the Fair waiter queues
	fair    atomic.Bool // a Fair command was sent: watches hear turns
}

var _ core.Driver = (*Engine)(nil)

// New starts one goroutine per node, each dialling its node at once. Close
// stops them. A Config that cannot work is refused, before anything is
// dialled, with an error that wraps core.ErrInvalidConfig and says what
// is wrong (Config.Validate).
func New(cfg Config) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	e := &Engine{
		names:  append([]string(nil), cfg.Names...),
		clock:  cfg.Clock,
		dial:   cfg.Dial,
		nodes:  make([]*node, len(cfg.Names)),
		runIDs: make([][]string, len(cfg.Names)),
		waiter: newWaiterID(),
	}
	if e.clock == nil {
		e.clock = SystemClock{}
	}
	dt := cfg.DialTimeout
	if dt <= 0 {
		dt = DefaultDialTimeout
	}
	e.log = cfg.Logger
	if e.log == nil {
		e.log = slog.New(slog.DiscardHandler)
	}
	e.watcher = watcher{e: e, dial: cfg.Subscribe, timeout: dt}
	e.batches = make(chan *batch, idleBatches)
	e.wg.Add(len(e.nodes))
	for i := range e.nodes {
		n := &node{e: e, i: i, wake: make(chan struct{}, 1)}
		if i < len(cfg.Nodes) {
			n.cfg = cfg.Nodes[i]
		}
		if n.cfg.Replicas > 0 {
			n.lane = &node{e: e, i: i, cfg: n.cfg, wake: make(chan struct{}, 1), outstanding: map[laneKey]int{}}
			e.wg.Add(1)
			go n.lane.loop(dt)
		}
		e.nodes[i] = n
		go n.loop(dt)
	}
	return e, nil
}

// Validate returns nil if cfg can run, or an error that wraps
// core.ErrInvalidConfig: from 1 to core.MaxNodes names, each non-empty
// and given once (a node's name is how errors and the run_id check tell
// it apart, and a round counts its nodes in a word), a Dial, and either
// no Nodes or one NodeConfig per name, none with a negative Replicas, nor
// without a positive WaitTimeout when Replicas is positive (WAIT 0 blocks
// for good).
func (cfg Config) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: engine: %s", core.ErrInvalidConfig, fmt.Sprintf(format, args...))
	}
	switch n := len(cfg.Names); {
	case n == 0:
		return bad("no nodes")
	case n > core.MaxNodes:
		return bad("%d nodes, more than %d", n, core.MaxNodes)
	case cfg.Dial == nil:
		return bad("no Dial")
	case cfg.Nodes != nil && len(cfg.Nodes) != n:
		return bad("%d NodeConfigs for %d nodes", len(cfg.Nodes), n)
	}
	for i, name := range cfg.Names {
		if name == "" {
			return bad("node %d has no name", i)
		}
		if j := slices.Index(cfg.Names[:i], name); j >= 0 {
			return bad("node %d (%s) is node %d again", i, name, j)
		}
	}
	for i, nc := range cfg.Nodes {
		if nc.Replicas < 0 {
			return bad("node %d (%s): Replicas %d is negative", i, cfg.Names[i], nc.Replicas)
		}
		if nc.Replicas > 0 && nc.WaitTimeout <= 0 {
			return bad("node %d (%s): WAIT for %d replicas needs a positive WaitTimeout, not %v", i, cfg.Names[i], nc.Replicas, nc.WaitTimeout)
		}
	}
	return nil
}

// Nodes returns N.
func (e *Engine) Nodes() int { return len(e.names) }

// Clock returns the clock the engine reads its deadlines on: Config.Clock,
// or the system clock.
func (e *Engine) Clock() Clock { return e.clock }

// NodeName returns node i's name.
func (e *Engine) NodeName(i int) string { return e.names[i] }

var _ core.KeysChecker = (*Engine)(nil)

// CheckKeys returns nil if every node can take keys, a multi-key lock's
// (core.KindAll), in one script: on a Cluster member (NodeConfig.Cluster)
// they must share one hash slot, and each must have names for its
// auxiliary keys (wire.ClusterWrap). Otherwise it returns an error that
// names the first member that cannot, and why; nothing is sent.
func (e *Engine) CheckKeys(keys []string) error {
	for _, n := range e.nodes {
		if !n.cfg.Cluster {
			continue
		}
		if err := wire.CheckClusterKeys(keys); err != nil {
			return fmt.Errorf("node %d (%s), a Cluster: %w", n.i, e.names[n.i], err)
		}
	}
	return nil
}

// Begin returns a batch for one round. ctx's values reach the client for a
// pipeline of one command; its cancellation does not (see core.Driver).
func (e *Engine) Begin(ctx context.Context) core.Batch {
	var b *batch
	select {
	case b = <-e.batches:
	default:
		b = newBatch(e)
	}
	b.ctx = ctx
	return b
}

// Close stops accepting commands, sends the releases already queued
// (within the time each was given), answers the other queued commands
// with core.ErrClosed, closes the connections and waits for the node
// goroutines to return. Commands issued after Close answer
// core.StatusError with core.ErrClosed. Close is idempotent.
func (e *Engine) Close() {
	e.once.Do(func() {
		e.watcher.close()
		for _, n := range e.nodes {
			n.close()
			if n.lane != nil {
				n.lane.close()
			}
		}
		e.wg.Wait()
	})
}

// fail returns the reply for a command of op on node i that failed with
// err: core.StatusTimeout if err is a deadline or the command's deadline
// has passed, core.StatusError otherwise; the error names the node.
func (e *Engine) fail(i int, op core.Op, err error, late bool) core.Reply {
	r := wire.Fail(i, e.names[i], op, err)
	if late {
		r.Status = core.StatusTimeout
	}
	return r
}

// errNoReply is the cause of a command that timed out in its round.
var errNoReply = fmt.Errorf("no reply by the deadline: %w", context.DeadlineExceeded)

// claim records that node i's connection reaches the servers whose run_ids
// are ids, and refuses it, with drivers.ErrMisconfigured, if another node's
// connection reaches one of them: one server under two addresses that no
// name lookup relates (a proxy, NAT, a second interface), or one Sentinel
// group or Cluster given as two members, would vote twice.
func (e *Engine) claim(i int, ids ...string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	for j, others := range e.runIDs {
		if j == i {
			continue
		}
		for _, id := range ids {
			if slices.Contains(others, id) {
				return fmt.Errorf("%w: node %d (%s) is the same server as node %d (%s): both have run_id %s",
					dialspec.ErrMisconfigured, i, e.names[i], j, e.names[j], id)
			}
		}
	}
	e.runIDs[i] = slices.Clone(ids)
	return nil
}
