// Command redlock-realsim runs the real-Client simulation campaign of
// package internal/realsim: the root redlock.Client itself, one per
// process, over in-memory nodes behind a faulty network, in virtual time.
//
//	redlock-realsim -n 1000                        # every configuration, seeds 1..1000
//	redlock-realsim -seed 17 -config "real: lease N=3"  # replay one schedule
//	redlock-realsim -match 'rw|all|permits' -n 1000     # the primitives' configurations
//
// Its schedules run inside testing/synctest bubbles, which need a
// *testing.T: the command gets one from testing.Main, the entry point
// the testing package keeps for programs that run tests themselves. A
// schedule that cannot end is torn down and reported stuck by the
// campaign, and so is one in which virtual time stops, after -watchdog of
// real time; a process-wide watchdog, at twice that, prints the seed of a
// schedule that still did not return and exits 2.
//
// It exits 1 when a configuration within the assumptions shows a
// violation, or a broken one shows none. Built with -tags
// redlock_mutations it also runs the "bug:" configurations, each of which
// plants a slip in the runner itself and must show its violation.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlock-go/redlock/internal/realsim"
)

func main() {
	n := flag.Int("n", 1000, "schedules per configuration")
	nBroken := flag.Int("nbroken", 1000, "at most this many schedules per broken configuration")
	seed := flag.Uint64("seed", 1, "first seed")
	config := flag.String("config", "", "run only the configuration of this name (with -seed alone: replay one schedule)")
	out := flag.String("out", "", "also write the report to this file")
	procs := flag.Int("procs", 1, "GOMAXPROCS: 1 makes a replay repeat its schedule most closely")
	watchdog := flag.Duration("watchdog", time.Minute, "real time one schedule may take before the campaign stops, reporting it stuck")
	match := flag.String("match", "", "run only the configurations whose name matches this regular expression")
	list := flag.Bool("list", false, "list the configurations")
	tracing := flag.Bool("trace", false, "print every event of the schedules (for a replay)")
	testing.Init()
	flag.Parse()
	explicitN := false
	flag.Visit(func(f *flag.Flag) { explicitN = explicitN || f.Name == "n" })
	// Built with -tags redlock_mutations, the "bug:" configurations too:
	// slips planted in the runner itself (realsim.Bugs; none otherwise).
	cfgs := append(realsim.Configs(), realsim.Bugs()...)
	if *match != "" {
		re, err := regexp.Compile(*match)
		if err != nil {
			fmt.Fprintln(os.Stderr, "redlock-realsim: -match:", err)
			os.Exit(2)
		}
		cfgs = slices.DeleteFunc(cfgs, func(c realsim.Config) bool { return !re.MatchString(c.Name) })
	}
	if *list {
		for _, c := range cfgs {
			fmt.Println(c.Name)
		}
		return
	}
	if *config != "" {
		c, ok := realsim.ConfigNamed(*config)
		if !ok {
			fmt.Fprintf(os.Stderr, "redlock-realsim: no configuration %q (-list lists them)\n", *config)
			os.Exit(2)
		}
		cfgs = []realsim.Config{c}
		if !explicitN {
			*n = 1
		}
	}
	runtime.GOMAXPROCS(*procs)
	if *tracing {
		realsim.Trace = func(format string, args ...any) { fmt.Printf(format, args...) }
	}
	var w io.Writer = os.Stdout
	if *out != "" {
		f, err := os.Create(*out)
		if err != nil {
			fmt.Fprintln(os.Stderr, "redlock-realsim:", err)
			os.Exit(2)
		}
		w = io.MultiWriter(os.Stdout, f) // unbuffered: testing.Main's exit loses nothing
	}
	r := &reporter{w: w}
	realsim.RealTimeLimit = *watchdog
	go r.watch(2 * *watchdog) // a backstop: Run gives up on a schedule first
	// testing.Main runs the campaign as a test, for a *testing.T, and
	// exits with its outcome.
	testing.Main(func(string, string) (bool, error) { return true, nil }, []testing.InternalTest{{
		Name: "RealClientCampaign",
		F:    func(t *testing.T) { r.campaign(t, cfgs, *seed, *n, *nBroken, explicitN || *config == "") },
	}}, nil, nil)
}

type reporter struct {
	mu    sync.Mutex
	w     io.Writer
	cur   string
	seed  atomic.Uint64
	since atomic.Int64 // unix nanoseconds the current schedule began
}

func (r *reporter) printf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, _ = fmt.Fprintf(r.w, format, args...)
}

func (r *reporter) campaign(t *testing.T, cfgs []realsim.Config, seed uint64, n, nBroken int, summary bool) {
	rev := "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				rev = s.Value
			}
		}
	}
	r.printf("redlock-realsim: the real redlock.Client (root package, its Lock, TryLock, Unlock, Extend,\n"+
		"lease watcher, wait room and Fair; RLock, WLock, LockAll, LockPermit) over in-memory nodes with injected faults, in virtual time\n"+
		"(testing/synctest); revision %s; %s; GOMAXPROCS %d; seeds from %d, %d per configuration (%d at most if broken)\n\n",
		rev, runtime.Version(), runtime.GOMAXPROCS(0), seed, n, min(n, nBroken))
	total, bad := 0, 0
	for _, c := range cfgs {
		r.mu.Lock()
		r.cur = c.Name
		r.mu.Unlock()
		k := n
		if c.Broken() {
			k = min(n, nBroken)
		}
		s := realsim.Campaign(t, c, seed, k, func(s uint64) {
			r.seed.Store(s)
			r.since.Store(time.Now().UnixNano())
		})
		r.printf("%s", s.Report("redlock-realsim -seed %d -config %q"))
		total += s.Schedules
		switch {
		case c.Broken() && s.ByKind[c.Expect] == 0:
			bad++
			r.printf("  FAIL: a broken configuration with no %s violation: the checkers are blind to it\n", c.Expect)
			t.Fail()
		case !c.Broken() && s.Violations > 0:
			bad++
			r.printf("  FAIL: violations within the assumptions\n")
			t.Fail()
		}
		if !summary {
			for _, f := range s.Failing {
				for _, v := range f.Violations {
					r.printf("  %s: %s\n", v.Kind, v.Detail)
				}
			}
		}
	}
	r.since.Store(0)
	r.printf("\n%d schedules in all; %d configurations failed their expectation\n", total, bad)
}

// watch stops the process when one schedule takes longer than limit in
// real time: virtual time no longer passes, and the campaign would hang.
func (r *reporter) watch(limit time.Duration) {
	for range time.Tick(limit / 10) {
		since := r.since.Load()
		if since != 0 && time.Since(time.Unix(0, since)) > limit {
			r.mu.Lock()
			_, _ = fmt.Fprintf(r.w, "stuck: %s seed %d ran %v of real time without ending (virtual time stopped)\n  replay: redlock-realsim -seed %d -config %q\n",
				r.cur, r.seed.Load(), limit, r.seed.Load(), r.cur)
			r.mu.Unlock()
			os.Exit(2)
		}
	}
}
