// Command redlock-bench measures the redlock library through each of its
// drivers, and peer Redis lock libraries through the same loop against the
// same servers, and reports latency percentiles (HDR histograms),
// throughput, allocations and goroutines per acquire+release pair, the
// project's performance targets as ratios within the run, and plots.
//
//	go run ./cmd/redlock-bench                 # the default run: 211 cells, about 2 minutes
//	go run ./cmd/redlock-bench --pin           # pinned to CPU 0, for latency
//	go run ./cmd/redlock-bench --variants-only # the fencing and lease table alone: 40 cells, about 20 s
//	go run ./cmd/redlock-bench --handoff-only  # the hot key alone: 18 cells, about 30 s
//	go run ./cmd/redlock-bench --multiproc-only # the hot key across processes alone, about 15 s
//	go run ./cmd/redlock-bench --kinds-only    # the reader/writer lock, semaphore and LockAll alone: 10 cells, about a minute
//	go run ./cmd/redlock-bench --kinds-only --kinds rlock,lock # some of them
//	go run ./cmd/redlock-bench --nodes a:6379,b:6379,c:6379 --password s3cret --tls-ca ca.pem
//
// Servers: with --nodes, the given ones; otherwise it starts redis-server
// processes on loopback, or in-process miniredis servers when redis-server
// is not on PATH (or with --no-redis-server), under a banner: those
// figures are not a real deployment. The latency-proxy scenario puts each
// server behind an in-process TCP proxy that delays every byte by
// --proxy-latency in each direction (1 ms: a round trip costs 2 ms); its
// cells run one client at every N and fan-out, and 32 clients at N=5
// multiplexed. Its multiplexed targets compare p50 with two round trips
// through the proxy as measured by PING (less the direct PING) plus the
// loopback cell's p50 at the same concurrency.
//
// The fencing and lease table (--variants, on by default) measures each
// driver's acquire+release pair at N=5 with one client, each a
// redlock.Client's TryLock and the handle's Unlock, four ways: the bare
// handle (plain), with Options.Fencing (fenced), with the handle's Context,
// which starts its watcher (handle), and with a Lease (lease), with the
// driver's rounds per pair counted exactly. Every other cell of this
// library, the in-memory driver's included, is the plain pair.
//
// The throughput curve (--curve) adds, at N=5 on distinct keys, the
// client counts 2, 4, 8, 16 and 64 to the matrix's 1 and 32, for every
// driver and every peer that runs at N=5, in short cells (--curve-duration).
//
// The hot key (--handoff, on by default; --handoff-only for it alone)
// has 2, 8 and 32 contenders loop on one key at N=5, each acquire waiting
// as long as it takes: this library's Client.Lock woken by release
// announcements, polling (Options.Poll) and served in turn by the servers'
// waiter queue (Options.Fair), redsync polling, rueidislock
// waiting on invalidations. It reports the handoff latency (a release's
// return to the next holder's acquire returning), critical sections per
// second, and whether two sections ever overlapped.
//
// CPU: every cell reports, per pair, the CPU time (user+system, getrusage
// RUSAGE_SELF) of the child process that ran its loop over the measured
// window (the cCPU column, client_cpu_us_per_op in run.json), and that of
// the cell's servers, used_cpu_sys + used_cpu_user of INFO cpu read before
// and after the window and summed over the servers the cell uses (sCPU,
// servers_cpu_us_per_op; "-" where the servers do not report it, as
// miniredis). After the cells, the servers' pipelined limit
// (--pipeline-depth, 100) runs the work of one pair, SET key token NX PX
// ttl then the release script by EVALSHA, pipelined that deep on distinct
// keys on each of the targets' N servers at once for --duration, and
// reports the servers' CPU per pair the same way (pipelined_limit in
// run.json); it runs again after each round of the throughput cells
// (below), and the lowest measurement is kept, since a floor measured
// while the machine ran slow is only higher. The CPU targets compare, at
// N=5 multiplexed with 32 clients, each driver's servers' CPU per pair
// with that limit and its client CPU with its servers'.
//
// Repeats: the one-client N=5 cells that the p50 targets compare (each
// driver multiplexed, and redsync+redigo) run --repeats times (3) one
// after the other; each keeps the repeat of median p50, and lists every
// repeat's p50 (repeat_p50_us in run.json, and the targets' figures), so
// that a single stalled cell does not decide a verdict. The 32-client N=5
// cells of the throughput targets (each driver multiplexed, redsync and
// rueidislock) run --repeats-1 more times after the matrix, in rounds
// that alternate this library's child process with the peers', so that
// the two sides of a round are measured seconds apart rather than
// minutes; each cell keeps its median round (repeat_ops_per_sec in
// run.json), and a throughput target is the median of the rounds' own
// ratios, the matrix's first measurements counting as one round.
//
// The hot key across processes (--multiproc, on by default;
// --multiproc-only for it alone) re-executes this binary as 4 child
// processes (--multiproc-procs) of 8 goroutines (--multiproc-goroutines)
// that loop on one key at N=5 over redigo (--multiproc-driver): Client.Lock,
// a critical section that spins 1 ms (--multiproc-hold), Unlock, for 5 s
// (--multiproc-duration; 10s for figures to keep), woken by release
// announcements and polling. It reports sections per second, acquire
// rounds per acquisition, the release-to-next-acquire gap across processes
// on CLOCK_MONOTONIC, fairness (max/min acquisitions per contender), and
// overlaps caught by a shared memory page: an overlap fails the run.
//
// Peers (redsync v4 over redigo and rueidis, bsm/redislock at N=1,
// rueidislock) live in the nested module bench/peers, which this command
// builds with the go tool and runs as a child process; see its README.
//
// Output: tables and the targets on standard output, progress on standard
// error, and run.json, results.md and PNG plots in results/latest of the
// repository, which git ignores. --out DIR writes them to DIR instead, and
// --commit-results to the committed results/<servers>[-pinned] directory;
// --replot follows the same rule.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redlock-go/redlock/bench/matrix"
	"github.com/redlock-go/redlock/bench/measure"
	"github.com/redlock-go/redlock/bench/multiproc"
	"github.com/redlock-go/redlock/bench/report"
	"github.com/redlock-go/redlock/bench/servers"
	"github.com/redlock-go/redlock/bench/target"
	"github.com/redlock-go/redlock/internal/latproxy"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

const miniBanner = `
################################################################################
#  redis-server not used: running against in-process miniredis servers.       #
#  These numbers do NOT represent a real deployment: the servers are Go code   #
#  in this process, sharing its CPU, scheduler and garbage collector, and      #
#  their allocations count in allocs/op. Install redis-server for real ones.   #
################################################################################
`

func run(args []string, stdout, stderr io.Writer) int {
	if os.Getenv(workerEnv) == "1" {
		return worker(os.Stdin, stdout, stderr)
	}
	if os.Getenv(multiproc.ChildEnv) == "1" {
		return multiproc.Child(os.Stdin, stdout, stderr)
	}
	cfg, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		logln(stderr, "redlock-bench:", err)
		return 2
	}
	if cfg.listDrivers {
		if _, err := fmt.Fprintf(stdout, "drivers: %s\npeers:   %s\n", strings.Join(target.Drivers(), " "), strings.Join(matrix.AllPeers, " ")); err != nil {
			logln(stderr, "redlock-bench:", err)
			return 1
		}
		return 0
	}
	if cfg.replot != "" {
		if err := replot(cfg, stdout); err != nil {
			logln(stderr, "redlock-bench:", err)
			return 1
		}
		return 0
	}
	env := environment()
	if cfg.pin && !env.Pinned && os.Getenv(pinnedEnv) != "1" {
		code, err := reexecPinned(args, stderr)
		if err != nil {
			logln(stderr, "redlock-bench:", err)
		}
		return code
	}
	if !env.Pinned {
		logln(stderr, pinAdvice)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := bench(ctx, cfg, env, stdout, stderr); err != nil {
		logln(stderr, "redlock-bench:", err)
		return 1
	}
	return 0
}

// logln and logf print diagnostics and progress to w, standard error. A
// write that fails there has nowhere to be reported, so they ignore it.
func logln(w io.Writer, args ...any) { _, _ = fmt.Fprintln(w, args...) }

func logf(w io.Writer, format string, args ...any) { _, _ = fmt.Fprintf(w, format, args...) }

// bench starts the servers and proxies, runs every cell, and reports.
func bench(ctx context.Context, cfg *config, env report.Env, stdout, stderr io.Writer) error {
	maxN := slices.Max(cfg.plan.NodeCounts)
	// The targets' N and concurrency.
	tn, tc := cfg.plan.VariantNodes(), cfg.plan.ThroughputClients()
	var (
		set  servers.Set
		err  error
		mode string
	)
	switch {
	case cfg.nodes != nil:
		set, mode = servers.External{List: cfg.nodes}, "external"
		env.ServerAddrs = cfg.nodes
	case !cfg.noRedis && servers.Binary() != "":
		set, err = servers.StartRedis("", maxN)
		mode = "redis-server"
	default:
		logf(stderr, "%s", miniBanner)
		set, err = servers.StartMini(maxN)
		mode = "miniredis"
		env.Notes = append(env.Notes, "miniredis in-process servers: NOT a real deployment")
	}
	if err != nil {
		return err
	}
	defer func() {
		if err := set.Close(); err != nil {
			logln(stderr, "redlock-bench: stopping the servers:", err)
		}
	}()
	env.Servers = set.Kind()
	if mode == "external" {
		env.Servers = fmt.Sprintf("external (%d nodes)", len(cfg.nodes))
	}
	if env.Pinned {
		mode += "-pinned"
	}
	out, err := outDir(cfg, mode)
	if err != nil {
		return err
	}
	env.CellSeconds = cfg.duration.Seconds()
	if slices.ContainsFunc(cfg.plan.Cells(), func(c matrix.Cell) bool { return c.Scenario == matrix.Loopback && c.Duration > 0 }) {
		env.CurveSeconds = cfg.plan.CurveDuration.Seconds()
	}
	if slices.ContainsFunc(cfg.plan.Cells(), func(c matrix.Cell) bool { return c.Scenario == matrix.Handoff }) {
		env.HandoffSeconds = cfg.plan.HandoffDuration.Seconds()
		env.HandoffHoldUs = float64(cfg.handoffHold) / 1e3
	}
	env.WarmupSecs = cfg.warmup.Seconds()
	env.TTLMs = cfg.ttl.Milliseconds()
	env.PoolSize = cfg.poolSize

	addrs := map[string][]string{matrix.Loopback: set.Addrs()}
	// A PING to every server of the targets' N at once, answered by all:
	// the floor of a multiplexed round, which the one-client p50 and the
	// hot key's handoff are measured against, in every run.
	if !cfg.tls && tn <= len(set.Addrs()) {
		if d, err := servers.PingRoundRTT(set.Addrs()[:tn], 200); err != nil {
			env.Notes = append(env.Notes, "the round of PINGs to every server not measured: "+firstLine(err.Error()))
		} else {
			env.LoopbackRoundPingUs = float64(d) / 1e3
		}
	}
	if cfg.plan.Proxy {
		var pa []string
		for _, a := range set.Addrs() {
			p, err := latproxy.Start(a, cfg.proxyDelay)
			if err != nil {
				return err
			}
			defer func() {
				if err := p.Close(); err != nil {
					logln(stderr, "redlock-bench: closing a latency proxy:", err)
				}
			}()
			pa = append(pa, p.Addr())
		}
		addrs[matrix.Proxy] = pa
		env.ProxyDelayMs = float64(cfg.proxyDelay) / float64(time.Millisecond)
		if !cfg.tls {
			direct, err1 := servers.PingRTT(set.Addrs()[0], 200)
			proxied, err2 := servers.PingRTT(pa[0], 50)
			if err1 == nil && err2 == nil {
				env.LoopbackPingUs = float64(direct) / 1e3
				env.ProxyPingUs = float64(proxied) / 1e3
			}
			// The round of the targets' N, as their multiplexed cells make.
			if proxiedRound, err := servers.PingRoundRTT(pa[:tn], 50); err != nil {
				env.Notes = append(env.Notes, "the round of PINGs to every server through the proxies not measured: "+firstLine(err.Error()))
			} else if env.LoopbackRoundPingUs > 0 {
				env.ProxyRoundPingUs = float64(proxiedRound) / 1e3
			}
		}
	}
	opts := target.DialOptions{Username: cfg.user, Password: cfg.pass, PoolSize: cfg.poolSize}
	if cfg.tls {
		if opts.TLS, err = matrix.ClientTLS(cfg.tlsCA); err != nil {
			return err
		}
	}

	logf(stderr, "servers: %s %v; GOMAXPROCS=%d, CPUs %s; %s per cell after %s warm-up\n",
		env.Servers, set.Addrs(), env.GOMAXPROCS, env.Affinity, cfg.duration, cfg.warmup)
	cells := cfg.plan.Cells()
	ours, peers := splitPeers(cells)
	runID := strconv.FormatInt(time.Now().UnixNano(), 36)
	req := matrix.PeerRequest{
		Addrs: addrs, Username: cfg.user, Password: cfg.pass, TLS: cfg.tls, TLSCA: cfg.tlsCA,
		RunID: runID, TTL: cfg.ttl, PoolSize: cfg.poolSize, Duration: cfg.duration, Warmup: cfg.warmup,
		HandoffHold: cfg.handoffHold, WriterTTL: cfg.writerTTL,
	}
	rounds := cfg.plan.Rounds(cells)
	prog := newProgress(stderr, len(cells)+(cfg.plan.Repeats-1)*len(rounds))
	var recs []matrix.Record
	onStart := func(c matrix.Cell) { prog.step(c.Name()) }
	onRecord := func(r matrix.Record) { recs = append(recs, r) }
	// This library's cells run in a child process too, so that both sides
	// of the comparison count only their own allocations and goroutines,
	// not the parent's servers and proxies.
	self, err := os.Executable()
	if err != nil {
		return err
	}
	// Round i > 0 (interleaveRounds) keys its cells apart from the others'.
	roundReq := func(i int, cells []matrix.Cell) matrix.PeerRequest {
		r := req
		r.Cells = cells
		if i > 0 {
			r.RunID = runID + "r" + strconv.Itoa(i)
		}
		return r
	}
	runOurs := func(i int, cells []matrix.Cell, onRecord func(matrix.Record)) error {
		if len(cells) == 0 {
			return nil
		}
		return runChild(ctx, self, []string{workerEnv + "=1"}, roundReq(i, cells), onStart, onRecord)
	}
	if err := runOurs(0, ours, onRecord); err != nil {
		return err
	}
	var peerBin string
	if len(peers) > 0 && ctx.Err() == nil {
		var done func()
		peerBin, done, err = buildPeerCommand(cfg, prog)
		if err == nil {
			defer done()
			err = runChild(ctx, peerBin, nil, roundReq(0, peers), onStart, onRecord)
		}
		if err != nil {
			prog.log("peers: %v", err)
			env.Notes = append(env.Notes, "peers not measured: "+firstLine(err.Error()))
			for _, c := range peers {
				if matrix.Find(recs, c) == nil {
					recs = append(recs, matrix.Record{Cell: c, Note: "not measured: peer command failed"})
				}
			}
			peerBin = ""
		}
	}
	// The servers' pipelined limit, on the servers of the targets' cells,
	// after every cell and again after each round of the throughput
	// cells: the CPU targets' reference, the lowest measurement kept. The
	// same loop as deep as tc clients can make one read, too: each has one
	// command in flight per server, and a pair is two.
	var (
		loopRuns [2][]servers.Pipelined
		loopErrs [2]error
	)
	measureLoops := func(round int) {
		if cfg.pipeDepth < 1 || cfg.plan.VariantsOnly || cfg.plan.HandoffOnly || cfg.plan.KindsOnly || strings.HasPrefix(mode, "miniredis") || ctx.Err() != nil {
			return
		}
		loops := []struct {
			depth int
			what  string
		}{
			{cfg.pipeDepth, "the servers' pipelined limit"},
			{tc / 2, "the servers' pipelined loop at the clients' depth"},
		}
		for i, l := range loops {
			if l.depth < 1 || (i > 0 && l.depth >= cfg.pipeDepth) {
				continue
			}
			prog.log("%s: %d servers, %d pairs per batch, %s", l.what, tn, l.depth, cfg.duration)
			p, err := servers.PipelinedLimit(ctx, servers.PipelineSpec{
				Addrs: set.Addrs()[:tn], Options: measure.ServerOptions{Username: cfg.user, Password: cfg.pass, TLS: opts.TLS},
				Depth: l.depth, Warmup: cfg.warmup, Duration: cfg.duration, TTL: cfg.ttl,
				KeyPrefix: "bench:" + runID + ":pipelined-" + strconv.Itoa(l.depth) + ":" + strconv.Itoa(round) + ":",
			})
			if err != nil {
				prog.log("%s, round %d: %v", l.what, round, err)
				loopErrs[i] = fmt.Errorf("%s not measured: %s", l.what, firstLine(err.Error()))
				continue
			}
			loopRuns[i] = append(loopRuns[i], p)
		}
	}
	measureLoops(0)
	if len(rounds) > 0 && ctx.Err() == nil {
		if err := interleaveRounds(ctx, cfg.plan.Repeats-1, rounds, recs, runOurs, func(i int, cells []matrix.Cell, onRecord func(matrix.Record)) error {
			if peerBin == "" || len(cells) == 0 {
				return nil
			}
			return runChild(ctx, peerBin, nil, roundReq(i, cells), onStart, onRecord)
		}, measureLoops); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			prog.log("rounds: %v", err)
			env.Notes = append(env.Notes, "rounds not completed, each cell keeps its first measurement: "+firstLine(err.Error()))
		}
	}
	mp, mpErr := runMultiProc(ctx, cfg, set.Addrs(), runID, prog)
	prog.finish()
	if ctx.Err() != nil {
		return ctx.Err()
	}

	for i, into := range []**servers.Pipelined{&env.Pipelined, &env.PipelinedAtClients} {
		if len(loopRuns[i]) > 0 {
			p := servers.Lowest(loopRuns[i])
			*into = &p
		} else if loopErrs[i] != nil { // no round measured it
			env.Notes = append(env.Notes, loopErrs[i].Error())
		}
	}
	result := withMultiProc(cfg, report.Run{Env: env, Records: recs, Targets: append(codeTargets(moduleRoot()), report.Evaluate(recs, env, tn, tc)...)}, mp)
	if _, err := fmt.Fprintln(stdout); err != nil {
		return err
	}
	if err := report.Table(stdout, recs); err != nil {
		return err
	}
	if err := printMultiProc(stdout, mp); err != nil {
		return err
	}
	if _, err := fmt.Fprintf(stdout, "\ntargets (N=%d, %d clients; ratios within this run):\n", tn, tc); err != nil {
		return err
	}
	if err := report.Targets(stdout, result.Targets); err != nil {
		return err
	}
	if strings.HasPrefix(mode, "miniredis") {
		if _, err := fmt.Fprint(stdout, miniBanner); err != nil {
			return err
		}
	}
	mpFiles, err := writeMultiProcPlot(out, result)
	if err != nil {
		return err
	}
	files, err := writeResults(out, result)
	if err != nil {
		return err
	}
	if err := wrote(stdout, cfg, out, append(files, mpFiles...), "results/"+mode); err != nil {
		return err
	}
	return mpErr
}

// wrote says which files went where, last, and for the default directory
// how to write the committed one instead.
func wrote(w io.Writer, cfg *config, dir string, files []string, committed string) error {
	where := "to " + displayPath(dir)
	if cfg.out == "" && !cfg.commit {
		where += " (ignored by git; --commit-results writes " + committed + " instead)"
	}
	_, err := fmt.Fprintf(w, "\nwrote %s\n%s\n", strings.Join(files, ", "), where)
	return err
}

// buildPeerCommand builds the peer command into a temporary directory,
// which done removes.
func buildPeerCommand(cfg *config, prog *progress) (bin string, done func(), err error) {
	dir, err := findPeersDir(cfg.peersDir)
	if err != nil {
		return "", nil, err
	}
	tmp, err := os.MkdirTemp("", "redlock-peerbench-")
	if err != nil {
		return "", nil, err
	}
	done = func() {
		if err := os.RemoveAll(tmp); err != nil {
			prog.log("peers: removing %s: %v", tmp, err)
		}
	}
	prog.log("building the peer command in %s (first time: downloads the peers' modules)", dir)
	if bin, err = buildPeers(dir, tmp); err != nil {
		done()
		return "", nil, err
	}
	return bin, done, nil
}

// targetShape returns the targets' N and concurrency of a run's records,
// by the rule bench follows (matrix.Plan): 5 and 32 when the matrix has
// them, else its largest.
func targetShape(recs []matrix.Record) (nodes, clients int) {
	var p matrix.Plan
	for _, r := range recs {
		if r.Scenario == matrix.Loopback && r.Duration == 0 && !r.SharedKey {
			p.NodeCounts, p.Concurrency = append(p.NodeCounts, r.Nodes), append(p.Concurrency, r.Clients)
		}
	}
	if len(p.NodeCounts) == 0 {
		return 5, 32
	}
	return p.VariantNodes(), p.ThroughputClients()
}

// splitPeers splits cells into this library's and the peers', in order.
func splitPeers(cells []matrix.Cell) (ours, peers []matrix.Cell) {
	for _, c := range cells {
		if c.IsPeer() {
			peers = append(peers, c)
		} else {
			ours = append(ours, c)
		}
	}
	return ours, peers
}

// interleaveRounds measures rounds n more times, each time this
// library's cells (ours), then the peers', then after(round), and
// replaces each cell's record in recs by its median round
// (measure.MedianLatency for a repeated cell, measure.MedianThroughput
// for the others), the first measurement included: the targets then
// compare figures taken seconds apart, not minutes, and a slow stretch
// of a shared machine in one round does not decide them. A cell's rounds are kept only if every round measured it;
// a round that fails ends the rounds, and the cells keep their first
// measurement.
func interleaveRounds(ctx context.Context, n int, rounds []matrix.Cell, recs []matrix.Record, ours, peers func(int, []matrix.Cell, func(matrix.Record)) error, after func(int)) error {
	mine, theirs := splitPeers(rounds)
	got := make(map[string][]measure.Result)
	// A checked cell's every round counts in its exclusion check.
	checks := make(map[string][]measure.Exclusion)
	keep := func(r matrix.Record) {
		got[r.Name()] = append(got[r.Name()], r.Result)
		if r.Exclusion != nil {
			checks[r.Name()] = append(checks[r.Name()], *r.Exclusion)
		}
	}
	var err error
	for i := 1; i <= n && ctx.Err() == nil; i++ {
		if err = ours(i, mine, keep); err != nil {
			break
		}
		if err = peers(i, theirs, keep); err != nil {
			break
		}
		after(i)
	}
	// Every round that ran counts in the checks, even if one failed.
	for i := range recs {
		r := &recs[i]
		if e := r.Exclusion; e != nil {
			for _, x := range checks[r.Name()] {
				e.Add(x)
			}
			if !e.Ok() {
				r.Note = matrix.ViolationNote(*e)
			}
		}
	}
	if err != nil {
		return err // a round is missing: the cells keep their first measurement
	}
	for i := range recs {
		more := got[recs[i].Name()]
		if len(more) != n || recs[i].Ops == 0 {
			continue
		}
		all := append([]measure.Result{recs[i].Result}, more...)
		if recs[i].Repeats > 1 { // a p50 target's cell
			recs[i].Result = measure.MedianLatency(all)
		} else {
			recs[i].Result = measure.MedianThroughput(all)
		}
	}
	return ctx.Err()
}

// replot redraws the plots and results.md of the --replot directory from
// its run.json, into the directory outDir chooses: results/latest unless
// --out or --commit-results (in place) says otherwise.
func replot(cfg *config, stdout io.Writer) error {
	src := filepath.Join(cfg.replot, "run.json")
	b, err := os.ReadFile(src) //nolint:gosec // G304: the run.json of the directory the user gave --replot
	if err != nil {
		return err
	}
	var r report.Run
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("%s: %w", src, err)
	}
	if len(r.Records) > 0 && len(r.Targets) > 0 {
		// The targets again, by today's rules, from the run's own figures;
		// the code rows as the run measured them, not today's source.
		tn, tc := targetShape(r.Records)
		ts := append(storedCodeTargets(r.Targets), report.Evaluate(r.Records, r.Env, tn, tc)...)
		if t, ok := report.MultiProcTarget(r.MultiProc); ok {
			ts = append(ts, t)
		}
		r.Targets = ts
	}
	out, err := outDir(cfg, "")
	if err != nil {
		return err
	}
	mpFiles, err := writeMultiProcPlot(out, r)
	if err != nil {
		return err
	}
	files, err := writeResults(out, r)
	if err != nil {
		return err
	}
	return wrote(stdout, cfg, out, append(files, mpFiles...), displayPath(cfg.replot)+" in place")
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
