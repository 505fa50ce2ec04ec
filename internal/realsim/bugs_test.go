//go:build redlock_mutations

package realsim

import (
	"flag"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"
)

// bugLeaks are the goroutines the runner's slips leave blocked for good:
// under "UnlockKeepsContext", the holder's watch of its lock's Context,
// which nothing cancels (that is what the campaign reports stuck).
var bugLeaks = []goleak.Option{
	goleak.IgnoreTopFunction("github.com/redlock-go/redlock/internal/realsim.(*schedule).hold.func1"),
}

// bugSchedules is how many schedules TestRealsimSeesRunnerBugs runs of each
// "bug:" configuration, with its slip and without.
var bugSchedules = flag.Int("realsim.bugschedules", 100, "schedules per bug: configuration")

// Each slip planted in the root package's runner is reported, with the
// violation its configuration names; the same configuration without the
// slip reports nothing: the checkers see the runner's own code, not only
// what it runs over.
func TestRealsimSeesRunnerBugs(t *testing.T) {
	bugs := Bugs()
	assert.NotEmpty(t, bugs)
	for _, cfg := range bugs {
		t.Run(cfg.Name, func(t *testing.T) {
			n := *bugSchedules
			s := Campaign(t, cfg, *seedFlag, n, nil)
			t.Log(s.Report("go run -tags redlock_mutations ./cmd/redlock-realsim -seed %d -config %q"))
			assert.True(t, cfg.Broken(), "a bug: configuration counts as broken")
			assert.Positive(t, s.ByKind[cfg.Expect], "%s: no %s violation in %d schedules with the slip planted", cfg.Name, cfg.Expect, n)

			fixed := cfg
			fixed.Name, fixed.RunnerDefect = "real: "+cfg.Name+" (fixed)", ""
			f := Campaign(t, fixed, *seedFlag, n, nil)
			assert.Zero(t, f.Violations, "%s without the slip:\n%s", cfg.Name, f.Report("seed %d of %q"))
		})
	}
}

// A name that is no slip of the runner's is refused, rather than run as
// a configuration that plants nothing.
func TestPlantRunnerDefectUnknown(t *testing.T) {
	for _, cfg := range Bugs() {
		assert.Panics(t, func() { plantRunnerDefect(cfg.RunnerDefect + "?") }, "an unknown name")
	}
}
