package docnames_test

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/redlock-go/redlock/internal/docnames"
)

// TestCheckFindsStaleNames: every name testdata/stale's comments mark
// with "// want" is reported, at its line, and nothing else is.
func TestCheckFindsStaleNames(t *testing.T) {
	dir := filepath.Join("testdata", "stale")
	want := wants(t, filepath.Join(dir, "stale.go"))
	if len(want) < 8 {
		t.Fatalf("testdata/stale marks %d names; expected the eight of the file", len(want))
	}
	problems, err := docnames.Check(dir, docnames.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range problems {
		k := strconv.Itoa(p.Pos.Line) + " " + p.Name
		if !slices.Contains(got, k) {
			got = append(got, k)
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("problems:\n%s\nwant (line name):\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestCheckAcceptsEveryForm: references in each form to names that exist,
// prose that only looks like names, and an allowed word: no problem.
func TestCheckAcceptsEveryForm(t *testing.T) {
	problems, err := docnames.Check(filepath.Join("testdata", "clean"), docnames.Options{
		Allow: map[string]string{"Redis": "the server", "Time": "time.Time"},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// TestCheckRelated: a name of a related package resolves, and the
// related package's name qualifies its own names.
func TestCheckRelated(t *testing.T) {
	problems, err := docnames.Check(filepath.Join("testdata", "stale"), docnames.Options{
		Related:  []string{filepath.Join("testdata", "clean")},
		Packages: []string{"zap"},
	})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range problems {
		names = append(names, p.Name)
	}
	if slices.Contains(names, "zap.Logger") {
		t.Errorf("zap.Logger reported though zap is in Options.Packages: %v", names)
	}
	if !slices.Contains(names, "Locker") {
		t.Errorf("Locker not reported with a related package that lacks it too: %v", names)
	}
}

// wants reads "// want A B" markers: "line A", "line B".
func wants(t *testing.T, path string) []string {
	t.Helper()
	src, err := os.ReadFile(path) //nolint:gosec // G304: the package's own testdata, named by the test
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for i, line := range strings.Split(string(src), "\n") {
		_, names, ok := strings.Cut(line, "// want ")
		if !ok {
			continue
		}
		for _, n := range strings.Fields(names) {
			out = append(out, strconv.Itoa(i+1)+" "+n)
		}
	}
	return out
}
