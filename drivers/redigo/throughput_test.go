package redigo

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/internal/redistest"
)

// BenchmarkThroughput runs acquire+release on distinct keys from 1 and 32
// goroutines over 5 servers, in both fan-outs, in pooled and pipelined modes,
// and reports ops/s (one op is an acquire plus a release) and the latency
// of one op.
func BenchmarkThroughput(b *testing.B) {
	ss := redistest.StartN(b, 5, redistest.Options{})
	addrs := make([]string, len(ss))
	for i, s := range ss {
		addrs[i] = s.Addr
	}
	modes := []struct {
		name string
		opts Options
	}{
		{"pooled", Options{Pooled: true}},
		{"pipe1", Options{Pipeline: 1}},
		{"pipe2", Options{Pipeline: 2}},
		{"pipe4", Options{Pipeline: 4}},
	}
	for _, clients := range []int{1, 32} {
		for _, f := range []core.FanOut{core.Multiplexed, core.Sequential} {
			for _, m := range modes {
				b.Run("c="+strconv.Itoa(clients)+"/"+f.String()+"/"+m.name, func(b *testing.B) {
					d, err := Dial(addrs, m.opts)
					require.NoError(b, err)
					defer d.Close()
					l, err := redlock.New(d, core.Config{TTL: 10 * time.Second, NodeTimeout: time.Second, FanOut: f})
					require.NoError(b, err)
					ctx := context.Background()
					var next atomic.Int64
					var failed atomic.Int64
					run := func(w int) {
						key := "tp-" + strconv.Itoa(w)
						for next.Add(1) <= int64(b.N) {
							lock, err := l.Acquire(ctx, key)
							if err != nil {
								failed.Add(1)
								continue
							}
							if err := l.Release(ctx, lock); err != nil {
								failed.Add(1)
							}
						}
					}
					// warm up
					for i := 0; i < 100; i++ {
						lock, err := l.Acquire(ctx, "tp-warm")
						require.NoError(b, err)
						require.NoError(b, l.Release(ctx, lock))
					}
					b.ReportAllocs()
					b.ResetTimer()
					start := time.Now()
					var wg sync.WaitGroup
					for w := 0; w < clients; w++ {
						wg.Add(1)
						go func() { defer wg.Done(); run(w) }()
					}
					wg.Wait()
					el := time.Since(start)
					b.StopTimer()
					b.ReportMetric(float64(b.N)/el.Seconds(), "ops/s")
					b.ReportMetric(float64(failed.Load()), "failed")
				})
			}
		}
	}
}
