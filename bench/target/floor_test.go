package target

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redlock-go/redlock/bench/measure"
	"github.com/redlock-go/redlock/core"
)

// The floor does a pair's work: each pair takes the key on a majority at
// least and frees it everywhere, in both fan-outs, for workers of their
// own keys.
func TestMemFloorTakesAndFrees(t *testing.T) {
	for _, fan := range []core.FanOut{core.Multiplexed, core.Sequential} {
		t.Run(fan.String(), func(t *testing.T) {
			f := NewMemFloor(5, fan, time.Minute)
			res := measure.Run(context.Background(), f, measure.Spec{Clients: 2, Ops: 2000, Warmup: 10 * time.Millisecond, KeyPrefix: "floor:"})
			if res.Ops != 2000 || res.Acquired != 2000 || res.Errors != 0 || res.FirstError != "" {
				t.Fatalf("ops %d, acquired %d, errors %d (%s)", res.Ops, res.Acquired, res.Errors, res.FirstError)
			}
			w := f.Worker("floor:0")
			if a := testing.AllocsPerRun(100, func() { _, _ = w.Pair(context.Background()) }); a != 0 {
				t.Errorf("%v allocs per pair, want 0", a)
			}
			for i := 0; i < 5; i++ {
				for _, k := range []string{"floor:0", "floor:1"} {
					if _, _, ok := f.drv.Get(i, k); ok {
						t.Errorf("node %d still holds %s", i, k)
					}
				}
			}
		})
	}
}

// A node that refuses the acquisition fails the pair: the floor is not
// measured over work it did not do. Node 0 answers first in both
// fan-outs.
func TestMemFloorFailsOnARefusal(t *testing.T) {
	for _, fan := range []core.FanOut{core.Multiplexed, core.Sequential} {
		f := NewMemFloor(3, fan, time.Minute)
		f.drv.Set(0, "k", core.Token{0: 9}, time.Minute)
		acquired, err := f.Worker("k").Pair(context.Background())
		if acquired || err == nil || !strings.Contains(err.Error(), "node 0") {
			t.Errorf("%v: acquired %v, err %v; want a failure naming node 0", fan, acquired, err)
		}
	}
}
