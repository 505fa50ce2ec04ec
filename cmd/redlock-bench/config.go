package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redlock-go/redlock/bench/matrix"
	"github.com/redlock-go/redlock/bench/target"
)

// config is the parsed command line.
type config struct {
	nodes       []string // external servers; empty: start our own
	user, pass  string
	tls         bool
	tlsCA       string
	plan        matrix.Plan
	duration    time.Duration
	warmup      time.Duration
	proxyDelay  time.Duration
	ttl         time.Duration
	poolSize    int
	pin         bool
	out         string
	commit      bool // write into the committed results/<servers> directory
	noRedis     bool
	peersDir    string
	contended   bool
	listDrivers bool
	replot      string
	handoffHold time.Duration
	pipeDepth   int           // the servers' pipelined limit: pairs per batch; 0: not measured
	writerTTL   time.Duration // the writer-wait cell's TTL
	mp          mpConfig      // the hot key across processes
}

// parseFlags parses args (without the program name) into a config.
func parseFlags(args []string, stderr io.Writer) (*config, error) {
	fs := flag.NewFlagSet("redlock-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		logf(stderr, "usage: go run ./cmd/redlock-bench [flags]\n\n%s\n\nflags:\n", usageText)
		fs.PrintDefaults()
	}
	var (
		c                                         config
		nodes, drivers, counts, fans, conc, peers string
		variants, curve, handoff, handoffDrivers  string
		variantsOnly, handoffOnly, kindsOnly      bool
		kinds, kindsDrivers                       string
	)
	fs.StringVar(&nodes, "nodes", "", "comma-separated host:port list of external Redis servers (default: start redis-server, or miniredis, on loopback)")
	fs.StringVar(&c.user, "user", "", "ACL user for external servers")
	fs.StringVar(&c.pass, "password", "", "password for external servers")
	fs.BoolVar(&c.tls, "tls", false, "connect to external servers over TLS")
	fs.StringVar(&c.tlsCA, "tls-ca", "", "PEM file of the CA that signed the servers' certificates (implies --tls)")
	fs.StringVar(&drivers, "drivers", "all", "redlock drivers to run: "+strings.Join(target.Drivers(), ",")+" (all, none)")
	fs.StringVar(&counts, "node-counts", "1,3,5", "node counts N to run")
	fs.StringVar(&fans, "fanout", "sequential,multiplexed", "fan-outs to run")
	fs.StringVar(&conc, "concurrency", "1,32", "client goroutines to run, on distinct keys")
	fs.StringVar(&peers, "peers", "all", "peer libraries to run in the same run: "+strings.Join(matrix.AllPeers, ",")+" (all, none)")
	fs.BoolVar(&c.contended, "contended", true, "add one single-key cell per subject at the largest N and concurrency")
	fs.StringVar(&variants, "variants", "all", "the fencing and lease table: pair variants to run per driver and fan-out, at N=5 (or the largest N) with one client: "+strings.Join(target.Variants, ",")+" (all, none)")
	fs.BoolVar(&variantsOnly, "variants-only", false, "run the fencing and lease table alone: no loopback matrix, contended, proxy or peer cells")
	fs.StringVar(&curve, "curve", "1,2,4,8,16,32,64", "the throughput curve: client goroutines on distinct keys at N=5 (or the largest N), multiplexed, for every driver but mem and every peer that runs at that N; points not in --concurrency run for --curve-duration (none: no curve)")
	fs.DurationVar(&c.plan.CurveDuration, "curve-duration", 200*time.Millisecond, "measured time of each throughput-curve point not in --concurrency")
	fs.StringVar(&handoff, "handoff", "2,8,32", "the hot key: contenders on one key at N=5 (or the largest N), each looping acquire (waiting as long as it takes), a tiny critical section, release; handoff latency and critical sections per second, for --handoff-drivers with wake and with polling and for every peer that runs at that N (none: no hot key)")
	fs.StringVar(&handoffDrivers, "handoff-drivers", "redigo", "redlock drivers of the hot-key cells: "+strings.Join(target.Drivers(), ",")+" (all, none)")
	fs.DurationVar(&c.plan.HandoffDuration, "handoff-duration", 1500*time.Millisecond, "measured time of each hot-key cell (after --warmup)")
	fs.DurationVar(&c.handoffHold, "handoff-hold", 0, "how much longer a hot-key critical section holds the lock once every other contender is in its acquire call (a sleep; 0: release at once)")
	fs.BoolVar(&handoffOnly, "handoff-only", false, "run the hot-key cells alone (with --variants-only: and the fencing and lease table)")
	fs.StringVar(&kinds, "kinds", "all", "the primitives beyond the mutex, at N=5 (or the largest N) over --kinds-drivers, each beside the mutex cell its target compares it with: "+strings.Join(matrix.KindCells, ",")+" (all, none)")
	fs.StringVar(&kindsDrivers, "kinds-drivers", "redigo", "redlock drivers of the --kinds cells: "+strings.Join(target.Drivers(), ",")+" (all, none)")
	fs.DurationVar(&c.plan.KindsDuration, "kinds-duration", 1500*time.Millisecond, "measured time of each contended --kinds cell (after --warmup); the writer's cell runs 4 times that")
	fs.DurationVar(&c.writerTTL, "kinds-writer-ttl", matrix.DefaultWriterTTL, "TTL of the writer-wait cell's locks: its readers hold a tenth to a half of it, and the writer's wait is bounded in it")
	fs.BoolVar(&kindsOnly, "kinds-only", false, "run the --kinds cells alone (with --variants-only or --handoff-only: and those)")
	fs.IntVar(&c.plan.Repeats, "repeats", 3, "measure the one-client N=5 (or the largest N) cells of the p50 targets this many times each (this library's multiplexed cells and redsync+redigo's), and the cells of the throughput targets in this many rounds that alternate this library's cells with the peers'; their targets take the median repeat's p50 and the median round's throughput")
	fs.IntVar(&c.pipeDepth, "pipeline-depth", 100, "the servers' pipelined limit: pairs (SET NX PX, then the release script by EVALSHA) per pipelined batch on each server, for --duration, to compare the servers' CPU per pair with (0: not measured)")
	fs.DurationVar(&c.duration, "duration", 400*time.Millisecond, "measured time per cell")
	fs.DurationVar(&c.warmup, "warmup", 100*time.Millisecond, "unmeasured warm-up per cell")
	fs.DurationVar(&c.proxyDelay, "proxy-latency", time.Millisecond, "delay the latency proxy adds in EACH direction (a round trip costs twice that); 0 disables the proxy scenario")
	fs.DurationVar(&c.ttl, "ttl", 10*time.Second, "lock TTL, the same for every library")
	fs.IntVar(&c.poolSize, "pool-size", 64, "connection pool size per node, for every library that has one")
	fs.BoolVar(&c.pin, "pin", false, "re-run pinned to CPU 0 (taskset -c 0, GOMAXPROCS=1), the setting of the latency targets")
	fs.StringVar(&c.out, "out", "", "results directory (default "+latestDir+", which git ignores)")
	fs.BoolVar(&c.commit, "commit-results", false, "write into the committed results/<servers>[-pinned] (such as results/redis-server) instead of "+latestDir+"; with --replot, rewrite its directory in place")
	fs.BoolVar(&c.noRedis, "no-redis-server", false, "use in-process miniredis even if redis-server is on PATH")
	fs.StringVar(&c.peersDir, "peers-dir", "", "directory of the nested peers module (default: bench/peers of this repository)")
	fs.StringVar(&c.replot, "replot", "", "redraw the plots and results.md of a results directory from its run.json, with its targets evaluated again by this build's rules, into "+latestDir+" (see --out, --commit-results), and exit")
	fs.BoolVar(&c.listDrivers, "list", false, "print the drivers and peers compiled in, and exit")
	c.mp.register(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	var err error
	if c.out != "" && c.commit {
		return nil, errors.New("--out and --commit-results both choose the results directory: give one")
	}
	if c.nodes, err = parseNodes(nodes); err != nil {
		return nil, err
	}
	if c.tlsCA != "" {
		c.tls = true
	}
	if c.nodes == nil && (c.tls || c.user != "" || c.pass != "") {
		return nil, errors.New("--user, --password, --tls and --tls-ca apply to external servers (--nodes)")
	}
	if c.plan.Drivers, err = matrix.ParseNames(drivers, target.Drivers()); err != nil {
		return nil, fmt.Errorf("--drivers: %w", err)
	}
	if c.plan.NodeCounts, err = matrix.ParseInts(counts); err != nil {
		return nil, fmt.Errorf("--node-counts: %w", err)
	}
	if c.plan.FanOuts, err = matrix.ParseNames(fans, []string{"sequential", "multiplexed"}); err != nil || len(c.plan.FanOuts) == 0 {
		return nil, fmt.Errorf("--fanout: %w", orEmpty(err))
	}
	if c.plan.Concurrency, err = matrix.ParseInts(conc); err != nil {
		return nil, fmt.Errorf("--concurrency: %w", err)
	}
	if c.plan.Peers, err = matrix.ParseNames(peers, matrix.AllPeers); err != nil {
		return nil, fmt.Errorf("--peers: %w", err)
	}
	if c.plan.Variants, err = matrix.ParseNames(variants, target.Variants); err != nil {
		return nil, fmt.Errorf("--variants: %w", err)
	}
	if c.plan.Curve, err = parseIntsOrNone(curve); err != nil {
		return nil, fmt.Errorf("--curve: %w", err)
	}
	if c.plan.HandoffContenders, err = parseIntsOrNone(handoff); err != nil {
		return nil, fmt.Errorf("--handoff: %w", err)
	}
	if c.plan.HandoffDrivers, err = matrix.ParseNames(handoffDrivers, target.Drivers()); err != nil {
		return nil, fmt.Errorf("--handoff-drivers: %w", err)
	}
	if c.plan.Kinds, err = matrix.ParseNames(kinds, matrix.KindCells); err != nil {
		return nil, fmt.Errorf("--kinds: %w", err)
	}
	if c.plan.KindsDrivers, err = matrix.ParseNames(kindsDrivers, target.Drivers()); err != nil {
		return nil, fmt.Errorf("--kinds-drivers: %w", err)
	}
	if kindsOnly {
		if len(c.plan.Kinds) == 0 || len(c.plan.KindsDrivers) == 0 {
			return nil, errors.New("--kinds-only with no kinds cells or no kinds drivers: nothing to run")
		}
		c.plan.KindsOnly, c.proxyDelay = true, 0
		if !handoffOnly {
			c.plan.Peers = nil
		}
	}
	if variantsOnly {
		if len(c.plan.Drivers) == 0 || len(c.plan.Variants) == 0 {
			return nil, errors.New("--variants-only with no drivers or no variants: nothing to run")
		}
		c.plan.VariantsOnly, c.proxyDelay = true, 0
		if !handoffOnly {
			c.plan.Peers = nil
		}
	}
	if handoffOnly {
		if len(c.plan.HandoffContenders) == 0 || len(c.plan.HandoffDrivers) == 0 && len(c.plan.Peers) == 0 {
			return nil, errors.New("--handoff-only with no contenders, or no handoff drivers and no peers: nothing to run")
		}
		c.plan.HandoffOnly, c.proxyDelay = true, 0
	}
	if len(c.plan.Drivers) == 0 && len(c.plan.Peers) == 0 {
		return nil, errors.New("nothing to run: no drivers and no peers")
	}
	if c.nodes != nil {
		if maxN := slices.Max(c.plan.NodeCounts); maxN > len(c.nodes) {
			return nil, fmt.Errorf("--node-counts asks for %d nodes but --nodes lists %d", maxN, len(c.nodes))
		}
	}
	switch {
	case c.duration <= 0:
		return nil, errors.New("--duration must be positive")
	case c.plan.CurveDuration <= 0 || c.plan.HandoffDuration <= 0 || c.plan.KindsDuration <= 0:
		return nil, errors.New("--curve-duration, --handoff-duration and --kinds-duration must be positive")
	case c.writerTTL < time.Millisecond || c.writerTTL%time.Millisecond != 0:
		return nil, errors.New("--kinds-writer-ttl must be a whole number of milliseconds")
	case c.handoffHold < 0:
		return nil, errors.New("--handoff-hold must not be negative")
	case c.warmup < 0 || c.proxyDelay < 0:
		return nil, errors.New("--warmup and --proxy-latency must not be negative")
	case c.ttl < time.Millisecond || c.ttl%time.Millisecond != 0:
		return nil, errors.New("--ttl must be a whole number of milliseconds")
	case c.poolSize < 1:
		return nil, errors.New("--pool-size must be positive")
	case c.plan.Repeats < 1:
		return nil, errors.New("--repeats must be positive")
	case c.pipeDepth < 0:
		return nil, errors.New("--pipeline-depth must not be negative")
	}
	if err := c.mp.apply(&c); err != nil {
		return nil, err
	}
	c.plan.Proxy = c.proxyDelay > 0
	c.plan.Contended = c.contended
	return &c, nil
}

// parseNodes parses the --nodes list. A bare number, such as 5, is taken
// for a node count given to the wrong flag.
func parseNodes(s string) ([]string, error) {
	var nodes []string
	for _, a := range strings.Split(s, ",") {
		if a = strings.TrimSpace(a); a == "" {
			continue
		}
		if _, err := strconv.Atoi(a); err == nil {
			if _, err := matrix.ParseInts(s); err == nil {
				a = strings.Join(strings.Fields(strings.ReplaceAll(s, ",", " ")), ",")
			}
			return nil, fmt.Errorf("--nodes takes host:port addresses of external servers; did you mean --node-counts %s?", a)
		}
		if !strings.Contains(a, ":") {
			return nil, fmt.Errorf("--nodes: %q is not host:port", a)
		}
		nodes = append(nodes, a)
	}
	return nodes, nil
}

// parseIntsOrNone is matrix.ParseInts, with "none" (or "") for no list.
func parseIntsOrNone(s string) ([]int, error) {
	if t := strings.TrimSpace(s); t == "" || t == "none" {
		return nil, nil
	}
	return matrix.ParseInts(s)
}

func orEmpty(err error) error {
	if err == nil {
		return errors.New("empty list")
	}
	return err
}

const usageText = `Runs acquire+release pairs of the redlock library through each driver, and
of peer libraries (redsync, bsm/redislock, rueidislock) through the same loop
against the same servers, and reports latency percentiles, throughput,
allocations and goroutines per pair, the project's performance targets, and
plots.

With no flags it runs 254 cells in about 2.5 minutes, plus 1 to 4 minutes on a
first run to compile this command and the peer libraries:

  - 186 cells of 0.5 s (400 ms measured after 100 ms of warm-up): every
    driver and peer at N = 1, 3 and 5 with 1 and 32 clients, the contended
    and latency-proxy cells (one client at every N and fan-out, and 32
    clients at N=5 multiplexed), and the fencing and lease table
    (--variants, 48 of them: plain, fenced, handle and lease pairs per
    driver and fan-out at N=5 with one client, with rounds per pair;
    --variants-only runs that table alone, in about 25 s); the one-client
    N=5 cells of the p50 targets (each driver multiplexed, redsync+redigo)
    run 3 times each (--repeats) and keep the median repeat; the 32-client
    N=5 cells of the throughput targets (each driver multiplexed, redsync
    and rueidislock) run twice more, in rounds that alternate this
    library's cells with the peers'; a target takes the median of the
    rounds' ratios;
  - 40 more points of the throughput curve (--curve) at N=5 on distinct
    keys, 2, 4, 8, 16 and 64 clients, 0.2 s each after the warm-up;
  - 18 hot-key cells (--handoff) of 1.5 s after the warm-up: 2, 8 and 32
    contenders on one key at N=5, this library woken by release
    announcements, polling and fair (Options.Fair), redsync over redigo and rueidis, and
    rueidislock, with handoff latency, critical sections per second and an
    exclusion check; --handoff-only runs them alone, in about 30 s;
  - the servers' pipelined limit (--pipeline-depth): the commands of one
    pair pipelined 100 deep on every server at once, and again as deep as
    the targets' clients can make one read (16 for 32 clients), with the
    CPU of the servers and of the loop's own client, for the CPU targets;
    it runs after each round of the throughput cells too, and the lowest
    measurement counts;
  - 10 cells of the reader/writer lock, the semaphore and LockAll
    (--kinds) at N=5 over redigo (--kinds-drivers), each beside the mutex
    cell its target divides by: the uncontended RLock and LockAll pairs
    and their mutex pairs (3 repeats each), 32 readers on one key and 32
    clients on a key each, the semaphore (K=4, 32 contenders) and 32
    contenders on 4 mutex keys, 1.5 s each (--kinds-duration), a writer
    behind 8 readers for 6 s (TTL 200 ms, --kinds-writer-ttl), and LockAll
    contended (8 contenders, overlapping key sets), every contended cell's
    exclusion checked; the cells of the ratios join the throughput
    cells' rounds, and a target takes the median of the rounds' ratios;
    --kinds-only runs them alone, in about a minute;
  - the hot key across processes (--multiproc): 4 child processes of 8
    goroutines on one key, woken and polling, 5 s each after 0.5 s of
    warm-up, with attempts per acquisition, the handoff gap across
    processes, fairness and a shared-memory exclusion check;
    --multiproc-only runs it alone, in about 15 s.

Every cell reports the CPU per pair of the process that runs it
(getrusage) and of its servers (INFO cpu, summed over the cell's servers).

It starts redis-server processes on loopback, or in-process miniredis servers
if redis-server is not installed (those figures are not a real deployment).
Results go to the terminal and to results/latest, which git ignores:
run.json, results.md, *.png. Only --out DIR and --commit-results (the
committed results/redis-server and the like) write elsewhere.`
