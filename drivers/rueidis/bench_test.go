package rueidis_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/core"
	rueidis "github.com/redlock-go/redlock/drivers/rueidis"
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
		d, err := rueidis.Dial(a, rueidis.Options{})
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
