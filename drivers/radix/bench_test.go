package radix_test

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers/radix"
	"github.com/redlock-go/redlock/internal/redistest"
)

// BenchmarkAcquireRelease measures one Acquire plus one Release against N
// local redis-servers, one goroutine; allocs/op is per acquire+release pair.
func BenchmarkAcquireRelease(b *testing.B) {
	for _, n := range []int{1, 3, 5} {
		srvs := redistest.StartN(b, n, redistest.Options{})
		a := make([]string, n)
		for i, s := range srvs {
			a[i] = s.Addr
		}
		d, err := radix.Dial(a, radix.Options{})
		if err != nil {
			b.Fatal(err)
		}
		for _, mode := range []core.FanOut{core.Multiplexed, core.Sequential} {
			b.Run(fmt.Sprintf("N=%d/%v", n, mode), func(b *testing.B) {
				l, err := redlock.New(d, core.Config{TTL: 10 * time.Second, FanOut: mode})
				if err != nil {
					b.Fatal(err)
				}
				ctx := context.Background()
				b.ReportAllocs()
				for b.Loop() {
					lock, err := l.Acquire(ctx, "bench")
					if err != nil {
						b.Fatal(err)
					}
					if err := l.Release(ctx, lock); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		d.Close()
	}
}

// BenchmarkAcquireReleaseParallel measures acquire+release pairs from 32
// goroutines on distinct keys against 5 local redis-servers, multiplexed,
// with a 50 ms node timeout: the shape of a loaded service. allocs/op is
// per pair; failed/op counts pairs that did not succeed.
func BenchmarkAcquireReleaseParallel(b *testing.B) {
	const n, clients = 5, 32
	srvs := redistest.StartN(b, n, redistest.Options{})
	a := make([]string, n)
	for i, s := range srvs {
		a[i] = s.Addr
	}
	d, err := radix.Dial(a, radix.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	l, err := redlock.New(d, core.Config{TTL: 10 * time.Second, NodeTimeout: 50 * time.Millisecond})
	if err != nil {
		b.Fatal(err)
	}
	var next, failed atomic.Int64
	b.SetParallelism((clients + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		key := "bench:" + strconv.FormatInt(next.Add(1), 10)
		for pb.Next() {
			lock, err := l.Acquire(ctx, key)
			if err != nil {
				failed.Add(1)
				continue
			}
			if err := l.Release(ctx, lock); err != nil {
				failed.Add(1)
			}
		}
	})
	b.ReportMetric(float64(failed.Load())/float64(b.N), "failed/op")
}
