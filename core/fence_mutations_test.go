//go:build redlock_mutations

package core_test

import (
	"context"
	"testing"

	"github.com/redlock-go/redlock/core"
)

// TestWithoutTheRaiseFencesGoBack is the mutation test of the raise: with
// it skipped, the scenario of TestFenceIsTheLargestCounterAndIsRaised
// (fence_test.go) hands the next holder a smaller fence.
func TestWithoutTheRaiseFencesGoBack(t *testing.T) {
	restore := core.SkipFenceRaise()
	defer restore()
	e := newEnv(t, 5, core.Multiplexed, core.Config{Fencing: true})
	ctx := context.Background()
	for i := 1; i < 5; i++ {
		e.c.SetDown(i, true)
	}
	for i := 0; i < 9; i++ {
		if _, err := e.l.Acquire(ctx, "k"); err == nil { // fails: one node of five
			t.Fatalf("acquisition %d won with one node of five", i)
		}
	}
	for i := 1; i < 5; i++ {
		e.c.SetDown(i, false)
	}
	lock, err := e.l.Acquire(ctx, "k")
	if err != nil || lock.Fence() != 10 {
		t.Fatalf("fence %d, err %v", lock.Fence(), err)
	}
	if err := e.l.Release(ctx, lock); err != nil {
		t.Fatalf("release: %v", err)
	}
	e.c.SetDown(0, true)
	e.c.SetDown(1, true)
	next, err := e.l.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if next.Fence() > lock.Fence() {
		t.Fatalf("without the raise the fence still grew (%d > %d): the test proves nothing", next.Fence(), lock.Fence())
	}
}
