// Package testguard makes a test that waits on the library fail with a
// message, well before go test's -timeout would end the whole binary with
// a panic. Two guards:
//
//   - Context bounds one wait: a Lock, an Unlock or an Extend a test makes
//     ends, with the test, or after Limit; the library's own error then
//     fails the test where it waited.
//   - Arm bounds the binary: at three quarters of its -timeout it prints
//     which tests are running and every goroutine's stack, and exits 1, so
//     a wait that no context reaches (a goroutine stuck in a channel, say)
//     still fails with its stacks while go test has time left to report
//     the package. Three quarters, not less: the longest packages (the
//     simulation, the driver suites under -race) legitimately run for
//     minutes, and a guard must never fail a binary that is only slow.
package testguard

import (
	"context"
	"flag"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"
)

// Limit is how long Context lets one wait on the library last: far more
// than any lock the tests take needs (their TTLs are seconds at most),
// far less than go test's default -timeout of 10 minutes.
const Limit = time.Minute

// Context returns a context that ends with t, or after Limit.
func Context(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), Limit)
	t.Cleanup(cancel)
	return ctx
}

// Arm parses the test flags (TestMain's job before m.Run) and starts the
// binary's guard: at three quarters of -test.timeout it reports the stuck binary on
// standard error and exits 1. It does nothing under -test.timeout=0. The
// guard is a timer, not a goroutine, so goleak never sees it. stop
// disarms it, for a TestMain that goes on after m.Run.
func Arm() (stop func()) {
	if !flag.Parsed() {
		flag.Parse()
	}
	timeout := time.Duration(0)
	if f := flag.Lookup("test.timeout"); f != nil {
		if g, ok := f.Value.(flag.Getter); ok {
			timeout, _ = g.Get().(time.Duration)
		}
	}
	if timeout <= 0 {
		return func() {}
	}
	after := timeout * 3 / 4
	t := time.AfterFunc(after, func() {
		fmt.Fprint(os.Stderr, Report(after, timeout))
		os.Exit(1)
	})
	return func() { t.Stop() }
}

// Report is what Arm prints: the binary, how long it ran, the tests that
// are running (read from the goroutines' stacks) and every stack.
func Report(ran, timeout time.Duration) string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "testguard: %s has run for %v, three quarters of its -timeout %v: a test is stuck, failing now\n", os.Args[0], ran, timeout)
	fmt.Fprintf(&b, "testguard: running: %s\n", strings.Join(Running(string(buf)), ", "))
	fmt.Fprintf(&b, "testguard: every goroutine:\n%s\n", buf)
	return b.String()
}

// testFunc matches a test function's frame in a stack dump: a function
// whose name starts with Test or Fuzz in some package (a closure of one
// too: a subtest's).
var testFunc = regexp.MustCompile(`(?m)^[\w./-]*?\.((?:Test|Fuzz)\w*)(?:\.func[\d.]+)?\(`)

// Running returns the names of the test functions on the stacks of dump,
// sorted, each once.
func Running(dump string) []string {
	seen := map[string]bool{}
	for _, m := range testFunc.FindAllStringSubmatch(dump, -1) {
		seen[m[1]] = true
	}
	out := make([]string, 0, len(seen))
	for name := range seen {
		if name != "TestMain" {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	if len(out) == 0 {
		return []string{"(no test function on any stack)"}
	}
	return out
}
