//go:build redlock_mutations

package core_test

import (
	"context"
	"errors"
	"testing"

	"github.com/redlock-go/redlock/core"
)

// TestLeaseKeepingALostGrantIsSeen: with the bug of an extension that
// keeps a grant it proved lost, TestLeaseLosesWhatAnExtensionProvesGone's
// faults leave the lease going on, its extension's error notwithstanding:
// that test's check of the phase sees the bug.
func TestLeaseKeepingALostGrantIsSeen(t *testing.T) {
	for _, tc := range provenGone() {
		t.Run(tc.name, func(t *testing.T) {
			forModes(t, func(t *testing.T, mode core.FanOut) {
				e, g := leaseEnv(t, mode, core.Config{LeaseFraction: 0.5})
				tc.fault(e.c)
				restore := core.ExtendKeepsLostLock()
				defer restore()
				kept := e.l.Lease(g)
				kept.Wake(e.clock.Now())
				if err := e.l.Extend(context.Background(), &kept); !errors.Is(err, tc.kind) || kept.Phase() == core.PhaseDone {
					t.Fatalf("with the bug: %v, phase %v; want the lease going on", err, kept.Phase())
				}
			})
		})
	}
}
