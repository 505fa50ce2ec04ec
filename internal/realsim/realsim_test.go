package realsim

import (
	"flag"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"
)

// More schedules: go test ./internal/realsim -args -realsim.schedules=1000
var (
	schedules = flag.Int("realsim.schedules", 60, "schedules per configuration")
	seedFlag  = flag.Uint64("realsim.seed", 1, "first seed")
)

// TestCampaign runs every configuration: those within the assumptions
// must show no violation, the broken ones at least one.
func TestCampaign(t *testing.T) {
	for _, cfg := range Configs() {
		t.Run(cfg.Name, func(t *testing.T) {
			n := *schedules
			s := Campaign(t, cfg, *seedFlag, n, nil)
			report := s.Report("go run ./cmd/redlock-realsim -seed %d -config %q")
			t.Log(report)
			if cfg.Broken() && s.ByKind[cfg.Expect] == 0 {
				t.Errorf("%s: no %s violation in %d schedules: the checkers are blind to it", cfg.Name, cfg.Expect, n)
			}
			if !cfg.Broken() && s.Violations > 0 {
				t.Errorf("%s: violations:\n%s", cfg.Name, report)
			}
		})
	}
}

// A schedule whose goroutines block for good is reported stuck with its
// seed, and Run returns: blocked on a channel of the bubble (a deadlock
// synctest reports when the schedule's main function returns), or on one
// made outside it (virtual time stops: the real-time limit).
func TestBlockedForeverIsStuck(t *testing.T) {
	defer func(d time.Duration) { RealTimeLimit = d }(RealTimeLimit)
	RealTimeLimit = 5 * time.Second
	for _, d := range []Defect{DefectBlockedForever, DefectBlockedOutside} {
		cfg := base("broken: blocked forever", 3)
		cfg.Defect, cfg.Faults, cfg.Procs = d, Faults{}, 1
		r := Run(t, cfg, 7)
		if d == DefectBlockedOutside {
			close(blockedOutside) // the schedule goes on, and ends: no goroutine left
			runs.Wait()
		}
		kinds := map[string]bool{}
		for _, v := range r.Violations {
			kinds[v.Kind] = true
		}
		assert.True(t, kinds["stuck"], "defect %d: violations: %v", d, r.Violations)
		assert.Equal(t, uint64(7), r.Seed)
	}
}

// TestMain checks that no schedule leaves a goroutine behind, but for
// the worker TestBlockedForeverIsStuck blocks for good in a bubble, and
// those that the runner's slips leave (bugLeaks: with the
// redlock_mutations tag only).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, append(bugLeaks,
		goleak.IgnoreTopFunction("github.com/redlock-go/redlock/internal/realsim.(*schedule).hold"))...)
}
