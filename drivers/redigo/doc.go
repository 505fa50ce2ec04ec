// Package redigo is a core.Driver over github.com/gomodule/redigo. It has
// two modes. In the pooled mode (the default) it keeps one redis.Pool per
// Redis master, and each command checks a connection out: Dial makes the
// pools from addresses; New wraps pools you already have. In the
// pipelined mode (Options.Pipeline > 0, Dial only) it keeps a few
// long-lived connections per master, shared by every round, and writes
// the commands of concurrent rounds together; see Pipelined mode. The
// sections before it describe the pooled mode except where they say
// otherwise.
//
// # Commands
//
// Acquire is SET key token NX PX ttl ("OK" is core.StatusOK, the nil reply
// core.StatusHeld). Release and extend are EVALSHA of the shared scripts in
// drivers/internal/wire, with the token in its wire form (lower-case hex),
// so locks taken through one driver can be released through another. The
// driver remembers per node which scripts the server has cached: until a
// script succeeded on a node, and again after a connection to it broke
// (probably a restart), it sends EVAL with the script's source instead,
// which caches it. A NOSCRIPT reply (after SCRIPT FLUSH) is answered by
// EVAL on the same connection, within the same deadline.
//
// Arguments reach redigo's ...interface{} without allocating: the constant
// ones are boxed once, the key, the token (hex-encoded into the batch) and
// the TTL (formatted once) are boxed once and kept while they stay the same
// from node to node and round to round. Batches are pooled. What remains
// per round is redigo's: Pool.GetContext allocates one small struct per
// checkout. An acquire plus a release through a Locker costs, in the
// steady state and with no goroutine started, 2N+1 allocations in
// sequential mode (3, 7 and 11 for N = 1, 3 and 5: the checkouts and the
// new token's box) and fewer in multiplexed mode (3, 5 and 7), where the
// nodes whose replies a round did not read lend their connections to the
// next round (see Stragglers). See TestAllocations and
// TestNoGoroutinePerRound.
//
// # Fan-out
//
// Send only records the command. The first Receive after one or more Sends
// checks out a connection for each recorded command (or takes a parked
// one, see Stragglers), writes the command
// with redigo's Conn.Send and Conn.Flush, and only then starts reading;
// so in multiplexed mode every node has its request before any reply is
// awaited, and in sequential mode (Send, Receive, Send, ...) each Receive
// writes and reads one command. No goroutine is started per node or per
// operation.
//
// Replies are read one connection at a time, in node order. Nodes whose
// last command timed out or lost its connection ("suspect" nodes) are
// handled apart: their commands are written only once no other reply is
// left to read, because their checkout may dial or PING until the deadline
// (a partitioned host drops SYNs; a stopped server's accept queue fills),
// which would hold up everyone else. So is a command that would have to
// wait for the drainer to finish an earlier command for the same key on
// its node (see Stragglers). So a hung node costs a round nothing
// once it is suspect, and at most one node timeout the first time. While
// one node's read waits for its deadline, the other replies accumulate in
// their sockets and are taken without waiting afterwards. In the
// sequential shape a suspect node's command is run at once, as there is
// nothing else to do.
//
// # Deadlines
//
// Send's deadline bounds the whole command on that node. The pool checkout
// gets a context whose deadline it is, so a dial (TCP connect, TLS
// handshake, AUTH) is cut at the deadline; the context has a Done channel
// and a timer only if someone asks for them (a dial does; the checkout of
// an idle connection does not), so the common checkout allocates nothing.
// The read is redis.ReceiveWithTimeout with the time left, a socket read
// deadline rather than redigo's goroutine-per-call ReceiveContext. A read
// that times out makes redigo close the connection, and the pool drops it:
// a connection that missed a reply is never reused. A command whose
// deadline has passed before it could be written is not sent and answers
// core.StatusTimeout (ErrDeadline), except a release (see Releases). A
// reply read after its deadline (the
// read had to wait for an earlier node) is taken if it has already arrived:
// such a read gets a 1 ms timeout, enough to reach the socket.
//
// Writes are not given a deadline: a connection carries at most a few small
// commands at a time and is dropped when a reply does not come, so the
// socket's send buffer never fills.
//
// Deadlines are compared with time.Now: the Locker must run on the system
// clock (core.SystemClock, which redlock.New uses), as with every real
// Redis deployment.
//
// # Cancellation
//
// A blocking redigo read cannot be interrupted without closing the
// connection, so Receive checks its cancel channel on entry and before each
// read: a cancellation is seen within one node timeout, usually at once.
// Commands not yet written when the round is cancelled (Send buffers them
// until Receive) are never sent, except releases, which Batch.Close sends
// (see Releases).
//
// # Releases
//
// A release is never dropped because its round stopped waiting for it or
// its deadline passed before it could be written. The cleanup after an
// attempt abandoned on a hung node sends a release that must run after the
// attempt's SET, which the node still runs when it wakes: dropped, it would
// leave the key until its TTL. So, in both modes, releases that a round
// sent and never received (a cleanup awaits no node that timed out on its
// attempt, and may close without a Receive) are sent when the batch
// closes; acquires and extends never written are dropped. In the pooled
// mode, a release that its deadline overtook before it was written (it
// waited for the drainer to finish the SET's line, or for a checkout) is
// answered core.StatusTimeout and parked for the drainer, which gives an
// unwritten release, from when it takes it, at least the time it had when
// sent, to connect, write it and read its reply. In the pipelined mode the
// writer does the same for the releases it takes. Their rounds have had
// their answers at their deadlines; only the drainer or the connection
// waits longer. A release that follows a SET whose connection was given
// up goes on a new connection; the SET is already in the server's socket
// buffer on the old one, which the server reads before any command of a
// connection it has yet to accept.
//
// # Stragglers
//
// In multiplexed mode the Locker stops reading once the round is decided,
// so a round may end with replies in flight. Batch.Close never waits for
// them: it parks each connection with its unread replies (a "line") on its
// node, together with the suspect nodes' commands not yet written, at most
// MaxParked per node. Two things take parked lines:
//
//   - The next command for the same key on that node is pipelined on the
//     same line, behind the commands in flight, so the server runs it
//     after them: a cleanup or a release sent right after an acquire
//     cannot overtake the acquire's SET on a node and leave the key behind
//     until its TTL (two connections to one server give no such order).
//     If the drainer is finishing such a line at that moment, the command
//     is deferred like a suspect node's, then waits for the drainer if
//     that fits in its deadline. Without a line for the key, a command takes any parked
//     line of its node that has room, to reuse its connection; its read
//     then takes the earlier replies first, which have normally arrived.
//   - The driver's one drainer goroutine (started by Dial or New, stopped
//     by Driver.Close), woken by Close, finishes lines oldest first:
//     writes the commands of a line that has none on the wire, reads every
//     reply, each read bounded by the deadlines, and returns the
//     connection to its pool, or lets the pool drop it if a read failed.
//     Lines are parked in the order their rounds end, so their deadlines
//     are nearly in order: a read that waits for one hung node's deadline
//     finds the later replies arrived. The outcomes update the suspect
//     flags, so a node that recovers is noticed without a round waiting
//     for it.
//
// Whoever reads a NOSCRIPT reply to a release or extend sends the command
// again as EVAL before its deadline, so a release the round did not wait
// for still takes effect. If a node already has MaxParked lines, or the
// driver is closed, Close takes the replies already buffered and closes the
// connection, and drops unwritten commands: that costs a reconnect (and
// possibly a release on that node, whose key then expires at its TTL),
// never a wait. The drainer may wait on a hung node up to the time a late
// release is given (see Releases).
//
// # Connections
//
// Dial does not connect: connections are made on first use, so a node that
// is down at start-up only costs its vote. Options.PoolSize bounds the
// idle connections per node, not the connections in use (see Options).
// A Dial-made pool PINGs an idle connection before reuse, within the
// command's deadline, when it may have died silently: when it was idle for
// PingIdle or more (a server timeout or a middlebox may have closed it), or
// when it predates a broken connection to the same node (a restart). So a
// restarted server costs one failed command, not one per pooled
// connection. Connections idle for IdleTimeout are closed.
//
// # Pipelined mode
//
// With Options.Pipeline = k > 0, Dial makes k connections per node
// instead of pools (PoolSize is unused). Every command for a key goes to
// the same one of its node's k connections (chosen by a hash of the key),
// so the commands for one key on one node reach the server in the order
// they were issued: a round never overtakes an earlier round's unread
// command for the same lock, and no straggler needs parking.
//
// Each connection has a writer goroutine, started by Dial and stopped by
// Driver.Close. Batch.Send records the command; the first Receive queues
// the round's commands on their connections and wakes the writers that
// sleep. A writer takes everything queued at once, writes it with redigo's
// Conn.Send and one Conn.Flush, and sleeps again when the queue is empty:
// while it is in the write system call, the next commands queue up, so
// under concurrency one write (and one read on the server) carries many
// commands, and a server does far less system-call work per command.
// Each live connection also has a reader goroutine (redigo allows one
// concurrent writer and one concurrent reader per connection) that reads
// the replies in order and hands each to its round on the round's
// channel. No goroutine is started per round or per command; a batch is
// reused once every command it queued has been answered (replies may come
// after Batch.Close, and are then discarded), so a round allocates
// nothing in the steady state. Keys up to 256 bytes and tokens are copied
// into buffers boxed once per connection, so arguments do not allocate
// either.
//
// Receive returns replies in the order they come. It waits on the
// round's channel, its cancel channel, and a timer set to the earliest
// deadline of the round's unanswered commands: at a command's deadline it
// answers core.StatusTimeout for that node (the error matches
// os.ErrDeadlineExceeded), whatever the connection does. A command whose
// deadline has passed before the writer takes it is not sent (ErrDeadline),
// except a release (see Releases).
// Cancellation is seen at once: a round cancelled before its first
// Receive sends nothing but its releases (at Close, see Releases), and one
// cancelled later leaves its commands to be answered and discarded.
//
// The reader's reads are bounded by the deadline of the oldest unanswered
// command plus as long again as that command had when it was written (so,
// in practice, twice the node timeout after the write): past it (a
// stopped or partitioned server) the connection is closed, every command
// on it fails with a timeout, and the next command dials a new one, bounded by its deadline and
// Options.DialTimeout (with AUTH and TLS as in the pooled mode). A failed
// write or read does the same. Writes get a deadline too, so a stopped
// server whose socket buffers fill cannot hold the writer. A connection
// holds at most MaxPending commands queued and MaxPending written: beyond
// that, commands fail at once with ErrBacklog, so a hung node with long
// node timeouts cannot grow the queue without bound. The slack keeps a
// server that is only slow (a CPU stall on a shared machine) from costing
// the connection and, with it, every other round's command in flight on
// it; the rounds themselves never wait past their deadlines. Dials happen
// on the writer, never on a round's goroutine: a node that is down or
// partitioned costs a round nothing beyond that node's own vote. For the
// same reason Begin's context values do not reach the dial.
//
// A release or extend answered NOSCRIPT is queued again as EVAL on the
// same connection, ahead of the commands not written yet, within its
// deadline; the scripts are tracked per node as in the pooled mode. A
// command that was written on a connection which then failed may or may
// not have run: as in the pooled mode, its key is then left to its TTL.
//
// Under concurrency the pipelined mode has several times the pooled
// mode's throughput (32 goroutines, 5 servers, multiplexed: about 2.5-3×
// on a 2-CPU machine), and with one goroutine its multiplexed rounds are
// faster too (the writers and readers of the N nodes run in parallel). A
// sequential round pays two goroutine hand-offs per node (to the writer,
// from the reader), which makes it somewhat slower than the pooled
// mode's with one goroutine. k = 1 batches best; more connections per
// node only help when one connection's writer or reader is the
// bottleneck. See BenchmarkThroughput.
//
// # Authentication and TLS
//
// Options.Password alone sends AUTH password (requirepass); with
// Options.Username it sends AUTH username password (an ACL user).
// Options.TLS makes every connection TLS: the configuration is cloned and
// its ServerName defaults to the address's host; the handshake is bounded
// by the command's deadline. Pools given to New are used as they are.
package redigo
