package core_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redlock-go/redlock/core"
)

// drive sends every command r has due at now, answers each with st (a
// held key with 5 s left), and returns the commands sent.
func drive(r *core.Round, now time.Time, st core.Status) []core.Command {
	var cmds []core.Command
	for {
		node, cmd, _, ok := r.Next(now)
		if !ok {
			return cmds
		}
		cmds = append(cmds, cmd)
		rep := core.Reply{Node: node, Status: st}
		if st == core.StatusHeld && cmd.Op != core.OpRelease {
			rep.TTL = 5 * time.Second
		}
		r.Receive(rep)
	}
}

// driveLastTimesOut is drive with the last node timing out: a node the
// attempt may have reached, which its cleanup must then reach too.
func driveLastTimesOut(r *core.Round, now time.Time, n int) []core.Command {
	var cmds []core.Command
	for {
		node, cmd, _, ok := r.Next(now)
		if !ok {
			return cmds
		}
		cmds = append(cmds, cmd)
		rep := core.Reply{Node: node, Status: core.StatusHeld, TTL: 5 * time.Second}
		if node == n-1 {
			rep = core.Reply{Node: node, Status: core.StatusTimeout}
		}
		r.Receive(rep)
	}
}

// failAttempt drives a's attempt to a loss on held keys, the last of its
// three nodes timing out, and its cleanup, and returns the attempt's and
// the cleanup's first commands. An attempt held on every node needs no
// cleanup (TestFairAttemptQueuesInItsOwnRound): the timeout keeps one.
func failAttempt(t *testing.T, a *core.Acquisition, now time.Time) (attempt, cleanup core.Command) {
	t.Helper()
	if a.Phase() != core.PhaseRound {
		t.Fatalf("phase %v, want a round", a.Phase())
	}
	attempt = driveLastTimesOut(a.Round(), now, 3)[0]
	a.RoundDone(now)
	if a.Round().Command().Op != core.OpRelease {
		t.Fatalf("no cleanup after a failed attempt: %+v", a.Round().Command())
	}
	cleanup = drive(a.Round(), now, core.StatusHeld)[0]
	a.RoundDone(now)
	if a.Phase() != core.PhaseWait {
		t.Fatalf("phase %v after the cleanup, want a wait", a.Phase())
	}
	return attempt, cleanup
}

// fairSpec returns a Fair Spec over three nodes, with retry (zero: the
// default), sequential tokens and no jitter.
func fairSpec(t *testing.T, retry core.RetryPolicy) core.Spec {
	t.Helper()
	spec, err := core.NewSpec(names{"a", "b", "c"}, core.Config{Fair: true, Tokens: &seqTokens{}, Jitter: fixedRand(0), Retry: retry})
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// queuedHead starts a waiter of q's process at now that is its head at
// once, followed or not, and returns it after its first failed attempt
// and the cleanup that queued it.
func queuedHead(t *testing.T, spec core.Spec, q *core.Queue, now time.Time, followed bool) (core.Acquisition, core.Command) {
	t.Helper()
	head, _ := spec.Acquire("k", core.Token{}, now)
	q.Look(&head, now, 0, followed)
	_, clean := failAttempt(t, &head, now)
	return head, clean
}

// nextHeadsCleanup starts a waiter of q's process at now that is its
// head at once, and returns the cleanup of its first failed attempt.
func nextHeadsCleanup(t *testing.T, spec core.Spec, q *core.Queue, now time.Time) core.Command {
	t.Helper()
	next, _ := spec.Acquire("k", core.Token{}, now)
	next.WaitAgain(now)
	q.Look(&next, now, 0, false)
	next.Wake(now)
	_, c := failAttempt(t, &next, now)
	return c
}

func wantCommand(t *testing.T, what string, got, want core.Command) {
	t.Helper()
	if got != want {
		t.Errorf("%s:\n got %+v\nwant %+v", what, got, want)
	}
}

// TestFairCommands: what Config.Fair puts in an acquisition's commands.
// Every attempt probes (it may find the key handed to it) and is Fair;
// a failed attempt's cleanup queues the waiter under the ticket of the
// first cleanup, so that it keeps its place; a release queues the process
// again only when Grant.WithFollowers says others follow; a cancelled
// acquisition's cleanup leaves the queue.
func TestFairCommands(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	spec, err := core.NewSpec(names{"a", "b", "c"}, core.Config{Fair: true, TTL: 10 * time.Second,
		NodeTimeout: 50 * time.Millisecond, Tokens: &seqTokens{}, Jitter: fixedRand(0)})
	if err != nil {
		t.Fatal(err)
	}
	const handoff, life = 100 * time.Millisecond, 20*time.Second + 100*time.Millisecond

	a, err := spec.Acquire("k", core.Token{}, t0)
	if err != nil {
		t.Fatal(err)
	}
	att, clean := failAttempt(t, &a, t0)
	wantCommand(t, "the first attempt probes, and queues where it finds the key held", att, core.Command{Op: core.OpAcquire, Key: "k",
		Token: att.Token, TTL: 10 * time.Second, Probe: true, Fair: true, Ticket: core.TicketAt(t0), Handoff: handoff})
	wantCommand(t, "its cleanup queues the waiter", clean, core.Command{Op: core.OpRelease, Key: "k", Token: att.Token,
		Fair: true, Ticket: core.TicketAt(t0), Handoff: handoff, TTL: life})

	t1 := t0.Add(3 * time.Second)
	a.Wake(t1)
	att, clean = failAttempt(t, &a, t1)
	if att.Ticket != core.TicketAt(t0) || clean.Ticket != core.TicketAt(t0) {
		t.Errorf("attempt ticket %d, cleanup ticket %d: a waiter keeps its first ticket %d", att.Ticket, clean.Ticket, core.TicketAt(t0))
	}

	t2 := t1.Add(time.Second)
	a.Wake(t2)
	if att = drive(a.Round(), t2, core.StatusOK)[0]; att.Ticket != 0 {
		t.Errorf("the last try, which would not wait, queues with ticket %d", att.Ticket)
	}
	a.RoundDone(t2)
	g, err := a.Result()
	if err != nil {
		t.Fatal(err)
	}
	t3 := t2.Add(time.Second)
	rel, err := spec.Release(g.WithFollowers(true), t3)
	if err != nil {
		t.Fatal(err)
	}
	wantCommand(t, "followed: the release queues the process at the back, then hands the key on", rel.Command(),
		core.Command{Op: core.OpRelease, Key: "k", Token: g.Token(), Fair: true, Ticket: core.TicketAt(t3), Handoff: handoff, TTL: life})
	rel, _ = spec.Release(g, t3)
	wantCommand(t, "a release hands the key on, and queues nobody", rel.Command(),
		core.Command{Op: core.OpRelease, Key: "k", Token: g.Token(), Fair: true, Handoff: handoff, TTL: life})

	b, err := spec.Acquire("k", core.Token{}, t0)
	if err != nil {
		t.Fatal(err)
	}
	drive(b.Round(), t0, 0) // sent, unanswered
	b.Cancel(t0, errors.New("gone"))
	if c := b.Round().Command(); b.Phase() != core.PhaseRound || c.Ticket != -1 || !c.Fair { // its attempt may have queued it
		t.Errorf("a cancelled waiter's cleanup leaves the queue: phase %v, %+v", b.Phase(), c)
	}
}

// TestWaitAgainBeforeTheFirstAttempt: a new acquisition told to wait
// afresh before its first attempt is driven waits instead, and attempts
// first at its wake, as attempt 1.
func TestWaitAgainBeforeTheFirstAttempt(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	for _, fair := range []bool{false, true} {
		spec, err := core.NewSpec(names{"a", "b", "c"}, core.Config{Fair: fair, Tokens: &seqTokens{}, Jitter: fixedRand(0),
			Retry: core.RandomDelay(3, 20*time.Millisecond, 20*time.Millisecond)})
		if err != nil {
			t.Fatal(err)
		}
		a, err := spec.Acquire("k", core.TokenFromUint64s(7, 9), t0)
		if err != nil {
			t.Fatal(err)
		}
		a.WaitAgain(t0)
		if a.Phase() != core.PhaseWait || !a.WakeAt().Equal(t0.Add(20*time.Millisecond)) {
			t.Fatalf("fair %v: phase %v, wake at %v", fair, a.Phase(), a.WakeAt())
		}
		a.Wake(a.WakeAt())
		cmd := drive(a.Round(), a.WakeAt(), core.StatusHeld)[0]
		if cmd.Token != core.TokenFromUint64s(7, 9) || cmd.Probe != fair {
			t.Errorf("fair %v: not attempt 1: %+v", fair, cmd)
		}
		a.RoundDone(t0)
		drive(a.Round(), t0, core.StatusHeld)
		a.RoundDone(t0)
		a.GiveUp(t0)
		if fair {
			// The waiter joined the queues at its cleanup: it leaves them.
			if c := a.Round().Command(); a.Phase() != core.PhaseRound || c.Ticket != -1 {
				t.Fatalf("no leave round after GiveUp: phase %v, %+v", a.Phase(), c)
			}
			drive(a.Round(), t0, core.StatusMissing)
			a.RoundDone(t0)
		}
		_, err = a.Result()
		var e *core.Error
		if !errors.As(err, &e) || e.Attempts != 1 {
			t.Errorf("fair %v: the wait was no attempt: %v", fair, err)
		}

		// Once an attempt is under way, it is too late.
		b, _ := spec.Acquire("k", core.Token{}, t0)
		drive(b.Round(), t0, 0)
		b.WaitAgain(t0)
		if b.Phase() != core.PhaseRound {
			t.Errorf("fair %v: an attempt in flight was made to wait", fair)
		}
	}
}

// TestFollowedReleaseIsQuiet: the release of a grant handed on within
// the process (Grant.WithHandoff) announces nothing (Command.Quiet), and
// with Fair is a plain one; one merely followed, or followed by nobody,
// announces, and so does a failed attempt's cleanup.
func TestFollowedReleaseIsQuiet(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	spec, err := core.NewSpec(names{"a", "b", "c"}, core.Config{Tokens: &seqTokens{}, Jitter: fixedRand(0)})
	if err != nil {
		t.Fatal(err)
	}
	a, err := spec.Acquire("k", core.Token{}, t0)
	if err != nil {
		t.Fatal(err)
	}
	if _, clean := failAttempt(t, &a, t0); clean.Quiet {
		t.Errorf("a failed attempt's cleanup is quiet: %+v", clean)
	}
	a.Wake(t0.Add(time.Second))
	drive(a.Round(), t0.Add(time.Second), core.StatusOK)
	a.RoundDone(t0.Add(time.Second))
	g, err := a.Result()
	if err != nil {
		t.Fatal(err)
	}
	rel, _ := spec.Release(g.WithHandoff(true), t0.Add(2*time.Second))
	wantCommand(t, "handed on: quiet", rel.Command(), core.Command{Op: core.OpRelease, Key: "k", Token: g.Token(), Quiet: true})
	rel, _ = spec.Release(g.WithFollowers(true), t0.Add(2*time.Second))
	wantCommand(t, "followed, not handed on: announced", rel.Command(), core.Command{Op: core.OpRelease, Key: "k", Token: g.Token()})
	rel, _ = spec.Release(g, t0.Add(2*time.Second))
	wantCommand(t, "not followed: announced", rel.Command(), core.Command{Op: core.OpRelease, Key: "k", Token: g.Token()})

	// With Fair, a release handed on is a plain quiet one, outside the
	// nodes' queue.
	fair, err := core.NewSpec(names{"a", "b", "c"}, core.Config{Fair: true, Tokens: &seqTokens{}, Jitter: fixedRand(0)})
	if err != nil {
		t.Fatal(err)
	}
	rel, _ = fair.Release(g.WithFollowers(true).WithHandoff(true), t0.Add(2*time.Second))
	wantCommand(t, "Fair, handed on: plain and quiet", rel.Command(), core.Command{Op: core.OpRelease, Key: "k", Token: g.Token(), Quiet: true})
}

// TestGiveUpBeforeTheFirstAttempt: an acquisition that gives up in the
// wait it was told to start with (WaitAgain), before any attempt, ends
// with ErrCancelled and the deadline as its cause: there is no attempt's
// error to end with, and a nil one would read as a grant.
func TestGiveUpBeforeTheFirstAttempt(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	for _, fair := range []bool{false, true} {
		spec, err := core.NewSpec(names{"a", "b", "c"}, core.Config{Fair: fair, Tokens: &seqTokens{}, Jitter: fixedRand(0)})
		if err != nil {
			t.Fatal(err)
		}
		a, err := spec.Acquire("k", core.Token{}, t0)
		if err != nil {
			t.Fatal(err)
		}
		a.WaitAgain(t0)
		a.GiveUp(t0)
		if a.Phase() != core.PhaseDone {
			t.Fatalf("fair %v: phase %v after GiveUp, want done (nothing to leave)", fair, a.Phase())
		}
		g, err := a.Result()
		var e *core.Error
		if !errors.As(err, &e) || e == nil || !errors.Is(err, core.ErrCancelled) || !errors.Is(err, context.DeadlineExceeded) ||
			e.Attempts != 0 || g != (core.Grant{}) {
			t.Errorf("fair %v: %v (%T), grant %v; want ErrCancelled by the deadline, no attempt", fair, err, err, g)
		}
	}
}

// TestFairRefusesQueueKeys: with Config.Fair, a key that names another
// key's waiter queue is refused before anything is sent: the scripts
// would find a string where they keep a sorted set, and the other way
// round.
func TestFairRefusesQueueKeys(t *testing.T) {
	spec := fairSpec(t, core.RetryPolicy{})
	for _, key := range []string{"redlock:queue:k", "redlock:queue-due:k"} {
		if _, err := spec.Acquire(key, core.Token{}, time.Unix(1, 0)); !errors.Is(err, core.ErrInvalidConfig) {
			t.Errorf("%q: %v, want ErrInvalidConfig", key, err)
		}
	}
	if _, err := spec.Acquire("redlock:queued", core.Token{}, time.Unix(1, 0)); err != nil {
		t.Errorf("a key that names no queue: %v", err)
	}
}

// TestFairLastCleanupDoesNotQueue: the cleanup of an acquisition's last
// attempt does not queue its waiter, which will not wait: it leaves the
// queue it joined (Ticket -1), since a queued waiter that never comes is
// handed the next release for nothing.
func TestFairLastCleanupDoesNotQueue(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	spec := fairSpec(t, core.RandomDelay(2, time.Millisecond, time.Millisecond))
	a, _ := spec.Acquire("k", core.Token{}, t0)
	if _, clean := failAttempt(t, &a, t0); clean.Ticket == 0 {
		t.Error("the first of two attempts' cleanup must queue")
	}
	a.Wake(a.WakeAt())
	drive(a.Round(), t0, core.StatusHeld)
	a.RoundDone(t0)
	if c := a.Round().Command(); c.Op != core.OpRelease || c.Ticket != -1 || !c.Fair {
		t.Errorf("the last attempt's cleanup: %+v, want a Fair release that leaves", c)
	}
}

// TestFairWaiterLeaves: a Fair waiter that joined the queues and is
// cancelled while it waits leaves them (a release with Ticket -1) before
// its acquisition ends, cancelled.
func TestFairWaiterLeaves(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	spec := fairSpec(t, core.RetryPolicy{})
	a, _ := spec.Acquire("k", core.Token{}, t0)
	att, _ := failAttempt(t, &a, t0)
	a.Cancel(t0, errors.New("gone"))
	if c := wantLeaveThenCancelled(t, &a, t0); c.Token != att.Token {
		t.Errorf("the leave releases %v, want the last attempt's token %v", c.Token, att.Token)
	}
}

// wantLeaveThenCancelled checks that a's round is a Fair waiter's leave
// (a release with Ticket -1), drives it at now, and checks that a then
// ends cancelled. It returns the leave's command.
func wantLeaveThenCancelled(t *testing.T, a *core.Acquisition, now time.Time) core.Command {
	t.Helper()
	c := a.Round().Command()
	if a.Phase() != core.PhaseRound || c.Op != core.OpRelease || c.Ticket != -1 || !c.Fair {
		t.Fatalf("no leave round: phase %v, %+v", a.Phase(), c)
	}
	drive(a.Round(), now, core.StatusMissing)
	a.RoundDone(now)
	if _, err := a.Result(); !errors.Is(err, core.ErrCancelled) {
		t.Errorf("after the leave: %v, want ErrCancelled", err)
	}
	return c
}

// TestFairWaiterCancelledBeforeItsAttemptLeaves: a Fair waiter that
// joined the queues, woken for its next attempt and cancelled before the
// attempt was sent, leaves them too: its acquisition does not end with
// the waiter still queued, to be handed the next release for nothing
// (found by the root package's TestFairWaiterThatGivesUpLeaves, about
// once in a hundred runs: a context cancelled between the wake and the
// send).
func TestFairWaiterCancelledBeforeItsAttemptLeaves(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	spec := fairSpec(t, core.RetryPolicy{})
	a, _ := spec.Acquire("k", core.Token{}, t0)
	failAttempt(t, &a, t0)
	a.Wake(a.WakeAt())
	if a.Phase() != core.PhaseRound || a.Round().Command().Op != core.OpAcquire {
		t.Fatalf("no second attempt: phase %v, %+v", a.Phase(), a.Round().Command())
	}
	a.Cancel(t0, errors.New("gone"))
	wantLeaveThenCancelled(t, &a, t0)
}

// TestFairCancelDuringTheQueueingCleanupLeaves: a Fair acquisition
// cancelled while the cleanup that queues its waiter is under way leaves
// the queues once that cleanup is done, rather than end queued.
func TestFairCancelDuringTheQueueingCleanupLeaves(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	spec := fairSpec(t, core.RetryPolicy{})
	a, _ := spec.Acquire("k", core.Token{}, t0)
	driveLastTimesOut(a.Round(), t0, 3)
	a.RoundDone(t0)
	if c := a.Round().Command(); c.Op != core.OpRelease || c.Ticket <= 0 {
		t.Fatalf("no queueing cleanup: %+v", c)
	}
	a.Cancel(t0, errors.New("gone"))         // the cleanup goes on
	drive(a.Round(), t0, core.StatusMissing) // the queueing cleanup
	a.RoundDone(t0)
	wantLeaveThenCancelled(t, &a, t0)
}

// TestFollowedWaiterKeepsItsProcessQueued: with Fair, a waiter that gives
// up while others of its process follow it (Queue.Look's followed) leaves
// the process's entry, which is theirs too, in the nodes' queue: no leave
// round, and a last cleanup that queues the process again (its attempt
// may have taken a key handed to it, which took the process out of the
// queue there); one that is followed by nobody leaves as before.
func TestFollowedWaiterKeepsItsProcessQueued(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	spec := fairSpec(t, core.RandomDelay(2, 20*time.Millisecond, 20*time.Millisecond))
	look := func(a *core.Acquisition, followed bool) { // the head's look: its process queued under 5
		q := spec.Queue()
		q.Queued(5)
		q.Look(a, t0, 0, followed)
	}
	for _, followed := range []bool{false, true} {
		// Gives up in its wait, after a failed attempt queued it.
		a, _ := spec.Acquire("k", core.Token{}, t0)
		look(&a, followed)
		driveLastTimesOut(a.Round(), t0, 3)
		a.RoundDone(t0)
		if c := a.Round().Command(); c.Ticket != 5 {
			t.Fatalf("followed %v: the cleanup queued it under %d, want its process's place 5", followed, c.Ticket)
		}
		drive(a.Round(), t0, core.StatusMissing)
		a.RoundDone(t0)
		a.GiveUp(t0)
		if left := a.Phase() == core.PhaseRound; left == followed {
			t.Errorf("followed %v: a leave round: %v", followed, left)
		}

		// Its last try fails: the cleanup leaves unless followed.
		b, _ := spec.Acquire("k", core.Token{}, t0)
		look(&b, followed)
		for try := 1; try <= 2; try++ {
			drive(b.Round(), t0, core.StatusHeld)
			b.RoundDone(t0)
			c := b.Round().Command()
			want := int64(5) // followed, the last cleanup queues the process again
			if try == 2 && !followed {
				want = -1
			}
			if c.Ticket != want {
				t.Fatalf("followed %v, try %d: cleanup ticket %d, want %d", followed, try, c.Ticket, want)
			}
			drive(b.Round(), t0, core.StatusMissing)
			b.RoundDone(t0)
			if try == 1 {
				b.Wake(t0)
			}
		}
	}
}

// TestFollowedHeadThatGivesUpLeavesItsTicket: a Fair head whose process
// has other waiters (Queue.Look's followed), cancelled in an attempt
// that may have taken the key handed to it (which takes the process out
// of the queue on those nodes), queues the process again in its cleanup,
// under its own ticket; and its successor keeps that ticket, which the
// Queue learnt at the head's look, rather than queue the process at the
// back. Found by the simulation's skipped-waiter checker with callers
// that give up (a process overtaken 60 times in one wait, bound 59).
func TestFollowedHeadThatGivesUpLeavesItsTicket(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	spec := fairSpec(t, core.RandomDelay(5, time.Millisecond, time.Millisecond))
	q := spec.Queue()
	head, clean := queuedHead(t, spec, &q, t0, true)
	if clean.Ticket <= 0 {
		t.Fatalf("the first cleanup did not queue: %+v", clean)
	}
	t1 := t0.Add(10 * time.Millisecond)
	q.Look(&head, t1, 0, true) // its wait: others follow it
	head.Wake(t1)
	drive(head.Round(), t1, core.StatusOK) // the attempt took the key on every node, its replies not yet all fed
	head.Cancel(t1, errors.New("gone"))
	if c := head.Round().Command(); c.Op != core.OpRelease || c.Ticket != clean.Ticket {
		t.Errorf("the cancelled attempt's cleanup: %+v, want one that queues the process again under %d", c, clean.Ticket)
	}
	drive(head.Round(), t1, core.StatusOK)
	head.RoundDone(t1)
	if _, err := head.Result(); !errors.Is(err, core.ErrCancelled) {
		t.Fatalf("after its cleanup: %v, want ErrCancelled (no leave round)", err)
	}
	q.Handover(false)

	if c := nextHeadsCleanup(t, spec, &q, t1); c.Ticket != clean.Ticket {
		t.Errorf("the successor's cleanup queued the process under %d, want the head's %d", c.Ticket, clean.Ticket)
	}
}

// TestHeadThatLeavesAloneLeavesNoPlace: a Fair head that no waiter of
// its process follows, and that gives up, takes the process out of the
// nodes' queue (its leave round); a waiter of the process that comes
// later queues it afresh, at the back, rather than under the ticket of
// the head that left, which would put it ahead of every waiter that
// queued since.
func TestHeadThatLeavesAloneLeavesNoPlace(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	spec := fairSpec(t, core.RandomDelay(5, time.Millisecond, time.Millisecond))
	q := spec.Queue()
	head, clean := queuedHead(t, spec, &q, t0, false)
	q.Look(&head, t0, 0, false) // its wait: nobody follows it
	head.Cancel(t0, errors.New("gone"))
	wantLeaveThenCancelled(t, &head, t0)
	q.Handover(false)

	t1 := t0.Add(time.Second)
	if c := nextHeadsCleanup(t, spec, &q, t1); c.Ticket == clean.Ticket || c.Ticket <= 0 {
		t.Errorf("the next waiter's cleanup queued the process under %d, want a fresh ticket, not the departed head's %d", c.Ticket, clean.Ticket)
	}
}

// TestTicketGoesStaleWhenTheProcessTakesTheKey: two Locks of one Client
// attempt at once; one takes the key (Queue.Hold), which takes the
// process out of the nodes' queue; the other, whose failed attempt had
// taken a ticket, becomes the head later. Its next cleanup queues the
// process under a ticket taken since, not under the old one, which would
// put it ahead of every waiter that queued meanwhile. Found by the
// simulation's jumped checker.
func TestTicketGoesStaleWhenTheProcessTakesTheKey(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	spec := fairSpec(t, core.RandomDelay(5, time.Millisecond, time.Millisecond))
	q := spec.Queue()
	q.Hold(core.GrantUntil(t0.Add(-time.Second))) // an earlier lock of the process
	a, _ := spec.Acquire("k", core.Token{}, t0)
	_, clean := failAttempt(t, &a, t0) // a direct attempt: the room had no waiter
	t1 := t0.Add(time.Millisecond)
	q.Look(&a, t1, 0, false)
	a.Wake(t1)
	if _, c := failAttempt(t, &a, t1); c.Ticket != clean.Ticket {
		t.Fatalf("no lock of the process since: the cleanup queued under %d, want its place %d", c.Ticket, clean.Ticket)
	}

	q.Hold(core.GrantUntil(t1.Add(time.Second))) // a sibling's attempt took the key, its round ending at t1
	t2 := t1.Add(50 * time.Millisecond)
	q.Look(&a, t2, 0, false)
	a.Wake(t2)
	if _, c := failAttempt(t, &a, t2); c.Ticket != core.TicketAt(t2) {
		t.Errorf("after the process took the key: the cleanup queued under %d, want a ticket taken now, %d (its old one: %d)",
			c.Ticket, core.TicketAt(t2), clean.Ticket)
	}
}

// TestWaiterBehindTheHeadLeavesTheProcessQueued: a Lock whose own failed
// attempt queued its process (the room had no waiter then), and that
// then waits behind the head of its process (Queue.Behind), gives up
// without a leave round: the process's entry on the nodes is the
// head's place too. Found by the simulation's jumped checker: such a
// leave took the process out of the queue while its head waited.
func TestWaiterBehindTheHeadLeavesTheProcessQueued(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	spec := fairSpec(t, core.RetryPolicy{})
	q := spec.Queue()
	a, _ := spec.Acquire("k", core.Token{}, t0)
	if _, clean := failAttempt(t, &a, t0); clean.Ticket <= 0 {
		t.Fatalf("the direct attempt's cleanup did not queue: %+v", clean)
	}
	q.Behind(&a)
	a.Cancel(t0, errors.New("gone"))
	if _, err := a.Result(); a.Phase() != core.PhaseDone || !errors.Is(err, core.ErrCancelled) {
		t.Errorf("a waiter behind the head, cancelled: phase %v, %v; want done, cancelled, without a leave round (%+v)",
			a.Phase(), err, a.Round().Command())
	}
}

// TestHeadWithAStaleTicketStillLeaves: a head whose ticket went stale
// (a lock of its process took the key after its cleanup took it) may
// still have queued the process, its cleanup reaching a node after the
// other lock's attempt; so if it gives up it leaves the queue. Found in
// review: dropping the ticket skipped that leave round.
func TestHeadWithAStaleTicketStillLeaves(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	spec := fairSpec(t, core.RandomDelay(5, time.Millisecond, time.Millisecond))
	q := spec.Queue()
	a, _ := spec.Acquire("k", core.Token{}, t0)
	failAttempt(t, &a, t0)
	q.Hold(core.GrantUntil(t0.Add(time.Second + time.Millisecond))) // a sibling's round ended after the cleanup's ticket
	t1 := t0.Add(2 * time.Millisecond)
	q.Look(&a, t1, 0, false)
	a.Cancel(t1, errors.New("gone"))
	wantLeaveThenCancelled(t, &a, t1)
}

// TestFairAttemptQueuesInItsOwnRound: a Fair waiter's section is one
// round fewer than an attempt, a queueing cleanup and the winning
// attempt. Its first attempt, finding the key held on every node, queues
// it there itself (its Ticket), takes nothing, and needs no cleanup: the
// acquisition waits at once, and its next attempt, on its turn, wins.
// Two rounds in all. An attempt that took the key on some node, or whose
// node did not answer, still has its cleanup, which keeps the place.
func TestFairAttemptQueuesInItsOwnRound(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	spec := fairSpec(t, core.RandomDelay(3, 20*time.Millisecond, 20*time.Millisecond))
	a, err := spec.Acquire("k", core.Token{}, t0)
	if err != nil {
		t.Fatal(err)
	}
	rounds := 0
	att := drive(a.Round(), t0, core.StatusHeld)
	rounds++
	if len(att) != 3 || att[0].Ticket != core.TicketAt(t0) || att[0].Handoff <= 0 {
		t.Fatalf("the attempt: %d commands, %+v; want one per node, queueing under ticket %d", len(att), att[0], core.TicketAt(t0))
	}
	a.RoundDone(t0)
	if a.Phase() != core.PhaseWait {
		t.Fatalf("after an attempt held everywhere, which queued the waiter: phase %v (%+v), want the wait", a.Phase(), a.Round().Command())
	}
	t1 := t0.Add(5 * time.Millisecond) // its turn: the key handed to its waiter
	a.Wake(t1)
	if c := a.Round().Command(); c.Ticket != core.TicketAt(t0) {
		t.Errorf("the next attempt queues under %d, want its place %d", c.Ticket, core.TicketAt(t0))
	}
	drive(a.Round(), t1, core.StatusOK)
	rounds++
	a.RoundDone(t1)
	if _, err := a.Result(); err != nil {
		t.Fatalf("the attempt on its turn: %v", err)
	}
	if rounds != 2 {
		t.Errorf("a Fair section took %d rounds, want 2", rounds)
	}

	// A multiplexed attempt lost on held keys awaits its last node: held
	// there too, it needs no cleanup; taken there, the cleanup frees it.
	for _, last := range []core.Status{core.StatusHeld, core.StatusOK} {
		b, _ := spec.Acquire("k", core.Token{}, t0)
		r := b.Round()
		for {
			if _, _, _, ok := r.Next(t0); !ok {
				break
			}
		}
		r.Receive(core.Reply{Node: 0, Status: core.StatusHeld, TTL: time.Second})
		r.Receive(core.Reply{Node: 1, Status: core.StatusHeld, TTL: time.Second})
		if r.Done() {
			t.Fatal("a queueing attempt held on a quorum so far is done before its last node answers")
		}
		r.Receive(core.Reply{Node: 2, Status: last, TTL: time.Second})
		b.RoundDone(t0)
		if cleanup := b.Phase() == core.PhaseRound && b.Round().Command().Op == core.OpRelease; cleanup != (last == core.StatusOK) {
			t.Errorf("last node %v: a cleanup %v", last, cleanup)
		}
	}

	// Without a try left, the attempt does not queue, and its cleanup
	// (queueing nobody) follows as before.
	once := fairSpec(t, core.RandomDelay(1, 0, 0))
	c, _ := once.Acquire("k", core.Token{}, t0)
	if att := drive(c.Round(), t0, core.StatusHeld); att[0].Ticket != 0 {
		t.Errorf("the only try queues under %d", att[0].Ticket)
	}
	c.RoundDone(t0)
	if c.Phase() != core.PhaseRound || c.Round().Command().Op != core.OpRelease || c.Round().Command().Ticket != 0 {
		t.Errorf("the only try's cleanup: phase %v, %+v", c.Phase(), c.Round().Command())
	}
}

// TestFairTicketsOrderWaitersWithinAMillisecond: two processes that join
// the nodes' queue one after the other, 200 µs apart within one
// millisecond, are queued in that order. Tickets in whole milliseconds
// tied them, and the nodes broke the tie by waiter id, at random: the
// later one was served first about half the time (TestMembers/ClusterFair,
// a CI run of 9ff43f0).
func TestFairTicketsOrderWaitersWithinAMillisecond(t *testing.T) {
	t0 := time.Unix(1_000_000, 100_000) // 100 µs into a millisecond
	first, second := fairSpec(t, core.RetryPolicy{}), fairSpec(t, core.RetryPolicy{})
	a, err := first.Acquire("k", core.Token{}, t0)
	if err != nil {
		t.Fatal(err)
	}
	t1 := t0.Add(200 * time.Microsecond)
	b, err := second.Acquire("k", core.Token{}, t1)
	if err != nil {
		t.Fatal(err)
	}
	ta, _ := failAttempt(t, &a, t0)
	tb, _ := failAttempt(t, &b, t1)
	if ta.Ticket <= 0 || tb.Ticket <= ta.Ticket {
		t.Errorf("tickets %d then %d: the waiter that queued 200 µs later must queue behind", ta.Ticket, tb.Ticket)
	}
	if ta.Ticket != core.TicketAt(t0) || tb.Ticket != core.TicketAt(t1) {
		t.Errorf("tickets %d and %d, want TicketAt of their attempts: %d and %d", ta.Ticket, tb.Ticket, core.TicketAt(t0), core.TicketAt(t1))
	}
}
