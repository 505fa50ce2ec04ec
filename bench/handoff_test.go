package bench

import (
	"context"
	"fmt"
	"testing"

	"github.com/redlock-go/redlock/bench/matrix"
	"github.com/redlock-go/redlock/bench/measure"
	"github.com/redlock-go/redlock/bench/target"
)

// The hot key: contenders on one key at N=5, each looping Client.Lock
// (waiting as long as it takes), a tiny critical section, Unlock, with
// one redlock.Client per sub-benchmark shared by its contenders, woken by
// release announcements (wait=wake) or polling (wait=poll, Options.Poll).
// measure.RunHandoff's loop: every handoff goes to a contender that was
// waiting. The peers' side is cmd/redlock-bench's (--handoff).

var (
	handoffDrivers    = []string{"redigo", "rueidis"}
	handoffContenders = []int{2, 8, 32}
)

// The hot-key subject of the running sub-benchmark, kept across its calls
// as subject keeps the matrix's.
var curHot *target.HotKey

// hotSubject dials driver over the servers, makes the Client of mode and
// warms it with a few sections: connections dialled, scripts loaded, the
// key's subscriptions made.
func hotSubject(b *testing.B, driver, mode string, contenders int) *target.HotKey {
	if curName == b.Name() && curHot != nil {
		return curHot
	}
	closeKept(b)
	drv, closeFn, err := target.Dial(driver, addrs(b, driver, false)[:maxNodes], target.DialOptions{PoolSize: poolSize})
	if err != nil {
		b.Fatal(err)
	}
	h, err := target.NewHotKey(drv, mode, ttl)
	if err != nil {
		_ = closeFn() // NewHotKey's error is the one to report
		b.Fatal(err)
	}
	curName, curClose, curHot = b.Name(), closeFn, h
	r, hh := measure.RunHandoff(context.Background(), h, measure.HandoffSpec{Contenders: contenders, Key: hotKey(b), Sections: 4})
	checkHot(b, r, hh)
	return h
}

func hotKey(b *testing.B) string { return "bench:" + b.Name() + ":hot" }

// checkHot fails the benchmark on a broken exclusion or a failed
// acquire or release.
func checkHot(b *testing.B, r measure.Result, h measure.Handoff) {
	b.Helper()
	if !h.Exclusive() {
		b.Fatal(matrix.OverlapNote(h))
	}
	if r.Errors > 0 {
		b.Fatalf("%d failed acquires or releases, first: %s", r.Errors, r.FirstError)
	}
}

// BenchmarkHandoff runs b.N critical sections on the hot key and reports,
// besides ns/op (per section), handoff-p50-µs and handoff-p99-µs (a
// release's return to the next holder's acquire returning), sections/s
// and early-% (handoffs whose acquire returned before the release did,
// counted as 0). With -benchtime 1x each sub-benchmark runs one section
// after its warm-up: a smoke test of the loop, not a figure.
//
//	go test -run '^$' -bench 'Handoff/driver=redigo' -benchtime 3s ./bench
func BenchmarkHandoff(b *testing.B) {
	for _, d := range handoffDrivers {
		if !target.Has(d) {
			continue
		}
		for _, m := range matrix.WaitModes {
			for _, c := range handoffContenders {
				b.Run(fmt.Sprintf("driver=%s/nodes=%d/wait=%s/contenders=%d", d, maxNodes, m, c), func(b *testing.B) {
					h := hotSubject(b, d, m, c)
					b.ResetTimer()
					r, hh := measure.RunHandoff(context.Background(), h, measure.HandoffSpec{Contenders: c, Key: hotKey(b), Sections: int64(b.N)})
					b.StopTimer()
					checkHot(b, r, hh)
					b.ReportMetric(r.Throughput, "sections/s")
					if hh.Handoffs > 0 {
						b.ReportMetric(hh.FromCallP50Us, "handoff-p50-µs")
						b.ReportMetric(hh.FromCallP99Us, "handoff-p99-µs")
						b.ReportMetric(hh.P50Us, "return-p50-µs")
						b.ReportMetric(100*float64(hh.Early)/float64(hh.Handoffs), "early-%")
					}
				})
			}
		}
	}
}

// TestHotKeyExclusive: on redis-server, 8 contenders of one Client over
// each driver, woken and polling, take the key in turn: no two critical
// sections overlap, the shared counter is exact, every section but the
// first is a handoff, and nothing fails.
func TestHotKeyExclusive(t *testing.T) {
	const contenders, sections = 8, 40
	ctx := context.Background()
	for _, d := range handoffDrivers {
		t.Run("driver="+d, func(t *testing.T) {
			drv, closeFn, err := target.Dial(d, addrs(t, d, false)[:maxNodes], target.DialOptions{PoolSize: 4})
			if err != nil {
				t.Fatal(err)
			}
			defer checkClose(t, closeFn)
			for _, m := range matrix.WaitModes {
				h, err := target.NewHotKey(drv, m, ttl)
				if err != nil {
					t.Fatal(err)
				}
				r, hh := measure.RunHandoff(ctx, h, measure.HandoffSpec{Contenders: contenders, Key: "test:hotkey:" + d + ":" + m, Sections: sections})
				if !hh.Exclusive() {
					t.Errorf("%s: %s", m, matrix.OverlapNote(hh))
				}
				if r.Errors > 0 || r.Ops != sections || hh.Handoffs != sections-1 {
					t.Errorf("%s: %d sections, %d handoffs, %d errors (first: %s); want %d sections, %d handoffs",
						m, r.Ops, hh.Handoffs, r.Errors, r.FirstError, sections, sections-1)
				}
			}
		})
	}
}
