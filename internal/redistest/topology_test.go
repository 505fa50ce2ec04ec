package redistest

import (
	"fmt"
	"os"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
)

// recordingTB records a launcher's Fatalf or Skipf and stops its
// goroutine there, as testing.T does.
type recordingTB struct {
	testing.TB
	fatal, skipped string
}

func (r *recordingTB) Helper() {}

func (r *recordingTB) Fatalf(format string, args ...any) {
	r.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (r *recordingTB) Skipf(format string, args ...any) {
	r.skipped = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// TestTopologiesWithoutRedisServer: without redis-server on PATH the
// launchers skip, or fail under REDLOCK_REQUIRE_REDIS=1, as Start does.
func TestTopologiesWithoutRedisServer(t *testing.T) {
	defer withTally(t)()
	empty := t.TempDir()
	if root := moduleRoot(); root != "" {
		t.Cleanup(func() { os.Remove(probeLink(root, empty)) })
	}
	t.Setenv("PATH", empty)
	launchers := map[string]func(testing.TB){
		"sentinel": func(tb testing.TB) { StartSentinelGroup(tb, SentinelOptions{}) },
		"cluster":  func(tb testing.TB) { StartCluster(tb, ClusterOptions{}) },
	}
	for name, launch := range launchers {
		for _, require1 := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/required=%v", name, require1), func(t *testing.T) {
				if require1 {
					t.Setenv(RequireEnv, "1")
				} else {
					t.Setenv(RequireEnv, "")
				}
				rec := &recordingTB{TB: t}
				done := make(chan struct{})
				go func() {
					defer close(done)
					launch(rec)
				}()
				<-done
				if require1 {
					assert.Contains(t, rec.fatal, "redis-server not found")
					assert.Empty(t, rec.skipped)
				} else {
					assert.Contains(t, rec.skipped, "redis-server not found")
					assert.Empty(t, rec.fatal)
				}
			})
		}
	}
}
