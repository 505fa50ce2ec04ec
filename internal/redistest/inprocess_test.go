package redistest

import (
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeInProcess is an InProcess that records what it is asked to do.
type fakeInProcess struct {
	addr, restartAddr string
	restartErr        error
	closes, restarts  int
}

func (f *fakeInProcess) Addr() string { return f.addr }
func (f *fakeInProcess) Close()       { f.closes++ }
func (f *fakeInProcess) Restart() error {
	f.restarts++
	if f.restartAddr != "" {
		f.addr = f.restartAddr
	}
	return f.restartErr
}

// runRecorded runs fn with a recordingTB on its own goroutine, so that a
// Fatalf or Skipf ends fn there, and returns the recorder.
func runRecorded(t *testing.T, fn func(tb testing.TB)) *recordingTB {
	rec := &recordingTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(rec)
	}()
	<-done
	return rec
}

// TestStartOrWithoutRedisServer: without redis-server on PATH, StartOr
// runs the in-process server and counts the test; under
// REDLOCK_REQUIRE_REDIS=1 it fails without starting one.
func TestStartOrWithoutRedisServer(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Run("fallback", func(t *testing.T) {
		defer withTally(t)()
		t.Setenv(RequireEnv, "")
		f := &fakeInProcess{addr: "127.0.0.1:6390"}
		var got Options
		var s *Server
		t.Run("inner", func(t *testing.T) {
			s = StartOr(t, Options{Password: "pw"}, func(o Options) (InProcess, error) { got = o; return f, nil })
			assert.True(t, s.Embedded())
			assert.Equal(t, "127.0.0.1:6390", s.Addr)
			assert.Equal(t, 6390, s.Port)
			assert.Equal(t, "pw", s.Opts.Password)
			assert.True(t, s.alive(), "an in-process server is taken to be alive")
			s.Kill()
			assert.Equal(t, 1, f.closes, "Kill closes it")
			s.Restart()
			assert.Equal(t, 1, f.restarts)
			s.Cont() // nothing to continue: must not signal a process
		})
		assert.Equal(t, Options{Password: "pw"}, got, "the options reach the in-process server")
		assert.Equal(t, 2, f.closes, "the test's cleanup closes it")
		tally.mu.Lock()
		defer tally.mu.Unlock()
		assert.True(t, tally.embedded[t.Name()+"/inner"], "not counted as embedded: %v", tally.embedded)
	})
	t.Run("required", func(t *testing.T) {
		defer withTally(t)()
		t.Setenv(RequireEnv, "1")
		started := false
		rec := runRecorded(t, func(tb testing.TB) {
			StartOr(tb, Options{}, func(Options) (InProcess, error) { started = true; return &fakeInProcess{}, nil })
		})
		assert.False(t, started, "REDLOCK_REQUIRE_REDIS=1 allows no in-process server")
		assert.Contains(t, rec.fatal, "redis-server not found")
		assert.Empty(t, Summary(), "neither skipped nor embedded")
	})
	t.Run("start fails", func(t *testing.T) {
		defer withTally(t)()
		t.Setenv(RequireEnv, "")
		rec := runRecorded(t, func(tb testing.TB) {
			StartOr(tb, Options{}, func(Options) (InProcess, error) { return nil, errors.New("no port") })
		})
		assert.Contains(t, rec.fatal, "no port")
	})
}

// TestStartOrPrefersRedisServer: with redis-server on PATH, StartOr starts
// a process and never the in-process server.
func TestStartOrPrefersRedisServer(t *testing.T) {
	RedisServerPath(t)
	s := StartOr(t, Options{}, func(Options) (InProcess, error) {
		t.Error("the in-process server was started although redis-server is on PATH")
		return &fakeInProcess{}, nil
	})
	assert.False(t, s.Embedded())
	pid, err := s.pid()
	require.NoError(t, err)
	assert.Positive(t, pid, "a redis-server process answers")
}

// TestAdoptRestartFailures: a restart that fails, or lands on another
// address, fails the test.
func TestAdoptRestartFailures(t *testing.T) {
	for name, f := range map[string]*fakeInProcess{
		"error":   {addr: "127.0.0.1:1", restartErr: errors.New("address in use")},
		"moved":   {addr: "127.0.0.1:1", restartAddr: "127.0.0.1:2"},
		"success": {addr: "127.0.0.1:1"},
	} {
		t.Run(name, func(t *testing.T) {
			rec := runRecorded(t, func(tb testing.TB) { Adopt(tb, Options{}, f).Restart() })
			switch name {
			case "error":
				assert.Contains(t, rec.fatal, "address in use")
			case "moved":
				assert.Contains(t, rec.fatal, "127.0.0.1:2")
			default:
				assert.Empty(t, rec.fatal)
			}
			assert.Equal(t, 1, f.restarts)
		})
	}
}

// TestInProcessStopSkips: SIGSTOP cannot be emulated in process, so Stop
// skips the test and counts it; the test below checks both.
func TestInProcessStopSkips(t *testing.T) {
	defer withTally(t)()
	t.Setenv("PATH", t.TempDir()) // StartOr falls back to the in-process server
	t.Setenv(RequireEnv, "")
	var ran bool
	t.Run("inner", func(t *testing.T) {
		s := StartOr(t, Options{}, func(Options) (InProcess, error) { return &fakeInProcess{addr: "127.0.0.1:1"}, nil })
		s.Stop()
		ran = true
	})
	assert.False(t, ran, "Stop returned on an in-process server")
	tally.mu.Lock()
	defer tally.mu.Unlock()
	assert.True(t, tally.skipped[reasonSIGSTOP][t.Name()+"/inner"], "skip not counted: %v", tally.skipped)
	assert.False(t, tally.embedded[t.Name()+"/inner"], "a skipped test counted as run on the embedded server too")
}

// TestNeedProcessSkipsTheSubtest: a subtest that will stop a server its
// parent started skips itself, and only itself, through NeedProcess; the
// parent goes on (Stop from the subtest would end it as failed).
func TestNeedProcessSkipsTheSubtest(t *testing.T) {
	defer withTally(t)()
	t.Setenv("PATH", t.TempDir())
	t.Setenv(RequireEnv, "")
	var parentRan, subRan bool
	t.Run("parent", func(t *testing.T) {
		s := StartOr(t, Options{}, func(Options) (InProcess, error) { return &fakeInProcess{addr: "127.0.0.1:1"}, nil })
		t.Run("sub", func(t *testing.T) {
			s.NeedProcess(t)
			subRan = true
		})
		parentRan = true
	})
	assert.False(t, subRan, "NeedProcess returned on an in-process server")
	assert.True(t, parentRan, "NeedProcess ended the parent, not the subtest")
	tally.mu.Lock()
	defer tally.mu.Unlock()
	assert.True(t, tally.skipped[reasonSIGSTOP][t.Name()+"/parent/sub"], "skip not counted: %v", tally.skipped)
}

func TestSummary(t *testing.T) {
	defer withTally(t)()
	assert.Empty(t, Summary(), "nothing skipped, nothing embedded")
	ranEmbedded(t)
	tally.mu.Lock()
	tally.skipped = map[string]map[string]bool{
		reasonSIGSTOP:  {"a": true, "b": true},
		reasonNoServer: {"c": true},
	}
	tally.mu.Unlock()
	assert.Equal(t, "github.com/redlock-go/redlock/internal/redistest: redis-server not found on PATH; "+
		"1 test ran on the embedded miniredis; "+
		"3 tests skipped (needs SIGSTOP of a real redis-server process: 2, needs redis-server: 1); "+
		"apt-get install redis-server runs them all", Summary())
}

// withTally empties the package tally for a test and returns the function
// that puts it back, so that the package's own summary stays true.
func withTally(t *testing.T) (restore func()) {
	tally.mu.Lock()
	saved := tally.skipped
	savedEmbedded := tally.embedded
	tally.skipped, tally.embedded = nil, nil
	tally.mu.Unlock()
	return func() {
		tally.mu.Lock()
		tally.skipped, tally.embedded = saved, savedEmbedded
		tally.mu.Unlock()
	}
}

// TestDepsExcludeMiniredis: a package that imports redistest, such as
// bench/peers' tests, links no miniredis; package embedded does.
func TestDepsExcludeMiniredis(t *testing.T) {
	const pkg = "github.com/redlock-go/redlock/internal/redistest"
	deps := goListDeps(t, pkg)
	require.Contains(t, deps, "github.com/gomodule/redigo/redis", "go list listed too little to check")
	for _, d := range deps {
		assert.False(t, strings.HasPrefix(d, "github.com/alicebob/"), "redistest links %s", d)
		assert.False(t, strings.HasPrefix(d, pkg+"/"), "redistest links %s", d)
	}
	assert.Contains(t, goListDeps(t, pkg+"/embedded"), "github.com/alicebob/miniredis/v2",
		"package embedded links no miniredis: the check above proves nothing")
}

// goListDeps returns the import paths a program built from pkg links.
func goListDeps(t *testing.T, pkg string) []string {
	t.Helper()
	// go test puts its own GOROOT/bin first in the test's PATH.
	out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput() //nolint:gosec // G204: the module's own package path
	require.NoError(t, err, "go list -deps %s:\n%s", pkg, out)
	return strings.Fields(string(out))
}
