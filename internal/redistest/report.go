package redistest

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

// Why redistest skips a test, as the package summary prints it.
const (
	reasonNoServer = "needs redis-server"
	reasonSIGSTOP  = "needs SIGSTOP of a real redis-server process"
)

// tally counts, for this test binary, the tests that redistest skipped by
// reason and those that ran on embedded servers.
var tally struct {
	mu       sync.Mutex
	skipped  map[string]map[string]bool // reason -> test names
	embedded map[string]bool            // test names
}

// skip records t as skipped for reason and skips it.
func skip(t testing.TB, reason string) {
	t.Helper()
	tally.mu.Lock()
	if tally.skipped == nil {
		tally.skipped = map[string]map[string]bool{}
	}
	if tally.skipped[reason] == nil {
		tally.skipped[reason] = map[string]bool{}
	}
	tally.skipped[reason][t.Name()] = true
	tally.mu.Unlock()
	recordOpen()
	t.Skipf("%s: redis-server not found on PATH and this test %s; install it with \"apt-get install redis-server\", or set %s=1 to make this a failure",
		testPackage(), reason, RequireEnv)
}

// ranEmbedded records that t used an embedded server.
func ranEmbedded(t testing.TB) {
	tally.mu.Lock()
	if tally.embedded == nil {
		tally.embedded = map[string]bool{}
	}
	tally.embedded[t.Name()] = true
	tally.mu.Unlock()
	recordOpen()
}

// Summary returns the package's one-line account of what redistest skipped
// and why, and of the tests that ran on the embedded miniredis, or "" when
// every test had a real redis-server.
func Summary() string {
	tally.mu.Lock()
	defer tally.mu.Unlock()
	if len(tally.skipped) == 0 && len(tally.embedded) == 0 {
		return ""
	}
	parts := []string{testPackage() + ": redis-server not found on PATH"}
	if n := len(tally.embedded); n > 0 {
		parts = append(parts, plural(n, "test")+" ran on the embedded miniredis")
	}
	if len(tally.skipped) > 0 {
		reasons := make([]string, 0, len(tally.skipped))
		total := 0
		for r, tests := range tally.skipped {
			reasons = append(reasons, fmt.Sprintf("%s: %d", r, len(tests)))
			total += len(tests)
		}
		sort.Strings(reasons)
		parts = append(parts, fmt.Sprintf("%s skipped (%s)", plural(total, "test"), strings.Join(reasons, ", ")))
	}
	return strings.Join(parts, "; ") + "; apt-get install redis-server runs them all"
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// Main is a TestMain for packages whose tests start servers: it runs the
// tests, checks that none left a goroutine behind (goleak), and prints
// Summary when it is not empty. A run with a summary is kept out of go
// test's cache (see keepFromCache), so the line shows on every run, not
// only the first.
//
// go test hides a passing package's output unless -v is given, which would
// hide the summary exactly when it matters. So, on Linux, when the test
// binary runs under the go command and that command writes to a pipe or a
// terminal, the line also goes to the go command's own standard output,
// beside its "ok" line. Elsewhere it is in the test output (go test -v).
func Main(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: errors on successful test run: %v\n", err)
			code = 1
		}
	}
	if s := Summary(); s != "" {
		keepFromCache(s)
		fmt.Println(s)
		if !testing.Verbose() {
			if f := goCommandOutput(); f != nil {
				fmt.Fprintln(f, s)
				f.Close()
			}
		}
	}
	os.Exit(code)
}

// The go command does not cache a test result when a file the tests opened
// inside the module changed less than two seconds before the run ended. The
// test log records opens only while the tests run, so the first test that
// skips or runs embedded opens the summary file (recordOpen), and Main
// rewrites it after the tests (keepFromCache): the next run runs again
// instead of replaying a result without its summary line.

var recordOnce sync.Once

// recordOpen opens the package's summary file, creating it, once per test
// binary; it must be called from a running test.
func recordOpen() {
	recordOnce.Do(func() {
		name := summaryFile()
		if name == "" {
			return
		}
		if f, err := os.OpenFile(name, os.O_RDONLY|os.O_CREATE, 0o644); err == nil {
			f.Close()
		}
	})
}

// keepFromCache writes summary to the file recordOpen opened.
func keepFromCache(summary string) {
	if name := summaryFile(); name != "" {
		os.WriteFile(name, []byte(summary+"\n"), 0o644)
	}
}

// summaryFile returns the path of the package's summary file in the
// module's probe directory, or "" outside a writable module.
func summaryFile() string {
	root := moduleRoot()
	if root == "" {
		return ""
	}
	dir := filepath.Join(root, probeDir)
	if os.MkdirAll(dir, 0o755) != nil {
		return ""
	}
	return filepath.Join(dir, "summary-"+strings.ReplaceAll(testPackage(), "/", "_"))
}
