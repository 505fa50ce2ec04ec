//go:build !tinygo

package core_test

import (
	"testing"
	"time"

	"github.com/redlock-go/redlock/core"
)

// TestAcquirePermitValueAllocatesNothing: under gc a Permits returned by
// value, as AcquirePermit returns it, stays on the stack: a permit won at
// its first attempt allocates nothing. (TinyGo puts a value over 1 KiB on
// the heap: AcquirePermitIn is its way, which TestZeroAllocs runs.)
func TestAcquirePermitValueAllocatesNothing(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	spec, err := core.NewSpec(names{"a", "b", "c"}, core.Config{Tokens: &seqTokens{}, Jitter: fixedRand(0)})
	if err != nil {
		t.Fatal(err)
	}
	slots, _ := core.PermitKeys("k", 4)
	var won bool
	if n := testing.AllocsPerRun(100, func() {
		p, err := spec.AcquirePermit(slots, core.Token{}, now)
		if err != nil {
			panic(err)
		}
		for {
			node, _, _, ok := p.Round().Next(now)
			if !ok {
				break
			}
			p.Round().Receive(core.Reply{Node: node, Status: core.StatusOK})
		}
		p.RoundDone(now)
		sink, err = p.Result()
		won = err == nil
	}); n != 0 || !won {
		t.Errorf("%v allocations per AcquirePermit, won %v; want 0, won", n, won)
	}
}
