//go:build redlock_mutations

package realsim

import (
	"time"

	"github.com/redlock-go/redlock"
)

// Bugs returns the configurations that plant a slip in the root
// package's runner itself (redlock.PlantRunnerDefect), for the schedules
// of the configuration only: each names the violation its schedules must
// show. They exist only with the redlock_mutations build tag; without it
// Bugs returns none (bugs_off.go).
func Bugs() []Config {
	var cs []Config
	c := base("bug: the lease watcher's sleeps timed from the acquisition", 3)
	c.Lease, c.RunnerDefect, c.Expect = true, "WatchFromAcquired", "late loss"
	c.Work = [2]time.Duration{2 * c.TTL, 3 * c.TTL} // long enough for a few extensions
	cs = append(cs, c)

	c = waiters("bug: Unlock never tells the wait room its release is done", 3)
	c.RunnerDefect, c.Expect = "ReleasedUntold", "long wait"
	c.Sequential = true // no early release (core.Flusher): the head hears it at Released only
	cs = append(cs, c)

	c = waiters("bug: the wait room drops the Room's Wake", 3)
	c.RunnerDefect, c.Expect = "WakeDropped", "long wait"
	cs = append(cs, c)

	c = base("bug: Unlock leaves the lock's Context live", 3)
	c.RunnerDefect, c.Expect = "UnlockKeepsContext", "stuck"
	cs = append(cs, c)
	return cs
}

// plantRunnerDefect plants the runner's slip called name and returns the
// function that removes it.
func plantRunnerDefect(name string) (undo func()) { return redlock.PlantRunnerDefect(name) }
