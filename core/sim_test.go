package core_test

import (
	"testing"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/internal/sim"
)

// TestSimulationSeesExtendDriftBug: the deterministic simulation, which
// drives this package's Acquisition and Round, finds mutual-exclusion
// violations when an extension takes the extending Locker's drift instead
// of the lock's (1 s locks extended through a 20 ms Locker, clocks up to 1%
// apart), and none with the fix.
func TestSimulationSeesExtendDriftBug(t *testing.T) {
	cfg := sim.ShortExtendLocker(5)
	const schedules = 60
	fixed := sim.Campaign(cfg, 1, schedules)
	if fixed.Violations.Total() != 0 {
		t.Fatalf("with the lock's drift: %+v; first: %s", fixed.Violations, fixed.First)
	}
	if fixed.Extensions == 0 {
		t.Fatal("no extension in any schedule")
	}
	restore := core.ExtendWithLockerDrift()
	broken := sim.Campaign(cfg, 1, schedules)
	restore()
	if broken.Violations.Exclusion == 0 {
		t.Fatalf("the bug went unseen in %d schedules (%d extensions)", broken.Schedules, broken.Extensions)
	}
	t.Logf("with the bug: %+v; first: %s", broken.Violations, broken.First)
}

// TestSimulationSeesLostLockReportedValid: with extensions that leave a
// lock proved lost still valid, the simulation's checker reports it.
func TestSimulationSeesLostLockReportedValid(t *testing.T) {
	cfg := sim.InstantRestart(3) // restarts lose keys: extensions find them missing
	const schedules = 40
	if r := sim.Campaign(sim.Assumed(3, core.Multiplexed), 1, schedules); r.Violations.LostValid != 0 {
		t.Fatalf("with the fix: %+v; first: %s", r.Violations, r.First)
	}
	restore := core.ExtendKeepsLostLock()
	broken := sim.Campaign(cfg, 1, schedules)
	restore()
	if broken.Violations.LostValid == 0 {
		t.Fatalf("the bug went unseen in %d schedules (%d extensions): %+v", broken.Schedules, broken.Extensions, broken.Violations)
	}
	t.Logf("with the bug: %+v; first: %s", broken.Violations, broken.First)
}

// TestSimulationSeesSkippedFenceRaise: the simulation's fence checker
// finds fences that do not grow when a fenced acquisition hands out the
// largest counter of its acquire round without raising a majority's
// counters to it first, and none with the raise round.
func TestSimulationSeesSkippedFenceRaise(t *testing.T) {
	cfg := sim.FenceContended(3)
	const schedules = 40
	fixed := sim.Campaign(cfg, 1, schedules)
	if fixed.Violations.Total() != 0 {
		t.Fatalf("with the raise: %+v; first: %s", fixed.Violations, fixed.First)
	}
	if fixed.Fenced == 0 || fixed.Raises < fixed.Fenced {
		t.Fatalf("with the raise: %d acquisitions fenced, %d raise rounds", fixed.Fenced, fixed.Raises)
	}
	restore := core.SkipFenceRaise()
	broken := sim.Campaign(cfg, 1, schedules)
	restore()
	if broken.Raises != 0 || broken.Fenced == 0 {
		t.Fatalf("without the raise: %d raise rounds, %d acquisitions fenced", broken.Raises, broken.Fenced)
	}
	if broken.Violations.Fence == 0 {
		t.Fatalf("the skipped raise went unseen in %d schedules (%d acquisitions): %+v", broken.Schedules, broken.Acquisitions, broken.Violations)
	}
	t.Logf("without the raise: %+v; first: %s", broken.Violations, broken.First)
}
