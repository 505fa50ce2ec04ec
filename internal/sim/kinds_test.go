package sim

import (
	"testing"
)

// TestKindsWithinAssumptions: the reader/writer lock and the multi-key
// lock, with the mutex's faults (failover and WAIT included), leave every
// checker silent; readers, writers and key sets were all exercised.
func TestKindsWithinAssumptions(t *testing.T) {
	for _, cfg := range append(RWConfigs(), AllConfigs()...) {
		t.Run(cfg.Name, func(t *testing.T) {
			r := Campaign(cfg, 1, schedulesPerConfig)
			if r.Violations.Total() != 0 {
				t.Fatalf("%+v in %d schedules; first: %s", r.Violations, r.Schedules, r.First)
			}
			if r.Acquisitions < schedulesPerConfig {
				t.Fatalf("only %d acquisitions in %d schedules", r.Acquisitions, r.Schedules)
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
			}
			if got == 0 {
				t.Fatalf("the checker saw nothing: %+v in %d schedules", v, r.Schedules)
			}
			t.Logf("%d found in %d schedules; first: %s", got, r.Schedules, r.First)
		})
	}
}
