package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redlock-go/redlock/bench/matrix"
	"github.com/redlock-go/redlock/bench/measure"
	"github.com/redlock-go/redlock/bench/target"
	"github.com/redlock-go/redlock/core"
)

// The primitives beyond the mutex: the cells of redlock-bench's --kinds
// at N=5 over kindDrivers, each a sub-benchmark named after its cell. The
// pair cells run b.N pairs (TryRLock, TryLockAll, their mutex pairs); the
// hot ones b.N critical sections of contenders that wait, every section
// checked by a measure.Ledger. The targets' ratios are redlock-bench's.
//
//	go test -run '^$' -bench 'Kinds/driver=redigo' -benchtime 2s ./bench

var kindDrivers = []string{"mem", "redigo", "rueidis"}

// writerTTL is the writer-wait cell's TTL here, as redlock-bench's
// default.
const writerTTL = matrix.DefaultWriterTTL

// kindCell returns the cell of variant at N=5 with the plan's shapes.
func kindCell(variant string) matrix.Cell {
	p := matrix.Plan{NodeCounts: []int{maxNodes}, FanOuts: []string{"multiplexed"}, Concurrency: concurrency,
		Kinds: []string{variant}, KindsDrivers: []string{"mem"}, KindsOnly: true}
	return p.Cells()[0]
}

func BenchmarkKinds(b *testing.B) {
	for _, d := range kindDrivers {
		if !target.Has(d) {
			continue
		}
		for _, v := range matrix.KindCells {
			c := kindCell(v)
			b.Run(fmt.Sprintf("driver=%s/nodes=%d/cell=%s/clients=%d", d, c.Nodes, v, c.Clients), func(b *testing.B) {
				if !matrix.KindHot(v) || v == matrix.KindReaders || v == matrix.KindMutexKeys {
					runSubject(b, d, addrs(b, d, false), c.Nodes, core.Multiplexed, c.Clients, c.SharedKey,
						func(drv core.Driver, _ core.FanOut) (measure.Subject, error) { return target.NewKindPair(drv, v, ttl) })
					if s, ok := curSubj.(*target.KindPair); ok && matrix.KindHot(v) {
						if e := s.Ledger.Check(); !e.Ok() {
							b.Fatal(matrix.ViolationNote(e))
						}
					}
					return
				}
				runSections(b, d, c)
			})
		}
	}
}

// runSections runs b.N sections of hot cell c over driver d, reports
// sections/s (and the writer's wait p99 in TTLs), and fails on a broken
// exclusion or a failed acquire.
func runSections(b *testing.B, d string, c matrix.Cell) {
	closeKept(b)
	drv, closeFn, err := target.Dial(d, addrs(b, d, false)[:c.Nodes], target.DialOptions{PoolSize: poolSize})
	if err != nil {
		b.Fatal(err)
	}
	curName, curClose = b.Name(), closeFn
	cs, rounds, err := target.Sections(drv, c, "bench:"+b.Name()+":hot", ttl, writerTTL)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	r, e := measure.RunSections(context.Background(), cs, measure.SectionsSpec{Sections: int64(b.N), Rounds: rounds})
	b.StopTimer()
	if !e.Ok() {
		b.Fatal(matrix.ViolationNote(e))
	}
	if r.Errors > 0 {
		b.Logf("%d failed acquires or releases, first: %s", r.Errors, r.FirstError)
		b.ReportMetric(float64(r.Errors), "errors")
	}
	b.ReportMetric(r.Throughput, "sections/s")
	b.ReportMetric(r.RoundsPerOp, "rounds/section")
	b.ReportMetric(r.P99Us, "wait-p99-µs")
	if e.Waits > 0 {
		b.ReportMetric(e.WaitP99Us/float64(writerTTL.Microseconds()), "writer-p99-TTLs")
	}
	if e.Limit > 1 {
		b.ReportMetric(float64(e.MaxHolders), "max-holders")
	}
}

// TestKindsExclusive: over the in-memory nodes and redis-server, each
// hot cell of the kinds runs a few sections with every one checked: no
// writer beside a reader or a writer, at most K permit holders, no two
// LockAll holders of a key, every counter exact, and the readers of one
// key never refused.
func TestKindsExclusive(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, d := range []string{"mem", "redigo"} {
		t.Run("driver="+d, func(t *testing.T) {
			drv, closeFn, err := target.Dial(d, addrs(t, d, false)[:maxNodes], target.DialOptions{PoolSize: 8})
			if err != nil {
				t.Fatal(err)
			}
			defer checkClose(t, closeFn)
			for _, v := range matrix.KindCells {
				if !matrix.KindHot(v) {
					continue
				}
				c := kindCell(v)
				key := "test:kinds:" + d + ":" + v
				var (
					r measure.Result
					e measure.Exclusion
				)
				if v == matrix.KindReaders || v == matrix.KindMutexKeys {
					s, err := target.NewKindPair(drv, v, ttl)
					if err != nil {
						t.Fatal(err)
					}
					r = measure.Run(ctx, s, measure.Spec{Clients: c.Clients, SharedKey: c.SharedKey, KeyPrefix: key + ":", Ops: 200})
					e = s.Check(r)
				} else {
					cs, _, err := target.Sections(drv, c, key, ttl, time.Second)
					if err != nil {
						t.Fatal(err)
					}
					r, e = measure.RunSections(ctx, cs, measure.SectionsSpec{Sections: 24})
				}
				if ctx.Err() != nil {
					t.Fatalf("%s: did not end", v)
				}
				if !e.Ok() || e.Sections == 0 {
					t.Errorf("%s: %s (%+v)", v, matrix.ViolationNote(e), e)
				}
				if r.Errors > 0 || r.Ops == 0 {
					t.Errorf("%s: %d of %d failed, first: %s", v, r.Errors, r.Ops, r.FirstError)
				}
				if v == matrix.KindPermits && e.MaxHolders > matrix.Permits {
					t.Errorf("permits: %d holders at once of %d", e.MaxHolders, matrix.Permits)
				}
			}
		})
	}
}
