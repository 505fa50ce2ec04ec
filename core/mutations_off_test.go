//go:build !redlock_mutations

package core

import "testing"

// anyMutation compiles only while every mutation switch is a constant: a
// switch that became a variable of the production build again fails the
// build of the package's tests.
const anyMutation = mutExtendWithSpecDrift ||
	mutExtendKeepsLostLock ||
	mutSkipFenceRaise ||
	mutLeaseLosesAtValidity ||
	mutValidityWithoutDrift ||
	mutWakeOnHeldOnly ||
	mutMarkLapses ||
	mutOutOfTriesKeepsMark ||
	mutChainNeverOpens ||
	mutPlaceIgnored ||
	mutNeededOverstates ||
	mutCancelStaysQueued ||
	mutPlaceOutlivesHead ||
	mutBehindKeepsTicket ||
	mutNeverReannounce ||
	mutNeverReannounceAtLeave ||
	mutFreedUnheard

// TestProductionBuildHasNoMutations: without the redlock_mutations tag
// the switches are constants, all false, so the compiler drops the
// branches they guard and the mutation hooks (export_mutations_test.go)
// do not exist.
func TestProductionBuildHasNoMutations(t *testing.T) {
	if anyMutation {
		t.Fatal("a mutation switch is true in a build without redlock_mutations")
	}
}
