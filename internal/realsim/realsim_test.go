package realsim

import (
	"flag"
	"testing"

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

// TestMain checks that no schedule leaves a goroutine behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
