//go:build !tinygo && !wasm

package core_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// allowed is every non-internal package core and memnode may reach,
// transitively. Anything reflection-heavy (fmt, reflect, encoding/*), any
// I/O package (os, net) or any module outside the standard library fails
// the test: the core must stay small under TinyGo and do no I/O.
var allowed = []string{
	"cmp", "context", "errors", "iter", "math/bits", "runtime", "slices",
	"strconv", "sync", "sync/atomic", "syscall", "time", "unicode/utf8", "unsafe",
	"github.com/redlock-go/redlock/core",
	"github.com/redlock-go/redlock/core/memnode",
}

func TestTransitiveImports(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}} {{.Standard}}",
		"github.com/redlock-go/redlock/core", "github.com/redlock-go/redlock/core/memnode").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	var seen int
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		path, std, _ := strings.Cut(line, " ")
		if std == "true" && (strings.HasPrefix(path, "internal/") || strings.Contains(path, "/internal/")) {
			continue // the runtime's own plumbing
		}
		seen++
		if !slices.Contains(allowed, path) {
			t.Errorf("core imports %s (standard: %s), which is not on the allow-list", path, std)
		}
	}
	if seen < 5 {
		t.Fatalf("go list returned too little to check:\n%s", out)
	}
}
