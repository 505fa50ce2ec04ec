package sim

import (
	"testing"
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
