//go:build !tinygo

package core_test

import "testing"

// TestAllocsPerRun repeats TestZeroAllocs with the standard
// testing.AllocsPerRun (a stub that returns 0 under TinyGo, hence the tag).
func TestAllocsPerRun(t *testing.T) {
	for _, tc := range allocCases(t) {
		if got := testing.AllocsPerRun(200, tc.run); got != 0 {
			t.Errorf("%s: %v allocations per run, want 0", tc.name, got)
		}
	}
}
