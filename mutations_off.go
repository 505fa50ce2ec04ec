//go:build !redlock_mutations

package redlock

// Without the redlock_mutations tag every runner mutation switch is false
// at compile time: the branches they guard are dead code the compiler
// drops, and no program built from the root package carries a switch or
// PlantRunnerDefect. mutations.go says what each one breaks.
const (
	mutWatchFromAcquired  = false
	mutReleasedUntold     = false
	mutWakeDropped        = false
	mutUnlockKeepsContext = false
)
