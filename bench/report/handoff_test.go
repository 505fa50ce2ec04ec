package report

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/redlock-go/redlock/bench/matrix"
	"github.com/redlock-go/redlock/bench/measure"
)

// hotRecs are hot-key records at 2, 8 and 32 contenders: this library
// woken (p50 wakeUs, sections/s wakeCS) and polling, and the three peers.
func hotRecs(wakeUs, wakeCS float64) []matrix.Record {
	var recs []matrix.Record
	for _, s := range []struct {
		lib, drv, fan, variant string
		p50, cs                float64
	}{
		{"redlock", "redigo", "multiplexed", matrix.Wake, wakeUs, wakeCS},
		{"redlock", "redigo", "multiplexed", matrix.Poll, 150000, 7},
		{"redsync", "redigo", matrix.FanConcurrent, "", 140000, 8},
		{"redsync", "rueidis", matrix.FanConcurrent, "", 145000, 7},
		{"rueidislock", "rueidis", matrix.FanKeys, "", 350, 1500},
	} {
		for _, c := range []int{2, 8, 32} {
			recs = append(recs, matrix.Record{
				Cell:    matrix.Cell{Library: s.lib, Driver: s.drv, Scenario: matrix.Handoff, Nodes: 5, FanOut: s.fan, Clients: c, SharedKey: true, Variant: s.variant},
				Result:  measure.Result{Ops: 1000, Acquired: 1000, Seconds: 1.5, Throughput: s.cs},
				Handoff: &measure.Handoff{Handoffs: 999, Early: 3, P50Us: s.p50, P90Us: 2 * s.p50, P99Us: 3 * s.p50, MaxUs: 4 * s.p50, FromCallP50Us: s.p50 + 100, FromCallP99Us: 3*s.p50 + 100, Entered: 1010, Counter: 1010},
			})
		}
	}
	return recs
}

// pingEnv is a run whose round of PINGs to every server took 450 µs: a
// handoff bound of 550 µs from the release call.
var pingEnv = Env{LoopbackRoundPingUs: 450}

func TestHandoffTargets(t *testing.T) {
	ts := Evaluate(hotRecs(400, 2000), pingEnv, 5, 32)
	for _, c := range []struct {
		prefix string
		pass   bool
		ratio  float64
	}{
		// From the call: 400 + 100 µs against 450 + 100 µs.
		{"hot key: redlock+redigo wake handoff p50 from the release call, N=5", true, 500.0 / 550},
		{"hot key: redlock+redigo wake vs redsync+redigo: critical sections/s", true, 2000.0 / 8},
		{"hot key: redlock+redigo wake vs redsync+rueidis: critical sections/s", true, 2000.0 / 7},
		{"hot key: redlock+redigo wake vs rueidislock+rueidis: critical sections/s", true, 2000.0 / 1500},
		{"hot key: mutual exclusion in every cell", true, 0},
	} {
		tg := find(ts, c.prefix)
		if tg == nil {
			t.Errorf("%s: missing", c.prefix)
			continue
		}
		if tg.Pass != c.pass || !tg.Measured || tg.Ratio < c.ratio-1e-9 || tg.Ratio > c.ratio+1e-9 {
			t.Errorf("%s: pass %v ratio %v, want %v %v (%s)", c.prefix, tg.Pass, tg.Ratio, c.pass, c.ratio, tg.Figures)
		}
	}
	// A hot-key run alone has no core-overhead targets.
	if find(ts, "core overhead") != nil {
		t.Error("core overhead target in a hot-key run")
	}
	if tg := find(ts, "hot key: redlock+redigo wake handoff"); !strings.Contains(tg.Note, "poll's p50: 2: 150000 µs") ||
		!strings.Contains(tg.Note, "from the release's return: 2: 400 µs, 8: 400 µs, 32: 400 µs") ||
		tg.Figures != "contenders 2: 500 µs, 8: 500 µs, 32: 500 µs" || !strings.Contains(tg.Goal, "(450 µs, measured) + 100 µs = 550 µs") {
		t.Errorf("handoff row: %+v", tg)
	}

	// An early handoff (0 from the return) still counts from the call: a
	// p50 of 500 µs from the call fails a 450 µs bound.
	early := hotRecs(0, 2000)
	for i := range early {
		early[i].Handoff.FromCallP50Us = 500
	}
	if tg := find(Evaluate(early, Env{LoopbackRoundPingUs: 350}, 5, 32), "hot key: redlock+redigo wake handoff"); tg == nil || tg.Pass || tg.Ratio != 500.0/450 {
		t.Errorf("early handoffs, from the call: %+v", tg)
	}
	// Without the PING round, the row is not measured, and says so.
	if tg := find(Evaluate(hotRecs(400, 2000), Env{}, 5, 32), "hot key: redlock+redigo wake handoff"); tg == nil || tg.Measured ||
		!strings.Contains(tg.Figures, "not measured: the round of PINGs") {
		t.Errorf("without the PING round: %+v", tg)
	}

	// Slower than the bound, under 10× redsync, below rueidislock: failures.
	ts = Evaluate(hotRecs(1500, 60), pingEnv, 5, 32)
	for _, prefix := range []string{
		"hot key: redlock+redigo wake handoff p50",
		"hot key: redlock+redigo wake vs redsync+redigo",
		"hot key: redlock+redigo wake vs rueidislock+rueidis",
	} {
		if tg := find(ts, prefix); tg == nil || tg.Pass {
			t.Errorf("%s passed: %+v", prefix, tg)
		}
	}

	// Exactly rueidislock's critical sections per second meets the goal
	// (≥ 1×).
	if tg := find(Evaluate(hotRecs(400, 1500), Env{}, 5, 32), "hot key: redlock+redigo wake vs rueidislock+rueidis"); tg == nil || !tg.Pass || tg.Ratio != 1 {
		t.Errorf("at 1× rueidislock: %+v", tg)
	}

	// An overlap anywhere fails the exclusion target and is named.
	recs := hotRecs(400, 2000)
	recs[13].Handoff.Overlaps, recs[13].Handoff.Counter = 2, 1008
	tg := find(Evaluate(recs, Env{}, 5, 32), "hot key: mutual exclusion")
	if tg.Pass || !strings.Contains(tg.Figures, "rueidislock+rueidis invalidation, 8 contenders: 2 overlaps, 2 lost updates") {
		t.Errorf("overlap: %+v", tg)
	}

	// A wake row's note (its driver polls) reaches the table and the target.
	recs = hotRecs(400, 2000)
	recs[0].Note = "the driver does not announce releases: this wake row polls"
	var b bytes.Buffer
	if err := Table(&b, recs); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "redlock+redigo wake, 2 contenders: the driver does not announce releases: this wake row polls") {
		t.Errorf("table without the note:\n%s", b.String())
	}
	if tg := find(Evaluate(recs, pingEnv, 5, 32), "hot key: redlock+redigo wake handoff"); !strings.Contains(tg.Note, "this wake row polls") {
		t.Errorf("target note %q", tg.Note)
	}

	// Fair cells have rows of their own, after wake's; no poll note.
	recs = hotRecs(400, 2000)
	for _, c := range []int{2, 8, 32} {
		recs = append(recs, matrix.Record{
			Cell:    matrix.Cell{Library: "redlock", Driver: "redigo", Scenario: matrix.Handoff, Nodes: 5, FanOut: "multiplexed", Clients: c, SharedKey: true, Variant: matrix.Fair},
			Result:  measure.Result{Ops: 1000, Acquired: 1000, Seconds: 1.5, Throughput: 1000},
			Handoff: &measure.Handoff{Handoffs: 999, P50Us: 1200, FromCallP50Us: 1100, Entered: 1000, Counter: 1000},
		})
	}
	ts = Evaluate(recs, pingEnv, 5, 32)
	if tg := find(ts, "hot key: redlock+redigo fair handoff p50"); tg == nil || tg.Pass || tg.Ratio != 2 || strings.Contains(tg.Note, "poll") {
		t.Errorf("fair p50: %+v", tg)
	}
	if tg := find(ts, "hot key: redlock+redigo fair vs rueidislock+rueidis"); tg == nil || tg.Pass || tg.Ratio != 1000.0/1500 || tg.Note != "" {
		t.Errorf("fair vs rueidislock: %+v", tg)
	}
	if tg := find(ts, "hot key: redlock+redigo wake vs rueidislock+rueidis"); tg == nil || !tg.Pass {
		t.Errorf("wake's rows must stay: %+v", tg)
	}

	// Without the peers' cells, their targets are not measured.
	tg = find(Evaluate(hotRecs(400, 2000)[:6], pingEnv, 5, 32), "hot key: redlock+redigo wake handoff p50")
	if tg == nil || !tg.Pass {
		t.Errorf("handoff target without peers: %+v", tg)
	}
}

// TestFairNamesItsLimit: a fair row below rueidislock keeps FAIL and its
// note names the measured CPU per section of the client and the five
// servers, the ceiling they make on the run's CPUs and the share of it
// reached: far below the ceiling, not CPU-bound, with the handoff it
// waited on; at 80 % of it or more, the limit.
func TestFairNamesItsLimit(t *testing.T) {
	recs := hotRecs(400, 2000)
	for _, c := range []int{2, 8, 32} {
		recs = append(recs, matrix.Record{
			Cell: matrix.Cell{Library: "redlock", Driver: "redigo", Scenario: matrix.Handoff, Nodes: 5, FanOut: "multiplexed", Clients: c, SharedKey: true, Variant: matrix.Fair},
			// 400 µs of the servers' and 100 µs of the client's CPU a
			// section: 4000 sections/s on 2 CPUs, 1000 reached.
			Result:  measure.Result{Ops: 1000, Acquired: 1000, Seconds: 1.5, Throughput: 1000, ServersCPUUsPerOp: 400, ClientCPUUsPerOp: 100},
			Handoff: &measure.Handoff{Handoffs: 999, P50Us: 10, FromCallP50Us: 300, Entered: 1000, Counter: 1000},
		})
	}
	env := Env{LoopbackRoundPingUs: 450, NumCPU: 2}
	tg := find(Evaluate(recs, env, 5, 32), "hot key: redlock+redigo fair vs rueidislock+rueidis")
	want := "CPU per section on 2 CPUs (the 5 servers' scripts, INFO cpu): 2: servers 400 µs + client 100 µs, ceiling 4000/s, " +
		"not CPU-bound: 25% of the ceiling; waited on the handoff: p50 300 µs from a release's call to the next acquire, 30% of each section's 1000 µs"
	if tg == nil || tg.Pass || !tg.Measured || !strings.HasPrefix(tg.Note, want) || !strings.Contains(tg.Note, "32: servers 400 µs") ||
		strings.Contains(tg.Note, "the limit") {
		t.Errorf("fair vs rueidislock, below it: %+v", tg)
	}
	// Pinned: one CPU for client and servers, still below 80 % of it.
	env.Pinned = true
	if tg := find(Evaluate(recs, env, 5, 32), "hot key: redlock+redigo fair vs rueidislock+rueidis"); tg == nil ||
		!strings.Contains(tg.Note, "on 1 CPU (the 5 servers' scripts, INFO cpu): 2: servers 400 µs + client 100 µs, ceiling 2000/s, not CPU-bound: 50% of the ceiling; ") {
		t.Errorf("pinned: %+v", tg)
	}
	// A row that passes names no limit.
	if tg := find(Evaluate(recs, env, 5, 32), "hot key: redlock+redigo wake vs rueidislock+rueidis"); tg == nil || !tg.Pass || tg.Note != "" {
		t.Errorf("wake above rueidislock: %+v", tg)
	}
	// At 1800 of a 2000/s ceiling (90 %), below rueidislock's 2500, CPU
	// is the limit, and no wait is named.
	for i := range recs {
		switch {
		case recs[i].Variant == matrix.Fair:
			recs[i].Throughput = 1800
		case recs[i].Library == "rueidislock":
			recs[i].Throughput = 2500
		}
	}
	if tg := find(Evaluate(recs, env, 5, 32), "hot key: redlock+redigo fair vs rueidislock+rueidis"); tg == nil ||
		!strings.Contains(tg.Note, "2: servers 400 µs + client 100 µs, ceiling 2000/s, 90% reached: the limit") || strings.Contains(tg.Note, "not CPU-bound") {
		t.Errorf("pinned, at 90%% of the ceiling: %+v", tg)
	}
}

func TestHandoffTablesRender(t *testing.T) {
	recs := hotRecs(400, 2000)
	recs[0].ClientCPUUsPerOp, recs[0].ServersCPUUsPerOp = 60, 240
	recs[1].Handoff.Overlaps = 1
	recs[1].Note = matrix.OverlapNote(*recs[1].Handoff)
	var b bytes.Buffer
	if err := Table(&b, recs); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.HasPrefix(out, "hot key:") || strings.Contains(out, "loopback:") {
		t.Errorf("table:\n%s", out)
	}
	for _, want := range []string{"invalidation", "BROKEN 1/0", "EXCLUSION BROKEN", "150000", "ret p50", "a release's call", "sCPU"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	for _, l := range strings.Split(out, "\n") {
		if n := utf8.RuneCountInString(l); n > TableWidth {
			t.Errorf("%d columns, over %d: %s", n, TableWidth, l)
		}
	}
	b.Reset()
	if err := Markdown(&b, Run{Env: Env{HandoffSeconds: 1.5}, Records: recs, Targets: Evaluate(recs, Env{}, 5, 32)}, nil); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{
		"## Scenario: hot key (handoff)",
		"- hot key: 1.5 s per cell",
		// From the call first (p50, p99), then from the return.
		"| redlock+redigo | wake | 5 | 2 | 2000 | 999 | 500 | 1300 | 400 | 800 | 1200 | 1600 | 3 | 60 | 240 | ok | 0 |",
		"| rueidislock+rueidis | invalidation | 5 | 32 | 1500 |",
		"**EXCLUSION BROKEN: 1 sections entered while another was inside",
		"| FAIL | hot key: mutual exclusion in every cell |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
}
