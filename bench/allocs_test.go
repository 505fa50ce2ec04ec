package bench

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/bench/measure"
	"github.com/redlock-go/redlock/bench/target"
	"github.com/redlock-go/redlock/core"
)

// The handle's own cost: one goroutine takes and unlocks a lock through a
// redlock.Client at N=5, multiplexed, without a lease, straight over the
// driver (no round counter, no measurement loop around it), so that
// allocs/op is the Client's, core's and the driver's per pair and
// nothing else's.

// handleOps are the two ways of taking an uncontended lock.
var handleOps = []string{"trylock", "lock"}

// handleClient dials driver at N=5 and returns a Client over it, without
// a lease, and the driver's close function.
func handleClient(tb testing.TB, driver string) (*redlock.Client, func() error) {
	tb.Helper()
	drv, closeFn, err := target.Dial(driver, addrs(tb, driver, false)[:maxNodes], target.DialOptions{PoolSize: poolSize})
	if err != nil {
		tb.Fatal(err)
	}
	// A node timeout well above the default (TTL/200, 50 ms): these tests
	// count allocations, and a CI machine busy with other packages' tests
	// must not fail them with a round that timed out.
	c, err := redlock.NewClient(drv, redlock.Options{TTL: ttl, FanOut: core.Multiplexed, NodeTimeout: time.Second})
	if err != nil {
		_ = closeFn() // NewClient's error is the one to report
		tb.Fatal(err)
	}
	return c, closeFn
}

// handlePair takes key with op (TryLock or Lock) and unlocks the handle.
// The handle stays in this frame.
func handlePair(ctx context.Context, c *redlock.Client, op, key string) error {
	var l *redlock.Lock
	var err error
	if op == "lock" {
		l, err = c.Lock(ctx, key)
	} else {
		l, err = c.TryLock(ctx, key)
	}
	if err != nil {
		return err
	}
	return l.Unlock(ctx)
}

// BenchmarkHandle measures TryLock+Unlock and Lock+Unlock of an
// uncontended key on every driver, at N=5 multiplexed, one goroutine,
// with allocs/op and goroutines/op: the goal is the handle's one
// allocation (the *Lock) and no goroutine without a lease
// (TestHandleAllocatesOnce asserts it where it holds).
//
//	go test -run '^$' -bench 'Handle/' -benchmem ./bench
func BenchmarkHandle(b *testing.B) {
	ctx := context.Background()
	for _, d := range target.Drivers() {
		for _, op := range handleOps {
			b.Run(fmt.Sprintf("driver=%s/nodes=%d/fanout=%s/op=%s", d, maxNodes, core.Multiplexed, op), func(b *testing.B) {
				c, closeFn := handleClient(b, d)
				defer checkClose(b, closeFn)
				key := "bench:" + b.Name()
				for i := 0; i < 100; i++ { // connections dialled, scripts loaded
					if err := handlePair(ctx, c, op, key); err != nil {
						b.Fatal(err)
					}
				}
				g0 := measure.ReadCounters().Goroutines
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if err := handlePair(ctx, c, op, key); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				b.ReportMetric(float64(measure.ReadCounters().Goroutines-g0)/float64(b.N), "goroutines/op")
			})
		}
	}
}

// handleZeroDrivers are the drivers whose uncontended pair, without a
// lease, must allocate nothing: the in-memory nodes (core and the Client
// alone) and the two whose connections are written and read in place.
// go-redis's TryLock+Unlock allocates nothing too, but a Lock's pair now
// and then shares a pipeline, which go-redis allocates for.
var handleZeroDrivers = []string{"mem", "redigo", "radix"}

// maxStray bounds the goroutines per pair that TestHandleAllocatesOnce
// lets pass as the driver's own: the count is the process's, and a
// driver's background goroutine (a redial, a subscription) may start
// during the pairs. One per pair is what it catches.
const maxStray = 0.05

// TestHandleAllocatesOnce counts the allocations of up to allocBatches
// batches of allocBatch pairs, each batch after a garbage collection.
const allocBatches, allocBatch = 20, 200

// TestHandleAllocatesOnce: TryLock+Unlock and Lock+Unlock of an
// uncontended key without a lease, at N=5 multiplexed, allocate the
// *Lock only and start no goroutine on mem, redigo and radix. The other
// drivers' figures are logged. Under the race detector only the
// goroutines are asserted (.ci/run runs this test without it too).
//
// The allocations are counted exactly, not with testing.AllocsPerRun,
// which rounds down: a tenth of an allocation per pair more, such as
// the engine's batches that a sync.Pool dropped at every collection,
// did not show there. A collection before each batch of pairs catches
// what a collection empties. The count is the process's, and the runtime
// allocates now and then on its own (a goroutine that blocks may take a
// new sudog; a node's buffers grow for a pipeline longer than any
// before): one batch must make exactly one allocation per pair.
func TestHandleAllocatesOnce(t *testing.T) {
	ctx := context.Background()
	for _, d := range target.Drivers() {
		t.Run("driver="+d, func(t *testing.T) {
			c, closeFn := handleClient(t, d)
			defer checkClose(t, closeFn)
			zero := false
			for _, z := range handleZeroDrivers {
				zero = zero || z == d
			}
			for _, op := range handleOps {
				key := "test:allocs:" + d + ":" + op
				for i := 0; i < 300; i++ { // connections, buffers and caches grown
					if err := handlePair(ctx, c, op, key); err != nil {
						t.Fatal(err)
					}
				}
				var allocs []uint64 // per batch
				runtime.GC()        // the first one starts the collector's goroutines
				g0 := measure.ReadCounters().Goroutines
				for len(allocs) < allocBatches && (len(allocs) == 0 || allocs[len(allocs)-1] != allocBatch) {
					runtime.GC()
					before := measure.ReadCounters().Mallocs
					for i := 0; i < allocBatch; i++ {
						if err := handlePair(ctx, c, op, key); err != nil {
							t.Fatalf("%s: %v", op, err)
						}
					}
					allocs = append(allocs, measure.ReadCounters().Mallocs-before)
					if !zero || raceEnabled {
						break // logged only
					}
				}
				gor := float64(measure.ReadCounters().Goroutines-g0) / float64(len(allocs)*allocBatch)
				switch {
				case zero && ((allocs[len(allocs)-1] != allocBatch && !raceEnabled) || gor >= maxStray):
					t.Errorf("%s+Unlock: allocations per batch of %d pairs %v, %.3g goroutines/op; want %d (the Lock each) in one batch, and 0",
						op, allocBatch, allocs, gor, allocBatch)
				default:
					t.Logf("%s+Unlock: allocations per batch of %d pairs %v, %.3g goroutines/op", op, allocBatch, allocs, gor)
				}
			}
		})
	}
}
