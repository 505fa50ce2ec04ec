//go:build redlock_mutations

package redlock

import "fmt"

// The runner's mutation switches plant slips in the pump itself, so that
// tests can show that the real-Client campaign (internal/realsim) finds
// them, as core's switches (core/mutations.go) do for the step values.
// They exist only in builds with the redlock_mutations tag; in every other
// build they are constants false (mutations_off.go), the branches they
// guard compile away, and PlantRunnerDefect does not exist.
var (
	// mutWatchFromAcquired makes the lock's watcher time each sleep from
	// the lock's acquisition rather than from the clock's reading: after
	// an extension it wakes late, past the loss core gave (Lease.WakeAt),
	// and the Context is cancelled after Until.
	mutWatchFromAcquired bool
	// mutReleasedUntold makes Unlock skip telling the wait room that its
	// release is done (core.Room.Released): a waiter of the Client that
	// was to hear of it from the Room sleeps on.
	mutReleasedUntold bool
	// mutWakeDropped makes the wait room drop the Room's Wake (Ready.Wake):
	// the head is never poked, and sleeps until its WakeAt whatever it
	// hears.
	mutWakeDropped bool
	// mutUnlockKeepsContext makes Unlock stop the watcher without
	// cancelling the lock's Context: work done under it never learns
	// that the lock is gone, and waits on for good.
	mutUnlockKeepsContext bool
)

// runnerDefects are PlantRunnerDefect's names.
var runnerDefects = map[string]*bool{
	"WatchFromAcquired":  &mutWatchFromAcquired,
	"ReleasedUntold":     &mutReleasedUntold,
	"WakeDropped":        &mutWakeDropped,
	"UnlockKeepsContext": &mutUnlockKeepsContext,
}

// PlantRunnerDefect plants the runner's slip called name and returns the
// function that removes it again; it panics on an unknown name. It exists
// only with the redlock_mutations build tag, for tests that show the
// real-Client campaign finds each slip (internal/realsim). Test-only: it
// is not safe for concurrent use with running Clients.
//
// The names: "WatchFromAcquired" (the watcher's sleeps count from the
// acquisition: a late loss), "ReleasedUntold" (Unlock never tells the wait
// room that its release is done), "WakeDropped" (the wait room never
// wakes its head), "UnlockKeepsContext" (Unlock never cancels the lock's
// Context).
func PlantRunnerDefect(name string) (undo func()) {
	p, ok := runnerDefects[name]
	if !ok {
		panic(fmt.Sprintf("redlock: no runner defect %q", name))
	}
	*p = true
	return func() { *p = false }
}
