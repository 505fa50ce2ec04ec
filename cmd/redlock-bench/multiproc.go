package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/redlock-go/redlock/bench/matrix"
	"github.com/redlock-go/redlock/bench/multiproc"
	"github.com/redlock-go/redlock/bench/plots"
	"github.com/redlock-go/redlock/bench/report"
	"github.com/redlock-go/redlock/bench/target"
)

// mpConfig is the command line of the hot key across processes.
type mpConfig struct {
	on, only          bool
	alone             bool // only this scenario runs
	procs, goroutines int
	hold              time.Duration
	duration, warmup  time.Duration
	driver            string
	modes             []string
	modesFlag         string
}

// register adds the scenario's flags to fs.
func (m *mpConfig) register(fs *flag.FlagSet) {
	fs.BoolVar(&m.on, "multiproc", true, "the hot key across processes: --multiproc-procs child processes of --multiproc-goroutines goroutines each loop on one key at N=5 (or the largest N): Client.Lock, a critical section that spins --multiproc-hold, Unlock; attempts per acquisition, the release-to-next-acquire gap across processes, fairness and a shared-memory exclusion check (false: skip it)")
	fs.BoolVar(&m.only, "multiproc-only", false, "run the hot key across processes alone")
	fs.IntVar(&m.procs, "multiproc-procs", 4, "processes of the hot key across processes")
	fs.IntVar(&m.goroutines, "multiproc-goroutines", 8, "goroutines per process of the hot key across processes")
	fs.DurationVar(&m.hold, "multiproc-hold", time.Millisecond, "critical section of the hot key across processes (a spin)")
	fs.DurationVar(&m.duration, "multiproc-duration", 5*time.Second, "measured time of each cell of the hot key across processes (10s for figures to keep)")
	fs.DurationVar(&m.warmup, "multiproc-warmup", 500*time.Millisecond, "unmeasured warm-up of each cell of the hot key across processes")
	fs.StringVar(&m.driver, "multiproc-driver", "redigo", "redlock driver of the hot key across processes: "+strings.Join(serverDrivers(), ","))
	fs.StringVar(&m.modesFlag, "multiproc-modes", "wake,poll,fair", "wait modes of the hot key across processes: "+strings.Join(multiproc.Modes, ","))
}

// serverDrivers are the compiled-in drivers that talk to servers: the
// in-memory one would give each process a lock of its own.
func serverDrivers() []string {
	var out []string
	for _, d := range target.Drivers() {
		if !target.InMemory(d) {
			out = append(out, d)
		}
	}
	return out
}

// apply checks the scenario's flags and, with --multiproc-only, empties
// c's plan of every other cell, unless --variants-only, --handoff-only
// or --kinds-only asked for theirs too; those alone leave the scenario out. It runs after
// the other checks.
func (m *mpConfig) apply(c *config) error {
	otherOnly := c.plan.VariantsOnly || c.plan.HandoffOnly || c.plan.KindsOnly
	switch {
	case m.only:
		m.on = true
	case otherOnly:
		m.on = false
	}
	if !m.on {
		return nil
	}
	var err error
	if m.modes, err = matrix.ParseNames(m.modesFlag, multiproc.Modes); err != nil || len(m.modes) == 0 {
		return fmt.Errorf("--multiproc-modes: %w", orEmpty(err))
	}
	if !target.Has(m.driver) || target.InMemory(m.driver) {
		return fmt.Errorf("--multiproc-driver: %q is not one of %v", m.driver, serverDrivers())
	}
	switch {
	case m.procs < 1 || m.goroutines < 1:
		return errors.New("--multiproc-procs and --multiproc-goroutines must be positive")
	case m.duration <= 0 || m.warmup < 0 || m.hold < 0:
		return errors.New("--multiproc-duration must be positive, --multiproc-warmup and --multiproc-hold not negative")
	case !multiproc.Supported:
		if m.only {
			return errors.New("--multiproc-only: the hot key across processes runs on Linux only")
		}
		m.on = false
		return nil
	}
	if m.alone = m.only && !otherOnly; m.alone {
		c.plan.HandoffOnly = true
		c.plan.HandoffDrivers, c.plan.Peers = nil, nil
		c.plan.Proxy, c.proxyDelay = false, 0
	}
	return nil
}

// runMultiProc runs the scenario's cells, one per mode, on the first N of
// addrs, each process a child of this binary. A cell that failed to run
// is a record with a note; an overlap of sections is the error returned,
// after every cell ran.
func runMultiProc(ctx context.Context, cfg *config, addrs []string, runID string, prog *progress) ([]multiproc.Record, error) {
	m := cfg.mp
	if !m.on || ctx.Err() != nil {
		return nil, nil
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	n := min(cfg.plan.HandoffNodes(), len(addrs))
	var (
		recs   []multiproc.Record
		broken error
	)
	for _, mode := range m.modes {
		if ctx.Err() != nil {
			break
		}
		spec := multiproc.Spec{Driver: m.driver, Addrs: addrs[:n], Username: cfg.user, Password: cfg.pass,
			TLS: cfg.tls, TLSCA: cfg.tlsCA, Mode: mode, Key: "redlock-bench:multiproc:" + runID + ":" + mode,
			Procs: m.procs, Goroutines: m.goroutines, Hold: m.hold, Warmup: m.warmup, Duration: m.duration, TTL: cfg.ttl}
		prog.log("hot key across processes: %s %s, %d processes × %d goroutines, N=%d, %s", m.driver, mode, m.procs, m.goroutines, n, m.duration)
		rec, err := multiproc.Run(ctx, spec, self, nil, os.Stderr)
		switch {
		case errors.Is(err, multiproc.ErrExclusion):
			prog.log("%v", err)
			broken = errors.Join(broken, err)
		case err != nil:
			prog.log("hot key across processes, %s: %v", mode, err)
			rec.Note = "not measured: " + firstLine(err.Error())
		}
		recs = append(recs, rec)
	}
	return recs, broken
}

// withMultiProc adds the scenario's records and target row to run; with
// the scenario alone its row is the only target.
func withMultiProc(cfg *config, run report.Run, recs []multiproc.Record) report.Run {
	run.MultiProc = recs
	if cfg.mp.alone {
		run.Targets = nil
	}
	if t, ok := report.MultiProcTarget(recs); ok {
		run.Targets = append(run.Targets, t)
	}
	return run
}

// printMultiProc writes the scenario's table to w, after the others.
func printMultiProc(w io.Writer, recs []multiproc.Record) error {
	if len(recs) == 0 {
		return nil
	}
	if _, err := fmt.Fprintln(w); err != nil {
		return err
	}
	return multiproc.Table(w, recs)
}

// writeMultiProcPlot draws the scenario's plot into dir and returns the
// files written; it removes an earlier run's when this one has none.
func writeMultiProcPlot(dir string, run report.Run) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil { //nolint:gosec // G301: results are for reading, as the repository is
		return nil, err
	}
	drawn, err := plots.WriteMultiProc(dir, run.MultiProc)
	if err != nil {
		return nil, fmt.Errorf("plots: %w", err)
	}
	if len(drawn) == 0 {
		if err := os.Remove(filepath.Join(dir, multiproc.PlotFile)); err != nil && !errors.Is(err, fs.ErrNotExist) { //nolint:gosec // G703: dir is the output directory the user chose
			return nil, err
		}
	}
	return drawn, nil
}
