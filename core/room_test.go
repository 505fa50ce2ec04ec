package core_test

import (
	"testing"
	"time"

	"github.com/redlock-go/redlock/core"
)

// takeReady returns r's Ready and advances it, as a pump does.
func takeReady(r *core.Room) core.Ready {
	rd := r.Ready()
	r.Advance()
	return rd
}

// TestRoomWatchLingers: the first waiter starts the key's watch, which
// outlives the last waiter by WatchLinger, or the TTL if shorter; a
// waiter that comes back within it keeps the watch, and a timer set for
// an earlier linger is told to wait for the later one.
func TestRoomWatchLingers(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	for _, tc := range []struct {
		ttl, linger time.Duration
	}{
		{10 * time.Second, core.WatchLinger},
		{200 * time.Millisecond, 200 * time.Millisecond},
	} {
		r := newEnv(t, 3, core.Multiplexed, core.Config{TTL: tc.ttl}).l.spec.Room()
		r.Join()
		if rd := takeReady(&r); !rd.Watch || !rd.StopAt.IsZero() || rd.Unwatch {
			t.Fatalf("ttl %v: first join: %+v, want Watch", tc.ttl, rd)
		}
		r.Join()
		if rd := takeReady(&r); rd.Watch {
			t.Fatalf("ttl %v: second join started the watch again", tc.ttl)
		}
		r.Leave(true, core.Grant{}, t0)
		if rd := takeReady(&r); !rd.StopAt.IsZero() || !rd.Wake {
			t.Fatalf("ttl %v: a head left with a waiter behind: %+v, want Wake and no linger", tc.ttl, rd)
		}
		r.Leave(true, core.Grant{}, t0)
		rd := takeReady(&r)
		if want := t0.Add(tc.linger); !rd.StopAt.Equal(want) {
			t.Fatalf("ttl %v: the last leave: StopAt %v, want %v", tc.ttl, rd.StopAt, want)
		}
		r.Tick(t0.Add(tc.linger - 1))
		if rd := takeReady(&r); rd.Unwatch || !rd.StopAt.Equal(t0.Add(tc.linger)) {
			t.Fatalf("ttl %v: a tick before the linger's end: %+v, want the same StopAt again", tc.ttl, rd)
		}

		// A waiter comes back within the linger: the watch goes on.
		r.Join()
		takeReady(&r)
		r.Tick(t0.Add(tc.linger))
		if rd := takeReady(&r); rd.Unwatch || !rd.StopAt.IsZero() {
			t.Fatalf("ttl %v: a tick with a waiter in: %+v", tc.ttl, rd)
		}
		t1 := t0.Add(time.Minute)
		r.Leave(true, core.Grant{}, t1)
		takeReady(&r)
		r.Tick(t0.Add(tc.linger)) // the first linger's timer, late
		if rd := takeReady(&r); rd.Unwatch || !rd.StopAt.Equal(t1.Add(tc.linger)) {
			t.Fatalf("ttl %v: an earlier linger's tick: %+v, want StopAt %v", tc.ttl, rd, t1.Add(tc.linger))
		}
		r.Tick(t1.Add(tc.linger))
		if rd := takeReady(&r); !rd.Unwatch {
			t.Fatalf("ttl %v: the linger over: %+v, want Unwatch", tc.ttl, rd)
		}
		r.Tick(t1.Add(2 * tc.linger))
		if rd := takeReady(&r); rd != (core.Ready{}) {
			t.Fatalf("ttl %v: a tick after the watch stopped: %+v", tc.ttl, rd)
		}
	}
}

// TestRoomCountsLocks: a Lock that leaves the room with the key, valid,
// makes the room busy, and its announcements (without Fair) are dropped;
// once its release starts (with Fair) or is done (without), a new Lock
// attempts at once.
func TestRoomCountsLocks(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	g := core.GrantUntil(t0.Add(10 * time.Second))
	for _, fair := range []bool{false, true} {
		r := newEnv(t, 3, core.Multiplexed, core.Config{Fair: fair}).l.spec.Room()
		if r.Busy(t0) {
			t.Fatalf("fair %v: an empty room is busy", fair)
		}
		r.Join()
		takeReady(&r)
		if !r.Busy(t0) {
			t.Fatalf("fair %v: a room with a waiter is not busy", fair)
		}
		r.Leave(true, g, t0)
		h := takeReady(&r).Held
		if h == (core.Held{}) || !r.Busy(t0) || r.Busy(g.ValidUntil()) {
			t.Fatalf("fair %v: a Lock counted %v: busy %v, %v at its validity's end", fair, h, r.Busy(t0), r.Busy(g.ValidUntil()))
		}
		rel := r.Release(h)
		takeReady(&r)
		if rel.Handoff() {
			t.Fatalf("fair %v: a release nobody follows hands the key on", fair)
		}
		if r.Busy(t0) != !fair {
			t.Fatalf("fair %v: busy %v as the release starts", fair, r.Busy(t0))
		}
		r.Released(&rel, time.Time{})
		if rd := takeReady(&r); r.Busy(t0) || rd.HandOn || rd.Try {
			t.Fatalf("fair %v: the release done: busy %v, %+v", fair, r.Busy(t0), rd)
		}

		// Ended: a Lock that never joined is counted too.
		other := newEnv(t, 3, core.Multiplexed, core.Config{Fair: fair}).l.spec.Room()
		other.Release(core.Held{}) // a Held of another Room counts nothing here
		if other.Busy(t0) {
			t.Fatalf("fair %v: busy after a foreign release", fair)
		}
	}
}

// TestRoomHandsOn: a release that a waiter follows hands the key on
// within the process, the head woken as its commands are flushed and
// again once it is done; if the waiter leaves without the key after that,
// the release is made heard: with Fair by a HandOn round, without by a
// TryLock. The MaxChain+1st release in a row is open.
func TestRoomHandsOn(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	g := core.GrantUntil(t0.Add(10 * time.Second))
	for _, fair := range []bool{false, true} {
		r0 := newEnv(t, 3, core.Multiplexed, core.Config{Fair: fair}).l.spec
		r := r0.Room()
		r.Join()
		r.Leave(true, g, t0) // a first waiter took the key
		h := takeReady(&r).Held
		r.Join() // and another waits for it
		takeReady(&r)
		rel := r.Release(h)
		if !rel.Handoff() {
			t.Fatalf("fair %v: a followed release does not hand the key on", fair)
		}
		if rr, err := r0.Release(rel.Grant(g), t0); err != nil || !rr.Command().Quiet {
			t.Fatalf("fair %v: the release's round is not quiet (%v): %+v", fair, err, rr.Command())
		}
		r.Flushed(&rel)
		if rd := takeReady(&r); !rd.Wake {
			t.Fatalf("fair %v: flushed: the head not woken", fair)
		}
		if r.Busy(t0) != true { // the waiter is still in
			t.Fatalf("fair %v: not busy with a waiter in", fair)
		}
		r.Released(&rel, t0)
		if rd := takeReady(&r); !rd.Wake || rd.HandOn || rd.Try {
			t.Fatalf("fair %v: done with its head still waiting: %+v, want Wake only", fair, rd)
		}
		r.Leave(true, core.Grant{}, t0) // the head gives up: nobody of the process took the key
		if rd := takeReady(&r); rd.HandOn != fair || rd.Try == fair {
			t.Fatalf("fair %v: the last waiter left a quiet release: %+v", fair, rd)
		}

		// MaxChain releases in a row hand on, the first above among
		// them; the next is open.
		r.Join()
		takeReady(&r)
		for i := 1; i <= core.MaxChain; i++ {
			rel := r.Release(core.Held{})
			if rel.Handoff() != (i < core.MaxChain) {
				t.Fatalf("fair %v: release %d in a row: handoff %v", fair, i+1, rel.Handoff())
			}
			r.Released(&rel, t0)
			if rd := takeReady(&r); rd.HandOn || rd.Try {
				t.Fatalf("fair %v: release %d made heard while a waiter waits: %+v", fair, i+1, rd)
			}
		}
	}
}

// TestRoomReleasedWithoutRoom: a release that handed the key on, done
// once the room forgot the key (a new Room), is made heard.
func TestRoomReleasedWithoutRoom(t *testing.T) {
	for _, fair := range []bool{false, true} {
		spec := newEnv(t, 3, core.Multiplexed, core.Config{Fair: fair}).l.spec
		r := spec.Room()
		r.Join()
		rel := r.Release(core.Held{})
		gone := spec.Room()
		gone.Released(&rel, time.Unix(1, 0))
		if rd := gone.Ready(); rd.HandOn != fair || rd.Try == fair {
			t.Fatalf("fair %v: %+v", fair, rd)
		}
	}
}

// TestRoomAllocatesNothing: a Room's events touch no heap.
func TestRoomAllocatesNothing(t *testing.T) {
	r := newEnv(t, 5, core.Multiplexed, core.Config{}).l.spec.Room()
	g := core.GrantUntil(time.Unix(100, 0))
	t0 := time.Unix(1, 0)
	if got := mallocsPerRun(100, func() {
		r.Join()
		r.Hear(2, t0)
		r.Join()
		_ = r.Busy(t0)
		r.Leave(true, g, t0)
		h := r.Ready().Held
		r.Advance()
		rel := r.Release(h)
		r.Queued(0)
		r.Flushed(&rel)
		r.Released(&rel, t0)
		r.Leave(true, core.Grant{}, t0)
		r.Tick(t0.Add(time.Hour))
		r.Advance()
	}); got != 0 {
		t.Fatalf("%d allocations per run, want 0", got)
	}
}

// TestRoomEnded: an acquisition that never joined the room and ends is
// told to the Room: one that won is counted; a Fair one that lost, having
// taken the key on a node and freed it there, wakes the head (it took the
// process out of that node's queue); one through a Spec without Fair (a
// TryLock's) wakes nobody.
func TestRoomEnded(t *testing.T) {
	ok, held, missing := core.StatusOK, core.StatusHeld, core.StatusMissing
	for _, tc := range []struct {
		name             string
		fair             bool
		attempt, cleanup []core.Status
		wake, counted    bool
	}{
		{"won", true, []core.Status{ok, ok, ok}, nil, false, true},
		{"lost, freed the node it took", true, []core.Status{ok, held, held}, []core.Status{ok, missing, missing}, true, false},
		{"lost, took nothing, freed nothing", true, []core.Status{held, held, held}, []core.Status{held, held, held}, false, false},
		{"lost, without Fair", false, []core.Status{ok, held, held}, []core.Status{ok, missing, missing}, false, false},
	} {
		e := newEnv(t, 3, core.Multiplexed, core.Config{Fair: tc.fair, Retry: core.RandomDelay(1, 0, 0)})
		now := e.clock.Now()
		r := newEnv(t, 3, core.Multiplexed, core.Config{Fair: true}).l.spec.Room()
		r.Join() // a head waits
		takeReady(&r)
		a, err := e.l.spec.Acquire("k", core.Token{}, now)
		if err != nil {
			t.Fatal(err)
		}
		sendThenAnswer(&a, now, tc.attempt)
		if tc.cleanup != nil {
			sendThenAnswer(&a, now, tc.cleanup)
		}
		if a.Phase() != core.PhaseDone {
			t.Fatalf("%s: phase %v, want done", tc.name, a.Phase())
		}
		r.Ended(&a, now)
		rd := takeReady(&r)
		if rd.Wake != tc.wake || (rd.Held != core.Held{}) != tc.counted {
			t.Errorf("%s: %+v, want wake %v, counted %v", tc.name, rd, tc.wake, tc.counted)
		}
	}
}

// TestRoomLook: the head learns what the room heard since its last look,
// once; a waiter behind it learns nothing; without Fair, an announcement
// heard while a Lock of the process holds the key is dropped.
func TestRoomLook(t *testing.T) {
	held := core.StatusHeld
	e := newEnv(t, 3, core.Multiplexed, core.Config{Retry: core.RandomDelay(3, time.Hour, time.Hour)})
	now := e.clock.Now()
	waiting := func() core.Acquisition {
		a, err := e.l.spec.Acquire("k", core.Token{}, now)
		if err != nil {
			t.Fatal(err)
		}
		sendThenAnswer(&a, now, []core.Status{held, held, held})
		if a.Phase() == core.PhaseRound { // its cleanup
			sendThenAnswer(&a, now, []core.Status{held, held, held})
		}
		if a.Phase() != core.PhaseWait {
			t.Fatalf("phase %v, want a wait", a.Phase())
		}
		return a
	}
	head, behind := waiting(), waiting()
	r := e.l.spec.Room()
	r.Join()
	r.Join()
	takeReady(&r)
	r.Hear(1, now)
	if rd := takeReady(&r); !rd.Wake {
		t.Fatal("an announcement woke nobody")
	}
	if heard, _ := r.Look(&behind, now, 0b111, false); heard != 0 {
		t.Fatalf("a waiter behind the head heard %#b", heard)
	}
	if heard, fresh := r.Look(&head, now, 0b111, true); heard != 0b010 || fresh {
		t.Fatalf("the head heard %#b (fresh %v), want %#b", heard, fresh, 0b010)
	}
	if heard, _ := r.Look(&head, now, 0b111, true); heard != 0 {
		t.Fatalf("the head heard %#b again", heard)
	}

	// A Lock of the process takes the key (Ended): announcements of
	// releases before it are dropped, without Fair.
	won, err := e.l.spec.Acquire("k", core.Token{}, now)
	if err != nil {
		t.Fatal(err)
	}
	sendThenAnswer(&won, now, []core.Status{core.StatusOK, core.StatusOK, core.StatusOK})
	r.Ended(&won, now)
	takeReady(&r)
	r.Hear(2, now)
	takeReady(&r)
	if heard, _ := r.Look(&head, now, 0b111, true); heard != 0 {
		t.Fatalf("behind a Lock of the process, the head heard %#b", heard)
	}
}
