package redistest

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recorder is a testing.TB that records Fatalf and Skipf and ends only
// the goroutine of serverPath, not the test, so that a test can look at
// what RedisServerPath does without redis-server.
type recorder struct {
	testing.TB
	name           string
	fatal, skipped string
}

func (r *recorder) Helper()                      {}
func (r *recorder) Name() string                 { return r.name }
func (r *recorder) Fatalf(f string, args ...any) { r.fatal = fmt.Sprintf(f, args...); runtime.Goexit() }
func (r *recorder) Skipf(f string, args ...any) {
	r.skipped = fmt.Sprintf(f, args...)
	runtime.Goexit()
}

// serverPath calls RedisServerPath(r) on a goroutine of its own, which
// r's Fatalf and Skipf end, and returns what it returned.
func serverPath(r *recorder) (path string, returned bool) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		path = RedisServerPath(r)
		returned = true
	}()
	<-done
	return path, returned
}

// TestRedisServerPathMissing: without redis-server on PATH, a test skips
// with a message naming its package and the Debian package, and is
// counted in the summary; with REDLOCK_REQUIRE_REDIS=1 it fails instead.
func TestRedisServerPathMissing(t *testing.T) {
	t.Setenv("PATH", t.TempDir())

	t.Run("skip", func(t *testing.T) {
		defer withTally(t)()
		t.Setenv(RequireEnv, "")
		r := &recorder{TB: t, name: "TestX"}
		_, returned := serverPath(r)
		assert.False(t, returned, "the test must end at the skip")
		assert.Empty(t, r.fatal)
		assert.Contains(t, r.skipped, "github.com/redlock-go/redlock/internal/redistest: redis-server not found on PATH")
		assert.Contains(t, r.skipped, `apt-get install redis-server`)
		assert.Contains(t, r.skipped, RequireEnv+"=1")
		assert.Contains(t, Summary(), "1 test skipped (needs redis-server: 1)")
	})
	t.Run("required", func(t *testing.T) {
		defer withTally(t)()
		t.Setenv(RequireEnv, "1")
		r := &recorder{TB: t, name: "TestX"}
		_, returned := serverPath(r)
		assert.False(t, returned, "the test must end at the failure")
		assert.Empty(t, r.skipped)
		assert.Contains(t, r.fatal, "redis-server not found on PATH")
		assert.Empty(t, Summary(), "a failure is not a skip")
	})
	p, err := LookPath()
	require.Error(t, err, "PATH is an empty directory")
	assert.Empty(t, p)
}
