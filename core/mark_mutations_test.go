//go:build redlock_mutations

package core_test

import (
	"testing"
	"time"

	"github.com/redlock-go/redlock/core"
)

// TestWithoutTheRenewalTheMarkLapses is the mutation test of a waiting
// writer's renewal: with MarkLapses, the writer of
// TestRefusedWriterRenewsItsMark (target_test.go) sleeps until the
// readers' expiry, past its mark's TTL.
func TestWithoutTheRenewalTheMarkLapses(t *testing.T) {
	restore := core.MarkLapses()
	defer restore()
	e := newEnv(t, 3, core.Multiplexed, core.Config{Retry: core.RandomDelay(3, 10*time.Second, 10*time.Second)})
	start := e.clock.Now()
	a, err := e.l.spec.AcquireTarget(core.Target{Kind: core.KindWrite, Key: "k"}, core.Token{}, start)
	if err != nil {
		t.Fatal(err)
	}
	feedRound(e, &a, func(int) core.Reply { return core.Reply{Status: core.StatusHeld, TTL: time.Second} })
	feedRound(e, &a, func(int) core.Reply { return core.Reply{Status: core.StatusMissing} })
	a.SetListening(0b111)
	if got, want := a.WakeAt(), start.Add(time.Second+time.Millisecond); !got.Equal(want) {
		t.Fatalf("WakeAt %v after the attempt, want the readers' expiry %v", got.Sub(start), want.Sub(start))
	}
}
