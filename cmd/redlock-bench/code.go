package main

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/redlock-go/redlock/bench/report"
	"github.com/redlock-go/redlock/internal/codesize"
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
// root ("" when it was not found: not measured), from internal/codesize:
//
//   - the lines of each client driver package's non-test files: Pass
//     when each hand-written package holds at most driverLinesMax, Ratio
//     the largest over driverLinesMax; a generated package (valkeygo) is
//     listed but not counted;
//   - the blocks of sharedBlocksMin lines or more that two client driver
//     packages share, generated files excepted: Pass when there is none,
//     Ratio the number of blocks, Figures each block's places and length.
//
// An error from either becomes its row's "not measured: ..." figures.
func codeTargets(root string) []report.Target {
	if root == "" {
		why := "not measured: the module's source was not found (run from the repository)"
		return []report.Target{
			{Name: driverLinesName, Goal: driverLinesGoal, Figures: why},
			{Name: sharedBlocksName, Goal: sharedBlocksGoal, Figures: why},
		}
	}
	return []report.Target{driverLinesTarget(root), sharedBlocksTarget(root)}
}

// storedCodeTargets returns the code rows of a run's stored targets, as
// the run measured them: --replot redraws a run, and the source it was
// measured on is not today's. A row the run did not store (a run.json
// from before the code rows) says so instead.
func storedCodeTargets(stored []report.Target) []report.Target {
	out := []report.Target{
		{Name: driverLinesName, Goal: driverLinesGoal, Figures: notInRun},
		{Name: sharedBlocksName, Goal: sharedBlocksGoal, Figures: notInRun},
	}
	for i := range out {
		for _, t := range stored {
			if t.Name == out[i].Name {
				out[i] = t
				break
			}
		}
	}
	return out
}

// notInRun is the figures of a code row that a replotted run.json does
// not hold.
const notInRun = "not measured in this run"

// The bounds of the code rows' goals.
const (
	driverLinesMax  = 300
	sharedBlocksMin = 15
)

func driverLinesTarget(root string) report.Target {
	t := report.Target{Name: driverLinesName, Goal: driverLinesGoal}
	lines, err := codesize.DriverLines(root)
	if err != nil {
		t.Figures = "not measured: " + err.Error()
		return t
	}
	most := 0
	var figures []string
	for _, name := range slices.Sorted(maps.Keys(lines)) {
		figures = append(figures, fmt.Sprintf("%s %d", name, lines[name]))
		if !strings.HasSuffix(name, codesize.GeneratedSuffix) {
			most = max(most, lines[name])
		}
	}
	t.Figures = strings.Join(figures, ", ")
	t.Ratio = float64(most) / driverLinesMax
	t.Measured, t.Pass = true, most <= driverLinesMax
	return t
}

func sharedBlocksTarget(root string) report.Target {
	t := report.Target{Name: sharedBlocksName, Goal: sharedBlocksGoal}
	blocks, err := codesize.SharedBlocks(root, sharedBlocksMin)
	if err != nil {
		t.Figures = "not measured: " + err.Error()
		return t
	}
	figures := []string{fmt.Sprintf("%d blocks", len(blocks))}
	for _, b := range blocks {
		figures = append(figures, b.String())
	}
	t.Figures = strings.Join(figures, "; ")
	t.Ratio = float64(len(blocks))
	t.Measured, t.Pass = true, len(blocks) == 0
	return t
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
