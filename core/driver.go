package core

import (
	"context"
	"time"
)

// Op names the commands a Redlock round sends to a node.
type Op uint8

const (
	// OpAcquire is SET key token NX PX ttl.
	OpAcquire Op = iota + 1
	// OpRelease deletes key only if it holds token (a Lua compare-and-delete).
	OpRelease
	// OpExtend sets the expiry of key to ttl only if it holds token (a Lua
	// compare-and-PEXPIRE). It never creates the key.
	OpExtend
	// OpAcquireFenced is OpAcquire for a Spec with Config.Fencing: when
	// the SET succeeds, the node also increments the key's fence counter
	// (the key FenceKeyPrefix + Key, which has no expiry) in the same atomic
	// step, and replies StatusOK with the counter's new value in
	// Reply.Fence. A refused SET changes nothing and replies StatusHeld.
	OpAcquireFenced
	// OpRaiseFence sets the key's fence counter to Command.Fence if it is
	// lower, only if the key holds Token, atomically; it replies as
	// OpExtend does (StatusOK, StatusMissing or StatusHeld) and never
	// lowers a counter or creates the key.
	OpRaiseFence
)

// String returns "acquire", "release", "extend", "acquire-fenced" or
// "raise-fence".
func (o Op) String() string {
	switch o {
	case OpAcquire:
		return "acquire"
	case OpRelease:
		return "release"
	case OpExtend:
		return "extend"
	case OpAcquireFenced:
		return "acquire-fenced"
	case OpRaiseFence:
		return "raise-fence"
	}
	return "op(" + itoa(int(o)) + ")"
}

// Command is one request to one node. It is a plain value: the driver may
// keep it after Send returns without aliasing any caller memory.
type Command struct {
	Op Op
	// Probe asks an OpAcquire that finds the key held to report the
	// holder's remaining TTL (Reply.TTL), which costs the node a script
	// instead of a plain SET NX. An Acquisition sets it from its second
	// attempt on, once the key is known to be contended. OpAcquireFenced
	// always reports it.
	Probe bool
	// Fair makes the command take part in the key's waiter queue on the
	// node (Config.Fair), as the driver's own waiter: the driver names it
	// with an id of its own, the same for every command it sends, and
	// hears its turn (Announcer). An acquire then takes a key handed to
	// that waiter as a free one; a release that frees the key hands it to
	// the first waiter, and announces it to that waiter alone.
	Fair bool
	// Quiet asks an OpRelease without Fair not to announce the deletion
	// (Announcer): a waiter of the releasing process takes the key next,
	// its attempt right behind the release on each node (Flusher), and
	// the others' attempts would be refused. Set from Grant.WithHandoff.
	Quiet bool
	// Kind is the primitive the command serves; the zero Kind, the mutex.
	Kind Kind
	Key  string
	// Keys are every key of a KindAll command, Key first; nil otherwise.
	// Shared and never modified: a driver may keep it.
	Keys  *KeyList
	Token Token
	// TTL is the expiry for OpAcquire and OpExtend, a whole number of
	// milliseconds (Config validation guarantees it); for a Fair
	// OpRelease, how long a queue entry lasts unless a later Ticket renews
	// it. Zero otherwise.
	TTL time.Duration
	// Fence is the value OpRaiseFence raises the counter to. Zero otherwise.
	Fence uint64
	// Ticket places the driver's waiter in the Fair queue, the lowest
	// first: the ticket it joins under, keeping its place if it has one,
	// its entry lasting EntryLife. An OpRelease joins so: a failed
	// attempt's cleanup, and the release of a grant that others of the
	// process follow (Grant.WithFollowers). So does a Fair OpAcquire or
	// OpAcquireFenced that finds the key held (and not handed to the
	// waiter): an attempt that will wait if it fails queues its waiter in
	// its own round, rather than in its cleanup's. Zero: it does not
	// join; -1, for an OpRelease: it leaves (a waiter that gives up).
	// A writer's OpRelease (KindWrite, never Fair) with a positive Ticket
	// is the cleanup of a failed attempt whose writer waits on: it keeps
	// the writer's mark, which any other writer's release deletes.
	Ticket int64
	// Handoff is how long a Fair OpRelease keeps a key it hands to the
	// first waiter for that waiter. A Fair acquire that joins the queue
	// (Ticket) carries the same value, for its entry's life (EntryLife).
	Handoff time.Duration
}

// EntryLife is how long a queue entry that a Fair command with a
// positive Ticket makes or renews lasts: an OpRelease's TTL; an
// acquire's two TTLs and its Handoff, as long as its cleanup's would
// (Spec.fairRelease), so that a waiter queued by its attempt keeps its
// place until its next attempt renews it.
func (c *Command) EntryLife() time.Duration {
	if c.Op == OpRelease {
		return c.TTL
	}
	return 2*c.TTL + c.Handoff
}

// Status is a node's answer to one Command.
type Status uint8

const (
	// StatusOK means: acquired (SET returned OK), released (key deleted) or extended.
	StatusOK Status = iota + 1
	// StatusHeld means: the key holds another token. For OpAcquire this is SET NX's
	// nil reply: the key exists.
	StatusHeld
	// StatusMissing means: the key does not exist (expired, released or lost in a
	// restart). Only OpRelease and OpExtend report it.
	StatusMissing
	// StatusError means: the command failed (connection refused, auth, server
	// error). Reply.Err says why.
	StatusError
	// StatusTimeout means: the per-node deadline passed before the reply arrived.
	StatusTimeout
)

// String returns a lower-case name such as "ok" or "held".
func (s Status) String() string {
	switch s {
	case StatusOK:
		return "ok"
	case StatusHeld:
		return "held"
	case StatusMissing:
		return "missing"
	case StatusError:
		return "error"
	case StatusTimeout:
		return "timeout"
	}
	return "status(" + itoa(int(s)) + ")"
}

// Reply is a node's answer, or the lack of one.
type Reply struct {
	// Node is the index of the node that answered, in [0, Driver.Nodes()).
	Node   int
	Status Status
	// Err is set for StatusError and StatusTimeout. Drivers should name the
	// node (index and address) in it.
	Err error
	// Fence is the fence counter's value after an OpAcquireFenced that
	// answered StatusOK (at least 1). Zero otherwise.
	Fence uint64
	// TTL is, for an OpAcquire or OpAcquireFenced that answered
	// StatusHeld, how long the other holder's key has left on the node
	// (PTTL), when the driver knows it; zero when it does not, or when
	// the key has no expiry. A waiting Acquisition retries when enough
	// holders' keys will have expired (Acquisition.WakeAt).
	TTL time.Duration
}

// Driver is a set of N independent Redis masters, indexed 0..N-1.
//
// A Driver is shared by every goroutine that locks through it, so it must be
// safe for concurrent use. Per-round state lives in the Batch it returns.
type Driver interface {
	// Nodes returns N. It must not change over the Driver's life.
	Nodes() int
	// NodeName returns a human-readable name for node i, such as its address.
	// It is used in error messages only.
	NodeName(i int) string
	// Begin returns an empty Batch for one round. ctx carries values only
	// (tracing, logging): cancellation reaches the batch through Receive's
	// cancel channel, so that release and cleanup outlive a cancelled caller.
	Begin(ctx context.Context) Batch
}

// Batch is one round of commands, at most one per node, used by one
// goroutine. The core uses it in one of two shapes:
//
//	sequential:  Send(0) Receive  Send(1) Receive  ...  Close
//	multiplexed: Send(0) Send(1) ... Send(N-1)  Receive Receive ...  Close
//
// In the multiplexed shape every request is issued before any reply is
// awaited, and Close may come before every reply has been received.
//
// Order per key and node: a command must not take effect on a node before
// an earlier command for the same key on that node whose reply was not
// received (a straggler of a previous round). Otherwise a release could
// run before the acquire it undoes and leave the key set until its TTL.
// A driver keeps the order by sending a key's commands to a node over one
// connection, or by waiting for the stragglers.
//
// Deadlines: a command whose deadline passes is answered StatusTimeout; a
// node may still apply it later, which Redlock tolerates because each
// attempt holds its own token and keys expire. A driver may drop an
// acquire or extend whose deadline passed before it was sent, but must
// still send a release (OpRelease) queued behind commands for its key on
// that node, after them, even past its deadline: the cleanup of a
// cancelled or failed attempt then leaves nothing once a hung node
// continues.
type Batch interface {
	// Send issues cmd to node without waiting for its reply. The command must
	// not take longer than deadline, which is read on the caller's clock:
	// at deadline the node's reply is StatusTimeout. Send must not block on
	// the network; a driver that can pipeline may buffer the command until
	// the next Receive.
	Send(node int, cmd Command, deadline time.Time)
	// Receive puts any buffered commands on the wire, then waits for the
	// next reply to a command sent in this batch, in any order. It returns
	// ok == false, without a reply, if cancel is closed first; cancel may be
	// nil. Receive is called at most once per Send.
	Receive(cancel <-chan struct{}) (r Reply, ok bool)
	// Close ends the round and returns the batch's resources. Replies not yet
	// received must be consumed or discarded without blocking the caller and
	// without leaking connections or goroutines. Releases sent but still
	// buffered must be put on the wire (a cleanup round sends deletes it
	// does not wait for); buffered acquires and extends may be dropped. The
	// batch is not used again.
	Close()
}

// Flusher is a Batch that can put the commands sent so far on their way
// before its first Receive. Once Flush returns, a command for the same
// key and node sent in a later Batch, by any goroutine, should take
// effect on the node after them (the order above). The runner uses it to
// send a waiter's attempt right behind a release of the same process,
// rather than after the release's replies: the pair costs one round
// trip. Receive then waits for replies only. The order is what makes
// that attempt win, not what keeps the lock safe: where a node runs the
// attempt first (another connection, a redirect), the attempt fails and
// the runner tells the waiter again once the release is done.
type Flusher interface {
	Batch
	Flush()
}

// Gatherer is a Batch that can wait for several replies at once: the
// runner asks for Round.Needed of them, fewer of which cannot change the
// round, and is woken once for them rather than once per reply.
type Gatherer interface {
	Batch
	// Gather is Receive, but it waits until at least n replies have come
	// in and not been returned, or a command's deadline passes, or cancel
	// closes; it then returns one of them. n larger than the replies
	// still due waits for every one of them.
	Gather(n int, cancel <-chan struct{}) (r Reply, ok bool)
	// Ready returns how many replies have come in and not been returned.
	// The runner takes those as they are, without looking at the clock
	// or cancel between them: one at a time, each would have been taken
	// when it came.
	Ready() int
}

// Announcer is a Driver whose nodes announce releases: a successful
// OpRelease also tells the node's subscribers to the key that it was
// deleted, and Watch relays those announcements. A waiting Acquisition
// takes them through Announce, to retry as soon as a release makes an
// attempt worthwhile rather than sleep out its retry delay.
//
// An announcement is a hint and nothing more: it starts an attempt, and
// the attempt is a quorum round like any other. A lost announcement costs
// time (the waiter retries at the holder's expiry or its retry delay); a
// late, duplicated or forged one costs one round.
type Announcer interface {
	Driver
	// Watch starts relaying the announcements of key: notify(i) is called
	// whenever node i announces a release of key, and whenever node i's
	// subscription to key starts, restarts or stops, since a release may
	// have gone unannounced around it; a Watch that joins a subscription
	// other watches of key started is notified at once of each node it
	// listens to, for the same reason. notify is called from a goroutine
	// of the driver's, or from within Watch, one call at a time per Watch,
	// and must not block.
	Watch(key string, notify func(node int)) Watch
}

// Watch is one Announcer.Watch of a key.
type Watch interface {
	// Listening returns the nodes whose subscription to the key is active
	// now, bit i for node i: a release on those would be announced.
	Listening() uint32
	// Stop ends the watch: notify is not called once Stop has returned.
	Stop()
}

// KeysChecker is a Driver that can tell, before anything is sent, that
// one of its nodes cannot take a multi-key lock's keys (KindAll) in one
// script: on a Redis cluster member, keys in more than one hash slot.
// The runner asks it before the first round and refuses the keys with
// an ErrInvalidConfig error that wraps CheckKeys's, which names the node.
type KeysChecker interface {
	Driver
	CheckKeys(keys []string) error
}
