package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// stale compares the Go files of dir with want, the files Generate makes,
// and returns one problem per file that differs, is missing, or is in dir
// though Generate does not make it. A differing file's problem shows its
// first differing line, both ways.
func stale(want map[string][]byte, dir string) ([]string, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	var problems []string
	have := map[string]bool{}
	for _, p := range paths {
		name := filepath.Base(p)
		have[name] = true
		got, err := os.ReadFile(p) //nolint:gosec // G304: the generated package's own files
		if err != nil {
			return nil, err
		}
		w, ok := want[name]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("%s: not made by the generator (edit drivers/rueidis, or the generator, instead)", name))
		case !bytes.Equal(got, w):
			problems = append(problems, fmt.Sprintf("%s: stale, %s", name, firstDiff(got, w)))
		}
	}
	for name := range want {
		if !have[name] {
			problems = append(problems, fmt.Sprintf("%s: missing", name))
		}
	}
	slices.Sort(problems)
	return problems, nil
}

// firstDiff describes the first line where got and want differ.
func firstDiff(got, want []byte) string {
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := 0; ; i++ {
		switch {
		case i >= len(g) && i >= len(want):
			return "same lines" // unreachable when got != want
		case i >= len(g):
			return fmt.Sprintf("line %d: committed file ends, generator has %q", i+1, w[i])
		case i >= len(w):
			return fmt.Sprintf("line %d: generator's file ends, committed has %q", i+1, g[i])
		case g[i] != w[i]:
			return fmt.Sprintf("line %d:\n\tcommitted: %q\n\tgenerated: %q", i+1, g[i], w[i])
		}
	}
}
