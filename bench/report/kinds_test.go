package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/redlock-go/redlock/bench/matrix"
	"github.com/redlock-go/redlock/bench/measure"
)

// kindRecs are the Kinds records of one driver, the plan's cells
// (matrix.Plan with every kind) with the given figures: p50 and pairs/s
// of each cell, the writer's wait p99 (µs), and one exclusion check for
// every hot cell.
func kindRecs(p50 map[string]float64, tput map[string]float64, writerP99Us float64, excl measure.Exclusion) []matrix.Record {
	plan := matrix.Plan{NodeCounts: []int{5}, FanOuts: []string{"multiplexed"}, Concurrency: []int{1, 32}, Kinds: matrix.KindCells, KindsDrivers: []string{"redigo"}, KindsOnly: true}
	var recs []matrix.Record
	for _, c := range plan.Cells() {
		r := matrix.Record{Cell: c, Result: measure.Result{Ops: 1000, Acquired: 1000, Seconds: 1, P50Us: p50[c.Variant], Throughput: tput[c.Variant]}}
		if matrix.KindHot(c.Variant) {
			e := excl
			if c.Variant == matrix.KindWriterWait {
				e.Waits, e.WaitP50Us, e.WaitP99Us, e.WaitMaxUs, e.TTLMs = 40, writerP99Us/4, writerP99Us, writerP99Us, 100
			}
			r.Exclusion = &e
		}
		recs = append(recs, r)
	}
	return recs
}

func kindTarget(t *testing.T, ts []Target, prefix string) Target {
	t.Helper()
	for _, x := range ts {
		if strings.HasPrefix(x.Name, prefix) {
			return x
		}
	}
	t.Fatalf("no target %q in %d", prefix, len(ts))
	return Target{}
}

func TestKindTargets(t *testing.T) {
	ok := measure.Exclusion{Sections: 500, MaxHolders: 1, Limit: 1}
	p50 := map[string]float64{matrix.KindRLock: 330, matrix.KindLock: 300, matrix.KindLockAll: 320, matrix.KindLock3: 900}
	tput := map[string]float64{matrix.KindReaders: 9000, matrix.KindMutexKeys: 10000, matrix.KindPermits: 4000, matrix.KindMutexPermits: 4500}
	ts := Evaluate(kindRecs(p50, tput, 150e3, ok), Env{Pinned: true}, 5, 32)
	if len(ts) != 6 {
		t.Fatalf("%d targets, want the 6 kinds rows: %+v", len(ts), ts)
	}
	for _, c := range []struct {
		prefix string
		ratio  float64
	}{
		{"rwlock: redlock+redigo N=5, 1 client: RLock", 1.1},
		{"rwlock: redlock+redigo N=5: 32 readers", 0.9},
		{"rwlock: redlock+redigo N=5: a writer's wait", 1.5},
		{"semaphore: redlock+redigo N=5, K=4", 4000.0 / 4500},
		{"LockAll: redlock+redigo N=5", 320.0 / 900},
		{"kinds: exclusion", 0},
	} {
		x := kindTarget(t, ts, c.prefix)
		if !x.Measured || !x.Pass || x.Ratio < c.ratio-1e-9 || x.Ratio > c.ratio+1e-9 {
			t.Errorf("%s: %+v, want a pass at %.3g", c.prefix, x, c.ratio)
		}
	}

	// Each bound fails on the other side of it, and a violation in one
	// hot cell fails the exclusion row.
	p50[matrix.KindRLock], p50[matrix.KindLockAll] = 400, 500
	tput[matrix.KindReaders], tput[matrix.KindPermits] = 7000, 3000
	bad := ok
	bad.Violations, bad.LostUpdates = 2, 1
	ts = Evaluate(kindRecs(p50, tput, 250e3, bad), Env{Pinned: true}, 5, 32)
	for _, x := range ts {
		if !x.Measured || x.Pass {
			t.Errorf("%s: %+v, want a measured failure", x.Name, x)
		}
	}
	if x := kindTarget(t, ts, "kinds: exclusion"); !strings.HasPrefix(x.Figures, "EXCLUSION BROKEN: redigo readers: 2 violations") || x.Ratio != 6 {
		t.Errorf("exclusion row: %+v", x)
	}
}

func TestKindTargetsMissing(t *testing.T) {
	recs := kindRecs(map[string]float64{matrix.KindRLock: 330, matrix.KindLock: 300}, nil, 0, measure.Exclusion{})
	// The writer's cell and the semaphore's did not run: "not built yet".
	for i := range recs {
		switch recs[i].Variant {
		case matrix.KindPermits, matrix.KindWriterWait:
			recs[i].Result = measure.Result{}
			recs[i].Exclusion = nil
			recs[i].Note = "LockPermit is not built yet"
		}
	}
	// A cell with errors, at wide figures of a loaded machine: the table
	// still fits.
	for i := range recs {
		if recs[i].Variant == matrix.KindMutexPermits {
			recs[i].Errors, recs[i].FirstError = 3, "redlock: quorum unreachable"
			recs[i].Throughput, recs[i].P50Us, recs[i].P99Us, recs[i].MaxUs = 16913, 6496, 193462, 308281
			recs[i].RoundsPerOp, recs[i].ClientCPUUsPerOp, recs[i].ServersCPUUsPerOp = 65.25, 5387, 5923
			recs[i].Exclusion = &measure.Exclusion{Sections: 10, Violations: 123, LostUpdates: 45, Refused: 6, Waits: 3, WaitP99Us: 197600}
		}
	}
	ts := Evaluate(recs, Env{}, 5, 32)
	for _, prefix := range []string{"semaphore:", "rwlock: redlock+redigo N=5: a writer's wait"} {
		x := kindTarget(t, ts, prefix)
		if x.Measured || x.Pass || !strings.Contains(x.Figures, "not built yet") {
			t.Errorf("%s: %+v, want not measured, with the cell's note", prefix, x)
		}
	}
	var b bytes.Buffer
	if err := Table(&b, recs); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "kinds: the rwlock, the semaphore and LockAll") || !strings.Contains(b.String(), "LockPermit is not built yet") {
		t.Errorf("table:\n%s", b.String())
	}
	for _, l := range strings.Split(b.String(), "\n") {
		if len([]rune(l)) > TableWidth {
			t.Errorf("line wider than %d: %q", TableWidth, l)
		}
		// The widest row keeps its last column, the errors, uncut.
		if strings.HasPrefix(l, "redlock+redigo  mutex-permit-keys") && (strings.Contains(l, "…") || !strings.HasSuffix(l, " 3")) {
			t.Errorf("the row with errors is cut: %q", l)
		}
	}
	b.Reset()
	if err := Markdown(&b, Run{Records: recs, Targets: ts}, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "## Scenario: reader/writer lock, semaphore, LockAll") {
		t.Errorf("markdown has no kinds section:\n%s", b.String())
	}
}

// Cells measured in interleaved rounds: a ratio is the median of the
// rounds' own ratios, not the ratio of the medians.
func TestKindTargetsRounds(t *testing.T) {
	p50 := map[string]float64{matrix.KindRLock: 330, matrix.KindLock: 300}
	tput := map[string]float64{matrix.KindReaders: 9000, matrix.KindMutexKeys: 10000}
	recs := kindRecs(p50, tput, 100e3, measure.Exclusion{Sections: 10, MaxHolders: 1, Limit: 1})
	for i := range recs {
		r := &recs[i]
		switch r.Variant {
		case matrix.KindRLock:
			r.RoundP50Us, r.RepeatP50Us = []float64{330, 600, 340}, []float64{330, 331, 329}
		case matrix.KindLock:
			r.RoundP50Us, r.RepeatP50Us = []float64{300, 300, 200}, []float64{300, 301, 299}
		case matrix.KindReaders:
			r.RepeatThroughput = []float64{9000, 4000, 9500}
		case matrix.KindMutexKeys:
			r.RepeatThroughput = []float64{10000, 10000, 10000}
		}
	}
	ts := Evaluate(recs, Env{Pinned: true}, 5, 32)
	// Rounds' ratios 1.1, 2, 1.7: the median 1.7, a failure.
	if x := kindTarget(t, ts, "rwlock: redlock+redigo N=5, 1 client: RLock"); x.Pass || x.Ratio < 1.7-1e-9 || x.Ratio > 1.7+1e-9 ||
		!strings.Contains(x.Figures, "rounds 330, 600, 340 vs 300, 300, 200 µs") {
		t.Errorf("RLock row: %+v", x)
	}
	// 0.9, 0.4, 0.95: the median 0.9, a pass.
	if x := kindTarget(t, ts, "rwlock: redlock+redigo N=5: 32 readers"); !x.Pass || x.Ratio < 0.9-1e-9 || x.Ratio > 0.9+1e-9 {
		t.Errorf("readers row: %+v", x)
	}
}
