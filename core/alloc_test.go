package core_test

import (
	"context"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/core/memnode"
)

// sink keeps results reachable so that no compiler (TinyGo included)
// optimises an allocation away.
var sink core.Grant

// mallocsPerRun counts heap allocations per call of f with
// runtime.ReadMemStats, which works under gc and TinyGo alike
// (testing.AllocsPerRun is a stub under TinyGo). Like AllocsPerRun, it
// warms up once and averages over runs.
func mallocsPerRun(runs int, f func()) uint64 {
	f()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := 0; i < runs; i++ {
		f()
	}
	runtime.ReadMemStats(&after)
	return (after.Mallocs - before.Mallocs) / uint64(runs) //nolint:gosec // G115: callers pass runs > 0
}

// allocCase is one operation under one fan-out mode and node count.
type allocCase struct {
	name string
	run  func()
}

// allocCases returns acquire+release (a fresh token each time) and
// acquire+4×extend+release, step values driven over memnode with the
// system clock by the tests' driver loop (drive_test.go), for N = 1, 3, 5,
// 15 and MaxNodes in both fan-out modes. The Acquisition, Round and Lease
// values live on the stack. A failed operation panics: an error path would
// allocate and hide nothing.
func allocCases(tb testing.TB) []allocCase {
	var out []allocCase
	ctx := context.Background()
	for _, mode := range modes {
		for _, n := range []int{1, 3, 5, 15, core.MaxNodes} {
			c := memnode.New(n, core.SystemClock{})
			// memnode answers at once, but a loaded machine running WebAssembly
			// can stall a loop between clock readings for hundreds of
			// milliseconds: a generous TTL and node timeout keep such a stall
			// from failing a round (and its error path from allocating). The
			// TTL leaves room for an extension round (up to MaxNodes node
			// timeouts, sequential) a round bound before the validity ends.
			l, err := newLocker(c, sysClock{}, core.Config{FanOut: mode, TTL: time.Hour,
				NodeTimeout: 30 * time.Second, Tokens: &seqTokens{}, Jitter: fixedRand(0), Retry: core.RandomDelay(1, 0, 0),
				MaxExtensions: 1 << 30})
			if err != nil {
				tb.Fatal(err)
			}
			cfg := l.Config()
			cfg.Fencing = true
			fenced, err := newLocker(c, sysClock{}, cfg)
			if err != nil {
				tb.Fatal(err)
			}
			prefix := "nodes=" + strconv.Itoa(n) + "/fanout=" + mode.String() + "/"
			key, extendKey, fencedKey := "alloc:"+prefix, "alloc:extend:"+prefix, "alloc:fenced:"+prefix
			slots, err := core.PermitKeys("alloc:permit:"+prefix, 4)
			if err != nil {
				tb.Fatal(err)
			}
			p := new(core.Permits) // kept in place: larger than TinyGo keeps on the stack
			out = append(out,
				allocCase{prefix + "acquire+release", func() {
					lock, err := l.Acquire(ctx, key)
					if err != nil {
						panic(err)
					}
					if err := l.Release(ctx, lock); err != nil {
						panic(err)
					}
					sink = lock
				}},
				allocCase{prefix + "fenced acquire+release", func() {
					lock, err := fenced.Acquire(ctx, fencedKey)
					if err != nil {
						panic(err)
					}
					if err := fenced.Release(ctx, lock); err != nil {
						panic(err)
					}
					sink = lock
				}},
				allocCase{prefix + "permit+release", func() {
					g, _, err := l.AcquirePermit(ctx, p, slots)
					if err != nil {
						panic(err)
					}
					if err := l.Release(ctx, g); err != nil {
						panic(err)
					}
					sink = g
				}},
				allocCase{prefix + "extend", func() {
					lock, err := l.Acquire(ctx, extendKey)
					if err != nil {
						panic(err)
					}
					ls := l.Lease(lock)
					for i := 0; i < 4; i++ {
						if err := l.Extend(ctx, &ls); err != nil {
							panic(err)
						}
					}
					lock = ls.Grant()
					if err := l.Release(ctx, lock); err != nil {
						panic(err)
					}
					sink = lock
				}},
			)
		}
	}
	return out
}

func TestZeroAllocs(t *testing.T) {
	for _, tc := range allocCases(t) {
		if got := mallocsPerRun(200, tc.run); got != 0 {
			t.Errorf("%s: %d allocations per run, want 0", tc.name, got)
		}
	}
}

func TestCoreStartsNoGoroutines(t *testing.T) {
	cases := allocCases(t)
	before := runtime.NumGoroutine()
	for _, tc := range cases {
		tc.run()
	}
	// Only a rise shows a goroutine the core started and left running. The
	// count may fall: the runtime's finalizer goroutine is counted while it
	// runs a finalizer, and may finish during the cases.
	if after := runtime.NumGoroutine(); after > before {
		t.Fatalf("goroutines %d -> %d", before, after)
	}
}

func BenchmarkCore(b *testing.B) {
	for _, tc := range allocCases(b) {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				tc.run()
			}
		})
	}
}

var byteSink []byte

// allocate is not inlined: TinyGo elides an inlined make whose result is
// only stored to a global, which would make the canary below vacuous.
//
//go:noinline
func allocate(n int) []byte { return make([]byte, n) }

// TestAllocCounterSeesAllocations guards TestZeroAllocs against passing
// vacuously: on every platform (gc, wasm, TinyGo) the counter must see a
// real heap allocation.
func TestAllocCounterSeesAllocations(t *testing.T) {
	if got := mallocsPerRun(50, func() { byteSink = allocate(64) }); got < 1 {
		t.Fatalf("counter saw %d allocations of a 64-byte slice, want >= 1", got)
	}
}
