package core

import (
	"context"
	"errors"
	"math/bits"
	"time"
)

// Phase is what a step value (Acquisition, Lease) waits for next. The
// zero Phase is that of a zero value, which was never started.
type Phase uint8

const (
	// PhaseRound means: drive Round() until it is done, then call RoundDone.
	PhaseRound Phase = iota + 1
	// PhaseWait means: wait until WakeAt(), then call Wake.
	PhaseWait
	// PhaseDone means: the Acquisition's Result holds the grant or the error;
	// the Lease's Err says why the grant was lost.
	PhaseDone
)

// Acquisition is one acquisition with its retries, step by step: attempt
// rounds, the cleanup round after each failed attempt, and the waits in
// between. The root package's Client is the loop that drives it over a
// Driver; the simulation drives the same value. It allocates nothing on
// the way to a grant.
//
// Each attempt holds a token of its own: a failed attempt's cleanup that
// times out may still reach its node later and must not delete the key of
// a later, winning attempt.
//
// Every now an Acquisition takes, and WakeAt, are readings of the caller's
// clock. The zero Acquisition is in Phase 0 and does nothing; its Result
// is an ErrInvalidConfig error.
type Acquisition struct {
	spec   Spec
	base   Token // the caller's token; zero: draw each from Config.Tokens
	retry  retrier
	start  time.Time // the current attempt's start: validity counts from it
	fence  uint64    // the current attempt's fence, once its acquire round won
	round  Round
	wake   time.Time // the retry delay's end
	grant  Grant
	err    *Error // the last attempt's failure, or the result
	cause  error  // set by Cancel
	ticket int64  // with Config.Fair: the place in the nodes' queue, from the first cleanup

	// What the last failed attempt learnt about the other holder, for the
	// wait that follows it (see Announce).
	expiry    time.Time     // when enough holders' keys expire; zero: unknown
	woke      time.Time     // the wake an announcement brought forward; zero: none
	spread    time.Duration // jitter span after an announced wake, when the woken attempt failed
	held      uint32        // nodes that answered StatusHeld
	ours      uint32        // nodes the current attempt took (StatusOK): the cleanup frees them
	announced uint32        // nodes that announced since the attempt started
	listening uint32        // nodes whose announcements the caller hears
	wakeCount int           // announcements from held nodes that warrant an attempt; 0: none do

	// The small fields last, together: TinyGo keeps an Acquisition on the
	// stack only up to 1 KiB.
	phase    Phase
	cleaning bool // round is the cleanup of a failed attempt
	raising  bool // round raises the fence counters (Config.Fencing)
	woken    bool // the current attempt was started by an announcement
	leaving  bool // round takes a Fair waiter out of the nodes' queues
	followed bool // with Config.Fair: other waiters of the process wait behind it (Room.Look)
}

// Acquire begins an acquisition of key at now. Attempt 1 holds tok;
// attempt k > 1 holds tok with its last four bytes XORed with k−1, so that
// no two attempts share a token. A zero tok draws every attempt's token
// from Config.Tokens instead. Bad input is refused with an
// ErrInvalidConfig error before anything is sent: an empty key, one longer
// than 4 KiB (or, with Fencing, one that names a fence counter), and a
// token whose first 8 bytes are zero.
func (s Spec) Acquire(key string, tok Token, now time.Time) (a Acquisition, err error) {
	if err := s.checkKey(key); err != nil {
		return Acquisition{}, err
	}
	return s.acquire(key, tok, now, KindMutex, nil)
}

// acquire is Acquire of a key already checked (Try checks it under the
// Spec's own rules, then acquires under its own copy's).
func (s Spec) acquire(key string, tok Token, now time.Time, kind Kind, keys *KeyList) (a Acquisition, err error) {
	if tok != (Token{}) && !tok.safe() {
		return Acquisition{}, invalid("token " + tok.String() + " has its first 8 bytes zero: fewer than 64 unpredictable bits")
	}
	if tok == (Token{}) && kind == KindWrite {
		// A writer's attempts derive their tokens from one (deriveToken),
		// so that they share all but their last four bytes: by those its
		// winning attempt knows the mark its refused ones left (a writer
		// that waits for readers) as its own, and deletes it.
		if base := s.cfg.Tokens.NewToken(); base.safe() {
			tok = base
		}
	}
	a.spec, a.base, a.retry = s, tok, s.cfg.Retry.start() // a is zero: no literal to clear it again
	// The round's command holds the target from here on (command): a
	// field of its own would put an Acquisition over TinyGo's 1 KiB.
	a.round.cmd.Kind, a.round.cmd.Key, a.round.cmd.Keys = kind, key, keys
	a.startAttempt(now)
	return a, nil
}

// deriveToken returns the token of attempt k of an acquisition that was
// given tok: tok itself for attempt 1 (and any k below 1), otherwise tok
// with its last four bytes XORed with k−1, so that no two attempts of one
// acquisition share a token. Callers who pass their own tokens must not
// pass two that differ only in their last four bytes.
//
//nolint:gosec // G115: k > 1, and attempts past 2^32 wrapping is harmless; each byte(x >> n) takes one byte on purpose
func deriveToken(tok Token, k int) Token {
	if k <= 1 {
		return tok
	}
	x := uint32(k - 1)
	tok[12] ^= byte(x >> 24)
	tok[13] ^= byte(x >> 16)
	tok[14] ^= byte(x >> 8)
	tok[15] ^= byte(x)
	return tok
}

// SameAcquisition reports whether tokens a and b may be two attempts' of
// one acquisition given a base token (deriveToken): equal but for their
// last four bytes. A writer's acquisition (KindWrite) always has a base,
// and its script deletes the mark its refused attempts left on a key
// once one of its attempts takes the key, by this test.
func SameAcquisition(a, b Token) bool {
	for i := 0; i < len(a)-4; i++ {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// command returns a command of op with tok for the acquisition's
// target: the key, kind and keys its round's command holds, the same for
// every round of an acquisition.
func (a *Acquisition) command(op Op, tok Token) Command {
	c := &a.round.cmd
	return Command{Op: op, Kind: c.Kind, Key: c.Key, Keys: c.Keys, Token: tok}
}

// fenceCommand returns the OpRaiseFence of tok to fence.
func (a *Acquisition) fenceCommand(tok Token, fence uint64) Command {
	cmd := a.command(OpRaiseFence, tok)
	cmd.Fence = fence
	return cmd
}

func (a *Acquisition) startAttempt(now time.Time) {
	k := a.retry.attempt()
	var tok Token
	if a.base != (Token{}) {
		tok = deriveToken(a.base, k)
	} else {
		tok = a.spec.cfg.Tokens.NewToken()
	}
	op := OpAcquire
	if a.spec.cfg.Fencing {
		op = OpAcquireFenced
	}
	a.phase, a.cleaning, a.raising, a.start, a.fence = PhaseRound, false, false, now, 0
	a.announced, a.woke, a.ours = 0, time.Time{}, 0
	cmd := a.command(op, tok)
	cmd.TTL, cmd.Probe = a.spec.cfg.TTL, k > 1
	if a.spec.cfg.Fair {
		// Every attempt may find the key handed to it, which a plain SET
		// NX cannot take; the one that takes it leaves the queue.
		cmd.Probe, cmd.Fair = true, true
		if a.cause == nil && a.retry.attempts < a.retry.policy.tries || mutLastAttemptQueues {
			// An attempt that will wait if it fails queues its waiter
			// where it finds the key held, under its place, in its own
			// round: a wait needs no cleanup round first to join the
			// queue (queuedEverywhere), whose ticket then becomes the
			// acquisition's. A cleanup takes its own, as before: a
			// Lock of the process may have taken the key since this
			// one was taken, which made it stale.
			cmd.Ticket, cmd.Handoff = a.ticket, a.spec.fairHandoff()
			if cmd.Ticket == 0 {
				cmd.Ticket = TicketAt(now)
			}
		}
	}
	a.spec.initRound(&a.round, cmd, now)
}

// attemptQueued reports whether the round is an attempt, sent, that
// queues its waiter (Command.Ticket): it may have queued it on any node
// it reached. An attempt never sent (WaitAgain before the first, a
// cancel before the send) queued nothing.
func (a *Acquisition) attemptQueued() bool {
	r := &a.round
	return !a.cleaning && !a.raising && r.sent > 0 && r.cmd.Ticket > 0
}

// queuedEverywhere reports whether the failed attempt's round, which
// queued its waiter (Command.Ticket), found the key held on every node:
// it took nothing, so there is nothing to clean up, and it queued the
// waiter on every node, so it needs no cleanup round to join the queue.
// A node that took the key, found it gone, failed or did not answer
// still needs the cleanup (which frees it, queues, and hands on).
func (a *Acquisition) queuedEverywhere() bool {
	r := &a.round
	return !a.cleaning && !a.raising && r.cmd.Ticket > 0 && r.tally.held == r.tally.n
}

// TicketUnit is the unit of a Fair queue's tickets (Command.Ticket):
// their Unix time in microseconds. Waiters that queue one after another
// within a millisecond are so served in that order, where tickets in
// milliseconds tied them and the nodes broke the tie by waiter id. A
// node's queue keeps a ticket as a sorted set's score, a float64, which
// holds every microsecond exactly until the year 2255.
const TicketUnit = time.Microsecond

// TicketAt is a Fair queue's ticket taken at now: its Unix time in
// TicketUnits, at least 1, since 0 does not queue. Tickets from the
// clocks of different hosts order their waiters as well as those clocks
// agree: a waiter whose clock runs behind is served early, which costs
// others time and never exclusion.
func TicketAt(now time.Time) int64 { return max(now.UnixMicro(), 1) }

// queued records, with Config.Fair, that the nodes queued the
// acquisition's process under ticket (Room.Look): the cleanups of its
// failed attempts keep that place rather than queue it at the back. The
// earliest place it knows counts; 0 changes nothing. With followed
// (Room.Look) other waiters of the process wait behind it: the
// process's entry is theirs too, so an acquisition that gives up while
// followed does not take it out (no leave round, and a last cleanup that
// queues the process again).
func (a *Acquisition) queued(ticket int64) {
	if ticket > 0 && (a.ticket == 0 || ticket < a.ticket) && !mutPlaceIgnored {
		a.ticket = ticket
		if r := &a.round; a.phase == PhaseRound && !a.cleaning && !a.raising && r.sent == 0 && r.cmd.Ticket > 0 {
			r.cmd.Ticket = ticket // an attempt not yet sent queues under the place
		}
	}
}

// Phase returns what the acquisition waits for.
func (a *Acquisition) Phase() Phase { return a.phase }

// Round returns the round to drive in PhaseRound: an attempt's acquire
// round, its fence raise round (Config.Fencing), or the cleanup (a release
// of the attempt's token on every node) after a failed attempt.
func (a *Acquisition) Round() *Round { return &a.round }

// Cleaning reports whether Round is the cleanup of a failed attempt.
func (a *Acquisition) cleaningRound() bool { return a.cleaning }

// RoundDone moves on once Round().Done(), at now on the caller's clock: a
// won attempt with validity of at least the loss margin (two round
// bounds, Spec.keepable) ends the acquisition with the lock; a
// failed one starts its cleanup round; a finished cleanup waits for the
// retry delay, or ends the acquisition when no try is left.
func (a *Acquisition) RoundDone(now time.Time) {
	if a.phase != PhaseRound || !a.round.Done() {
		return
	}
	s, r := &a.spec, &a.round
	if a.cleaning {
		switch {
		case a.cause != nil:
			// A cleanup that queued the waiter (Ticket > 0) before the
			// cancel came is followed by the leave round.
			if r.cmd.Ticket > 0 && !mutCancelStaysQueued && a.leave(now) {
				return
			}
			a.finish(a.cancelled())
			return
		case a.leaving:
			a.finish(a.err)
			return
		}
		a.waitNext(now)
		return
	}
	elapsed := now.Sub(a.start)
	drift := s.drift
	if mutValidityWithoutDrift {
		drift = 0
	}
	g := Grant{key: r.cmd.Key, keys: r.cmd.Keys, kind: r.cmd.Kind, token: r.cmd.Token, ttl: s.cfg.TTL, drift: drift, end: now,
		validity: Validity(s.cfg.TTL, elapsed, drift), fence: a.fence}
	// A round won with too little validity for its grant to be kept is
	// no grant (Spec.keepable): the handle would be lost at birth, so it
	// is cleaned up as a failed attempt is, and Lock tries again.
	keep := s.keepable(g, now)
	if r.tally.vote() == voteWon && keep {
		if s.cfg.Fencing && !a.raising {
			fence := r.maxFence()
			// A reader reads the counters and raises nothing: readers
			// share the key, so no reader's fence may exclude another's
			// writes. The quorum's highest counter is at least the last
			// writer's, whose raise reached a majority this quorum
			// meets; it may be higher, from a writer's failed attempts
			// (KindRead says so).
			if a.round.cmd.Kind != KindRead && !mutSkipFenceRaise {
				a.startRaise(fence, now)
				return
			}
			g.fence = fence
		}
		a.grant = g
		a.phase = PhaseDone
		return
	}
	if r.tally.vote() == voteWon {
		a.err = &Error{Op: OpAcquire, Kind: ErrNotHeld, Key: a.round.cmd.Key,
			Cause: &validityError{ttl: s.cfg.TTL, elapsed: elapsed, drift: drift, margin: s.lossMargin()}}
	} else {
		a.err = s.failure(OpAcquire, a.round.cmd.Key, &r.tally)
		if a.raising {
			a.err.Cause = errRaise
		}
	}
	a.err.Attempts = a.retry.attempts
	a.learn(now)
	if a.queuedEverywhere() {
		a.ticket = r.cmd.Ticket // its place: the attempt's, or the one it had
		a.waitNext(now)         // the attempt queued the waiter: one round, not two
		return
	}
	a.startCleanup(now)
}

// refusedEverywhere reports whether Round is a done attempt (not a fence
// raise nor a cleanup) that every node it was sent to refused as held
// (StatusHeld), none of them still to answer: on no node did it take the
// key (a node it was never sent to, after a sequential round was lost,
// took nothing either), so that its cleanup, the release of a
// token no node holds, changes nothing on a node whose kind's refusal
// leaves nothing behind (not a writer, whose refusal marks the key, nor
// a Fair one, whose cleanup queues its waiter).
func (a *Acquisition) refusedEverywhere() bool {
	r := &a.round
	return a.phase == PhaseRound && !a.cleaning && !a.raising && r.Done() && a.ours == 0 &&
		r.tally.held == int(r.sent) && r.cmd.Kind != KindWrite && !a.spec.cfg.Fair
}

// dropCleanup ends the cleanup round just started, not sent, of an
// attempt refusedEverywhere, as its end would: the wait for the next
// try, or the acquisition's end.
func (a *Acquisition) dropCleanup(now time.Time) {
	if a.cause != nil {
		a.finish(a.cancelled())
		return
	}
	a.waitNext(now)
}

// waitNext waits for the retry delay after a failed attempt, its cleanup
// done or needless (queuedEverywhere), at now; or ends the acquisition
// when no try is left.
func (a *Acquisition) waitNext(now time.Time) {
	delay, ok := a.retry.next(a.spec.cfg.Jitter.Uint64())
	if !ok {
		a.finish(a.err)
		return
	}
	a.phase, a.wake = PhaseWait, now.Add(delay)
	a.maybeWake(now) // announcements heard during the attempt count
}

// learn records, from the failed attempt's round ending at now, what the
// wait before the next attempt can go on: which nodes another holder
// held, how many of them must free the key before an attempt can win
// (quorum minus the nodes this attempt took, which its cleanup frees), and
// when enough of their keys expire, from their remaining TTLs. A raise
// round that failed teaches nothing about other holders.
func (a *Acquisition) learn(now time.Time) {
	t := &a.round.tally
	a.held, a.ours, a.wakeCount, a.expiry = 0, t.oks(), 0, time.Time{}
	if a.woken {
		a.spread = 2 * now.Sub(a.start) // a woken attempt lost a race: spread the next
	} else {
		a.spread = 0
	}
	if a.raising {
		return
	}
	need := t.quorum - t.ok
	if need < 1 { // won too late: any release helps
		need = 1
	}
	var ttls [MaxNodes]time.Duration
	known := 0
	for i := 0; i < t.n; i++ {
		if t.status[i] != StatusHeld {
			continue
		}
		a.held |= 1 << i
		if d := t.holderTTL(i); d > 0 { // insertion sort: at most MaxNodes
			j := known
			for ; j > 0 && ttls[j-1] > d; j-- {
				ttls[j] = ttls[j-1]
			}
			ttls[j] = d
			known++
		}
	}
	a.wakeCount = min(need, bits.OnesCount32(a.held))
	if a.wakeCount > 0 && known >= need {
		// A key read with PTTL d is gone d later; PTTL rounds down to the
		// millisecond, and the reading was taken before now.
		a.expiry = now.Add(ttls[need-1] + time.Millisecond) //nolint:gosec // G602: 1 <= need <= known <= MaxNodes = len(ttls)
	}
}

// maybeWake brings the wake forward, in PhaseWait, once enough held nodes
// have announced a release. After an announced attempt that lost (another
// client heard the same release), the wake is spread over twice that
// attempt's duration so that competing clients do not split the vote
// again.
//
// A quorum of nodes announced free (with those the failed attempt took,
// which its cleanup frees) wakes it too, whether or not the attempt heard
// from them: a multiplexed attempt is decided before every node answers,
// and a stale key on a node that did answer must not make the waiter
// wait for it to expire. At least one node other than the attempt's own
// must have announced: those alone are no release. The wake then never
// comes later than the retry delay's end, so that listening is never
// slower than polling.
func (a *Acquisition) maybeWake(now time.Time) {
	if a.phase != PhaseWait || !a.woke.IsZero() {
		return
	}
	heldFreed := a.wakeCount > 0 && bits.OnesCount32(a.announced&a.held) >= a.wakeCount
	quorumFree := bits.OnesCount32(a.announced|a.ours) >= a.spec.quorum && a.announced&^a.ours != 0 &&
		!mutWakeOnHeldOnly
	if !heldFreed && !quorumFree {
		return
	}
	a.woke = now.Add(uniform(a.spread, a.spec.cfg.Jitter.Uint64()))
	if a.woke.After(a.wake) {
		a.woke = a.wake
	}
}

// Announce records that node announced a release of the key at now, or
// that its announcements may have been missed (Announcer.Watch). Once as
// many of the nodes held by the other holder at the last attempt have
// announced as must free the key for an attempt to win, WakeAt comes
// forward to now (spread, after an announced attempt lost a race). It is
// a hint: the next attempt is an ordinary round. Announcements during an
// attempt count for the wait after it; others are ignored.
func (a *Acquisition) Announce(node int, now time.Time) {
	if node < 0 || node >= a.spec.n || a.phase == PhaseDone || a.phase == 0 {
		return
	}
	a.announced |= 1 << node
	a.maybeWake(now)
}

// SetListening tells the acquisition which nodes' announcements of the
// key the caller hears: bit i for node i. While they include enough of
// the nodes the other holder held to bring the wake forward, a wait lasts
// until Announce does so or the holders' keys expire (as their Reply.TTL
// said), and the retry delay is used only when their expiry is unknown.
// Otherwise a wait ends at the earlier of the retry delay and the expiry.
func (a *Acquisition) SetListening(nodes uint32) { a.listening = nodes }

// relying reports whether the wait may rely on announcements: the nodes
// listened to include enough of those held.
//
// A Fair waiter never relies on them: it hears only the turns handed to
// it, and a handed key that its waiter never takes expires unannounced,
// which only the waiters' timed attempts notice (their cleanups hand the
// free key on).
func (a *Acquisition) relying() bool {
	return a.wakeCount > 0 && bits.OnesCount32(a.listening&a.held) >= a.wakeCount && !a.spec.cfg.Fair
}

// holderExpiry returns when enough of the other holder's keys will have
// expired for an attempt to win, as learnt from the remaining TTLs
// (Reply.TTL) of the last failed attempt; the zero Time when unknown.
func (a *Acquisition) holderExpiry() time.Time { return a.expiry }

// startRaise starts the round that raises the fence counter to fence on
// every node where the key still holds the attempt's token. Only once a
// majority has raised is the lock handed out: any later holder's quorum
// meets that majority on some node, sets the key there only after this
// attempt's key left it, so after the raise, and increments past fence.
func (a *Acquisition) startRaise(fence uint64, now time.Time) {
	tok := a.round.cmd.Token
	a.raising, a.fence = true, fence
	a.ours = a.round.tally.oks() // for Room.Ended, should the raise be cancelled
	a.spec.initRound(&a.round, a.fenceCommand(tok, fence), now)
}

// startCleanup releases the failed attempt's token on every node. It does
// not wait for the nodes that timed out on the attempt (see Round), nor for
// those a sequential attempt never reached: they were sent no SET, and no
// other attempt holds this token.
func (a *Acquisition) startCleanup(now time.Time) {
	r := &a.round
	// A multiplexed attempt gives every node one deadline: once it has
	// passed, the nodes still pending have timed out as well.
	expired := r.fanOut == Multiplexed && !now.Before(r.end)
	var noWait uint32
	for i := 0; i < r.tally.n; i++ {
		s := r.tally.status[i]
		if i >= int(r.sent) || s == StatusTimeout || (s == 0 && expired) {
			noWait |= 1 << i
		}
	}
	queued := a.attemptQueued() // a cancelled one leaves the queue
	a.cleaning, a.raising = true, false
	cmd := a.command(OpRelease, r.cmd.Token)
	if s := &a.spec; s.cfg.Fair {
		// A failed attempt's cleanup queues its waiter, under the ticket of
		// its first, so that it keeps its place, unless it will not wait
		// (cancelled, or with no try left): then it leaves the queue, if it
		// joined it, or, followed by others of its process, queues the
		// process again for them, since the attempt took it out of the
		// queue on the nodes where it took a key handed to it.
		cmd = s.fairRelease(cmd)
		switch {
		case a.cause == nil && a.retry.attempts < a.retry.policy.tries:
			if a.ticket == 0 {
				a.ticket = TicketAt(now)
			}
			cmd.Ticket = a.ticket
		case a.followed:
			// The process's entry, which its attempt may have made, is
			// its followers' too: it keeps it (Ticket 0) or renews it.
			cmd.Ticket = a.ticket
		case a.ticket != 0 || queued:
			cmd.Ticket = leaveTicket
		}
	}
	if cmd.Kind == KindWrite && a.cause == nil && (a.retry.attempts < a.retry.policy.tries || mutOutOfTriesKeepsMark) {
		// The writer waits on: its mark, which its refused attempts
		// left, must keep new readers out until its next attempt. Any
		// other writer's release deletes its own mark (Command.Ticket).
		cmd.Ticket = keepMark
	}
	a.spec.initRound(r, cmd, now)
	a.round.noWait = noWait
}

// keepMark is the Ticket of a writer's release (KindWrite) that keeps
// the writer's mark: the cleanup of a failed attempt whose writer waits
// on (Command.Ticket). A writer is never Fair: no queue reads it.
const keepMark = 1

// markKept reports whether a is a writer whose failed attempt's cleanup
// kept its mark on the nodes, and whose next attempt has not been sent:
// waiting (PhaseWait after that cleanup), woken for an attempt not yet
// sent, or the cleanup itself.
func (a *Acquisition) markKept() bool {
	r := &a.round
	switch {
	case r.cmd.Kind != KindWrite || a.leaving:
		return false
	case r.cmd.Op == OpRelease:
		return r.cmd.Ticket == keepMark
	}
	return !a.raising && r.sent == 0 && a.retry.attempts > 1
}

// unmark starts the round that deletes a writer's mark, kept by its
// last cleanup (markKept), once the writer gives up, and reports
// whether it did: a release of the last attempt's token without Ticket,
// which finds the key gone (the cleanup deleted it, and an attempt not
// yet sent set nothing) and deletes the mark where it is the writer's,
// so that readers are not kept out for a TTL by a writer that no longer
// waits.
func (a *Acquisition) unmark(now time.Time) bool {
	if !a.markKept() {
		return false
	}
	cmd := a.command(OpRelease, a.round.cmd.Token)
	a.phase, a.cleaning, a.raising, a.leaving = PhaseRound, true, false, true
	a.spec.initRound(&a.round, cmd, now)
	return true
}

// freedKey reports whether a ended without the lock after a cleanup
// that queued nobody, its last attempt having taken the key on some node
// (a Fair acquire there takes the process out of the node's queue), or
// its cleanup having freed it on some node or maybe so (a node that did
// not answer it): a key the node had handed to the process, say
// (Room.Ended); or after a cleanup that took the process out of the
// queue (a cancelled attempt that had queued it, Command.Ticket): the
// entry was the process's, which its head may have made.
func (a *Acquisition) freedKey() bool {
	if a.phase != PhaseDone || a.grant.key != "" || !a.cleaning || a.round.cmd.Ticket > 0 {
		return false
	}
	if a.round.cmd.Ticket < 0 && !a.leaving {
		return true
	}
	if a.round.cmd.Ticket < 0 {
		return false
	}
	t := &a.round.tally
	return a.ours != 0 || t.ok > 0 || t.ok+t.held+t.missing < t.n
}

// leftQueue reports whether a ended without the lock after a round that
// took its waiter out of the queue (leaveTicket).
func (a *Acquisition) leftQueue() bool {
	return a.phase == PhaseDone && a.grant.key == "" && a.cleaning && a.round.cmd.Ticket < 0
}

// leaveTicket is the Ticket of a Fair release that takes its waiter out
// of the queue.
const leaveTicket = -1

// leave starts the round that takes a Fair waiter that joined the
// nodes' queues out of them, and reports whether it did: a waiter that
// gives up must not be handed the next release. Its caller stops the
// waiter where it is: a wait, an attempt not yet sent, or a cleanup that
// queued it after the acquisition was cancelled. It is a release of the
// last attempt's token, which its cleanup deleted already (an unsent
// attempt's set nothing), so it frees nothing but a key handed to the
// waiter.
func (a *Acquisition) leave(now time.Time) bool {
	if a.round.cmd.Kind == KindWrite {
		return a.unmark(now)
	}
	if !a.spec.cfg.Fair || a.ticket == 0 || a.followed {
		return false
	}
	cmd := a.spec.fairRelease(a.command(OpRelease, a.round.cmd.Token))
	cmd.Ticket = leaveTicket
	a.phase, a.cleaning, a.raising, a.leaving = PhaseRound, true, false, true
	a.spec.initRound(&a.round, cmd, now)
	return true
}

// WakeAt returns when the wait of PhaseWait ends: at the retry delay's
// end, or at the holders' expiry (Reply.TTL) when that comes first or
// while listening (SetListening), or earlier once Announce brought it
// forward.
//
// A writer (KindWrite) refused by held nodes wakes half a TTL after its
// attempt began at the latest: its next attempt renews its mark on the
// nodes that refused it for readers before the mark expires, a TTL after
// that attempt. Were it due only at the readers' expiry, a reader
// admitted just before the mark would expire with it, and a new reader
// admitted in between would refuse the writer for another TTL, again
// and again.
func (a *Acquisition) WakeAt() time.Time {
	at := a.wake
	if !a.expiry.IsZero() && (a.relying() || a.expiry.Before(at)) {
		at = a.expiry
	}
	if !a.woke.IsZero() && a.woke.Before(at) {
		at = a.woke
	}
	if a.round.cmd.Kind == KindWrite && a.held != 0 && !mutMarkLapses {
		if renew := a.start.Add(a.spec.cfg.TTL / 2); renew.Before(at) {
			at = renew
		}
	}
	return at
}

// Wake starts the next attempt at now, in PhaseWait. It may come before
// WakeAt: an attempt is always safe.
func (a *Acquisition) Wake(now time.Time) {
	if a.phase == PhaseWait {
		a.woken = !a.woke.IsZero() && !now.Before(a.woke)
		a.startAttempt(now)
	}
}

// WaitAgain starts the wait afresh at now, in PhaseWait: a retry delay
// from now, and nothing of what the last attempt learnt, which another
// holder has since made stale (within a process, a waiter behind the
// head that just took the lock: see Room). Announcements then wake it
// once a quorum of nodes is announced free.
//
// A new acquisition, before its first attempt is driven, waits so too
// rather than attempt: a waiter that joins behind others of its process
// waits its turn, and with Config.Fair its process's place in the nodes'
// queue serves it without a failed attempt first.
func (a *Acquisition) WaitAgain(now time.Time) {
	if a.phase == PhaseRound && a.retry.attempts == 1 && !a.cleaning && !a.raising && a.round.sent == 0 && a.cause == nil {
		a.retry.attempts = 0 // the attempt was never made
		a.phase = PhaseWait
	}
	if a.phase != PhaseWait {
		return
	}
	delay := a.retry.policy.Delay(max(a.retry.attempts, 1), a.spec.cfg.Jitter.Uint64())
	a.wake = now.Add(delay)
	a.held, a.ours, a.wakeCount, a.announced = 0, 0, 0, 0
	a.expiry, a.woke, a.spread = time.Time{}, time.Time{}, 0
}

// GiveUp ends the acquisition in PhaseWait with the last attempt's error,
// as a deadline does that leaves no time for the next attempt: for a
// caller whose waits may end early (Announce), and so cannot tell in
// advance whether the next attempt fits.
//
// With Config.Fair, a waiter that joined the nodes' queues leaves them
// first: GiveUp starts that round (PhaseRound), to be driven to its end,
// and the acquisition ends with the error after it. One that never
// attempted (WaitAgain before its first attempt) has no attempt's error:
// it ends as Cancel with context.DeadlineExceeded does.
func (a *Acquisition) GiveUp(now time.Time) {
	if a.phase == PhaseWait && a.err == nil {
		a.Cancel(now, context.DeadlineExceeded)
		return
	}
	if a.phase == PhaseWait && !a.leave(now) {
		a.finish(a.err)
	}
}

// Cancel ends the acquisition because its caller gave up, with cause
// (ctx.Err() for a context) as the error's Cause. An attempt in progress
// is abandoned and its cleanup round starts, which must still be driven to
// its end (PhaseRound): the keys it set must not outlive the caller. A
// cleanup in progress is finished first. Result then matches ErrCancelled.
func (a *Acquisition) Cancel(now time.Time, cause error) {
	if a.phase == PhaseDone || a.cause != nil {
		return
	}
	a.cause = cause
	switch {
	case a.phase == PhaseWait, !a.cleaning && !a.raising && a.round.sent == 0:
		// Waiting, or woken for an attempt not yet sent: nothing of this
		// attempt is on the nodes, but a Fair waiter leaves the queues
		// first.
		a.err = a.cancelled()
		if mutCancelStaysQueued && a.phase != PhaseWait || !a.leave(now) {
			a.finish(a.err)
		}
	case !a.cleaning:
		a.err = a.cancelled()
		a.err.Nodes = a.spec.results(&a.round.tally)
		a.ours |= a.round.tally.oks() // for Room.Ended; a raise's adds to its attempt's (startRaise)
		a.startCleanup(now)
	}
}

func (a *Acquisition) cancelled() *Error {
	if a.err != nil && errors.Is(a.err.Kind, ErrCancelled) {
		return a.err
	}
	return &Error{Op: OpAcquire, Kind: ErrCancelled, Key: a.round.cmd.Key, Attempts: a.retry.attempts, Cause: a.cause}
}

func (a *Acquisition) finish(err *Error) {
	a.phase, a.err = PhaseDone, err
}

// Result returns the grant, or why the acquisition failed: ErrTaken,
// ErrQuorumUnreachable or ErrNotHeld from the last attempt, or
// ErrCancelled. It is meaningful in PhaseDone only.
func (a *Acquisition) Result() (Grant, error) {
	if a.phase != PhaseDone {
		return Grant{}, invalid("acquisition of " + QuoteKey(a.round.cmd.Key) + " is not done")
	}
	if a.grant.key != "" {
		return a.grant, nil
	}
	return Grant{}, a.err
}
