//go:build !redlock_mutations

package redlock

import "testing"

// anyRunnerMutation compiles only while every runner mutation switch is a
// constant: a switch that became a variable of the production build again
// fails the build of the package's tests.
const anyRunnerMutation = mutWatchFromAcquired ||
	mutReleasedUntold ||
	mutWakeDropped ||
	mutUnlockKeepsContext

// Without the redlock_mutations tag the runner's switches are constants,
// all false, so the compiler drops the branches they guard, and
// PlantRunnerDefect does not exist (mutations.go).
func TestProductionBuildHasNoRunnerMutations(t *testing.T) {
	if anyRunnerMutation {
		t.Fatal("a runner mutation switch is true in a build without redlock_mutations")
	}
}
