//go:build !tinygo

package core_test

import (
	"testing"

	"github.com/redlock-go/redlock/internal/docnames"
)

// TestDocNamesExist: every doc comment of core and core/memnode names
// only what exists (internal/docnames says which words count as names).
// core's comments may name the root package's Client and Lock, memnode's
// core's Timer and MaxNodes: those packages are Related. Built without
// TinyGo, whose support of go/parser is not tested here; under
// WebAssembly (wasip1, js) the runtimes read the source files from disk.
func TestDocNamesExist(t *testing.T) {
	for _, pkg := range []struct {
		dir  string
		opts docnames.Options
	}{
		{".", docnames.Options{Related: []string{".."}, Allow: coreWords}},
		{"memnode", docnames.Options{Related: []string{"."}, Allow: memnodeWords}},
	} {
		problems, err := docnames.Check(pkg.dir, pkg.opts)
		if err != nil {
			t.Fatalf("reading %s: %v", pkg.dir, err)
		}
		for _, p := range problems {
			t.Error(p)
		}
	}
}

// coreWords are the words core's comments write like names that are not
// names of core or of the root package.
var coreWords = map[string]string{
	"Redis":             "the server",
	"Redlock":           "the algorithm",
	"Lua":               "the scripting language of Redis",
	"TinyGo":            "the compiler",
	"WebAssembly":       "the target",
	"KiB":               "a unit",
	"MiB":               "a unit",
	"XORed":             "a verb",
	"Unix":              "Unix time",
	"Kleppmann":         "Martin Kleppmann, author of the critique of Redlock",
	"RawNode":           "etcd's raft.RawNode, the style core follows",
	"Time":              "time.Time (\"the zero Time\")",
	"ctx.Err":           "the caller's context, ctx by convention",
	"strings.HasPrefix": "the function hasPrefix stands in for; core does not import strings",
}

// memnodeWords are the same for core/memnode.
var memnodeWords = map[string]string{
	"Redis":       "the server",
	"TinyGo":      "the compiler",
	"WebAssembly": "the target",
	"SIGSTOPped":  "a verb: stopped by SIGSTOP",
	"Sub":         "time.Time's Sub method",
}
