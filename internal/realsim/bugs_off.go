//go:build !redlock_mutations

package realsim

// Bugs returns no configuration without the redlock_mutations build tag:
// the runner's slips exist only with it (bugs.go).
func Bugs() []Config { return nil }

// plantRunnerDefect panics: no "bug:" configuration exists in this build.
func plantRunnerDefect(name string) (undo func()) {
	panic("realsim: runner defect " + name + " needs the redlock_mutations build tag")
}
