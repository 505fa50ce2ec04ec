package redistest

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fixtureEnv makes TestLookPathFixture run: it is the package test that
// TestGoTestCacheSeesRedisServer runs through the go command.
const fixtureEnv = "REDISTEST_LOOKPATH_FIXTURE"

func TestLookPathFixture(t *testing.T) {
	if os.Getenv(fixtureEnv) != "1" {
		t.Skip("run by TestGoTestCacheSeesRedisServer only")
	}
	p, err := LookPath()
	t.Logf("redis-server: %q, %v", p, err)
}

// TestGoTestCacheSeesRedisServer: a package whose tests looked for
// redis-server is not replayed from go test's cache once redis-server
// appears on PATH, but is while nothing changes.
func TestGoTestCacheSeesRedisServer(t *testing.T) {
	goCmd := filepath.Join(runtime.GOROOT(), "bin", "go")
	bin := t.TempDir()
	root := moduleRoot()
	require.NotEmpty(t, root)
	t.Cleanup(func() { os.Remove(probeLink(root, bin)) })

	run := func() string {
		t.Helper()
		cmd := exec.Command(goCmd, "test", "-run", "^TestLookPathFixture$", ".")
		cmd.Env = append(os.Environ(), fixtureEnv+"=1", "GOFLAGS=", "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		return string(out)
	}
	first := run()
	require.NotContains(t, first, "(cached)", "a new PATH is a new input")
	assert.Contains(t, run(), "(cached)", "nothing changed: the result is replayed")

	// redis-server appears in a PATH directory, as an install would do.
	require.NoError(t, os.WriteFile(filepath.Join(bin, "redis-server"), []byte("#!/bin/sh\n"), 0o755))
	third := run()
	assert.True(t, strings.HasPrefix(third, "ok"), "%s", third)
	assert.NotContains(t, third, "(cached)", "redis-server appeared but the cached result was replayed")
}

// skipFixtureEnv makes TestSkipFixture skip through redistest.
const skipFixtureEnv = "REDISTEST_SKIP_FIXTURE"

func TestSkipFixture(t *testing.T) {
	if os.Getenv(skipFixtureEnv) != "1" {
		t.Skip("run by TestSkipSummaryIsNeverCached only")
	}
	skip(t, reasonNoServer)
}

// TestSkipSummaryIsNeverCached: a package that skipped tests prints its
// summary on every run of go test: its result is not replayed from the
// cache, which would drop the line.
func TestSkipSummaryIsNeverCached(t *testing.T) {
	goCmd := filepath.Join(runtime.GOROOT(), "bin", "go")
	for run := 1; run <= 2; run++ {
		cmd := exec.Command(goCmd, "test", "-run", "^TestSkipFixture$", ".")
		cmd.Env = append(os.Environ(), skipFixtureEnv+"=1", "GOFLAGS=")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		assert.NotContains(t, string(out), "(cached)", "run %d replayed from the cache", run)
		assert.Contains(t, string(out), "1 test skipped (needs redis-server: 1)", "run %d printed no summary", run)
	}
}
