//go:build redlock_mutations

package core

import (
	"testing"
)

// TestNeededCheckerCatchesOverstating breaks Needed on purpose (one reply
// too many) and expects the check to say so.
func TestNeededCheckerCatchesOverstating(t *testing.T) {
	defer NeededOverstates()()
	caught, open := 0, 0
	for _, c := range neededCases() {
		r := c.round()
		if r.Done() {
			continue // a cleanup that awaits nobody: nothing to gather
		}
		open++
		if checkNeeded(r) != nil {
			caught++
		}
	}
	if open == 0 || caught != open {
		t.Fatalf("the check caught the overstated Needed in %d of %d cases", caught, open)
	}
}
