package systest

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
	"github.com/redlock-go/redlock/internal/redistest"
)

// BenchAcquireRelease measures one TryLock plus one Unlock against N = 1,
// 3, 5 local redis-servers from one goroutine, in both fan-outs; allocs/op
// is per acquire+release pair. A driver's benchmark calls it with its
// Dialer; bench/ holds the cross-library matrix.
func BenchAcquireRelease(b *testing.B, dial Dialer) {
	for _, n := range []int{1, 3, 5} {
		d := openBench(b, dial, n)
		for _, mode := range modes {
			b.Run(fmt.Sprintf("N=%d/%v", n, mode), func(b *testing.B) {
				client, err := redlock.NewClient(d, redlock.Options{Config: core.Config{TTL: 10 * time.Second, FanOut: mode}})
				if err != nil {
					b.Fatal(err)
				}
				ctx := context.Background()
				b.ReportAllocs()
				for b.Loop() {
					lock, err := client.TryLock(ctx, "bench")
					if err != nil {
						b.Fatal(err)
					}
					if err := lock.Unlock(ctx); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		if err := d.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchAcquireReleaseParallel measures acquire+release pairs from 32
// goroutines on distinct keys against 5 local redis-servers, multiplexed,
// with a 50 ms node timeout: the shape of a loaded service. allocs/op is
// per pair; failed/op counts pairs that did not succeed.
func BenchAcquireReleaseParallel(b *testing.B, dial Dialer) {
	const n, clients = 5, 32
	d := openBench(b, dial, n)
	defer func() {
		if err := d.Close(); err != nil {
			b.Error(err)
		}
	}()
	client, err := redlock.NewClient(d, redlock.Options{Config: core.Config{TTL: 10 * time.Second,
		NodeTimeout: 50 * time.Millisecond}})
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
			lock, err := client.TryLock(ctx, key)
			if err != nil {
				failed.Add(1)
				continue
			}
			if err := lock.Unlock(ctx); err != nil {
				failed.Add(1)
			}
		}
	})
	b.ReportMetric(float64(failed.Load())/float64(b.N), "failed/op")
}

// openBench starts n servers and dials a driver over them.
func openBench(b *testing.B, dial Dialer, n int) Closer {
	b.Helper()
	d, err := dial(addrsOf(redistest.StartN(b, n, redistest.Options{})))
	if err != nil {
		b.Fatal(err)
	}
	return d
}
