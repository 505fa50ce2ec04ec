package sim

import (
	"testing"
	"time"

	"github.com/redlock-go/redlock/core"
)

// TestKindsWithinAssumptions: the reader/writer lock and the multi-key
// lock, with the mutex's faults (failover and WAIT included), leave every
// checker silent; readers, writers and key sets were all exercised.
func TestKindsWithinAssumptions(t *testing.T) {
	for _, cfg := range append(append(RWConfigs(), AllConfigs()...), PermitConfigs()...) {
		t.Run(cfg.Name, func(t *testing.T) {
			r := Campaign(cfg, 1, schedulesPerConfig)
			if r.Violations.Total() != 0 {
				t.Fatalf("%+v in %d schedules; first: %s", r.Violations, r.Schedules, r.First)
			}
			if r.Acquisitions < schedulesPerConfig {
				t.Fatalf("only %d acquisitions in %d schedules", r.Acquisitions, r.Schedules)
			}
			if cfg.Fencing && r.Fenced < r.Acquisitions/2 {
				t.Fatalf("%d of %d acquisitions fenced", r.Fenced, r.Acquisitions)
			}
		})
	}
}

// TestKindCheckersSeePlantedDefects: each checker of the kinds beyond the
// mutex fires on the defect planted for it, and on no other.
func TestKindCheckersSeePlantedDefects(t *testing.T) {
	for _, cfg := range BrokenKinds() {
		t.Run(cfg.Name, func(t *testing.T) {
			r := Campaign(cfg, 1, schedulesPerConfig)
			v := r.Violations
			var got int
			switch {
			case cfg.Faults.ReaderBesideWriter:
				got = v.Writer
			case cfg.Faults.TakeSubset:
				got = v.KeySets
			case cfg.Faults.CountSemaphore:
				got = v.Permits
			case cfg.Faults.NoWriterMark:
				got = v.WriterWait
			}
			if got == 0 {
				t.Fatalf("the checker saw nothing: %+v in %d schedules", v, r.Schedules)
			}
			t.Logf("%d found in %d schedules; first: %s", got, r.Schedules, r.First)
		})
	}
}

// TestKindsExercised: the configurations within the assumptions did what
// their checkers check: readers shared the key, writers took it (some
// after marking it), disjoint key sets were held together.
func TestKindsExercised(t *testing.T) {
	for _, cfg := range []Config{rwKind(Assumed(3, 0)), WriterWait(3), allKind(Assumed(5, 0)), permitKind(Assumed(3, 0))} {
		r := Campaign(cfg, 1, schedulesPerConfig)
		k := r.Kinds
		t.Logf("%s: %+v", cfg.Name, k)
		switch cfg.Primitive {
		case PrimRW:
			if k.Reads == 0 || k.Writes == 0 || k.Shared == 0 || k.Marks == 0 {
				t.Fatalf("%s: not exercised: %+v", cfg.Name, k)
			}
		case PrimAll:
			if k.Alls != r.Acquisitions || k.Shared == 0 {
				t.Fatalf("%s: not exercised: %+v", cfg.Name, k)
			}
		case PrimPermits:
			if k.Permits != r.Acquisitions || k.Shared == 0 {
				t.Fatalf("%s: not exercised: %+v", cfg.Name, k)
			}
		}
	}
}

// TestScriptModelReadersAndWriters walks the model's reader/writer
// semantics on one node: readers share; a writer refused for them marks
// the key, which then refuses new readers with the mark's TTL; a
// reader's entry expires on its own; the writer's next attempt (a token
// of the same acquisition) takes the key and deletes its mark, while
// another writer's mark stays; a reader's release announces only when it
// removed the last live reader.
func TestScriptModelReadersAndWriters(t *testing.T) {
	const ttl = 100 * time.Millisecond
	m := NewScriptModel(1, Faults{})
	m.SetKeys("k")
	tok := func(hi, lo uint64) core.Token { return core.TokenFromUint64s(hi, lo) }
	r1, r2, w1, w1b, w2 := tok(1<<63|1, 1), tok(1<<63|2, 2), tok(1<<63|3, 3<<32), tok(1<<63|3, 3<<32|1), tok(1<<63|4, 4<<32)
	cmd := func(k core.Kind, op core.Op, tk core.Token) core.Command {
		return core.Command{Op: op, Kind: k, Key: "k", Token: tk, TTL: ttl}
	}
	must := func(ok bool, what ...string) {
		t.Helper()
		if !ok {
			t.Fatal(what)
		}
	}
	eq := func(want, got any, what ...string) {
		t.Helper()
		if want != got {
			t.Fatalf("%v: want %v, got %v", what, want, got)
		}
	}
	apply := func(c core.Command, at time.Duration) (core.Reply, bool) {
		msg := message{cmd: c, appliedAt: -1}
		st := m.n.apply(&msg, 0, int64(at), m.w)
		return core.Reply{Status: st, Fence: msg.fence, TTL: msg.ttl}, !msg.silent
	}
	must(core.SameAcquisition(w1, w1b) && !core.SameAcquisition(w1, w2))

	r, _ := apply(cmd(core.KindRead, core.OpAcquire, r1), 0)
	eq(core.StatusOK, r.Status)
	r, _ = apply(cmd(core.KindRead, core.OpAcquire, r2), 10*time.Millisecond)
	eq(core.StatusOK, r.Status, "readers share")
	r, _ = apply(cmd(core.KindWrite, core.OpAcquire, w1), 20*time.Millisecond)
	eq(core.StatusHeld, r.Status)
	eq(90*time.Millisecond, r.TTL, "until the last reader's expiry")
	eq(w1, m.KindState(20*time.Millisecond).Mark.Token, "the refused writer marks the key")
	r, _ = apply(cmd(core.KindRead, core.OpAcquire, tok(1<<63|5, 5)), 30*time.Millisecond)
	eq(core.StatusHeld, r.Status, "the mark refuses new readers")
	eq(90*time.Millisecond, r.TTL, "for the mark's TTL")
	r, announced := apply(cmd(core.KindRead, core.OpRelease, r1), 40*time.Millisecond)
	eq(core.StatusOK, r.Status)
	must(!announced, "a reader remains: no announcement")
	r, announced = apply(cmd(core.KindRead, core.OpRelease, tok(1<<63|5, 5)), 40*time.Millisecond)
	eq(core.StatusMissing, r.Status)
	must(!announced, "a release that removed nothing announces nothing")
	// r2's entry expires at 110 ms on its own.
	r, _ = apply(cmd(core.KindWrite, core.OpAcquire, w2), 105*time.Millisecond)
	eq(core.StatusHeld, r.Status)
	eq(w2, m.KindState(105*time.Millisecond).Mark.Token, "another writer's refused attempt marks it anew")
	r, _ = apply(cmd(core.KindWrite, core.OpAcquire, w1b), 111*time.Millisecond)
	eq(core.StatusOK, r.Status, "no live reader left")
	eq(w2, m.KindState(111*time.Millisecond).Mark.Token, "another acquisition's mark stays")
	r, _ = apply(cmd(core.KindMutex, core.OpRelease, w1b), 120*time.Millisecond)
	eq(core.StatusOK, r.Status, "a writer releases as the mutex does")

	m = NewScriptModel(1, Faults{})
	m.SetKeys("k")
	apply(cmd(core.KindRead, core.OpAcquire, r1), 0)
	apply(cmd(core.KindWrite, core.OpAcquire, w1), 10*time.Millisecond)
	apply(cmd(core.KindRead, core.OpRelease, r1), 20*time.Millisecond)
	r, _ = apply(cmd(core.KindWrite, core.OpAcquire, w1b), 30*time.Millisecond)
	eq(core.StatusOK, r.Status)
	must(m.KindState(30*time.Millisecond).Mark == (KeyState{}), "the winning acquisition's own mark is deleted")
}
