// Command redlock-sim runs a campaign of the deterministic Redlock
// simulation (internal/sim) and prints, per configuration, the schedules
// run, the faults injected and the violations each checker found.
//
//	go run ./cmd/redlock-sim                      # 1,000 schedules per configuration
//	go run ./cmd/redlock-sim -schedules 10000     # the committed campaign (results/simulation)
//
// Configurations within the algorithm's assumptions must show no
// violation; each "broken:" or "bug:" configuration breaks one assumption,
// or re-introduces a fixed bug, and must show violations. It exits 1 when
// either fails.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/internal/sim"
)

func main() {
	schedules := flag.Int("schedules", 1000, "schedules per configuration")
	seed := flag.Uint64("seed", 1, "seed of each configuration's first schedule; the others follow it")
	flag.Parse()
	if *schedules < 1 {
		fmt.Fprintln(os.Stderr, "redlock-sim: -schedules must be at least 1")
		os.Exit(2)
	}
	if !campaign(os.Stdout, configs(), *seed, *schedules) {
		os.Exit(1)
	}
}

// configs returns every configuration of the campaign: those within the
// assumptions first, then the broken ones.
func configs() []sim.Config {
	var out []sim.Config
	for _, n := range []int{3, 5, 7} {
		for _, fo := range []core.FanOut{core.Multiplexed, core.Sequential} {
			out = append(out, sim.Assumed(n, fo), sim.AssumedPersistent(n, fo), sim.AssumedWorstClocks(n, fo), sim.Liveness(n, fo))
		}
	}
	out = append(out, sim.ShortExtendLocker(5))
	for _, n := range []int{3, 5, 7} {
		for _, fo := range []core.FanOut{core.Multiplexed, core.Sequential} {
			out = append(out, sim.AssumedFenced(n, fo), sim.AssumedPersistentFenced(n, fo), sim.AssumedWorstClocksFenced(n, fo))
		}
		out = append(out, sim.FenceContended(n))
	}
	for _, n := range []int{3, 5} {
		out = append(out, sim.InstantRestart(n), sim.FastNodeClocks(n), sim.PastValidity(n), sim.SharedToken(n),
			sim.FenceCountersLost(n), sim.FenceRaiseSkipped(n))
	}
	return out
}

// broken reports whether cfg breaks an assumption on purpose.
func broken(cfg sim.Config) bool {
	return strings.HasPrefix(cfg.Name, "broken:") || strings.HasPrefix(cfg.Name, "bug:")
}

// campaign runs and prints every configuration and reports whether each
// came out as it must.
func campaign(out io.Writer, cfgs []sim.Config, seed uint64, schedules int) bool {
	start := time.Now()
	fmt.Fprintf(out, "redlock-sim: %d schedules per configuration, seeds %d..%d, %d CPUs\n\n",
		schedules, seed, seed+uint64(schedules)-1, runtime.GOMAXPROCS(0))
	fmt.Fprintf(out, "%-58s %9s %8s %7s %8s %8s | %8s %7s %6s %6s %6s %6s %6s | %5s %5s %5s %5s %5s\n",
		"configuration", "schedules", "acquired", "extends", "fenced", "raises",
		"lost", "late", "ncrash", "empty", "clost", "pause", "ccrash",
		"excl", "live", "hyg", "lostv", "fence")
	ok := true
	var total sim.Result
	var firsts []string
	for _, cfg := range cfgs {
		r := sim.Campaign(cfg, seed, schedules)
		total.Schedules += r.Schedules
		f, v := r.Faults, r.Violations
		verdict := ""
		switch {
		case broken(cfg) && v.Total() == 0:
			verdict, ok = "  MISSED: no violation found", false
		case !broken(cfg) && v.Total() != 0:
			verdict, ok = "  VIOLATED", false
		}
		fmt.Fprintf(out, "%-58s %9d %8d %7d %8d %8d | %8d %7d %6d %6d %6d %6d %6d | %5d %5d %5d %5d %5d%s\n",
			cfg.Name, r.Schedules, r.Acquisitions, r.Extensions, r.Fenced, r.Raises,
			f.Lost, f.Late, f.NodeCrashes, f.EmptyRestarts, f.CountersLost, f.ClientPauses, f.ClientCrashes,
			v.Exclusion, v.Liveness, v.Hygiene, v.LostValid, v.Fence, verdict)
		if r.First != "" {
			firsts = append(firsts, cfg.Name+": "+r.First)
		}
	}
	fmt.Fprintf(out, "\n%d schedules in %v.\n", total.Schedules, time.Since(start).Round(time.Second))
	fmt.Fprintln(out, `Columns: acquisitions, extensions, acquisitions that returned a fence
(Fencing) and fence raise rounds run; faults injected (messages lost,
commands applied late, node crashes, restarts without data, fence counters
lost in a crash, client pauses, client crashes) and violations found
(mutual exclusion, liveness after a holder crash, release hygiene, a lock
reported valid after a round proved it lost, a fence not above that of
every acquisition completed before it).`)
	if len(firsts) > 0 {
		fmt.Fprintln(out, "\nFirst violation per configuration:")
		for _, s := range firsts {
			fmt.Fprintln(out, "  "+s)
		}
	}
	return ok
}
