package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCodeTargets: the two code rows are in the table, not measured
// until internal/codesize computes them, and say why.
func TestCodeTargets(t *testing.T) {
	ts := codeTargets("/src")
	require.Len(t, ts, 2)
	assert.Equal(t, driverLinesName, ts[0].Name)
	assert.Equal(t, "≤ 300 each", ts[0].Goal)
	assert.Equal(t, sharedBlocksName, ts[1].Name)
	assert.Equal(t, "no shared block of 15+ lines", ts[1].Goal)
	for _, tg := range ts {
		assert.False(t, tg.Measured, tg.Name)
		assert.False(t, tg.Pass, tg.Name)
		assert.Contains(t, tg.Figures, "not measured: internal/codesize", tg.Name)
	}
	assert.Contains(t, codeTargets("")[0].Figures, "the module's source was not found")
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
