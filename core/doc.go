// Package core is the Redlock algorithm over N independent Redis masters,
// without the I/O: quorum, validity and clock-drift math, the retry
// policy, and every decision of an acquisition, a release, a lease and a
// wait, as step values in the style of etcd's RawNode. A Spec (the
// validated configuration) starts them: an Acquisition (attempts, their
// cleanups and the waits between them), a Round (one command to every
// node), a Lease (when to extend a Grant and when to declare it lost) and
// a Room (one process's wait room of a key: which of its waiters
// attempts next, what a release hands on, how long the key's watch
// lingers). Each says what to send and when to act next, takes the
// replies and the time (now) as inputs, and never reads a clock, sleeps,
// starts a goroutine or does I/O: the root package's Client is the one
// runner that does, over a Driver, and the simulation (internal/sim)
// drives the same values.
//
// It imports the standard library only (no fmt, no reflect), keeps no
// package-level mutable state (its tests' switches that re-introduce
// fixed bugs exist only with the build tag redlock_mutations), and
// allocates nothing on the success paths of an acquisition, a
// release and an extension for up to MaxNodes nodes, so it compiles and
// runs under WebAssembly and TinyGo. Tokens (TokenSource) and jitter
// (Rand) are inputs; the root package supplies production ones, and
// core/memnode supplies an in-memory Driver and a manual clock.
//
// # The algorithm
//
// To acquire key with TTL t, an Acquisition takes a fresh random token for each
// attempt and, in that attempt:
//
//  1. reads the clock (start);
//  2. sends SET key token NX PX t to every node, each command bounded by a
//     node timeout small against t (Config.NodeTimeout, default t/200);
//  3. reads the clock again once a quorum (N/2+1) has answered OK, or the
//     quorum is lost (multiplexed), or every node has answered (sequential);
//  4. computes validity = t − (now − start) − drift, drift = t×1% + 2 ms
//     by default (integer arithmetic, rounded up): the time left from now,
//     so the lock is valid until start + t − drift;
//  5. holds the lock only with a quorum and validity of at least the loss
//     margin, two round bounds (see Lease: a lock with less could not be
//     extended before its loss is declared). Otherwise it
//     deletes the key on every node (compare-and-delete on the token) and,
//     after a random delay, tries again, up to Config.Retry's tries.
//
// A token is never shared by two attempts: a failed attempt's cleanup that
// timed out may still reach its node later, and must not delete the key
// that a later attempt set there.
//
// A release compare-and-deletes on every node, those that refused the key
// included. An extension compare-and-sets the expiry on every node, never
// re-creating a key that expired or was lost, with quorum and validity
// recomputed from the start of the extend round and the drift of the
// lock's own TTL, at most Config.MaxExtensions times. An extension that
// finds the key missing or taken on too many nodes ends the Lease: the
// lock is lost. Cleanup after a failed attempt and a release run
// detached from the caller's cancellation and are bounded by the node
// timeout alone, so a cancelled caller leaves no minority of keys behind.
//
// Rounds reach the nodes in one of two ways (Config.FanOut). Sequential
// sends to one node after another, as the distlock page describes, and
// visits every node even after the quorum is won, so that a later restart
// of one node cannot hand a majority to another client. Multiplexed issues
// every request before awaiting any reply; acquire and extend decide as soon
// as the tally does (the driver discards the stragglers' replies), while
// release and cleanup await every node's reply or its timeout, so that no
// delete is still in flight when they return.
//
// # What safety rests on
//
// Redlock is safe only if the caller keeps these promises:
//
//   - Clocks: the rate at which time passes on the client and on every
//     node differs by a bounded amount, covered by the drift allowance
//     (1% by default). Clocks need not be synchronised: validity is the
//     difference of two readings of the client's monotonic clock, and keys
//     expire by relative PX timeouts, never by absolute times. A clock that
//     runs backwards makes a round fail safe (validity 0).
//   - Restarts: a node that crashes must stay down for at least the
//     longest TTL in use before it rejoins (a delayed restart), or run with
//     appendonly yes and appendfsync always. Otherwise it may forget a key
//     and let a second client win a majority.
//   - Work: the holder finishes its work, or extends, before the lock's
//     validity runs out (Grant.ValidUntil). A Lease declares the loss a
//     round's bound (the round bound (the node timeout; N of them when sequential)) before that, and starts no
//     extension that could still be in flight then. A process paused past that
//     point (GC, SIGSTOP) no longer holds the lock and must not act as if
//     it did: the token is random, not monotonic, so without Fencing the
//     storage behind the lock cannot fence a stale holder.
//   - Nodes: N independent masters, not replicas of one another.
//
// # Fencing
//
// A random token cannot stop a holder paused past its validity from
// writing afterwards (Kleppmann's critique of Redlock): only the storage
// the lock protects can, if every write carries a number that grows with
// each holder and the storage refuses a number lower than one it has
// seen. With Config.Fencing every acquisition returns such a number,
// Grant.Fence, across N independent masters:
//
//  1. The acquire command sets the key and, in the same atomic step, where
//     the SET lands, increments the key's fence counter and
//     returns it (OpAcquireFenced); the counter is FenceKeyPrefix + key.
//  2. The attempt takes M, the largest counter among the nodes that
//     granted it.
//  3. Before the lock is handed out, one more round raises the counter to
//     M on every node where the key still holds the attempt's token
//     (OpRaiseFence). Unless a majority raised within the validity, the
//     attempt fails and is released like any failed attempt.
//
// Why it holds: take an acquisition that starts after this one was handed
// out. Its quorum meets the raised majority on at least one node. Its SET
// landed there only after this holder's key left that node, so after the
// raise, and its increment returned more than M; so its own fence, the
// largest it saw, is more than M. That needs no clock, only the order of
// commands on one node and the nodes keeping their counters. Acquisitions
// that overlap in time are ordered by Redlock's own safety: within its
// assumptions (bounded clock drift, delayed restarts) fences grow in the
// order acquisitions complete, which the simulation checks. A node of the raised
// majority that loses its counter (a restart without persistence, a
// FLUSHALL, a failover to a replica that missed the write) can hand a
// later holder a fence that is not larger. Run the nodes with appendonly
// yes and appendfsync always, or accept that risk. The raise also needs
// the key still held on a majority, so it is one more round trip, and
// fencing is opt-in.
//
// Counters never expire: there is one per locked key on every node,
// named FenceKeyPrefix + key, however many times the key is locked.
// Deleting a counter restarts that key's fences, so delete one only when
// no storage will see that key's fences again.
//
// # Errors
//
// Every failure matches exactly one sentinel with errors.Is: ErrTaken,
// ErrQuorumUnreachable, ErrCancelled (which also wraps ctx.Err()),
// ErrNotHeld, ErrInvalidConfig or ErrExtensionLimit. Round failures are
// *Error values that name the nodes involved and unwrap to each node's
// error. Bad input is refused before anything is sent.
//
// # Waiting for a release
//
// A failed attempt tells its Acquisition which nodes another holder held
// and, from the second attempt on (Command.Probe), how long their keys
// have left (Reply.TTL). A caller that hears release announcements (an
// Announcer's Watch) passes them in with Announce and says which nodes it
// hears with SetListening; WakeAt then comes forward once enough held
// nodes announced, or once a quorum of nodes is announced free (counting
// those the failed attempt took), whether or not the attempt heard from
// them, and then never later than the retry delay's end; while listening
// it waits for the holders' expiry rather than a retry delay.
// Announcements are hints: what follows is an ordinary attempt, so a lost
// one costs time and a forged one a round, never exclusion. A caller that
// hears none (polling) still wakes at the holders' expiry when it comes
// before the retry delay. Within one process, a Room makes one waiter of
// a key attempt at a time.
//
// # Fair handoff
//
// Announcements wake every process that waits, and they all race for
// the key. With Config.Fair the nodes queue the waiting processes
// instead, and each release hands the key to one of them:
//
//   - An attempt that will wait if it fails (a try left) queues the
//     driver's waiter on each node where it finds the key held, under a
//     ticket, its acquisition's first attempt time in µs (TicketAt,
//     Command.Ticket); an attempt held on every node took nothing and
//     needs no cleanup, so a Fair section on a held key costs two rounds,
//     the attempt that queues and the attempt on the waiter's turn. The
//     cleanup of an attempt that took the key on some node queues the
//     waiter too. A waiter keeps its place across attempts, leaves the
//     queue when it gives up or is cancelled (Ticket -1), and an entry
//     not renewed within its life (Command.EntryLife) leaves the queue.
//   - A release, or a cleanup, that leaves the key free on a node hands
//     it to the first waiter there (lowest ticket, then id): the key holds
//     no token for Command.Handoff, only that waiter's acquire takes it,
//     and only that waiter hears it announced. Nobody waiting, nothing is
//     announced, so the uncontended path costs nothing more.
//   - The waiter's attempt is an ordinary quorum round: a node that
//     handed the key to another, or lost the queue, answers held, and the
//     attempt wins or fails by the votes. So the nodes' queues may
//     disagree (entries lost in a restart, tickets from clocks that
//     disagree, a waiter that left) at the cost of time, never of
//     exclusion; a handed key that nobody takes expires after the
//     handoff, and the waiters retry on their timers.
//   - Within a process, the waiters of a key take turns (Room): a new
//     waiter waits behind the others, or behind the process's own holder
//     (WaitAgain before its first attempt). A release that more of its
//     waiters follow hands the key on to the next of them, up to
//     MaxChain in a row (Room.Release, Grant.WithHandoff): a plain,
//     unannounced compare-and-delete, the waiter's attempt right behind
//     it on each node (Flusher), outside the nodes' queue. The next
//     release is open: it queues the process again at the back
//     (Grant.WithFollowers) and hands the key to the first process the
//     nodes queued. So the queue orders processes in turns of at most
//     MaxChain+1 critical sections, and a turn within a process costs
//     one round trip. The place that release queued the process under
//     is the process's (Room.Queued): its next head keeps it in the
//     cleanups of its failed attempts (Room.Look) rather than
//     queue the process at the back. So is the place a followed head's
//     own attempts took: if it gives up, its followers keep it. Only the
//     head speaks for the process (a waiter behind it drops its own
//     ticket: Room.Look), and a lock of the process that takes the
//     key ends the place (Room.Leave, Room.Ended). A handed-on release whose waiters
//     leave without the key, nobody of the process left to take it, is
//     made heard, once done or as the last of them leaves
//     (Room.Released, Room.Leave): the Spec.HandOn round hands the
//     nodes' free key to the first process in their queue. A lock of
//     the process that attempted at once and ended without the key may
//     have taken the process out of a node's queue, taking the key there:
//     the head then attempts at once (Room.Ended), and its cleanup
//     queues the process again if it fails.
//
// The order that wins is the tickets'. A process whose clock runs behind
// is served early; that costs the others time, never exclusion.
//
// # Writing a driver
//
// A Driver returns a Batch per round; see Batch for the two call shapes.
// Send must not block on the network, the deadline passed to Send must
// bound the command itself, and Close must not block on replies the core
// chose not to await. core/memnode is the reference implementation, and
// drivers/conformance is the suite every driver should pass.
package core
