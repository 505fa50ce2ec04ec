package redistest

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

// RequireEnv is the environment variable that turns a missing redis-server
// into a test failure instead of a skip (set it in CI).
const RequireEnv = "REDLOCK_REQUIRE_REDIS"

// required reports whether RequireEnv is "1". (Reading it through
// os.Getenv also makes go test's cache key depend on it.)
func required() bool { return os.Getenv(RequireEnv) == "1" }

// LookPath returns the path of redis-server on PATH, like exec.LookPath.
func LookPath() (string, error) { return exec.LookPath("redis-server") }

// RedisServerPath returns the path of redis-server. If it is not on PATH,
// the test fails when REDLOCK_REQUIRE_REDIS=1 and is skipped otherwise,
// naming the calling test's package and the Debian package to install.
// Skips are counted in the package's summary (see Main).
func RedisServerPath(t testing.TB) string {
	t.Helper()
	p, err := LookPath()
	if err == nil {
		return p
	}
	if required() {
		t.Fatalf("%s: redis-server not found on PATH (%v); install it with \"apt-get install redis-server\", or unset %s",
			testPackage(), err, RequireEnv)
	}
	skip(t, reasonNoServer)
	return ""
}

// testPackage returns the import path of the package under test, read from
// the test binary's build information ("example.com/pkg.test").
func testPackage() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Path != "" {
		return strings.TrimSuffix(bi.Path, ".test")
	}
	return filepath.Base(os.Args[0])
}
