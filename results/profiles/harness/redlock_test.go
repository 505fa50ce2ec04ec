package harness

import (
	"context"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/core"
	rl "github.com/redlock-go/redlock/drivers/redigo"
	"github.com/redlock-go/redlock/internal/redistest"
)

func BenchmarkOurs(b *testing.B) {
	// Five redis-servers on free loopback ports, as the library's tests
	// start theirs; without redis-server on PATH the benchmark skips.
	var addrs []string
	for _, s := range redistest.StartN(b, 5, redistest.Options{}) {
		addrs = append(addrs, s.Addr)
	}
	d, err := rl.Dial(addrs, rl.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := d.Close(); err != nil {
			b.Error(err)
		}
	}()
	client, err := redlock.NewClient(d, redlock.Options{TTL: 10 * time.Second, FanOut: core.Multiplexed})
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
}
