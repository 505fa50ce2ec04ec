package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/redlock-go/redlock/bench/matrix"
	"github.com/redlock-go/redlock/bench/measure"
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
		rec("redlock", "redigo", matrix.Loopback, 5, "multiplexed", 1, measure.Result{P50Us: 100, AllocsPerOp: 20}),
		rec("redlock", "redigo", matrix.Loopback, 5, "sequential", 1, measure.Result{P50Us: 200}),
		rec("redsync", "redigo", matrix.Loopback, 5, matrix.FanConcurrent, 1, measure.Result{P50Us: 250, AllocsPerOp: 96, GoroutinesPerOp: 10}),
		rec("redlock", "redigo", matrix.Proxy, 5, "multiplexed", 1, measure.Result{P50Us: 4500}),
		rec("redlock", "redigo", matrix.Proxy, 5, "sequential", 1, measure.Result{P50Us: 20500}),
		rec("redlock", "redigo", matrix.Loopback, 5, "multiplexed", 32, measure.Result{Throughput: 20000}),
		rec("redsync", "redigo", matrix.Loopback, 5, matrix.FanConcurrent, 32, measure.Result{Throughput: 6000}),
		rec("rueidislock", "rueidis", matrix.Loopback, 5, matrix.FanKeys, 32, measure.Result{Throughput: 10000}),
	}
	ts := Evaluate(recs, Env{Pinned: true, ProxyDelayMs: 1}, 5, 32)
	for _, c := range []struct {
		prefix string
		pass   bool
		ratio  float64
	}{
		{"core overhead, mem N=5 multiplexed", true, 0.8},
		{"core overhead, mem N=5 sequential", false, 1.5},
		{"redlock+redigo N=5 multiplexed vs redsync+redigo: p50", true, 0.4},
		{"redlock+redigo N=5 multiplexed vs redsync+redigo: allocs", true, 20.0 / 96},
		{"redlock+redigo N=5 multiplexed: goroutines", true, 0},
		{"redlock+redigo N=5 multiplexed behind", true, 4500.0 / 4100},
		{"redlock+redigo N=5 sequential behind", true, 20500.0 / 20200},
		{"redlock+redigo N=5 multiplexed, 32 clients", true, 2},
	} {
		tg := find(ts, c.prefix)
		if tg == nil {
			t.Errorf("%s: missing", c.prefix)
			continue
		}
		if tg.Pass != c.pass || tg.Ratio < c.ratio-1e-9 || tg.Ratio > c.ratio+1e-9 {
			t.Errorf("%s: pass %v ratio %v, want %v %v (%s)", c.prefix, tg.Pass, tg.Ratio, c.pass, c.ratio, tg.Figures)
		}
	}
	if tg := find(ts, "redlock+redigo N=5 multiplexed, 32"); !strings.Contains(tg.Figures, "rueidislock") {
		t.Errorf("best peer: %s", tg.Figures)
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
