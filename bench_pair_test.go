package redlock_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/bench/target"
	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/core/memnode"
)

// BenchmarkTryLockUnlock is the pair of redlock-bench's "redlock+mem"
// cells, without its harness: a Client with the default Options over
// memnode (the system clock), TryLock, then the handle's Unlock, for
// N = 1 and 5 in both fan-outs. It measures the runner and core, and
// memnode's share of a round. A loaded machine can stall the loop
// between two clock readings for longer than the default 50 ms node
// timeout: the generous TTL and node timeout keep that from failing it.
func BenchmarkTryLockUnlock(b *testing.B) {
	ctx := context.Background()
	for _, fan := range []core.FanOut{core.Multiplexed, core.Sequential} {
		for _, n := range []int{1, 5} {
			b.Run("nodes="+strconv.Itoa(n)+"/fanout="+fan.String(), func(b *testing.B) {
				c, err := redlock.NewClient(memnode.New(n, core.SystemClock{}), redlock.Options{FanOut: fan,
					TTL: time.Hour, NodeTimeout: 30 * time.Second})
				if err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				for b.Loop() {
					l, err := c.TryLock(ctx, "k")
					if err != nil {
						b.Fatal(err)
					}
					if err := l.Unlock(ctx); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkMemFloor is BenchmarkTryLockUnlock's floor: the same memnode
// commands and the three clock readings a pair cannot do without, with
// no core and no runner (target.MemFloor, which redlock-bench measures
// beside its mem cells). The difference is what core and runner cost.
func BenchmarkMemFloor(b *testing.B) {
	ctx := context.Background()
	for _, fan := range []core.FanOut{core.Multiplexed, core.Sequential} {
		for _, n := range []int{1, 5} {
			b.Run("nodes="+strconv.Itoa(n)+"/fanout="+fan.String(), func(b *testing.B) {
				w := target.NewMemFloor(n, fan, time.Hour).Worker("k")
				b.ReportAllocs()
				for b.Loop() {
					if _, err := w.Pair(ctx); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
