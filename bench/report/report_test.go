package report

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/redlock-go/redlock/bench/matrix"
	"github.com/redlock-go/redlock/bench/measure"
	"github.com/redlock-go/redlock/bench/servers"
)

func rec(lib, drv, sc string, n int, fan string, c int, r measure.Result) matrix.Record {
	r.Ops = 100
	return matrix.Record{Cell: matrix.Cell{Library: lib, Driver: drv, Scenario: sc, Nodes: n, FanOut: fan, Clients: c}, Result: r}
}

func find(ts []Target, prefix string) *Target {
	for i := range ts {
		if strings.HasPrefix(ts[i].Name, prefix) {
			return &ts[i]
		}
	}
	return nil
}

func TestEvaluate(t *testing.T) {
	recs := []matrix.Record{
		rec("redlock", "mem", matrix.Loopback, 5, "multiplexed", 1, measure.Result{MeanUs: 0.8}),
		rec("redlock", "mem", matrix.Loopback, 5, "sequential", 1, measure.Result{MeanUs: 1.5}),
		rec("redlock", "redigo", matrix.Loopback, 5, "multiplexed", 1, measure.Result{P50Us: 100, AllocsPerOp: 20, RepeatP50Us: []float64{100, 98, 400}}),
		rec("redlock", "redigo", matrix.Loopback, 5, "sequential", 1, measure.Result{P50Us: 200}),
		rec("redsync", "redigo", matrix.Loopback, 5, matrix.FanConcurrent, 1, measure.Result{P50Us: 250, AllocsPerOp: 96, GoroutinesPerOp: 10, RepeatP50Us: []float64{250, 260, 240}}),
		rec("redlock", "redigo", matrix.Proxy, 5, "multiplexed", 1, measure.Result{P50Us: 4200}),
		rec("redlock", "redigo", matrix.Proxy, 5, "sequential", 1, measure.Result{P50Us: 20500}),
		rec("redlock", "redigo", matrix.Loopback, 5, "multiplexed", 32, measure.Result{Throughput: 20000, P50Us: 900, ClientCPUUsPerOp: 8, ServersCPUUsPerOp: 30,
			RepeatThroughput: []float64{20000, 12000, 21000}}),
		rec("redlock", "redigo", matrix.Proxy, 5, "multiplexed", 32, measure.Result{P50Us: 5000}),
		rec("redsync", "redigo", matrix.Loopback, 5, matrix.FanConcurrent, 32, measure.Result{Throughput: 6000, RepeatThroughput: []float64{5000, 6000, 6100}}),
		rec("redsync", "rueidis", matrix.Loopback, 5, matrix.FanConcurrent, 32, measure.Result{Throughput: 3000}),
		rec("rueidislock", "rueidis", matrix.Loopback, 5, matrix.FanKeys, 32, measure.Result{Throughput: 10000}),
	}
	env := Env{Pinned: true, ProxyDelayMs: 1, ProxyPingUs: 2100, LoopbackPingUs: 100,
		Pipelined: &servers.Pipelined{Depth: 100, Servers: 5, Pairs: 50000, ServersCPUUsPerOp: 25}}
	ts := Evaluate(recs, env, 5, 32)
	for _, c := range []struct {
		name  string
		pass  bool
		ratio float64
	}{
		{"core overhead, mem N=5 multiplexed", true, 0.8},
		{"core overhead, mem N=5 sequential", false, 1.5},
		{"redlock+redigo N=5 multiplexed vs redsync+redigo: p50", true, 0.4},
		{"redlock+redigo N=5 multiplexed vs redsync+redigo: allocs", true, 20.0 / 96},
		{"redlock+redigo N=5 multiplexed: goroutines per op", true, 0},
		// 2 measured round trips of 2000 µs + the loopback floor.
		{"redlock+redigo N=5 multiplexed, 1 client, behind a 1 ms/direction proxy", true, 4200.0 / 4100},
		{"redlock+redigo N=5 multiplexed, 32 clients, behind a 1 ms/direction proxy", true, 5000.0 / 4900},
		{"redlock+redigo N=5 sequential behind a 1 ms/direction proxy", true, 20500.0 / 20200},
		// Against the best redsync (over redigo), not rueidislock; both
		// ran in rounds: the median of the rounds' ratios (4, 2, 3.44).
		{"redlock+redigo N=5 multiplexed, 32 clients: throughput vs redsync", false, 21000.0 / 6100},
		{"redlock+redigo N=5 multiplexed, 32 clients: throughput vs rueidislock", true, 2},
		{"redlock+redigo N=5 multiplexed, 32 clients: servers' CPU per pair vs the pipelined limit", true, 30.0 / 25},
		{"redlock+redigo N=5 multiplexed, 32 clients: client CPU per pair vs the servers'", true, 8.0 / 30},
	} {
		tg := byName(ts, c.name)
		if tg == nil {
			t.Errorf("%s: missing", c.name)
			continue
		}
		if tg.Pass != c.pass || !tg.Measured || tg.Ratio < c.ratio-1e-9 || tg.Ratio > c.ratio+1e-9 {
			t.Errorf("%s: pass %v ratio %v, want %v %v (%s)", c.name, tg.Pass, tg.Ratio, c.pass, c.ratio, tg.Figures)
		}
	}
	if tg := byName(ts, "redlock+redigo N=5 multiplexed, 32 clients: throughput vs redsync"); !strings.Contains(tg.Figures, "redsync+redigo") {
		t.Errorf("best Redlock peer: %s", tg.Figures)
	}
	// The throughput row says every interleaved round of both sides, when
	// both had rounds; rueidislock's cell here had one.
	if tg := byName(ts, "redlock+redigo N=5 multiplexed, 32 clients: throughput vs redsync"); tg.Figures != "the median of the rounds' ratios; rounds 20000, 12000, 21000 vs 5000, 6000, 6100 ops/s (redsync+redigo); the median rounds 20000 vs 6000" {
		t.Errorf("throughput rounds: %s", tg.Figures)
	}
	// rueidislock's cell has no rounds here: the plain ratio, and says so.
	if tg := byName(ts, "redlock+redigo N=5 multiplexed, 32 clients: throughput vs rueidislock"); tg.Figures != "20000 vs 10000 ops/s (rueidislock+rueidis); rounds 20000, 12000, 21000 ops/s, the peer's measured once" {
		t.Errorf("throughput without the peer's rounds: %s", tg.Figures)
	}
	// The p50 row says every repeat of both sides.
	if tg := byName(ts, "redlock+redigo N=5 multiplexed vs redsync+redigo: p50"); !strings.Contains(tg.Figures, "repeats 100, 98, 400 µs vs 250, 260, 240 µs") {
		t.Errorf("p50 figures without the repeats: %s", tg.Figures)
	}
}

// TestEvaluateValkeygo: the valkey-go driver's cells get the rows every
// driver over a real client gets.
func TestEvaluateValkeygo(t *testing.T) {
	recs := []matrix.Record{
		rec("redlock", "valkeygo", matrix.Loopback, 5, "multiplexed", 1, measure.Result{P50Us: 100, AllocsPerOp: 2}),
		rec("redsync", "redigo", matrix.Loopback, 5, matrix.FanConcurrent, 1, measure.Result{P50Us: 250, AllocsPerOp: 96}),
		rec("redlock", "valkeygo", matrix.Loopback, 5, "multiplexed", 32, measure.Result{Throughput: 20000}),
		rec("redsync", "redigo", matrix.Loopback, 5, matrix.FanConcurrent, 32, measure.Result{Throughput: 2000}),
	}
	ts := Evaluate(recs, Env{}, 5, 32)
	for _, c := range []struct {
		name  string
		ratio float64
	}{
		{"redlock+valkeygo N=5 multiplexed vs redsync+redigo: p50", 0.4},
		{"redlock+valkeygo N=5 multiplexed vs redsync+redigo: allocs", 2.0 / 96},
		{"redlock+valkeygo N=5 multiplexed, 32 clients: throughput vs redsync", 10},
	} {
		tg := byName(ts, c.name)
		if tg == nil {
			t.Errorf("%s: missing", c.name)
			continue
		}
		if !tg.Pass || !tg.Measured || tg.Ratio < c.ratio-1e-9 || tg.Ratio > c.ratio+1e-9 {
			t.Errorf("%s: pass %v ratio %v, want true %v (%s)", c.name, tg.Pass, tg.Ratio, c.ratio, tg.Figures)
		}
	}
}

// byName returns the target named name, or nil.
func byName(ts []Target, name string) *Target {
	for i := range ts {
		if ts[i].Name == name {
			return &ts[i]
		}
	}
	return nil
}

// TestEvaluateFailures checks the new rows' failures on synthetic records:
// each bound is crossed, or its figure is missing.
func TestEvaluateFailures(t *testing.T) {
	recs := []matrix.Record{
		rec("redlock", "goredis", matrix.Loopback, 5, "multiplexed", 1, measure.Result{P50Us: 230, AllocsPerOp: 33}),
		rec("redsync", "redigo", matrix.Loopback, 5, matrix.FanConcurrent, 1, measure.Result{P50Us: 250}),
		rec("redlock", "goredis", matrix.Proxy, 5, "multiplexed", 1, measure.Result{P50Us: 4530}),
		rec("redlock", "goredis", matrix.Loopback, 5, "multiplexed", 32, measure.Result{Throughput: 50000, P50Us: 900, ClientCPUUsPerOp: 20, ServersCPUUsPerOp: 39}),
		rec("redlock", "goredis", matrix.Proxy, 5, "multiplexed", 32, measure.Result{P50Us: 5200}),
		rec("redsync", "rueidis", matrix.Loopback, 5, matrix.FanConcurrent, 32, measure.Result{Throughput: 9000}),
		rec("rueidislock", "rueidis", matrix.Loopback, 5, matrix.FanKeys, 32, measure.Result{Throughput: 25001}),
	}
	env := Env{ProxyDelayMs: 1, ProxyPingUs: 2100, LoopbackPingUs: 100,
		Pipelined: &servers.Pipelined{Depth: 100, Servers: 5, ServersCPUUsPerOp: 26}}
	ts := Evaluate(recs, env, 5, 32)
	for _, c := range []struct {
		name  string
		ratio float64
	}{
		{"redlock+goredis N=5 multiplexed: allocs per pair", 33.0 / 32},
		{"redlock+goredis N=5 multiplexed vs redsync+redigo: p50", 0.92},
		{"redlock+goredis N=5 multiplexed, 1 client, behind a 1 ms/direction proxy", 4530.0 / 4230},
		{"redlock+goredis N=5 multiplexed, 32 clients, behind a 1 ms/direction proxy", 5200.0 / 4900},
		{"redlock+goredis N=5 multiplexed, 32 clients: throughput vs redsync", 50000.0 / 9000},
		{"redlock+goredis N=5 multiplexed, 32 clients: throughput vs rueidislock", 50000.0 / 25001},
		{"redlock+goredis N=5 multiplexed, 32 clients: servers' CPU per pair vs the pipelined limit", 39.0 / 26},
		{"redlock+goredis N=5 multiplexed, 32 clients: client CPU per pair vs the servers'", 20.0 / 39},
	} {
		tg := byName(ts, c.name)
		if tg == nil {
			t.Errorf("%s: missing", c.name)
			continue
		}
		want := c.ratio <= 1.5 && strings.Contains(c.name, "pipelined") ||
			strings.Contains(c.name, "vs redsync") && c.ratio >= 5
		if tg.Pass != want || !tg.Measured || tg.Ratio < c.ratio-1e-9 || tg.Ratio > c.ratio+1e-9 {
			t.Errorf("%s: pass %v ratio %v, want %v %v (%s)", c.name, tg.Pass, tg.Ratio, want, c.ratio, tg.Figures)
		}
	}
	// The loop at the clients' depth, and the loops' own client CPU, are
	// said beside the verdicts, which they do not change.
	env.Pipelined.ClientCPUUsPerOp = 13
	env.PipelinedAtClients = &servers.Pipelined{Depth: 16, Servers: 5, ServersCPUUsPerOp: 32.5, ClientCPUUsPerOp: 26}
	ts = Evaluate(recs, env, 5, 32)
	if tg := byName(ts, "redlock+goredis N=5 multiplexed, 32 clients: servers' CPU per pair vs the pipelined limit"); tg == nil || tg.Ratio != 39.0/26 ||
		!strings.Contains(tg.Note, "pipelined 16 deep, the most 32 clients put in one read: 32.50 µs/pair (1.25× the 100-deep limit; this cell 1.2× it)") {
		t.Errorf("servers' CPU with the loop at the clients' depth: %+v", tg)
	}
	if tg := byName(ts, "redlock+goredis N=5 multiplexed, 32 clients: client CPU per pair vs the servers'"); tg == nil || tg.Ratio != 20.0/39 ||
		!strings.Contains(tg.Note, "the bare pipelined loop 16 deep: client 26.00 vs servers 32.50 µs/pair (0.8×); the bare pipelined loop 100 deep: client 13.00 vs servers 26.00 µs/pair (0.5×)") {
		t.Errorf("client CPU with the loops' own: %+v", tg)
	}
	// The servers' reads, the cell's and the loops', beside the servers'
	// CPU: ten commands a pair at N=5.
	recs[3].ServersReadsPerOp = 0.5
	env.PipelinedAtClients.ServersReadsPerOp = 5.0 / 16
	env.Pipelined.ServersReadsPerOp = 0.1
	if tg := byName(Evaluate(recs, env, 5, 32), "redlock+goredis N=5 multiplexed, 32 clients: servers' CPU per pair vs the pipelined limit"); tg == nil || tg.Ratio != 39.0/26 ||
		!strings.HasSuffix(tg.Note, "the servers read their input 0.5 times per pair, 20 commands a read; the loop 16 deep 0.312 times (32 a read); the loop 100 deep 0.1 times (100 a read)") {
		t.Errorf("servers' CPU with their reads: %+v", tg)
	}
	recs[3].ServersReadsPerOp = 0
	env.NumCPU = 2
	if tg := byName(Evaluate(recs, env, 5, 32), "redlock+goredis N=5 multiplexed, 32 clients: throughput vs redsync"); tg == nil ||
		!strings.Contains(tg.Note, "CPU ceiling 34188 ops/s (2 CPUs over the bare pipelined loop 16 deep: 26.00 + 32.50 µs/pair), 3.8× the peer; this cell reaches 146% of it") {
		t.Errorf("throughput with its CPU ceiling: %+v", tg)
	}
	env.NumCPU = 0
	env.Pipelined.ClientCPUUsPerOp, env.PipelinedAtClients = 0, nil

	// At the bounds exactly: 32 allocs, 1.5× and 0.3× pass.
	recs[0].AllocsPerOp = 32
	recs[3].ServersCPUUsPerOp, recs[3].ClientCPUUsPerOp = 30, 9
	env.Pipelined.ServersCPUUsPerOp = 20
	ts = Evaluate(recs, env, 5, 32)
	for _, name := range []string{
		"redlock+goredis N=5 multiplexed: allocs per pair",
		"redlock+goredis N=5 multiplexed, 32 clients: servers' CPU per pair vs the pipelined limit",
		"redlock+goredis N=5 multiplexed, 32 clients: client CPU per pair vs the servers'",
	} {
		if tg := byName(ts, name); tg == nil || !tg.Pass {
			t.Errorf("%s at its bound: %+v", name, tg)
		}
	}
	recs[3].ServersCPUUsPerOp, recs[3].ClientCPUUsPerOp = 39, 19.5
	env.Pipelined.ServersCPUUsPerOp = 26

	// Without the servers' CPU or the pipelined limit: not measured, and
	// the reading error is said.
	recs[3].ServersCPUUsPerOp, recs[3].ServersCPUError = 0, "127.0.0.1:7000: section (cpu) is not supported"
	env.Pipelined = nil
	ts = Evaluate(recs, env, 5, 32)
	for _, name := range []string{
		"redlock+goredis N=5 multiplexed, 32 clients: servers' CPU per pair vs the pipelined limit",
		"redlock+goredis N=5 multiplexed, 32 clients: client CPU per pair vs the servers'",
	} {
		tg := byName(ts, name)
		if tg == nil || tg.Measured || tg.Pass || !strings.Contains(tg.Figures, "127.0.0.1:7000") {
			t.Errorf("%s without the servers' CPU: %+v", name, tg)
		}
	}
	recs[3].ServersCPUUsPerOp, recs[3].ServersCPUError = 39, ""
	if tg := byName(Evaluate(recs, env, 5, 32), "redlock+goredis N=5 multiplexed, 32 clients: servers' CPU per pair vs the pipelined limit"); tg == nil || tg.Measured ||
		!strings.Contains(tg.Figures, "pipelined limit") {
		t.Errorf("without the pipelined limit: %+v", tg)
	}

	// With the round of PINGs to every server measured, the note gives the
	// ratio against two such rounds plus the floor; the verdict keeps
	// the single round trip.
	env.ProxyRoundPingUs, env.LoopbackRoundPingUs = 2300, 200
	tg0 := byName(Evaluate(recs, env, 5, 32), "redlock+goredis N=5 multiplexed, 1 client, behind a 1 ms/direction proxy")
	if tg0 == nil || tg0.Ratio != 4530.0/4230 ||
		!strings.Contains(tg0.Note, "with the measured round of PINGs to all servers through the proxies (2100 µs): 1.02×") {
		t.Errorf("with the PING round measured: %+v", tg0)
	}
	env.ProxyRoundPingUs, env.LoopbackRoundPingUs = 0, 0

	// Without a measured proxy round trip, the nominal one, said so.
	env.ProxyPingUs, env.LoopbackPingUs = 0, 0
	tg := byName(Evaluate(recs, env, 5, 32), "redlock+goredis N=5 multiplexed, 1 client, behind a 1 ms/direction proxy")
	if tg == nil || !strings.Contains(tg.Note, "nominal") || tg.Ratio != 4530.0/4230 {
		t.Errorf("nominal proxy round trip: %+v", tg)
	}
}

// TestP50FromRounds: cells measured in interleaved rounds compare round
// by round, and the target is the median of the rounds' ratios, not the
// ratio of two medians taken in different rounds.
func TestP50FromRounds(t *testing.T) {
	// The medians' ratio (300/600 = 0.5) differs from every round-based
	// answer below.
	ours := measure.Result{P50Us: 300, RepeatP50Us: []float64{300, 310, 290}, RoundP50Us: []float64{300, 400, 200}}
	peer := measure.Result{P50Us: 600, RepeatP50Us: []float64{600, 610, 590}, RoundP50Us: []float64{500, 800, 250}}
	recs := []matrix.Record{
		rec("redlock", "redigo", matrix.Loopback, 5, "multiplexed", 1, ours),
		rec("redsync", "redigo", matrix.Loopback, 5, matrix.FanConcurrent, 1, peer),
	}
	tg := find(Evaluate(recs, Env{}, 5, 32), "redlock+redigo N=5 multiplexed vs redsync+redigo: p50")
	if tg == nil {
		t.Fatal("no p50 target")
	}
	// Rounds: 0.6, 0.5, 0.8; median 0.6.
	if tg.Ratio != 0.6 || !tg.Pass {
		t.Errorf("ratio = %v, pass %v; want the median round ratio 0.6", tg.Ratio, tg.Pass)
	}
	if !strings.Contains(tg.Figures, "rounds 300, 400, 200 vs 500, 800, 250 µs, each the median of 3 repeats") {
		t.Errorf("figures = %q", tg.Figures)
	}
	peer.RoundP50Us = []float64{500, 800, 200}
	recs[1] = rec("redsync", "redigo", matrix.Loopback, 5, matrix.FanConcurrent, 1, peer)
	tg = find(Evaluate(recs, Env{}, 5, 32), "redlock+redigo N=5 multiplexed vs redsync+redigo: p50")
	if tg.Ratio != 0.6 {
		t.Errorf("ratio = %v; want the median of 0.6, 0.5, 1.0", tg.Ratio)
	}
	peer.RoundP50Us = []float64{500, 800}
	recs[1] = rec("redsync", "redigo", matrix.Loopback, 5, matrix.FanConcurrent, 1, peer)
	tg = find(Evaluate(recs, Env{}, 5, 32), "redlock+redigo N=5 multiplexed vs redsync+redigo: p50")
	if tg.Ratio != 0.5 || !strings.Contains(tg.Figures, "repeats 300, 310, 290 µs") {
		t.Errorf("rounds that do not pair: want the medians' ratio 0.5, got %v (%q)", tg.Ratio, tg.Figures)
	}
	// A round of ours without pairs (p50 0) is no ratio of 0: the rounds
	// do not pair, and the medians' ratio counts.
	peer.RoundP50Us = []float64{500, 800, 250}
	recs[1] = rec("redsync", "redigo", matrix.Loopback, 5, matrix.FanConcurrent, 1, peer)
	ours.RoundP50Us = []float64{800, 0, 300}
	recs[0] = rec("redlock", "redigo", matrix.Loopback, 5, "multiplexed", 1, ours)
	tg = find(Evaluate(recs, Env{}, 5, 32), "redlock+redigo N=5 multiplexed vs redsync+redigo: p50")
	if tg.Ratio != 0.5 {
		t.Errorf("a failed round: want the medians' ratio 0.5, got %v (%q)", tg.Ratio, tg.Figures)
	}
}

func TestEvaluateMissingPeer(t *testing.T) {
	recs := []matrix.Record{rec("redlock", "redigo", matrix.Loopback, 5, "multiplexed", 1, measure.Result{P50Us: 100})}
	tg := find(Evaluate(recs, Env{}, 5, 32), "redlock+redigo N=5 multiplexed vs redsync+redigo: p50")
	if tg == nil || tg.Measured || tg.Pass {
		t.Fatalf("target without its peer = %+v", tg)
	}
}

func TestTablesRender(t *testing.T) {
	recs := []matrix.Record{
		rec("redlock", "redigo", matrix.Loopback, 5, "multiplexed", 1, measure.Result{P50Us: 100}),
		{Cell: matrix.Cell{Library: "rueidislock", Driver: "rueidis", Scenario: matrix.Loopback, Nodes: 1, Clients: 1}, Note: "line one\nline two"},
	}
	var b bytes.Buffer
	if err := Table(&b, recs); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "line two") || !strings.Contains(b.String(), "redlock+redigo") {
		t.Errorf("table:\n%s", b.String())
	}
	b.Reset()
	if err := Markdown(&b, Run{Env: Env{ProxyDelayMs: 1}, Records: recs, Targets: Evaluate(recs, Env{}, 5, 32)}, []string{"a.png"}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Targets", "## Scenario: loopback", "![a](a.png)"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("markdown lacks %q", want)
		}
	}
}

// fullRun returns the records of a default run (every driver and peer, N
// 1, 3 and 5, 1 and 32 clients, the proxy and the contended cells) with
// figures as wide as a run prints: 7-digit throughput, 6-digit maxima,
// 5-digit B/op; two cells with the same long error, one with another, and
// a peer cell that was not measured.
func fullRun() []matrix.Record {
	plan := matrix.Plan{
		Drivers:     []string{"mem", "redigo", "rueidis", "radix", "goredis", "valkeygo"},
		NodeCounts:  []int{1, 3, 5},
		FanOuts:     []string{"sequential", "multiplexed"},
		Concurrency: []int{1, 32},
		Proxy:       true,
		Contended:   true,
		Peers:       matrix.AllPeers,
		Variants:    []string{"plain", "fenced", "handle", "lease"},
	}
	quorum := `redlock: quorum unreachable: acquire "bench:dn2les6w0mdh:lib=redlock:driver=mem:scenario=loopback:nodes=5:fanout=multiplexed:clients=32:16"; ` +
		"timeout on node 0 (mem:0): node 0 (mem:0): memnode: deadline exceeded, node 3 (mem:3): node 3 (mem:3): memnode: deadline exceeded; not consulted on node 1 (mem:1), node 2 (mem:2)"
	var recs []matrix.Record
	for i, c := range plan.Cells() {
		r := matrix.Record{Cell: c, Result: measure.Result{
			Ops: 1234567, Acquired: 1234567, Throughput: 1542848,
			P50Us: 1664, P90Us: 15557, P99Us: 26558, P999Us: 48595, MaxUs: 242090,
			AllocsPerOp: 103.2, BytesPerOp: 76380, GoroutinesPerOp: 10,
		}}
		switch {
		case c.Variant != "":
			r.RoundsPerOp = 2
			if c.Variant == "fenced" {
				r.RoundsPerOp = 3
			}
		case c.SharedKey:
			r.Acquired = r.Ops / 25
		case c.Library == matrix.Redislock && c.Clients == 32:
			r.Result = measure.Result{}
			r.Note = "not measured: peer command failed: exit status 1\nbuild output"
		case i == 3:
			r.Errors, r.FirstError = int64(i), quorum
		case i == 11:
			// The same error, its key quoted the way the core cuts a long one.
			r.Errors, r.FirstError = int64(i), strings.Replace(quorum, `clients=32:16"`, `"... (99 bytes)`, 1)
		case i == 15:
			r.Errors, r.FirstError = 12345, "dial tcp 127.0.0.1:6379: connect: connection refused\nsecond line"
		}
		recs = append(recs, r)
	}
	return recs
}

func TestTableFitsTheWidth(t *testing.T) {
	recs := fullRun()
	var b bytes.Buffer
	if err := Table(&b, recs); err != nil {
		t.Fatal(err)
	}
	if err := Targets(&b, Evaluate(recs, Env{ProxyDelayMs: 1, ProxyPingUs: 2216, LoopbackPingUs: 10}, 5, 32)); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	if len(lines) < len(recs) {
		t.Fatalf("%d lines for %d records:\n%s", len(lines), len(recs), b.String())
	}
	for _, l := range lines {
		if n := utf8.RuneCountInString(l); n > TableWidth {
			t.Errorf("%d columns, over %d: %s", n, TableWidth, l)
		}
	}
	for _, want := range []string{"redlock+goredis", "redlock+valkeygo", "sequential-keys", "32*", "1542848", "242090", "76380", "not measured: peer command failed"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
}

func TestErrorSummary(t *testing.T) {
	recs := fullRun()
	var b bytes.Buffer
	if err := Table(&b, recs); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	table, summary, ok := strings.Cut(out, "\nerrors in 3 cells")
	if !ok {
		t.Fatalf("no summary of 3 cells with errors:\n%s", out)
	}
	if strings.Contains(table, "quorum") || strings.Contains(table, "refused") {
		t.Error("error text in the table")
	}
	header := strings.Fields(strings.Split(table, "\n")[1])
	if header[len(header)-1] != "errors" {
		t.Errorf("header %q: no errors column", header)
	}
	for _, want := range []string{
		fmt.Sprintf("redlock+mem loopback N=1 multiplexed, 32 clients: 3 of %d pairs failed", recs[3].Ops),
		"redlock+redigo loopback N=1 multiplexed, 1 client: 12345 of",
		`redlock: quorum unreachable: acquire "<key>"; timeout on node 0`,
		"dial tcp 127.0.0.1:6379: connect: connection refused",
	} {
		if !strings.Contains(summary, want) {
			t.Errorf("summary lacks %q:\n%s", want, summary)
		}
	}
	// The two cells with the same error share one line of its text; a
	// text's second line and the cells' lock keys are left out.
	if n := strings.Count(summary, "quorum unreachable"); n != 1 {
		t.Errorf("the shared error text is written %d times:\n%s", n, summary)
	}
	if strings.Contains(summary, "second line") || strings.Contains(summary, "bench:") {
		t.Errorf("summary:\n%s", summary)
	}

	// Without errors: neither the column nor the summary.
	var clean []matrix.Record
	for _, r := range recs {
		if r.Errors == 0 {
			clean = append(clean, r)
		}
	}
	b.Reset()
	if err := Table(&b, clean); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "errors") {
		t.Errorf("errors shown for a run without any:\n%s", b.String())
	}
}

// TestTargetsNotes checks that a note on the run is written once, as a
// numbered footnote, and a target's own note under it even when another
// target has the same one.
func TestTargetsNotes(t *testing.T) {
	recs := fullRun()
	ts := Evaluate(recs, Env{ProxyDelayMs: 1, ProxyPingUs: 2216, LoopbackPingUs: 10, Servers: "miniredis (in-process)"}, 5, 32)
	var b bytes.Buffer
	if err := Targets(&b, ts); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, n := range []string{noteUnpinned, noteMini} {
		if c := strings.Count(out, n); c != 1 {
			t.Errorf("%q written %d times:\n%s", n, c, out)
		}
	}
	if !strings.Contains(out, "\n[1] "+noteUnpinned) || !strings.Contains(out, "\n[2] "+noteMini) || !strings.Contains(out, "[1][2]") {
		t.Errorf("no footnotes:\n%s", out)
	}
	// Every proxy target has the same figures, so the same own note: one
	// sequential target per driver over a real client, five in fullRun.
	own := 0
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "with the measured proxy round trip") {
			own++
		}
	}
	if own != 5 {
		t.Errorf("%d sequential proxy targets with their own note, want 5:\n%s", own, out)
	}
}

// variantRecs returns a fencing and lease table: plain and fenced for mem
// and redigo in one fan-out each, and a handle row.
func variantRecs(fencedRounds float64, fencedAllocs float64) []matrix.Record {
	v := func(drv, fan, variant string, r measure.Result) matrix.Record {
		r.Ops = 1000
		return matrix.Record{Cell: matrix.Cell{Library: "redlock", Driver: drv, Scenario: matrix.Variants, Nodes: 5, FanOut: fan, Clients: 1, Variant: variant}, Result: r}
	}
	return []matrix.Record{
		v("mem", "multiplexed", "plain", measure.Result{P50Us: 2, MeanUs: 2.1, RoundsPerOp: 2}),
		v("mem", "multiplexed", "fenced", measure.Result{P50Us: 3, MeanUs: 3.1, RoundsPerOp: 3, AllocsPerOp: fencedAllocs}),
		v("redigo", "sequential", "plain", measure.Result{P50Us: 400, RoundsPerOp: 2}),
		v("redigo", "sequential", "fenced", measure.Result{P50Us: 600, RoundsPerOp: fencedRounds}),
		v("redigo", "sequential", "handle", measure.Result{P50Us: 420, RoundsPerOp: 2, AllocsPerOp: 9, GoroutinesPerOp: 1}),
	}
}

func TestVariantTargets(t *testing.T) {
	ts := Evaluate(variantRecs(3, 0), Env{}, 5, 32)
	for _, c := range []struct {
		prefix string
		pass   bool
	}{
		{"fencing adds exactly one round: redlock+mem N=5", true},
		{"fencing adds exactly one round: redlock+redigo N=5", true},
		{"core acquire+release, plain and fenced: redlock+mem N=5", true},
	} {
		tg := find(ts, c.prefix)
		if tg == nil || tg.Pass != c.pass || !tg.Measured {
			t.Errorf("%s: %+v", c.prefix, tg)
		}
	}
	if tg := find(ts, "fencing adds exactly one round: redlock+redigo"); tg.Figures != "sequential 2 → 3" || tg.Ratio != 1 {
		t.Errorf("figures %q ratio %v", tg.Figures, tg.Ratio)
	}
	// Only the table ran: no core-overhead target without its cells, and
	// nothing for the drivers the table lacks.
	if find(ts, "core overhead") != nil || find(ts, "fencing adds exactly one round: redlock+radix") != nil {
		t.Errorf("targets of cells not in the run: %+v", ts)
	}

	ts = Evaluate(variantRecs(4, 1.5), Env{}, 5, 32)
	if tg := find(ts, "fencing adds exactly one round: redlock+redigo"); tg.Pass {
		t.Errorf("two more rounds passed: %+v", tg)
	}
	if tg := find(ts, "core acquire+release"); tg.Pass || !strings.Contains(tg.Figures, "multiplexed: plain 0.00, fenced 1.50") {
		t.Errorf("1.5 allocs/op passed: %+v", tg)
	}
	// Fenced without its plain row is a failure, not a pass.
	ts = Evaluate(variantRecs(3, 0)[1:], Env{}, 5, 32)
	if tg := find(ts, "fencing adds exactly one round: redlock+mem"); tg == nil || tg.Pass {
		t.Errorf("fenced without plain: %+v", tg)
	}
}

func TestVariantTablesRender(t *testing.T) {
	recs := variantRecs(3, 0)
	var b bytes.Buffer
	if err := Table(&b, recs); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.HasPrefix(out, "fencing and lease: acquire+release at N=5") || strings.Contains(out, "loopback:") {
		t.Errorf("table:\n%s", out)
	}
	for _, want := range []string{"rounds/op", "p50/plain", "1.50×", "1.05×", "3.00"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	b.Reset()
	if err := Markdown(&b, Run{Env: Env{TTLMs: 10000}, Records: recs, Targets: Evaluate(recs, Env{}, 5, 32)}, nil); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{
		"## Scenario: fencing and lease",
		"**fenced** is that pair with `Options.Fencing`",
		"about 3.33 s after the acquisition",
		"| redlock+redigo | handle | 5 | sequential | 0 | 420 |",
		"| 1.05× | 9.0 | 0 | 1.00 | 2.00 | 0 |",
		"| PASS | fencing adds exactly one round: redlock+mem N=5 |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "## Scenario: loopback") {
		t.Error("a loopback section without loopback cells")
	}
}

func TestMarkdownSaysTheFloors(t *testing.T) {
	env := Env{ProxyDelayMs: 1, ProxyPingUs: 2250, LoopbackPingUs: 30, ProxyRoundPingUs: 2700, LoopbackRoundPingUs: 120,
		Pipelined:          &servers.Pipelined{Depth: 100, Servers: 5, Pairs: 50000, Seconds: 1, ServersCPUUsPerOp: 22, ClientCPUUsPerOp: 14},
		PipelinedAtClients: &servers.Pipelined{Depth: 16, Servers: 5, Pairs: 15000, Seconds: 1, ServersCPUUsPerOp: 34, ClientCPUUsPerOp: 24, Rounds: []float64{40, 34, 35.5}}}
	var b strings.Builder
	if err := Markdown(&b, Run{Env: env}, nil); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"a PING to every server at once, answered by all: 2700 µs through the proxies, 120 µs direct",
		"- a PING to every server of the targets' N at once, answered by all: 120 µs (the median of 200 rounds), the floor of a multiplexed round\n",
		"  - the loop's own client CPU: 14.00 µs per pair (getrusage)",
		"- the same loop 16 pairs per batch (the most the targets' clients put in one read): 34.00 µs of the servers' CPU per pair, 24.00 µs of the client's; the lowest of rounds 40.0, 34.0, 35.5 µs, one after each round of the throughput cells\n",
		"in 1 s\n", // the limit measured once says no rounds
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, b.String())
		}
	}
	// A client CPU that was not measured is not printed as a zero.
	env.PipelinedAtClients.ClientCPUUsPerOp = 0
	env.PipelinedAtClients.Rounds = nil
	b.Reset()
	if err := Markdown(&b, Run{Env: env}, nil); err != nil {
		t.Fatal(err)
	}
	if want := "34.00 µs of the servers' CPU per pair\n"; !strings.Contains(b.String(), want) || strings.Contains(b.String(), "0.00 µs of the client's") {
		t.Errorf("unmeasured client CPU: %s", b.String())
	}
}

func TestRoundRatios(t *testing.T) {
	r := matrix.Record{Result: measure.Result{RepeatThroughput: []float64{100, 300, 200, 90}}}
	p := matrix.Record{Result: measure.Result{RepeatThroughput: []float64{10, 100, 20, 30}}}
	got := roundRatios(r, p)
	if !slices.Equal(got, []float64{10, 3, 10, 3}) {
		t.Errorf("ratios = %v", got)
	}
	if roundRatios(r, matrix.Record{Result: measure.Result{RepeatThroughput: []float64{1, 2}}}) != nil {
		t.Error("rounds of different counts paired")
	}
	if roundRatios(r, matrix.Record{Result: measure.Result{RepeatThroughput: []float64{1, 0, 1, 1}}}) != nil {
		t.Error("a peer's round without pairs divided by")
	}
}

// The core overhead rows say what their floor (target.MemFloor) costs
// beside them, and whether the floor alone misses the goal.
func TestCoreOverheadNamesItsFloor(t *testing.T) {
	mux := rec("redlock", "mem", matrix.Loopback, 5, "multiplexed", 1, measure.Result{MeanUs: 1.6})
	mux.FloorMeanUs = 1.1
	seq := rec("redlock", "mem", matrix.Loopback, 5, "sequential", 1, measure.Result{MeanUs: 0.9})
	seq.FloorMeanUs = 0.6
	ts := Evaluate([]matrix.Record{mux, seq}, Env{Pinned: true}, 5, 32)
	m, s := byName(ts, "core overhead, mem N=5 multiplexed"), byName(ts, "core overhead, mem N=5 sequential")
	if m == nil || s == nil {
		t.Fatalf("rows missing: %+v", ts)
	}
	if m.Pass || !strings.Contains(m.Note, "memnode's acquire to a quorum of 5 and release") ||
		!strings.Contains(m.Note, "mean 1.10 µs; this cell 1.45× it, 0.50 µs above it; the floor alone is above the goal") {
		t.Errorf("multiplexed: pass %v, note %q", m.Pass, m.Note)
	}
	if !s.Pass || !strings.Contains(s.Note, "mean 0.60 µs; this cell 1.50× it, 0.30 µs above it") || strings.Contains(s.Note, "above the goal") {
		t.Errorf("sequential: pass %v, note %q", s.Pass, s.Note)
	}
	mux.FloorMeanUs = 0
	if m := byName(Evaluate([]matrix.Record{mux}, Env{Pinned: true}, 5, 32), "core overhead, mem N=5 multiplexed"); m == nil || strings.Contains(m.Note, "floor") {
		t.Errorf("no floor measured, yet the row names one: %+v", m)
	}
}

// TestP50AgainstRedsyncBound: the one-client p50 passes at 0.9×
// redsync+redigo's, and its note says whether the earlier goal, 0.75×,
// is met.
func TestP50AgainstRedsyncBound(t *testing.T) {
	for _, c := range []struct {
		p50    float64
		pass   bool
		before string
	}{
		{180, true, "the earlier goal, ≤ 0.75×, met"},     // 0.72×
		{225, true, "the earlier goal, ≤ 0.75×, not met"}, // 0.9× exactly
		{230, false, "the earlier goal, ≤ 0.75×, not met"},
	} {
		recs := []matrix.Record{
			rec("redlock", "rueidis", matrix.Loopback, 5, "multiplexed", 1, measure.Result{P50Us: c.p50}),
			rec("redsync", "redigo", matrix.Loopback, 5, matrix.FanConcurrent, 1, measure.Result{P50Us: 250}),
		}
		tg := byName(Evaluate(recs, Env{Pinned: true}, 5, 32), "redlock+rueidis N=5 multiplexed vs redsync+redigo: p50")
		if tg == nil || tg.Pass != c.pass || tg.Ratio != c.p50/250 || tg.Note != c.before || !strings.Contains(tg.Goal, "≤ 0.9×") {
			t.Errorf("p50 %v vs 250 µs: %+v, want pass %v, note %q", c.p50, tg, c.pass, c.before)
		}
	}
}

// TestP50AgainstPingRounds: the one-client p50 against two rounds of a
// PING to every server, measured in the run: 1.1× passes, above fails;
// without the PING round the row is not measured.
func TestP50AgainstPingRounds(t *testing.T) {
	const name = "redlock+radix N=5 multiplexed, 1 client: p50 vs two all-server PING rounds"
	for _, c := range []struct {
		p50  float64
		pass bool
	}{{180, true}, {198, true}, {206, false}} {
		recs := []matrix.Record{rec("redlock", "radix", matrix.Loopback, 5, "multiplexed", 1, measure.Result{P50Us: c.p50})}
		tg := byName(Evaluate(recs, Env{Pinned: true, LoopbackRoundPingUs: 90}, 5, 32), name)
		if tg == nil || !tg.Measured || tg.Pass != c.pass || tg.Ratio != c.p50/180 {
			t.Errorf("p50 %v µs vs 2×90 µs: %+v, want pass %v", c.p50, tg, c.pass)
		}
	}
	// Rounds of repeats: the median round's p50, every round said.
	r := rec("redlock", "radix", matrix.Loopback, 5, "multiplexed", 1, measure.Result{P50Us: 200,
		RepeatP50Us: []float64{190, 200, 210}, RoundP50Us: []float64{200, 240, 195}})
	tg := byName(Evaluate([]matrix.Record{r}, Env{LoopbackRoundPingUs: 86}, 5, 32), name)
	if tg == nil || tg.Ratio != 200.0/172 || tg.Pass ||
		tg.Figures != "200 µs vs 2×86 µs = 172 µs; the median of rounds 200, 240, 195 µs, each the median of 3 repeats" ||
		!strings.HasPrefix(tg.Note, "28 µs above the floor; unpinned run") {
		t.Errorf("rounds: %+v", tg)
	}
	if tg := byName(Evaluate([]matrix.Record{r}, Env{}, 5, 32), name); tg == nil || tg.Measured || tg.Pass {
		t.Errorf("without the PING round: %+v", tg)
	}
	// The cell's CPU per pair, the limit above the floor, in the note.
	r.ClientCPUUsPerOp, r.ServersCPUUsPerOp = 86, 180
	if tg := byName(Evaluate([]matrix.Record{r}, Env{Pinned: true, LoopbackRoundPingUs: 86}, 5, 32), name); tg == nil ||
		tg.Note != "28 µs above the floor; this cell's CPU per pair: client 86 µs (0.5× the floor), servers 180 µs" {
		t.Errorf("with the cell's CPU: %+v", tg)
	}
}

// TestCeilingShare: pairs/s at the high concurrency as a share of the
// CPU ceiling (the CPUs over the loop's client + servers' CPU per pair):
// 80% passes; pinned, one CPU; servers elsewhere, no ceiling.
func TestCeilingShare(t *testing.T) {
	const name = "redlock+goredis N=5 multiplexed, 32 clients: pairs/s as a share of the CPU ceiling"
	recs := []matrix.Record{rec("redlock", "goredis", matrix.Loopback, 5, "multiplexed", 32, measure.Result{Throughput: 16000,
		ClientCPUUsPerOp: 40, ServersCPUUsPerOp: 60, RepeatThroughput: []float64{16000, 15000, 17000}})}
	// 2 CPUs over 10 + 90 µs a pair: 20000 pairs/s.
	env := Env{NumCPU: 2, PipelinedAtClients: &servers.Pipelined{Depth: 16, Servers: 5, ClientCPUUsPerOp: 10, ServersCPUUsPerOp: 90}}
	tg := byName(Evaluate(recs, env, 5, 32), name)
	if tg == nil || !tg.Measured || !tg.Pass || tg.Ratio != 0.8 ||
		tg.Figures != "16000 of 20000 pairs/s (2 CPUs over the bare pipelined loop 16 deep: 10.00 + 90.00 µs/pair); the median of rounds 16000, 15000, 17000 pairs/s" ||
		tg.Note != "this cell's CPU per pair: client 40.00 + servers 60.00 µs, 1× the loop's" {
		t.Errorf("at 80%%: %+v", tg)
	}
	recs[0].Throughput = 15000
	if tg := byName(Evaluate(recs, env, 5, 32), name); tg == nil || tg.Pass || tg.Ratio != 0.75 {
		t.Errorf("at 75%%: %+v", tg)
	}
	env.Pinned = true // 10000 pairs/s on one CPU
	if tg := byName(Evaluate(recs, env, 5, 32), name); tg == nil || !tg.Pass || tg.Ratio != 1.5 || !strings.Contains(tg.Figures, "(1 CPU over") {
		t.Errorf("pinned: %+v", tg)
	}
	env.ServerAddrs = []string{"10.0.0.1:6379"}
	if tg := byName(Evaluate(recs, env, 5, 32), name); tg == nil || tg.Measured || !strings.Contains(tg.Figures, "the servers run elsewhere") {
		t.Errorf("external servers: %+v", tg)
	}
	if tg := byName(Evaluate(recs, Env{NumCPU: 2}, 5, 32), name); tg == nil || tg.Measured || !strings.Contains(tg.Figures, "the pipelined loop at the clients' depth") {
		t.Errorf("without the loop: %+v", tg)
	}
}

// TestUncontendedAllocations: one row for core (mem), redigo and radix,
// at most the handle's allocation each; a driver missing from the run
// leaves it not measured.
func TestUncontendedAllocations(t *testing.T) {
	const name = "uncontended pair allocations, N=5 multiplexed, 1 client: core / redigo / radix"
	cells := func(mem, redigo, radix float64) []matrix.Record {
		return []matrix.Record{
			rec("redlock", "mem", matrix.Loopback, 5, "multiplexed", 1, measure.Result{AllocsPerOp: mem}),
			rec("redlock", "redigo", matrix.Loopback, 5, "multiplexed", 1, measure.Result{AllocsPerOp: redigo}),
			rec("redlock", "radix", matrix.Loopback, 5, "multiplexed", 1, measure.Result{AllocsPerOp: radix}),
		}
	}
	tg := byName(Evaluate(cells(0, 0.001, 0), Env{}, 5, 32), name)
	if tg == nil || !tg.Measured || !tg.Pass || tg.Ratio != 0.001 || tg.Figures != "0.00 / 0.00 / 0.00 allocs/op" {
		t.Errorf("none: %+v", tg)
	}
	if tg := byName(Evaluate(cells(0, 1, 0), Env{}, 5, 32), name); tg == nil || !tg.Pass {
		t.Errorf("the handle's one: %+v", tg)
	}
	if tg := byName(Evaluate(cells(0, 0, 2), Env{}, 5, 32), name); tg == nil || tg.Pass || tg.Ratio != 2 {
		t.Errorf("radix at 2: %+v", tg)
	}
	if tg := byName(Evaluate(cells(0, 0, 0)[:2], Env{}, 5, 32), name); tg == nil || tg.Measured || tg.Figures != "0.00 / 0.00 / not measured allocs/op" {
		t.Errorf("without radix: %+v", tg)
	}
	if tg := byName(Evaluate([]matrix.Record{rec("redlock", "rueidis", matrix.Loopback, 5, "multiplexed", 1, measure.Result{})}, Env{}, 5, 32), name); tg != nil {
		t.Errorf("a run without any of the three: %+v", tg)
	}
}

// TestP50GoalSaysWhatWasDone: the p50-vs-redsync goal says whether the
// run was pinned and how its ratio was taken: the median of the
// interleaved rounds' ratios only when the rounds paired, else the
// ratio of the repeats' medians, or of one p50 each.
func TestP50GoalSaysWhatWasDone(t *testing.T) {
	const name = "redlock+redigo N=5 multiplexed vs redsync+redigo: p50"
	ours := measure.Result{P50Us: 300, RepeatP50Us: []float64{300, 310, 290}, RoundP50Us: []float64{300, 400, 200}}
	peer := measure.Result{P50Us: 600, RepeatP50Us: []float64{600, 610, 590}, RoundP50Us: []float64{500, 800, 250}}
	goal := func(ours, peer measure.Result, env Env) string {
		t.Helper()
		tg := find(Evaluate([]matrix.Record{
			rec("redlock", "redigo", matrix.Loopback, 5, "multiplexed", 1, ours),
			rec("redsync", "redigo", matrix.Loopback, 5, matrix.FanConcurrent, 1, peer),
		}, env, 5, 32), name)
		if tg == nil {
			t.Fatal("no p50 target")
		}
		return tg.Goal
	}
	for _, tc := range []struct {
		what       string
		ours, peer measure.Result
		env        Env
		want       string
	}{
		{"pinned rounds", ours, peer, Env{Pinned: true}, "p50 ≤ 0.9× redsync+redigo, pinned; the median of the interleaved rounds' ratios"},
		{"unpinned rounds", ours, peer, Env{}, "p50 ≤ 0.9× redsync+redigo, unpinned; the median of the interleaved rounds' ratios"},
		{"repeats only", measure.Result{P50Us: 300, RepeatP50Us: ours.RepeatP50Us}, measure.Result{P50Us: 600, RepeatP50Us: peer.RepeatP50Us}, Env{Pinned: true},
			"p50 ≤ 0.9× redsync+redigo, pinned; the ratio of the repeats' medians (no interleaved rounds to pair)"},
		{"one each", measure.Result{P50Us: 300}, measure.Result{P50Us: 600}, Env{}, "p50 ≤ 0.9× redsync+redigo, unpinned; the ratio of one p50 each"},
	} {
		if got := goal(tc.ours, tc.peer, tc.env); got != tc.want {
			t.Errorf("%s: goal %q, want %q", tc.what, got, tc.want)
		}
	}
}
