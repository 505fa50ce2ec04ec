package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redlock-go/redlock/bench/measure"
	"github.com/redlock-go/redlock/bench/target"
	"github.com/redlock-go/redlock/core"
)

// BenchmarkVariants is the fencing and lease table: one client at N=5,
// every driver and fan-out, an acquire+release pair through each API
// variant over the same driver, each a redlock.Client's TryLock, then the
// handle's Unlock: the bare handle (plain), with Options.Fencing and its
// Fence read (fenced), with its Context asked for, which starts its
// watcher (handle), and with Lease{Fraction: 1/3} (lease; with the 10 s
// TTL no extension falls within a pair, so it measures the lease's setup
// and teardown).
// Each reports rounds/op, the driver's rounds per pair counted exactly:
// 2 (acquire, release), 3 fenced.
//
//	go test -run '^$' -bench 'Variants/driver=redigo/nodes=5/fanout=multiplexed' -count 10 ./bench
func BenchmarkVariants(b *testing.B) {
	for _, d := range target.Drivers() {
		for _, f := range fanOuts {
			for _, v := range target.Variants {
				b.Run(fmt.Sprintf("driver=%s/nodes=%d/fanout=%s/clients=1/variant=%s", d, maxNodes, f, v), func(b *testing.B) {
					runSubject(b, d, addrs(b, d, false), maxNodes, f, 1, false, func(drv core.Driver, fan core.FanOut) (measure.Subject, error) {
						return target.NewVariant(v, drv, fan, ttl)
					})
				})
			}
		}
	}
}

// wantRounds is the rounds of one successful pair of each variant.
var wantRounds = map[string]uint64{
	target.VariantPlain:  2, // acquire, release
	target.VariantFenced: 3, // acquire (SET NX PX + INCR), raise, release
	target.VariantHandle: 2,
	target.VariantLease:  2,
}

// TestVariantRounds counts, exactly, the rounds of pairs through every
// variant on every driver against redis-server (mem in process), at N=5 in
// both fan-outs: fencing adds exactly one round; the handle's Context
// and watcher, with or without a lease, add none. The TTL is an hour, so that the lease's
// first extension would fall 20 minutes after an acquisition: later than
// the test binary's default timeout, so none can come into the count.
func TestVariantRounds(t *testing.T) {
	const pairs = 25
	ctx := context.Background()
	for _, d := range target.Drivers() {
		t.Run("driver="+d, func(t *testing.T) {
			drv, closeFn, err := target.Dial(d, addrs(t, d, false)[:maxNodes], target.DialOptions{PoolSize: 4})
			if err != nil {
				t.Fatal(err)
			}
			defer checkClose(t, closeFn)
			for _, f := range fanOuts {
				for _, v := range target.Variants {
					s, err := target.NewVariant(v, drv, f, time.Hour)
					if err != nil {
						t.Fatal(err)
					}
					w := s.Worker(fmt.Sprintf("test:rounds:%s:%s:%s", d, f, v))
					for i := 0; i < pairs; i++ {
						if ok, err := w.Pair(ctx); !ok || err != nil {
							t.Fatalf("%s %s pair %d: acquired %v, %v", f, v, i, ok, err)
						}
					}
					if got, want := s.Rounds(), pairs*wantRounds[v]; got != want {
						t.Errorf("%s %s: %d rounds for %d pairs, want %d (%d per pair)", f, v, got, pairs, want, wantRounds[v])
					}
				}
			}
		})
	}
}

// TestPlainAndFencedAllocateOnce: the plain and fenced pairs (the bare
// handle's TryLock+Unlock, fenced or not) on the in-memory nodes, through
// the benchmark's own subject (round counter included), allocate the
// *Lock only: the floor of core and the Client. The figures of the
// handle with its Context, and of the lease, are logged.
func TestPlainAndFencedAllocateOnce(t *testing.T) {
	ctx := context.Background()
	drv, closeFn, err := target.Dial("mem", addrs(t, "mem", false), target.DialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer checkClose(t, closeFn)
	for _, f := range fanOuts {
		for _, v := range target.Variants {
			s, err := target.NewVariant(v, drv, f, ttl)
			if err != nil {
				t.Fatal(err)
			}
			w := s.Worker(fmt.Sprintf("test:allocs:%s:%s", f, v))
			allocs := testing.AllocsPerRun(200, func() {
				if ok, err := w.Pair(ctx); !ok || err != nil {
					panic(fmt.Sprintf("pair: acquired %v, %v", ok, err))
				}
			})
			switch v {
			case target.VariantPlain, target.VariantFenced:
				if allocs != 1 {
					t.Errorf("%s %s TryLock+Unlock on mem: %v allocs/op, want 1 (the Lock)", f, v, allocs)
				}
			default:
				t.Logf("%s %s TryLock+Unlock on mem: %v allocs/op", f, v, allocs)
			}
		}
	}
}
