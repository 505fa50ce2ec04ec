package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/redlock-go/redlock/bench/report"
)

// The targets on the code rather than on a measurement: how large the
// driver packages are, and whether they share blocks of code. They are
// read from the module's source, so that the committed runs say them
// beside the figures, in the same table.

// Names and goals of the code rows.
const (
	driverLinesName  = "driver packages, non-test lines (valkeygo generated, not counted)"
	driverLinesGoal  = "≤ 300 each"
	sharedBlocksName = "duplicated code between driver packages (the generated valkeygo excepted)"
	sharedBlocksGoal = "no shared block of 15+ lines"
)

// codeTargets returns the code rows for the module whose source is at
// root ("" when it was not found: not measured).
//
// The counts come from internal/codesize, which this branch does not
// have yet: until it is merged, both rows are "not measured". Once it
// is, this function is where they are computed:
//
//   - codesize.DriverLines(root): one row, Measured, Pass when every
//     count is at most 300, Ratio the largest count over 300, Figures
//     each package's count;
//   - codesize.SharedBlocks(root, 15): one row, Measured, Pass when there
//     is no block, Ratio the number of blocks, Figures each block's
//     packages and length.
//
// An error from either becomes its row's "not measured: ..." figures.
func codeTargets(root string) []report.Target {
	why := "not measured: internal/codesize is not in this build"
	if root == "" {
		why = "not measured: the module's source was not found (run from the repository)"
	}
	return []report.Target{
		{Name: driverLinesName, Goal: driverLinesGoal, Figures: why},
		{Name: sharedBlocksName, Goal: sharedBlocksGoal, Figures: why},
	}
}

// modulePath is the module whose source the code rows read.
const modulePath = "github.com/redlock-go/redlock"

// moduleRoot returns the directory, at or above the working directory,
// whose go.mod declares modulePath, or "" when there is none: the code
// rows read the source there. A nested module's go.mod (bench/peers,
// otel) is passed over.
func moduleRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	return moduleRootFrom(dir)
}

func moduleRootFrom(dir string) string {
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod")) //nolint:gosec // G304: a go.mod above the working directory
		switch {
		case err == nil && declares(string(b), modulePath):
			return dir
		case err != nil && !errors.Is(err, os.ErrNotExist):
			return ""
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// declares reports whether the go.mod text gomod declares module path.
func declares(gomod, path string) bool {
	for _, l := range strings.Split(gomod, "\n") {
		if f := strings.Fields(l); len(f) == 2 && f[0] == "module" {
			return strings.Trim(f[1], `"`) == path
		}
	}
	return false
}
