package redlock

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/redlock-go/redlock/core"
)

// Observer receives what a Client learns as it runs core's step values:
// each set function is called with an event, a plain value, where the
// Client already learns the fact, and the nil ones cost nothing. The zero
// Observer observes nothing, and a Client without one reads no extra
// clock and allocates nothing for it.
//
// Acquire, Vote, Release and Extend events carry times and votes: with
// any of them set the Client reads the clock at each answer and keeps a
// round's answers in a pooled buffer (no allocation); with none of them,
// Loss, Waiters, Handoff and Fence cost next to nothing.
//
// The functions are called synchronously on the goroutine that learnt the
// fact (the caller of TryLock, Lock, Extend or Unlock, or a Lock's
// watcher), some with the Client's internal locks held (Loss, Waiters):
// they must return quickly and must not call the Client or its Locks.
// They may be called concurrently. An event's Votes, and the events in
// it, are valid only during the call: copy what is kept.
//
// The otel module (github.com/redlock-go/redlock/otel) makes an Observer
// that records OpenTelemetry metrics and spans.
type Observer struct {
	// Acquire: a TryLock or Lock finished, won or not (but for a nil
	// ctx, refused before anything).
	Acquire func(AcquireEvent)
	// Vote: one node answered one command (acquire, cleanup, fence
	// raise, extend or release), or timed out.
	Vote func(VoteEvent)
	// Release: an Unlock's release round finished.
	Release func(ReleaseEvent)
	// Extend: an extension, asked for (Lock.Extend) or the Lease's, ended.
	Extend func(ExtendEvent)
	// Loss: a Lock was declared lost (its Context is cancelled with the
	// cause).
	Loss func(LossEvent)
	// Waiters: the number of a Client's Lock calls waiting for a key
	// changed (a waiter joined or left the key's queue). It is called
	// under the wait room's locks, so that the counts it reports come in
	// order: it must return quickly and must not call the Client.
	Waiters func(WaitersEvent)
	// Handoff: a Lock that waited won the key after hearing it released.
	Handoff func(HandoffEvent)
	// Fence: an acquisition under Options.Fencing raised the key's fence.
	Fence func(FenceEvent)
}

// timed reports whether o has a function whose events carry times and
// votes: only then does the Client read the clock for them and keep the
// votes. Loss, Waiters, Handoff and Fence alone cost no more than a
// clock reading per acquisition (Loss: the hold time).
func (o *Observer) timed() bool {
	return o.Acquire != nil || o.Vote != nil || o.Release != nil || o.Extend != nil
}

// Outcome is how an operation ended, derived with errors.Is from the
// error it returned: OutcomeOK for none, else the sentinel it matches.
type Outcome uint8

// The outcomes, in the order OutcomeOf tests them.
const (
	OutcomeOK                Outcome = iota // no error: acquired, released, extended
	OutcomeLost                             // ErrLost: the lock had been lost
	OutcomeCancelled                        // ErrCancelled: the caller's ctx ended first
	OutcomeTaken                            // ErrTaken: others hold the key
	OutcomeQuorumUnreachable                // ErrQuorumUnreachable: too few nodes answered
	OutcomeNotHeld                          // ErrNotHeld: expired, gone, or won too late
	OutcomeExtensionLimit                   // ErrExtensionLimit: the lease's bound
	OutcomeInvalid                          // ErrInvalidConfig: refused before sending
	OutcomeOther                            // an error matching none of the above
)

var outcomeNames = [...]string{"ok", "lost", "cancelled", "taken", "quorum_unreachable",
	"not_held", "extension_limit", "invalid", "other"}

// String returns a lower-case name: "ok", "lost", "cancelled", "taken",
// "quorum_unreachable", "not_held", "extension_limit", "invalid" or
// "other".
func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return "other"
}

// OutcomeOf returns the Outcome of err.
func OutcomeOf(err error) Outcome {
	switch {
	case err == nil:
		return OutcomeOK
	case errors.Is(err, ErrLost):
		return OutcomeLost
	case errors.Is(err, ErrCancelled):
		return OutcomeCancelled
	case errors.Is(err, ErrTaken):
		return OutcomeTaken
	case errors.Is(err, ErrQuorumUnreachable):
		return OutcomeQuorumUnreachable
	case errors.Is(err, ErrNotHeld):
		return OutcomeNotHeld
	case errors.Is(err, ErrExtensionLimit):
		return OutcomeExtensionLimit
	case errors.Is(err, ErrInvalidConfig):
		return OutcomeInvalid
	}
	return OutcomeOther
}

// AcquireEvent is a finished TryLock or Lock.
type AcquireEvent struct {
	Context context.Context // the ctx passed to TryLock or Lock
	Key     string
	Try     bool // TryLock: one attempt
	Outcome Outcome
	Err     error // the error returned; nil when acquired
	// Attempts is the number of acquire rounds sent: 0 when none was.
	Attempts int
	Start    time.Time     // when the call began, on the Client's clock
	Duration time.Duration // from Start until it returned
	Fence    uint64        // the acquired lock's fence, under Options.Fencing
	// Votes are the last attempt's acquire round's answers, in the
	// order they came.
	Votes []VoteEvent
}

// VoteEvent is one node's answer to one command, or its timeout.
type VoteEvent struct {
	Context context.Context // the ctx of the operation the round is part of
	Op      Op
	Key     string
	Node    int    // the node's index
	Name    string // Driver.NodeName: its address
	Status  Status
	Err     error     // the node's error, for StatusError and StatusTimeout
	At      time.Time // when the answer came, on the Client's clock
	// Duration is from the command's send until its answer.
	Duration time.Duration
}

// ReleaseEvent is the release round of an Unlock.
type ReleaseEvent struct {
	Context  context.Context // the ctx passed to Unlock
	Key      string
	Outcome  Outcome
	Err      error         // Unlock's error
	Start    time.Time     // when the round began
	Duration time.Duration // the round's
	Held     time.Duration // from the acquisition's end until Start
	Votes    []VoteEvent   // the round's answers
}

// ExtendEvent is one extension of a Lock.
type ExtendEvent struct {
	// Context is the ctx passed to Extend, or for the Lease's own
	// extensions the values of the ctx the lock was taken with.
	Context  context.Context
	Key      string
	Lease    bool // the Lease's own extension, not Lock.Extend
	Outcome  Outcome
	Err      error
	Start    time.Time
	Duration time.Duration
	// Votes are the round's answers; none when the extension was
	// refused before anything was sent.
	Votes []VoteEvent
}

// LossEvent is a Lock declared lost.
type LossEvent struct {
	Context context.Context // the values of the ctx the lock was taken with
	Key     string
	Outcome Outcome // the cause's: OutcomeTaken, OutcomeQuorumUnreachable, OutcomeNotHeld or OutcomeExtensionLimit
	Cause   error   // the LostError's cause
	Held    time.Duration
}

// WaitersEvent is a change in the number of a Client's Lock calls waiting
// for Key.
type WaitersEvent struct {
	Key     string
	Waiters int // the count after the change
	Delta   int // +1: one joined; -1: one left
}

// HandoffEvent is a Lock that won Key after hearing it released.
type HandoffEvent struct {
	Context context.Context
	Key     string
	// Duration is from when the release was heard (announced by the
	// nodes, or made by this Client) until the lock was acquired.
	Duration time.Duration
}

// FenceEvent is the fence an acquisition raised Key's counter to.
type FenceEvent struct {
	Context context.Context
	Key     string
	Fence   uint64
}

// voteLog keeps the answers of the round being run, for an observer.
type voteLog struct {
	ctx   context.Context
	votes [core.MaxNodes]VoteEvent
	sent  [core.MaxNodes]time.Time
	n     int
	last  time.Time // the last clock reading of the operation; zero: none yet

	// The round being run.
	op     core.Op
	key    string
	keep   bool      // its votes are kept
	sentAt time.Time // a multiplexed round's sends; zero: not yet
}

// begin starts hearing round r, keeping its votes (and dropping those
// kept before) when keep.
func (vl *voteLog) begin(r *core.Round, keep bool) {
	cmd := r.Command()
	vl.op, vl.key, vl.keep, vl.sentAt = cmd.Op, cmd.Key, keep, time.Time{}
	if keep {
		clear(vl.votes[:vl.n])
		vl.n = 0
	}
}

// sending records that node is sent the round's command; now is zero in
// a multiplexed round, whose sends all count from the reading that
// started it.
func (c *Client) sending(vl *voteLog, node int, now time.Time) {
	if node < 0 || node >= core.MaxNodes {
		return
	}
	if now.IsZero() {
		if vl.sentAt.IsZero() {
			vl.sentAt = c.startAt(vl)
		}
		now = vl.sentAt
	}
	vl.sent[node] = now
}

var voteLogs = sync.Pool{New: func() any { return new(voteLog) }}

// newVoteLog returns a voteLog for ctx's operation, or nil when the Client
// observes nothing.
func (c *Client) newVoteLog(ctx context.Context) *voteLog {
	if !c.timing {
		return nil
	}
	vl := voteLogs.Get().(*voteLog)
	vl.ctx = ctx
	return vl
}

// now reads the clock; vl, when not nil, keeps the reading as its last.
// An observed operation's start and end are readings it takes anyway.
func (c *Client) now(vl *voteLog) time.Time {
	t := c.clock.Now()
	if vl != nil {
		vl.last = t
	}
	return t
}

// startAt returns vl's last reading if it has one (the operation's start,
// taken by the observing caller), or a new one.
func (c *Client) startAt(vl *voteLog) time.Time {
	if vl != nil && !vl.last.IsZero() {
		return vl.last
	}
	return c.now(vl)
}

func (vl *voteLog) free() {
	if vl != nil {
		clear(vl.votes[:vl.n]) // drop the references: sent is overwritten before it is read
		vl.ctx, vl.n, vl.last, vl.key = nil, 0, time.Time{}, ""

		voteLogs.Put(vl)
	}
}

// list returns the votes kept, or nil.
func (vl *voteLog) list() []VoteEvent {
	if vl == nil {
		return nil
	}
	return vl.votes[:vl.n]
}

// voted records rep, an answer that counted in the round: kept if the
// round's votes are, and told to the observer.
func (c *Client) voted(vl *voteLog, rep core.Reply) {
	now := c.now(vl)
	ev := VoteEvent{Context: vl.ctx, Op: vl.op, Key: vl.key, Node: rep.Node,
		Name: c.drv.NodeName(rep.Node), Status: rep.Status, Err: rep.Err, At: now}
	if rep.Node >= 0 && rep.Node < core.MaxNodes {
		ev.Duration = now.Sub(vl.sent[rep.Node])
	}
	if vl.keep && vl.n < len(vl.votes) {
		vl.votes[vl.n] = ev
		vl.n++
	}
	if f := c.obs.Vote; f != nil {
		f(ev)
	}
}
