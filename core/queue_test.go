package core_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redlock-go/redlock/core"
)

// TestQueue: what the head of a process's waiters has heard. Each step
// acts on the queue and then Takes, unless it keeps; want is what Take
// returned (after a Handover, every node for a successor that attempts at
// once, nothing for one that waits on its own WakeAt); attempt documents
// which.
func TestQueue(t *testing.T) {
	type step struct {
		act     string // "announce", "released", "handover-locked", "handover-gave-up", "" (Take only)
		node    int
		attempt bool
		want    uint32
		keep    bool // no Take after the act
	}
	for _, tc := range []struct {
		name  string
		n     int // 0: the zero Queue
		steps []step
	}{
		{"nothing heard", 3, []step{{"", 0, false, 0, false}}},
		{"an announcement reaches the head once", 3, []step{
			{"announce", 1, false, 0b010, false},
			{"", 0, false, 0, false},
		}},
		{"announcements accumulate until taken", 3, []step{
			{"announce", 0, false, 0b001, false},
			{"announce", 2, false, 0b100, false},
		}},
		{"a duplicate is one announcement", 5, []step{
			{"announce", 4, false, 0b10000, false},
			{"announce", 4, false, 0b10000, false},
		}},
		{"nodes out of range are ignored", 3, []step{
			{"announce", 3, false, 0, false},
			{"announce", -1, false, 0, false},
			{"announce", core.MaxNodes, false, 0, false},
			{"announce", 1 << 20, false, 0, false},
		}},
		{"our own release is heard from every node", 3, []step{
			{"released", 0, false, 0b111, false},
			{"", 0, false, 0, false},
		}},
		{"every node of MaxNodes", core.MaxNodes, []step{
			{"announce", core.MaxNodes - 1, false, 1 << (core.MaxNodes - 1), false},
			{"released", 0, false, 1<<core.MaxNodes - 1, false},
		}},
		{"a head that locked hands over a clean slate", 3, []step{
			{"announce", 0, false, 0b001, false},
			{"announce", 1, false, 0b010, false},
			{"handover-locked", 0, false, 0, false},
		}},
		{"a head that locked forgets what it heard and did not take", 3, []step{
			{"released", 0, false, 0, true},
			{"announce", 2, false, 0, true},
			{"handover-locked", 0, false, 0, false},
		}},
		{"a head that gave up passes on more than it heard", 3, []step{
			{"announce", 2, false, 0, true},
			{"handover-gave-up", 0, true, 0b111, false},
		}},
		{"a head that gave up hands over every node", 3, []step{
			{"handover-gave-up", 0, true, 0b111, false},
			{"", 0, false, 0, false},
		}},
		{"a head that gave up after hearing a node", 5, []step{
			{"announce", 3, false, 0b01000, false},
			{"handover-gave-up", 0, true, 0b11111, false},
		}},
		{"the zero Queue hears nothing", 0, []step{
			{"announce", 0, false, 0, false},
			{"released", 0, false, 0, false},
			{"handover-gave-up", 0, true, 0, false},
			{"handover-locked", 0, false, 0, false},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var q core.Queue
			if tc.n > 0 {
				q = newEnv(t, tc.n, core.Multiplexed, core.Config{}).l.spec.Queue()
			}
			for i, s := range tc.steps {
				switch s.act {
				case "announce":
					q.Announce(s.node, time.Time{})
				case "released":
					q.Handover(false) // a release by this process
				case "handover-locked":
					q.Handover(true)
				case "handover-gave-up":
					q.Handover(false)
				}
				if s.keep {
					continue
				}
				got, fresh := q.Take()
				if got != s.want {
					t.Fatalf("step %d (%s %d): took %#b, want %#b", i, s.act, s.node, got, s.want)
				}
				if want := s.act == "handover-locked"; fresh != want {
					t.Fatalf("step %d (%s): fresh %v, want %v (only after a head that took the lock)", i, s.act, fresh, want)
				}
			}
		})
	}
}

// TestQueueHolding: while a lock of the process holds the key, valid, a
// new waiter waits behind it (Holding) and, without Fair, the head hears
// no announcement (each is of a release before that lock took the key);
// the lock's release (Unhold, Handover(false)) wakes the head with every
// node. A lock never released counts only until its validity ends, or
// until a later Hold replaces it, whose release then ends the holding.
// With Fair, announcements are turns and always reach the head.
func TestQueueHolding(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	for _, fair := range []bool{false, true} {
		q := newEnv(t, 3, core.Multiplexed, core.Config{Fair: fair}).l.spec.Queue()
		if q.Holding(t0) {
			t.Fatalf("fair %v: holding before any Hold", fair)
		}
		n := q.Hold(core.GrantUntil(t0.Add(10 * time.Second)))
		q.Announce(1, t0)
		heard, _ := q.Take()
		if want := map[bool]uint32{false: 0, true: 0b010}[fair]; !q.Holding(t0) || heard != want {
			t.Fatalf("fair %v: holding %v, heard %#b; want holding, heard %#b", fair, q.Holding(t0), heard, want)
		}
		q.Unhold(n)
		q.Handover(false)
		if heard, _ := q.Take(); q.Holding(t0) || heard != 0b111 {
			t.Fatalf("fair %v: released: holding %v, heard %#b; want every node", fair, q.Holding(t0), heard)
		}

		// A leak: never released. A later lock replaces it; its release
		// ends the holding, and the leak's late Unhold changes nothing.
		leak := q.Hold(core.GrantUntil(t0.Add(time.Minute)))
		later := q.Hold(core.GrantUntil(t0.Add(2 * time.Second)))
		q.Unhold(later)
		if q.Holding(t0) {
			t.Fatalf("fair %v: a leaked lock kept the key counted after the later lock's release", fair)
		}
		again := q.Hold(core.GrantUntil(t0.Add(3 * time.Second)))
		q.Unhold(leak)
		if !q.Holding(t0) {
			t.Fatalf("fair %v: the leak's late Unhold ended a later lock's holding", fair)
		}
		// Never released: it stops counting at its validity's end.
		q.Announce(0, t0.Add(3*time.Second))
		if heard, _ := q.Take(); q.Holding(t0.Add(3*time.Second)) || heard != 0b001 {
			t.Fatalf("fair %v: past the validity: holding %v, heard %#b", fair, q.Holding(t0.Add(3*time.Second)), heard)
		}
		q.Unhold(again)
	}
}

// TestQueueAllocatesNothing: a Queue is a small value; none of its steps
// touch the heap.
func TestQueueAllocatesNothing(t *testing.T) {
	q := newEnv(t, 5, core.Multiplexed, core.Config{}).l.spec.Queue()
	var sum uint32
	if got := mallocsPerRun(100, func() {
		n := q.Hold(core.GrantUntil(time.Unix(1, 0)))
		q.Announce(2, time.Time{})
		_ = q.Holding(time.Time{})
		q.Unhold(n)
		q.Handover(false)
		q.Handover(true)
		q.Retell(q.Told(true), true)
		heard, _ := q.Take()
		sum += heard
	}); got != 0 {
		t.Fatalf("%d allocations per run, want 0", got)
	}
}

// TestQueueFollow: MaxChain releases in a row are handed on within the
// process, and the next is open to every process, with Fair or not.
func TestQueueFollow(t *testing.T) {
	for _, fair := range []bool{false, true} {
		q := newEnv(t, 3, core.Multiplexed, core.Config{Fair: fair}).l.spec.Queue()
		for round := range 3 {
			for i := range core.MaxChain {
				if !q.Follow() {
					t.Fatalf("fair %v, round %d: release %d of the chain is open", fair, round, i)
				}
			}
			if q.Follow() {
				t.Fatalf("fair %v, round %d: release %d in a row handed on within the process", fair, round, core.MaxChain+1)
			}
		}
	}
}

// TestQueueRetell: once an early release is done, its head hears every
// node again, or the successor of a head that left without the lock; not
// after a head took the lock, after a later early release, nor without a
// waiter.
func TestQueueRetell(t *testing.T) {
	q := newEnv(t, 3, core.Multiplexed, core.Config{}).l.spec.Queue()
	all := uint32(1<<3 - 1)
	retold := func(n uint64, waiting bool) uint32 {
		q.Take()
		if !q.Retell(n, waiting) {
			return 0
		}
		heard, fresh := q.Take()
		if fresh {
			t.Fatal("a retold head waits afresh")
		}
		return heard
	}
	for _, tc := range []struct {
		name    string
		between func() // after the tell, before the retell
		waiting bool
		want    uint32
	}{
		{"the head it told", func() {}, true, all},
		{"a successor of a head that gave up", func() { q.Handover(false) }, true, all},
		{"after a head took the lock", func() { q.Handover(true) }, true, 0},
		{"without a waiter", func() {}, false, 0},
	} {
		n := q.Told(true)
		tc.between()
		if got := retold(n, tc.waiting); got != tc.want {
			t.Errorf("%s: the head heard %b, want %b", tc.name, got, tc.want)
		}
	}
	first := q.Told(true)
	second := q.Told(true)
	if got := retold(first, true); got != 0 {
		t.Errorf("an earlier release retold after a later one: heard %b", got)
	}
	if got := retold(second, true); got != all {
		t.Errorf("the later release: heard %b, want %b", got, all)
	}
	if got := retold(second, true); got != 0 {
		t.Errorf("a release retold twice: heard %b", got)
	}
	if n := q.Told(false); retold(n, true) != 0 {
		t.Error("a release told to no waiter retells one that came later")
	}
}

// TestQueuePlace: the place a release queued the process under is kept
// (the earliest) until a waiter of the process takes the lock, and the
// head that takes it at a look (Look) queues the process under it at its
// failed attempt, not at the back.
func TestQueuePlace(t *testing.T) {
	e := newEnv(t, 3, core.Multiplexed, core.Config{Fair: true, Retry: core.DefaultRetry})
	q := e.l.spec.Queue()
	q.Queued(100)
	q.Queued(200) // a later release of the process: its entry keeps the first place
	if got := core.Place(&q); got != 100 {
		t.Fatalf("place %d, want 100", got)
	}
	q.Handover(false) // a head that gave up: the process is still queued
	if got := core.Place(&q); got != 100 {
		t.Fatalf("after a head gave up: place %d, want 100", got)
	}
	q.Handover(true) // a waiter took the lock: the process left the nodes' queue
	if got := core.Place(&q); got != 0 {
		t.Fatalf("after a waiter took the lock: place %d, want 0", got)
	}

	a, err := e.l.spec.Acquire("k", core.Token{}, e.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	look := func(place int64) { // the head's look, at a queue that knows place
		q := e.l.spec.Queue()
		q.Queued(place)
		q.Look(&a, e.clock.Now(), 0, false)
	}
	look(0) // nothing known: no change
	look(42)
	look(99) // a later place does not replace an earlier one
	r := a.Round()
	for {
		if _, _, _, ok := r.Next(e.clock.Now()); !ok {
			break
		}
	}
	for n := range 3 {
		r.Receive(core.Reply{Node: n, Status: core.StatusHeld})
	}
	a.RoundDone(e.clock.Now())
	if cmd := r.Command(); cmd.Op != core.OpAcquire || cmd.Ticket != 42 {
		t.Fatalf("the attempt: %v with ticket %d, want an acquire that queues under 42", cmd.Op, cmd.Ticket)
	}
	if a.Phase() != core.PhaseWait {
		t.Fatalf("phase %v after an attempt held on every node, which queued the waiter: want the wait", a.Phase())
	}
	a.Wake(e.clock.Now())
	for {
		if _, _, _, ok := r.Next(e.clock.Now()); !ok {
			break
		}
	}
	r.Receive(core.Reply{Node: 0, Status: core.StatusOK})
	for n := 1; n < 3; n++ {
		r.Receive(core.Reply{Node: n, Status: core.StatusHeld})
	}
	a.RoundDone(e.clock.Now())
	if cmd := a.Round().Command(); cmd.Op != core.OpRelease || cmd.Ticket != 42 {
		t.Fatalf("the failed attempt's cleanup: %v with ticket %d, want a release with ticket 42", cmd.Op, cmd.Ticket)
	}
}

// TestQueueReannounce: a release handed on within the process is made
// heard once it is done when nobody of the process waits for the key or
// holds it, valid, at the time of asking: with Fair by handing it on
// through the nodes' queue, without by a TryLock. While waiters remain
// it is pending: made heard when the last leaves without the key (Left),
// and no longer once a lock of the process takes it.
func TestQueueReannounce(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	for _, fair := range []bool{false, true} {
		q := newEnv(t, 3, core.Multiplexed, core.Config{Fair: fair}).l.spec.Queue()
		check := func(what string, handOn, try bool, want bool) {
			t.Helper()
			if wantOn, wantTry := want && fair, want && !fair; handOn != wantOn || try != wantTry {
				t.Errorf("fair %v, %s: hand on %v, try %v; want %v, %v", fair, what, handOn, try, wantOn, wantTry)
			}
		}
		handOn, try := q.Left(false)
		check("a waiter left, no quiet release before", handOn, try, false)
		handOn, try = q.Reannounce(false, t0)
		check("nobody waits or holds", handOn, try, true)
		handOn, try = q.Left(false)
		check("a waiter left after it was made heard", handOn, try, false)

		handOn, try = q.Reannounce(true, t0)
		check("a waiter of the process takes the key", handOn, try, false)
		handOn, try = q.Left(true)
		check("a waiter left, others remain", handOn, try, false)
		handOn, try = q.Left(false)
		check("the last waiter left without the key", handOn, try, true)

		handOn, try = q.Reannounce(true, t0)
		check("a waiter of the process takes the key", handOn, try, false)
		n := q.Hold(core.GrantUntil(t0.Add(time.Second)))
		handOn, try = q.Left(false)
		check("a waiter took the key, and the last left", handOn, try, false)

		handOn, try = q.Reannounce(false, t0)
		check("a lock of the process holds the key", handOn, try, false)
		handOn, try = q.Reannounce(false, t0.Add(time.Second))
		check("the lock's validity ended", handOn, try, true)
		q.Unhold(n)
		handOn, try = q.Reannounce(false, t0)
		check("the lock released", handOn, try, true)

		// A waiter told early won before the release was done: nothing
		// is pending once it is, though waiters remain.
		won := q.Hold(core.GrantUntil(t0.Add(time.Second)))
		handOn, try = q.Reannounce(true, t0)
		check("a waiter won before the release was done", handOn, try, false)
		q.Unhold(won)
		handOn, try = q.Left(false)
		check("the last waiter left after that lock's release", handOn, try, false)

		q.Reannounce(true, t0)
		q.Handover(true) // the head left with the lock
		handOn, try = q.Left(false)
		check("the head took the key", handOn, try, false)
	}
}

// TestHandOn: the round that hands a free key on is a Fair release of a
// token no lock holds that queues nobody; without Fair there is none.
func TestHandOn(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	fair := newEnv(t, 3, core.Multiplexed, core.Config{Fair: true}).l.spec
	r, err := fair.HandOn("k", t0)
	if err != nil {
		t.Fatal(err)
	}
	if c := r.Command(); c.Op != core.OpRelease || !c.Fair || c.Quiet || c.Key != "k" || c.Token != (core.Token{}) || c.Ticket != 0 || c.Handoff <= 0 {
		t.Errorf("command %+v", c)
	}
	if _, err := fair.HandOn("", t0); !errors.Is(err, core.ErrInvalidConfig) {
		t.Errorf("empty key: %v", err)
	}
	plain := newEnv(t, 3, core.Multiplexed, core.Config{}).l.spec
	if _, err := plain.HandOn("k", t0); !errors.Is(err, core.ErrInvalidConfig) {
		t.Errorf("without Fair: %v", err)
	}
}

// TestQueueHoldForgetsEarlierAnnouncements: announcements heard while no
// waiter took them are of releases before a lock of the process took the
// key (Hold): a head that comes later must not attempt on them, against
// the lock that holds the key.
func TestQueueHoldForgetsEarlierAnnouncements(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	for _, fair := range []bool{false, true} {
		q := newEnv(t, 3, core.Multiplexed, core.Config{Fair: fair}).l.spec.Queue()
		q.Announce(0, t0)
		q.Announce(2, t0)
		q.Hold(core.GrantUntil(t0.Add(time.Minute)))
		if heard, _ := q.Take(); heard != 0 {
			t.Errorf("fair %v: a head after the Hold heard %#b, announced before it", fair, heard)
		}
	}
}

// TestQueueFreed: with Fair, an acquisition that never waited in the
// queue and ended without the lock, after a cleanup that queued nobody,
// makes the head attempt at once (every node heard) if its last attempt
// took the key on some node, or its cleanup freed it on some node or may
// have; not if neither did, nor while a lock of the process holds the
// key, nor after a leave round, nor for an acquisition that won or goes
// on. Never without Fair in the acquisition (a TryLock's, in a Fair
// queue): its attempt took nobody out of a queue, and its cleanup's
// release is announced.
func TestQueueFreed(t *testing.T) {
	const all = 0b111
	ok, held, missing, timeout := core.StatusOK, core.StatusHeld, core.StatusMissing, core.StatusTimeout
	for _, tc := range []struct {
		name    string
		tries   int
		attempt []core.Status // the answers before the cancel, if any
		cancel  bool          // in the attempt, after its answers
		cleanup []core.Status
		leave   []core.Status // a leave round's answers: cancelled in the cleanup
		holding bool
		want    bool
	}{
		{"cancelled unanswered, its cleanup freed two nodes", 1, nil, true, []core.Status{ok, ok, missing}, nil, false, true},
		{"cancelled unanswered, its cleanup found nothing", 1, nil, true, []core.Status{missing, missing, held}, nil, false, false},
		{"cancelled unanswered, a node did not answer its cleanup", 1, nil, true, []core.Status{missing, timeout, missing}, nil, false, true},
		{"cancelled after a node took the key, gone by the cleanup", 1, []core.Status{ok}, true, []core.Status{missing, missing, missing}, nil, false, true},
		{"cancelled while a lock of the process holds the key", 1, nil, true, []core.Status{ok, ok, ok}, nil, true, false},
		{"lost its only try, freed the node it took", 1, []core.Status{ok, held, held}, false, []core.Status{ok, missing, missing}, nil, false, true},
		{"lost its only try, the node it took expired", 1, []core.Status{ok, held, held}, false, []core.Status{missing, missing, held}, nil, false, true},
		{"lost its only try, took nothing, freed nothing", 1, []core.Status{held, held, held}, false, []core.Status{held, held, held}, nil, false, false},
		{"cancelled in the cleanup that queued it: it left", 2, []core.Status{ok, held, held}, false, []core.Status{ok, held, held}, []core.Status{missing, missing, missing}, false, false},
		{"won", 1, []core.Status{ok, ok, ok}, false, nil, nil, false, false},
		{"fenced: cancelled in the raise, the keys gone by the cleanup", -1, []core.Status{ok, ok, held}, false, []core.Status{missing, missing, held}, nil, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, fair := range []bool{false, true} { // the acquisition's
				fenced := tc.tries < 0 // one try, fenced: cancelled in its raise round
				e := newEnv(t, 3, core.Multiplexed, core.Config{Fair: fair, Fencing: fenced, Retry: core.RandomDelay(max(tc.tries, 1), 0, 0)})
				now := e.clock.Now()
				q := newEnv(t, 3, core.Multiplexed, core.Config{Fair: true}).l.spec.Queue()
				if tc.holding {
					q.Hold(core.GrantUntil(now.Add(time.Second)))
				}
				a, err := e.l.spec.Acquire("k", core.Token{}, now)
				if err != nil {
					t.Fatal(err)
				}
				if q.Freed(&a, now) {
					t.Fatal("an acquisition under way freed the key")
				}
				sendThenAnswer(&a, now, tc.attempt)
				if fenced {
					if op := a.Round().Command().Op; op != core.OpRaiseFence {
						t.Fatalf("fair %v: after a won fenced attempt, %v, want the raise", fair, op)
					}
					sendThenAnswer(&a, now, []core.Status{core.StatusMissing}) // the raise, under way
					a.Cancel(now, context.Canceled)
				}
				if tc.cancel {
					a.Cancel(now, context.Canceled)
				}
				if tc.leave != nil {
					a.Cancel(now, context.Canceled) // in the cleanup
				}
				if tc.cleanup != nil {
					sendThenAnswer(&a, now, tc.cleanup)
				}
				if tc.leave != nil {
					if cmd := a.Round().Command(); fair && cmd.Ticket >= 0 {
						t.Fatalf("fair: after the cleanup, %v with ticket %d, want a leave round", cmd.Op, cmd.Ticket)
					}
					if fair {
						sendThenAnswer(&a, now, tc.leave)
					}
				}
				if a.Phase() != core.PhaseDone {
					t.Fatalf("fair %v: phase %v, want done", fair, a.Phase())
				}
				want := tc.want && fair
				if got := q.Freed(&a, now); got != want {
					t.Errorf("fair %v: Freed %v, want %v", fair, got, want)
				}
				heard, _ := q.Take()
				if want {
					if heard != all {
						t.Errorf("fair %v: the head heard %03b, want %03b", fair, heard, all)
					}
				} else if heard != 0 {
					t.Errorf("fair %v: the head heard %03b, want nothing", fair, heard)
				}
			}
		})
	}
	// A queue without Fair: nothing to do, for the same acquisition that
	// a Fair queue wakes its head for.
	e := newEnv(t, 3, core.Multiplexed, core.Config{Fair: true, Retry: core.RandomDelay(1, 0, 0)})
	now := e.clock.Now()
	a, err := e.l.spec.Acquire("k", core.Token{}, now)
	if err != nil {
		t.Fatal(err)
	}
	sendThenAnswer(&a, now, nil) // the attempt, cancelled unanswered
	a.Cancel(now, context.Canceled)
	sendThenAnswer(&a, now, []core.Status{core.StatusOK, core.StatusOK, core.StatusOK})
	if q := newEnv(t, 3, core.Multiplexed, core.Config{}).l.spec.Queue(); q.Freed(&a, now) {
		t.Error("a queue without Fair: Freed said yes")
	}
	if q := newEnv(t, 3, core.Multiplexed, core.Config{Fair: true}).l.spec.Queue(); !q.Freed(&a, now) {
		t.Error("a Fair queue: Freed said no")
	}
}

// sendThenAnswer sends every command a's round has due at now, then
// answers node i with statuses[i] (the others stay unanswered), and moves
// a on (RoundDone).
func sendThenAnswer(a *core.Acquisition, now time.Time, statuses []core.Status) {
	r := a.Round()
	for {
		if _, _, _, ok := r.Next(now); !ok {
			break
		}
	}
	for n, s := range statuses {
		r.Receive(core.Reply{Node: n, Status: s})
	}
	a.RoundDone(now)
}
