package redistest

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/redlock-go/redlock/internal/testguard"
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
	delete(tally.embedded, t.Name()) // it started embedded servers, then needed more: skipped, not run
	tally.mu.Unlock()
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
// Summary, one line for the package, when it is not empty. go test shows
// it, as it shows each skipped test's t.Skip message, under -v or when the
// package fails; CI sets REDLOCK_REQUIRE_REDIS=1, so that a missing
// redis-server fails instead of skipping.
func Main(m *testing.M) {
	testguard.Arm()
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(
			// rueidis and valkey-go close the connections a Cluster's topology
			// refresh replaced 5 s later, on a goroutine of their own.
			goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*clusterClient)._refresh.func2"),
			goleak.IgnoreAnyFunction("github.com/valkey-io/valkey-go.(*clusterClient)._refresh.func2"),
			// A refresh they schedule (after a MOVED or a failed node) sleeps
			// up to a second before it runs, even when the client is closed.
			goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*call).DelayDo.func1"),
			goleak.IgnoreAnyFunction("github.com/valkey-io/valkey-go.(*call).DelayDo.func1"),
		); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: errors on successful test run: %v\n", err)
			code = 1
		}
	}
	if s := Summary(); s != "" {
		fmt.Println(s)
	}
	os.Exit(code)
}
