package main

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock/bench/matrix"
	"github.com/redlock-go/redlock/bench/measure"
	"github.com/redlock-go/redlock/bench/report"
	"github.com/redlock-go/redlock/internal/codesize"
)

// TestCodeTargets: the two code rows are measured on a planted tree from
// internal/codesize's fixtures (one hand-written package over 300 lines,
// one shared block of 21 lines), and not measured, saying why, without
// the source.
func TestCodeTargets(t *testing.T) {
	ts := codeTargets(filepath.Join("..", "..", "internal", "codesize", "testdata", "planted"))
	require.Len(t, ts, 2)
	assert.Equal(t, driverLinesName, ts[0].Name)
	assert.Equal(t, "≤ 300 each", ts[0].Goal)
	assert.Equal(t, sharedBlocksName, ts[1].Name)
	assert.Equal(t, "no shared block of 15+ lines", ts[1].Goal)
	for _, tg := range ts {
		assert.True(t, tg.Measured, tg.Name)
	}
	assert.True(t, ts[0].Pass, "the planted packages are small: %s", ts[0].Figures)
	assert.Contains(t, ts[0].Figures, "valkeygo (generated) ")
	assert.Less(t, ts[0].Ratio, 1.0)
	assert.False(t, ts[1].Pass)
	assert.InDelta(t, 1.0, ts[1].Ratio, 0)
	assert.Contains(t, ts[1].Figures, "1 blocks; 21 lines: drivers/alpha/alpha.go:")

	for _, tg := range codeTargets("") {
		assert.False(t, tg.Measured, tg.Name)
		assert.False(t, tg.Pass, tg.Name)
		assert.Contains(t, tg.Figures, "the module's source was not found", tg.Name)
	}
	broken := codeTargets(t.TempDir()) // no drivers/ folder
	for _, tg := range broken {
		assert.False(t, tg.Measured, tg.Name)
		assert.Contains(t, tg.Figures, "not measured: ", tg.Name)
	}
}

// TestCodeTargetsOverLimit: a hand-written package over 300 lines fails
// the lines row, with its ratio; a generated one that large does not.
func TestCodeTargetsOverLimit(t *testing.T) {
	root := t.TempDir()
	long := "package big\n" + strings.Repeat("\n", 329)
	for dir, src := range map[string]string{
		"big":      long,
		"valkeygo": codesize.Generators["valkeygo"] + "\n\n" + long,
	} {
		require.NoError(t, os.MkdirAll(filepath.Join(root, "drivers", dir), 0o750))
		require.NoError(t, os.WriteFile(filepath.Join(root, "drivers", dir, dir+".go"), []byte(src), 0o600)) //nolint:gosec // G703: the test's temporary tree
	}
	lines := codeTargets(root)[0]
	require.True(t, lines.Measured, lines.Figures)
	assert.False(t, lines.Pass, lines.Figures)
	assert.InDelta(t, 330.0/300, lines.Ratio, 1e-9)
	assert.Equal(t, "big 330, valkeygo (generated) 332", lines.Figures)
}

// TestModuleRoot: the root is the directory whose go.mod declares this
// module, above a nested module's; none without it.
func TestModuleRoot(t *testing.T) {
	root := t.TempDir()
	nested := filepath.Join(root, "bench", "peers")
	require.NoError(t, os.MkdirAll(filepath.Join(nested, "sub"), 0o750))
	require.NoError(t, os.WriteFile(filepath.Join(root, "go.mod"), []byte("// the library\nmodule github.com/redlock-go/redlock\n\ngo 1.26\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(nested, "go.mod"), []byte("module github.com/redlock-go/redlock/bench/peers\n"), 0o600))
	assert.Equal(t, root, moduleRootFrom(filepath.Join(nested, "sub")))
	assert.Equal(t, root, moduleRootFrom(root))

	other := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(other, "go.mod"), []byte("module example.com/other\n"), 0o600))
	assert.Empty(t, moduleRootFrom(other))

	wd, err := os.Getwd()
	require.NoError(t, err)
	assert.Equal(t, filepath.Dir(filepath.Dir(wd)), moduleRoot(), "go test runs in cmd/redlock-bench")
}

// TestReplotKeepsRunsCodeRows: --replot redraws the code rows a run
// stored in its run.json, not figures from today's source; a run.json
// without them says they were not measured in that run.
func TestReplotKeepsRunsCodeRows(t *testing.T) {
	stored := []report.Target{
		{Name: "some measured row", Goal: "fast", Figures: "1 ops/s", Measured: true},
		{Name: driverLinesName, Goal: driverLinesGoal, Figures: "redigo 999", Ratio: 999.0 / 300, Measured: true},
		{Name: sharedBlocksName, Goal: sharedBlocksGoal, Figures: "7 blocks", Ratio: 7, Measured: true},
	}
	recs := []matrix.Record{{Cell: matrix.Cell{Library: matrix.Redlock, Driver: "redigo", Scenario: matrix.Loopback, Nodes: 5, FanOut: "multiplexed", Clients: 32}, Result: measure.Result{Ops: 100, Throughput: 1000}}}
	for _, tc := range []struct {
		name string
		run  report.Run
		want []report.Target
	}{
		{"stored", report.Run{Records: recs, Targets: stored}, stored[1:]},
		{"older run", report.Run{Records: recs, Targets: stored[:1]}, []report.Target{
			{Name: driverLinesName, Goal: driverLinesGoal, Figures: "not measured in this run"},
			{Name: sharedBlocksName, Goal: sharedBlocksGoal, Figures: "not measured in this run"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			b, err := json.Marshal(tc.run)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(dir, "run.json"), b, 0o600)) //nolint:gosec // G703: the test's temporary run
			out := t.TempDir()
			cfg := &config{replot: dir, out: out}
			require.NoError(t, replot(cfg, io.Discard))
			b, err = os.ReadFile(filepath.Join(out, "run.json")) //nolint:gosec // G304: the test's output
			require.NoError(t, err)
			var got report.Run
			require.NoError(t, json.Unmarshal(b, &got))
			require.GreaterOrEqual(t, len(got.Targets), 2)
			assert.Equal(t, tc.want, got.Targets[:2], "the code rows lead the targets")
		})
	}
}
