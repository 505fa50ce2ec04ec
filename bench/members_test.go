package bench

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/bench/measure"
	"github.com/redlock-go/redlock/bench/plots"
	"github.com/redlock-go/redlock/bench/target"
	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers"
	"github.com/redlock-go/redlock/drivers/goredis"
	"github.com/redlock-go/redlock/internal/redistest"
)

var (
	membersN5 = flag.Bool("members.n5", false,
		"BenchmarkMembers: run the N=5 cells too (about 50 more redis-server processes); they run anyway when -short is off and REDLOCK_BENCH_MEMBERS_N5=1")
	membersRounds = flag.Int("members.rounds", 1,
		"BenchmarkMembers: measure each N's cells this many times, interleaved (the second round's names end in #01, and so on); -count repeats each cell in a row instead")
	membersOut = flag.String("members.out", "",
		"BenchmarkMembers: write table.md and members_latency.png into this directory after each run of the benchmark")
)

// Cell parameters of BenchmarkMembers. Every cell has the same Client
// configuration: TTL 10 s, NodeTimeout 1 s (not the derived 50 ms, which a
// loaded machine misses under WAIT), multiplexed; WAIT cells bound each
// WAIT by membersWait, well below the NodeTimeout.
const (
	membersNodeTimeout = time.Second
	membersWait        = 500 * time.Millisecond
)

// membersKinds are the kinds of member, in the order of the cells: the
// variants of one topology next to each other.
var membersKinds = []membersKind{
	{topology: drivers.Standalone, label: "standalone"},
	{topology: drivers.SentinelGroup, label: "sentinel"},
	{topology: drivers.SentinelGroup, wait: true, label: "sentinel+WAIT"},
	{topology: drivers.ClusterGroup, label: "cluster"},
	{topology: drivers.ClusterGroup, wait: true, label: "cluster+WAIT"},
}

type membersKind struct {
	topology drivers.Topology
	wait     bool
	label    string
}

func (k membersKind) name() string {
	t := map[drivers.Topology]string{drivers.Standalone: "standalone", drivers.SentinelGroup: "sentinel", drivers.ClusterGroup: "cluster"}[k.topology]
	w := "none"
	if k.wait {
		w = "all"
	}
	return "topology=" + t + "/wait=" + w
}

// membersShape is the size of each member at N: a Sentinel group's
// replicas and Sentinels, a Cluster's masters and replicas per master.
// N=5 has smaller Sentinel groups (1 replica, 1 Sentinel) to keep the
// machine's process count down; a Cluster keeps its shape.
type membersShape struct {
	sentinelReplicas, sentinels int
	clusterMasters, clusterReps int
}

func shapeFor(n int) membersShape {
	if n >= 5 {
		return membersShape{sentinelReplicas: 1, sentinels: 1, clusterMasters: 3, clusterReps: 1}
	}
	return membersShape{sentinelReplicas: 2, sentinels: 3, clusterMasters: 3, clusterReps: 1}
}

// BenchmarkMembers is the uncontended TryLock+Unlock pair of a
// redlock.Client (multiplexed, one client) over goredis.DialMembers, by
// kind of member: N standalone masters; N Sentinel groups, without WAIT
// and with WAIT for all of each group's replicas; N Clusters, without
// WAIT and with WAIT for each master's replica. It reports p50-µs and
// p99-µs of a pair, client-cpu-µs/op (the test process's CPU time per
// pair, getrusage) and, on WAIT cells, waits/op: the WAIT commands the
// masters ran per pair (INFO commandstats), N when every acquisition
// waited. Each cell first checks exclusion (a second TryLock of a held
// key is ErrTaken, and succeeds once it is released), and fails if a
// measured pair did not acquire or returned an error.
//
// Each N's servers are started when its first cell runs, in parallel, and
// stopped before the next N's start and at the end: at N=3 each Sentinel
// group is a master, 2 replicas and 3 Sentinels; at N=5 a master, 1
// replica and 1 Sentinel; each Cluster is 3 masters with a replica each.
// The N=5 cells run only with -members.n5 (or REDLOCK_BENCH_MEMBERS_N5=1)
// and -short off, so that the CI smoke (-benchtime 1x) stays cheap.
// -members.rounds=R measures each N's cells R times, interleaved, so
// that a noisy machine's slow spells spread over every kind; -members.out=DIR
// writes DIR/table.md and DIR/members_latency.png, with the medians over
// the rounds and -count repeats.
//
//	go test -run '^$' -bench Members -benchtime 2000x ./bench -members.n5 -members.rounds 3 -members.out ../results/members
func BenchmarkMembers(b *testing.B) {
	redistest.RedisServerPath(b) // skips (or fails) without redis-server
	quietSentinelLogs.Do(func() { redis.SetLogger(sentinelFilter{}) })
	env := &membersEnv{parent: b}
	b.Cleanup(env.close)
	ns := []int{3}
	if !testing.Short() && (*membersN5 || os.Getenv("REDLOCK_BENCH_MEMBERS_N5") == "1") {
		ns = append(ns, 5)
	}
	for _, n := range ns {
		for range max(*membersRounds, 1) {
			for _, k := range membersKinds {
				b.Run(fmt.Sprintf("nodes=%d/%s", n, k.name()), func(b *testing.B) {
					env.run(b, n, k)
				})
			}
		}
	}
	if *membersOut != "" {
		if err := writeMembers(*membersOut); err != nil {
			b.Errorf("writing the members results: %v", err)
		}
	}
}

// quietSentinelLogs installs sentinelFilter once.
var quietSentinelLogs sync.Once

// sentinelFilter is go-redis's logger without the failover client's two
// lines per client on finding the master ("sentinel: selected addr",
// "sentinel: new master"), which every Sentinel cell would print between
// the results; the rest goes to the log package, as go-redis's own does.
type sentinelFilter struct{}

func (sentinelFilter) Printf(_ context.Context, format string, v ...any) {
	if strings.HasPrefix(format, "sentinel: selected addr") || strings.HasPrefix(format, "sentinel: new master") {
		return
	}
	log.Printf("redis: "+format, v...)
}

// membersEnv holds the servers of the N being measured and the subject of
// the running cell, which the framework calls with growing b.N.
type membersEnv struct {
	parent *testing.B

	n          int // the N whose servers run, 0 before the first
	stops      []func()
	standalone []string
	sentinels  []*redistest.SentinelGroup
	clusters   []*redistest.Cluster

	cell  string
	drv   *drivers.Driver
	subj  *target.Redlock
	waits func() (int64, error) // the WAIT count on the cell's masters
}

// membersRows are the measured cells, every -count run's, by name.
var (
	membersMu   sync.Mutex
	membersRows = map[string][]measure.Result{}
	membersSeen []membersCell
)

type membersCell struct {
	name  string
	nodes int
	label string
}

func (e *membersEnv) closeDriver() {
	if e.drv != nil {
		if err := e.drv.Close(); err != nil {
			e.parent.Logf("closing a members driver: %v", err)
		}
	}
	e.cell, e.drv, e.subj, e.waits = "", nil, nil, nil
}

// stopServers kills the servers started, last first.
func (e *membersEnv) stopServers() {
	for i := len(e.stops) - 1; i >= 0; i-- {
		e.stops[i]()
	}
	e.n, e.stops, e.standalone, e.sentinels, e.clusters = 0, nil, nil, nil, nil
}

func (e *membersEnv) close() {
	e.closeDriver()
	e.stopServers()
}

// startTB is the testing.TB the servers are started with: the benchmark's
// own, except that their cleanups are kept for stopServers and a failure
// is recorded, so that starting can run in parallel goroutines.
type startTB struct {
	testing.TB
	mu    *sync.Mutex
	stops *[]func()
	err   error
}

func (s *startTB) Cleanup(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	*s.stops = append(*s.stops, f)
}

func (s *startTB) fail(msg string) {
	if s.err == nil {
		s.err = errors.New(msg)
	}
}

func (s *startTB) Errorf(f string, a ...any) { s.fail(fmt.Sprintf(f, a...)) }
func (s *startTB) Error(a ...any)            { s.fail(fmt.Sprint(a...)) }
func (s *startTB) Fatalf(f string, a ...any) { s.fail(fmt.Sprintf(f, a...)); runtime.Goexit() }
func (s *startTB) Fatal(a ...any)            { s.fail(fmt.Sprint(a...)); runtime.Goexit() }
func (s *startTB) FailNow()                  { s.fail("FailNow"); runtime.Goexit() }
func (s *startTB) Skipf(f string, a ...any) {
	s.fail("skipped: " + fmt.Sprintf(f, a...))
	runtime.Goexit()
}
func (s *startTB) Skip(a ...any) { s.fail("skipped: " + fmt.Sprint(a...)); runtime.Goexit() }
func (s *startTB) SkipNow()      { s.fail("skipped"); runtime.Goexit() }

// parallel runs start(tb, i) for i in [0, k) at once and fails b with the
// first failure.
func (e *membersEnv) parallel(b *testing.B, k int, start func(tb testing.TB, i int)) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	tbs := make([]*startTB, k)
	for i := range tbs {
		tbs[i] = &startTB{TB: e.parent, mu: &mu, stops: &e.stops}
		wg.Add(1)
		go func() {
			defer wg.Done()
			start(tbs[i], i)
		}()
	}
	wg.Wait()
	for _, tb := range tbs {
		if tb.err != nil {
			b.Fatal(tb.err)
		}
	}
}

// servers starts the servers of n members of topology, once per N; the
// other N's are stopped first.
func (e *membersEnv) servers(b *testing.B, n int, t drivers.Topology) {
	if e.n != n {
		e.closeDriver()
		e.stopServers()
		e.n = n
	}
	shape := shapeFor(n)
	t0 := time.Now()
	switch {
	case t == drivers.Standalone && e.standalone == nil:
		ss := make([]*redistest.Server, n)
		e.parallel(b, n, func(tb testing.TB, i int) { ss[i] = redistest.Start(tb, redistest.Options{}) })
		for _, s := range ss {
			e.standalone = append(e.standalone, s.Addr)
		}
	case t == drivers.SentinelGroup && e.sentinels == nil:
		gs := make([]*redistest.SentinelGroup, n)
		e.parallel(b, n, func(tb testing.TB, i int) {
			gs[i] = redistest.StartSentinelGroup(tb, redistest.SentinelOptions{
				MasterName: "m" + strconv.Itoa(i), Replicas: shape.sentinelReplicas, Sentinels: shape.sentinels,
				// No failover is wanted: a loaded machine must not make one.
				DownAfter: 30 * time.Second, FailoverTimeout: 60 * time.Second,
			})
		})
		e.sentinels = gs
	case t == drivers.ClusterGroup && e.clusters == nil:
		cs := make([]*redistest.Cluster, n)
		e.parallel(b, n, func(tb testing.TB, i int) {
			cs[i] = redistest.StartCluster(tb, redistest.ClusterOptions{
				Masters: shape.clusterMasters, Replicas: shape.clusterReps, NodeTimeout: 15 * time.Second,
			})
		})
		e.clusters = cs
	default:
		return
	}
	b.Logf("started the servers of %d %s members in %v", n, map[drivers.Topology]string{drivers.Standalone: "standalone", drivers.SentinelGroup: "Sentinel", drivers.ClusterGroup: "Cluster"}[t], time.Since(t0).Round(time.Millisecond))
}

// members returns the cell's members and the data servers whose WAIT
// count tells whether its acquisitions waited.
func (e *membersEnv) members(n int, k membersKind) ([]drivers.Member, []*redistest.Server) {
	shape := shapeFor(n)
	var ms []drivers.Member
	var data []*redistest.Server
	switch k.topology {
	case drivers.Standalone:
		ms = drivers.Members(e.standalone...)
	case drivers.SentinelGroup:
		for _, g := range e.sentinels {
			m := drivers.NewSentinel(g.Name, g.SentinelAddrs()...)
			if k.wait {
				m = m.WithWait(shape.sentinelReplicas, membersWait)
			}
			ms = append(ms, m)
			data = append(data, g.Servers...)
		}
	case drivers.ClusterGroup:
		for _, c := range e.clusters {
			m := drivers.NewCluster(c.Addrs()...)
			if k.wait {
				m = m.WithWait(shape.clusterReps, membersWait)
			}
			ms = append(ms, m)
			data = append(data, c.Servers...)
		}
	}
	return ms, data
}

// waitCalls sums the WAIT commands the servers have run.
func waitCalls(ss []*redistest.Server) (int64, error) {
	var sum int64
	for _, s := range ss {
		r, err := s.Do("INFO", "commandstats")
		if err != nil {
			return 0, err
		}
		info, _ := r.(string)
		if info == "" {
			if bs, ok := r.([]byte); ok {
				info = string(bs)
			}
		}
		_, after, ok := strings.Cut(info, "cmdstat_wait:calls=")
		if !ok {
			continue
		}
		v, _, _ := strings.Cut(after, ",")
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: cmdstat_wait %q: %w", s.Addr, v, err)
		}
		sum += n
	}
	return sum, nil
}

// checkExclusion: a held key cannot be taken by another TryLock, and can
// once released.
func checkExclusion(ctx context.Context, c *redlock.Client, key string) error {
	l, err := c.TryLock(ctx, key)
	if err != nil {
		return fmt.Errorf("first TryLock: %w", err)
	}
	if l2, err := c.TryLock(ctx, key); !errors.Is(err, core.ErrTaken) {
		if err == nil {
			_ = l2.Unlock(ctx) // the failure below is the news
			err = errors.New("it was granted")
		}
		return errors.Join(fmt.Errorf("TryLock of a held key: %w, want ErrTaken", err), l.Unlock(ctx))
	}
	if err := l.Unlock(ctx); err != nil {
		return fmt.Errorf("Unlock: %w", err)
	}
	l, err = c.TryLock(ctx, key)
	if err != nil {
		return fmt.Errorf("TryLock after Unlock: %w", err)
	}
	return l.Unlock(ctx)
}

// subject returns the cell's subject, made once per cell: its servers
// started, the driver dialled, exclusion checked, warmed up.
func (e *membersEnv) subject(b *testing.B, n int, k membersKind, spec measure.Spec) *target.Redlock {
	if e.cell == b.Name() {
		return e.subj
	}
	e.closeDriver()
	e.servers(b, n, k.topology)
	ms, data := e.members(n, k)
	d, err := goredis.DialMembers(ms, goredis.Options{})
	if err != nil {
		b.Fatal(err)
	}
	c, err := redlock.NewClient(d, redlock.Options{TTL: ttl, NodeTimeout: membersNodeTimeout, FanOut: core.Multiplexed})
	if err != nil {
		_ = d.Close()
		b.Fatal(err)
	}
	e.cell, e.drv, e.subj = b.Name(), d, &target.Redlock{C: c}
	if k.wait {
		e.waits = func() (int64, error) { return waitCalls(data) }
	}
	if err := checkExclusion(context.Background(), c, spec.KeyPrefix+"exclusion"); err != nil {
		b.Fatalf("exclusion check: %v", err)
	}
	measure.Prepare(e.subj, spec).Warmup(context.Background(), warmup)
	return e.subj
}

// run measures b.N pairs of one client in the cell.
func (e *membersEnv) run(b *testing.B, n int, k membersKind) {
	spec := measure.Spec{Clients: 1, KeyPrefix: "bench:" + b.Name() + ":"}
	s := e.subject(b, n, k, spec)
	var waitsBefore int64
	if e.waits != nil {
		var err error
		if waitsBefore, err = e.waits(); err != nil {
			b.Fatal(err)
		}
	}
	spec.Ops = int64(b.N)
	loop := measure.Prepare(s, spec)
	b.ReportAllocs()
	b.ResetTimer()
	loop.Go(context.Background())
	b.StopTimer()
	r := loop.Result()
	if r.Errors > 0 || r.Acquired != r.Ops {
		b.Fatalf("%d of %d pairs acquired, %d failed, first error: %s", r.Acquired, r.Ops, r.Errors, r.FirstError)
	}
	b.ReportMetric(r.P50Us, "p50-µs")
	b.ReportMetric(r.P99Us, "p99-µs")
	if r.ClientCPUUsPerOp > 0 {
		b.ReportMetric(r.ClientCPUUsPerOp, "client-cpu-µs/op")
	}
	if e.waits != nil {
		after, err := e.waits()
		if err != nil {
			b.Fatal(err)
		}
		w := float64(after-waitsBefore) / float64(r.Ops)
		b.ReportMetric(w, "waits/op")
		if w < float64(n) {
			b.Fatalf("%.2f WAITs per pair on the masters, want at least %d (one per member's acquisition)", w, n)
		}
	}
	// A cell runs with growing b.N, each -count repeat from b.N = 1: the
	// last run of each repeat is kept. The rounds of -members.rounds are
	// kept under one name.
	membersMu.Lock()
	defer membersMu.Unlock()
	name := roundSuffix.ReplaceAllString(strings.TrimPrefix(b.Name(), "BenchmarkMembers/"), "")
	if i := slices.IndexFunc(membersSeen, func(c membersCell) bool { return c.name == name }); i < 0 {
		membersSeen = append(membersSeen, membersCell{name: name, nodes: n, label: k.label})
	}
	if rs := membersRows[name]; b.N > 1 && len(rs) > 0 {
		rs[len(rs)-1] = r
	} else {
		membersRows[name] = append(rs, r)
	}
}

// roundSuffix is the suffix testing gives the second and later
// sub-benchmarks of one name.
var roundSuffix = regexp.MustCompile(`#\d+$`)

// writeMembers writes the cells measured so far to dir/table.md and
// dir/members_latency.png: each cell's median p50 and p99 over its runs
// (rounds and -count repeats), and its ratio to the standalone cell of
// the same N as the median of the runs' ratios, each run against the
// standalone run of the same round (the ratio of the medians when the
// counts of runs differ).
func writeMembers(dir string) error {
	membersMu.Lock()
	defer membersMu.Unlock()
	if err := os.MkdirAll(dir, 0o755); err != nil { //nolint:gosec // G301: results meant to be read, as the other results directories
		return err
	}
	p50 := func(r measure.Result) float64 { return r.P50Us }
	p99 := func(r measure.Result) float64 { return r.P99Us }
	of := func(rs []measure.Result, f func(measure.Result) float64) []float64 {
		var vs []float64
		for _, r := range rs {
			vs = append(vs, f(r))
		}
		return vs
	}
	base := map[int][]measure.Result{}
	for _, c := range membersSeen {
		if c.label == "standalone" {
			base[c.nodes] = membersRows[c.name]
		}
	}
	ratio := func(rs, bs []measure.Result, f func(measure.Result) float64) string {
		if len(bs) == 0 {
			return "–"
		}
		if len(rs) != len(bs) {
			return fmt.Sprintf("%.2f×", measure.MedianOf(of(rs, f))/measure.MedianOf(of(bs, f)))
		}
		var q []float64
		for i := range rs {
			q = append(q, f(rs[i])/f(bs[i]))
		}
		return fmt.Sprintf("%.2f×", measure.MedianOf(q))
	}
	var sb strings.Builder
	sb.WriteString("| N | members | p50 µs | p99 µs | p50 / standalone | p99 / standalone | runs × pairs | p50 of each run µs | p99 of each run µs |\n")
	sb.WriteString("|---|---|---:|---:|---:|---:|---|---|---|\n")
	list := func(vs []float64) string {
		var out []string
		for _, v := range vs {
			out = append(out, fmt.Sprintf("%.0f", v))
		}
		return strings.Join(out, ", ")
	}
	var pts []plots.MembersPoint
	for _, c := range membersSeen {
		rs := membersRows[c.name]
		if len(rs) == 0 {
			continue
		}
		m50, m99 := measure.MedianOf(of(rs, p50)), measure.MedianOf(of(rs, p99))
		fmt.Fprintf(&sb, "| %d | %s | %.0f | %.0f | %s | %s | %d × %d | %s | %s |\n",
			c.nodes, c.label, m50, m99, ratio(rs, base[c.nodes], p50), ratio(rs, base[c.nodes], p99),
			len(rs), rs[len(rs)-1].Ops, list(of(rs, p50)), list(of(rs, p99)))
		pts = append(pts, plots.MembersPoint{Label: c.label, Nodes: c.nodes, P50Us: m50, P99Us: m99})
	}
	if err := os.WriteFile(filepath.Join(dir, "table.md"), []byte(sb.String()), 0o644); err != nil { //nolint:gosec // G306: a results table meant to be read
		return err
	}
	return plots.WriteMembers(filepath.Join(dir, "members_latency.png"), pts)
}
