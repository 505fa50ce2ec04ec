package measure

import (
	"context"
	"math"
	"testing"
	"time"
)

// TestWindowCountsNoAllocationOfItsOwn: a window over pairs that allocate
// nothing counts no allocation, bounded by pairs or by time. The loop's
// own allocations (its timer, reading the counters) fall outside the
// window: a handful of them in a window of a few hundred pairs read as a
// hundredth of an allocation per pair, twice a target's tolerance. The
// count is the process's, and the runtime now and then allocates when a
// goroutine blocks (a sudog), which no loop keeps out of it: one window
// in ten must count exactly none.
func TestWindowCountsNoAllocationOfItsOwn(t *testing.T) {
	for _, spec := range []Spec{{Ops: 1000}, {Duration: 20 * time.Millisecond}} {
		var counts []float64
		for range 10 {
			r := Run(context.Background(), &rounder{}, spec)
			if r.Ops == 0 {
				t.Fatalf("ops=%d duration=%v: no pair ran", spec.Ops, spec.Duration)
			}
			counts = append(counts, math.Round(r.AllocsPerOp*float64(r.Ops)))
			if r.AllocsPerOp == 0 {
				break
			}
		}
		if last := counts[len(counts)-1]; last != 0 {
			t.Errorf("ops=%d duration=%v: allocations counted in each window: %v; want 0 in one",
				spec.Ops, spec.Duration, counts)
		}
	}
}
