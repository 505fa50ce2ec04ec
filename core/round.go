package core

import "time"

// Round is one acquire, extend or release round over a Spec's nodes,
// step by step, for callers that do their own I/O: the root package's
// Client, an event loop, a WebAssembly host, a simulation. A Round is a value of fixed size that allocates nothing; its
// zero value is done and sends nothing.
//
// Drive it as: while !Done(), send every command that Next returns (each
// to its node, bounded by its deadline), then feed one reply to Receive.
// The round does not watch the clock: a command whose deadline passes
// without a reply must be fed back as StatusTimeout.
//
// Multiplexed rounds hand out every command at once; sequential rounds
// hand out the next node's command only once the previous node answered.
// Acquire and extend rounds are done once the quorum is lost, or, when
// multiplexed, once it is won; sequential ones visit every node even after
// winning, so that one later restart cannot hand a majority to another
// client (redsync #186). A Fair attempt that queues its waiter
// (Command.Ticket) and is lost on held keys alone goes on to every node,
// so that it needs no cleanup round. Release rounds are done only once every node has
// answered, so that no delete is in flight when a release returns; the
// cleanup after a failed attempt does not wait again for the nodes that
// timed out on that attempt (Batch's rules put its delete on the wire
// behind the SET there), so that hung nodes cost each attempt one node
// timeout, not two.
//
// Every time a Round takes is a reading of the caller's clock.
type Round struct {
	cmd     Command
	timeout time.Duration
	// end is the round's start plus timeout: every node's deadline when
	// multiplexed, computed once rather than per node; the start is
	// end minus timeout (started). An Acquisition must stay within
	// 1 KiB under TinyGo: a field more for the start would not fit.
	end   time.Time
	tally tally
	fence uint64 // the largest Reply.Fence of an OK reply
	// noWait marks nodes whose reply a release need not await (bit i for
	// node i); waiting counts the commands sent and awaited, not yet
	// answered. The small fields come last, together: TinyGo keeps an
	// Acquisition, which holds a Round, on the stack only up to 1 KiB.
	noWait   uint32
	sent     int16 // commands handed out: to nodes 0..sent-1
	received int16
	waiting  int16
	fanOut   FanOut
}

// Next returns the next command to send, to node, bounded by deadline on
// the caller's clock, or ok == false when none is due until a reply comes
// in (or the round is done). now is the current reading of the caller's
// clock: a sequential round's deadline counts from it.
//
// Next is small enough to inline: the caller copies the command straight
// from the round, rather than from a result the call wrote just before.
func (r *Round) Next(now time.Time) (node int, cmd Command, deadline time.Time, ok bool) {
	if node, deadline, ok = r.next(now); ok {
		cmd = r.cmd
	}
	return node, cmd, deadline, ok
}

// next hands out the next node and its deadline, as Next does.
func (r *Round) next(now time.Time) (node int, deadline time.Time, ok bool) {
	if int(r.sent) == r.tally.n || r.Done() {
		return 0, time.Time{}, false
	}
	if r.fanOut == Sequential {
		if r.waiting > 0 {
			return 0, time.Time{}, false
		}
		deadline = now.Add(r.timeout)
	} else {
		deadline = r.end
	}
	node = int(r.sent)
	r.sent++
	if r.noWait&(1<<node) == 0 {
		r.waiting++
	}
	return node, deadline, true
}

// Receive records a node's reply and reports whether it counted: a reply
// from a node that was sent nothing, or a second reply from one node, is
// ignored.
func (r *Round) Receive(rep Reply) bool {
	if rep.Node < 0 || rep.Node >= int(r.sent) || !r.tally.record(rep.Node, rep.Status, rep.Err) {
		return false
	}
	r.received++
	if rep.Status == StatusOK && rep.Fence > r.fence {
		r.fence = rep.Fence
	}
	if rep.Status == StatusHeld && rep.TTL > 0 {
		ms := (rep.TTL + time.Millisecond - 1) / time.Millisecond // a key with any time left has at least 1 ms
		r.tally.ttl[rep.Node] = uint32(min(ms, 1<<32-1))
	}
	if r.noWait&(1<<rep.Node) == 0 {
		r.waiting--
	}
	return true
}

// Done reports whether the round needs no more replies. Replies to
// commands still in flight may then be discarded.
func (r *Round) Done() bool {
	t := &r.tally
	switch {
	case int(r.received) == t.n:
		return true
	case r.cmd.Op == OpRelease:
		return int(r.sent) == t.n && r.waiting == 0
	case t.ok >= t.quorum: // won: a sequential round visits every node
		return r.fanOut == Multiplexed
	case t.ok+t.pending() >= t.quorum:
		return false
	}
	// Lost. A Fair attempt that queues its waiter (Command.Ticket), held
	// everywhere so far, goes on to the other nodes: held there too, it
	// queued the waiter on every node and needs no cleanup round
	// (Acquisition.queuedEverywhere), which would cost more than the
	// replies it waits for (a sequential cleanup visits every node too).
	return r.cmd.Ticket <= 0 || r.cmd.Op == OpRelease || t.held != int(r.received)
}

// Needed returns the fewest further replies that can change the round:
// until that many more have come in, Done stays false and Next hands out
// nothing, whatever they say. A caller that waits for them before
// feeding any to Receive (Gatherer) decides nothing later for it, and is
// woken once rather than once per reply. It is 1 for a sequential round,
// whose every reply may release the next command, and 0 once done.
func (r *Round) Needed() int {
	if r.Done() {
		return 0
	}
	k := 1
	if r.fanOut == Multiplexed && int(r.sent) == r.tally.n {
		k = r.needed()
	}
	if mutNeededOverstates {
		k++
	}
	return k
}

// needed is Needed for a multiplexed round with every command out.
func (r *Round) needed() int {
	if r.cmd.Op == OpRelease {
		return max(int(r.waiting), 1) // done once every awaited node answered
	}
	t := &r.tally
	won := t.quorum - t.ok                    // OKs that win it
	lost := t.ok + t.pending() - t.quorum + 1 // other answers that lose it
	return max(min(won, lost), 1)
}

// started returns the clock reading the round started at.
func (r *Round) started() time.Time { return r.end.Add(-r.timeout) }

// Command returns the command the round sends to every node.
func (r *Round) Command() Command { return r.cmd }

// maxFence returns the largest fence counter among the OK replies so far:
// M, for an OpAcquireFenced round. Zero for other rounds.
func (r *Round) maxFence() uint64 { return r.fence }
