package redistest

import (
	"fmt"
	"hash/fnv"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
)

// RequireEnv is the environment variable that turns a missing redis-server
// into a test failure instead of a skip (set it in CI).
const RequireEnv = "REDLOCK_REQUIRE_REDIS"

// required reports whether RequireEnv is "1". Reading it through os.Getenv
// also makes go test's cache key depend on it.
func required() bool { return os.Getenv(RequireEnv) == "1" }

// LookPath returns the path of redis-server on PATH, like exec.LookPath.
//
// go test caches a passing package's result and replays it while the
// package's inputs are unchanged. Its inputs include the environment
// variables a test read and the files it opened or stat'ed, but only files
// inside the module: a redis-server installed in /usr/bin after a run that
// skipped would be invisible, and the skips replayed. So LookPath also
// keeps, for every PATH directory, a symbolic link inside the module to
// where redis-server would be there (in .redistest-probe/ at the module's
// root, ignored by git), and stats it. The link's target appearing,
// disappearing or changing then changes the cached inputs.
func LookPath() (string, error) {
	probe()
	return exec.LookPath("redis-server")
}

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

// probe maintains and stats the module's probe links (see LookPath). It
// does nothing outside a module or in a read-only one: the cache then
// misses the change, which is no worse than without the links.
func probe() {
	root := moduleRoot()
	if root == "" {
		return
	}
	dir := filepath.Join(root, probeDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return
	}
	seen := map[string]bool{}
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		if d == "" || seen[d] {
			continue
		}
		seen[d] = true
		if abs, err := filepath.Abs(d); err == nil {
			d = abs
		}
		link, target := probeLink(root, d), filepath.Join(d, "redis-server")
		// Recreating a correct link would change its own lstat and defeat
		// the cache every run: only a missing or wrong one is replaced.
		if cur, err := os.Readlink(link); err != nil || cur != target {
			tmp := fmt.Sprintf("%s.%d.tmp", link, os.Getpid())
			if os.Symlink(target, tmp) == nil && os.Rename(tmp, link) != nil {
				os.Remove(tmp)
			}
		}
		os.Stat(link) // the test log records it; the result does not matter
	}
}

// probeDir holds the probe links, relative to the module root.
const probeDir = ".redistest-probe"

// probeLink returns the path of the probe link for PATH directory dir.
func probeLink(root, dir string) string {
	h := fnv.New64a()
	h.Write([]byte(dir))
	return filepath.Join(root, probeDir, strconv.FormatUint(h.Sum64(), 16))
}

// moduleRoot returns the nearest directory at or above the working
// directory (the package under test) that holds a go.mod, or "".
func moduleRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// testPackage returns the import path of the package under test, read from
// the test binary's build information ("example.com/pkg.test").
func testPackage() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Path != "" {
		return strings.TrimSuffix(bi.Path, ".test")
	}
	return filepath.Base(os.Args[0])
}
