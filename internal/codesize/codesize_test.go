package codesize_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock/internal/codesize"
)

// planted is a tree whose drivers/ holds planted copies, marked in the
// files with "block:NAME{" on a block's first line and "}block:NAME" on
// its last: alpha and beta share Shared (21 lines, beta's spaced out and
// commented otherwise) and a test (19 lines), alpha and gamma share Near
// (14 lines). alpha/more.go repeats alpha's Own in alpha itself; engine (a
// shared folder) and gen (generated) copy it too: none of those counts.
const planted = "testdata/planted"

// span returns where the planted block name lies in file (under
// planted/drivers), from its markers.
func span(t *testing.T, file, name string) codesize.Span {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(planted, "drivers", file)) //nolint:gosec // G304: a planted fixture
	require.NoError(t, err)
	s := codesize.Span{File: "drivers/" + file}
	for i, l := range strings.Split(string(src), "\n") {
		if strings.Contains(l, "block:"+name+"{") {
			s.Start = i + 1
		}
		if strings.Contains(l, "}block:"+name) {
			s.End = i + 1
		}
	}
	require.NotZero(t, s.Start, "%s has no start marker for %s", file, name)
	if s.End == 0 {
		s.End = len(strings.Split(strings.TrimSuffix(string(src), "\n"), "\n")) // the block runs to the end
	}
	return s
}

// TestSharedBlocksFindsPlantedCopies: at 15 lines only Shared is found,
// with both its spans; at 14, Near too; with the tests, the planted test.
// Copies within one package, in a shared folder or in a generated file
// are never reported.
func TestSharedBlocksFindsPlantedCopies(t *testing.T) {
	shared := codesize.Block{A: span(t, "alpha/alpha.go", "shared"), B: span(t, "beta/beta.go", "shared"), Lines: 21}
	near := codesize.Block{A: span(t, "alpha/alpha.go", "near"), B: span(t, "gamma/gamma.go", "near"), Lines: 14}
	tests := codesize.Block{A: span(t, "alpha/alpha_test.go", "tests"), B: span(t, "beta/beta_test.go", "tests"), Lines: 19}

	got, err := codesize.SharedBlocks(planted, 15)
	require.NoError(t, err)
	assert.Equal(t, []codesize.Block{shared}, got)

	got, err = codesize.SharedBlocks(planted, 14)
	require.NoError(t, err)
	assert.Equal(t, []codesize.Block{shared, near}, got)

	got, err = codesize.SharedBlocks(planted, 22)
	require.NoError(t, err)
	assert.Empty(t, got, "no planted block is 22 lines long")

	got, err = codesize.Scan(planted, codesize.Options{MinLines: 15, Tests: true})
	require.NoError(t, err)
	assert.Equal(t, []codesize.Block{shared, tests}, got)
}

// TestSharedBlocksSeesOneChangedLine: a block edited in its middle is two
// shorter blocks, each reported only when long enough.
func TestSharedBlocksSeesOneChangedLine(t *testing.T) {
	root := t.TempDir()
	for _, f := range []string{"alpha/alpha.go", "beta/beta.go"} {
		src, err := os.ReadFile(filepath.Join(planted, "drivers", f)) //nolint:gosec // G304: a planted fixture
		require.NoError(t, err)
		if f == "beta/beta.go" {
			src = []byte(strings.Replace(string(src), "\t\tcounts[w]++\n", "\t\tcounts[w] += 1\n", 1))
		}
		require.NoError(t, os.MkdirAll(filepath.Join(root, "drivers", filepath.Dir(f)), 0o750))
		require.NoError(t, os.WriteFile(filepath.Join(root, "drivers", f), src, 0o600)) //nolint:gosec // G703: the test's temporary copy
	}
	got, err := codesize.SharedBlocks(root, 15)
	require.NoError(t, err)
	assert.Empty(t, got, "21 lines cut after the 9th leave 9 and 11")
	got, err = codesize.SharedBlocks(root, 9)
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.Equal(t, 11, got[0].Lines)
	assert.Equal(t, 9, got[1].Lines)
}

// TestDriverLines: the non-test lines of each client driver package, a
// generated package's under its marked name, the shared folders left out.
func TestDriverLines(t *testing.T) {
	got, err := codesize.DriverLines(planted)
	require.NoError(t, err)
	lines := func(files ...string) int {
		n := 0
		for _, f := range files {
			src, err := os.ReadFile(filepath.Join(planted, "drivers", f)) //nolint:gosec // G304: a planted fixture
			require.NoError(t, err)
			n += strings.Count(string(src), "\n")
		}
		return n
	}
	assert.Equal(t, map[string]int{
		"alpha":                          lines("alpha/alpha.go", "alpha/more.go"),
		"beta":                           lines("beta/beta.go"),
		"gamma":                          lines("gamma/gamma.go"),
		"gen" + codesize.GeneratedSuffix: lines("gen/gen.go"),
	}, got)
}

// TestThisRepository: on this module's drivers/, every client driver
// package is counted, the generated valkeygo under its marked name, and
// each block SharedBlocks reports at 15 lines joins two hand-written
// packages and holds the same code at both places. Whether any such
// block remains is .ci/run's stage "driver packages share no code"
// (go run ./internal/codesize/cmd/codesize), which fails on one.
func TestThisRepository(t *testing.T) {
	root := filepath.Join("..", "..")
	lines, err := codesize.DriverLines(root)
	require.NoError(t, err)
	entries, err := os.ReadDir(filepath.Join(root, "drivers"))
	require.NoError(t, err)
	for _, e := range entries {
		if e.IsDir() && !slices.Contains(codesize.SharedDirs, e.Name()) {
			assert.True(t, lines[e.Name()] > 0 || lines[e.Name()+codesize.GeneratedSuffix] > 0, "drivers/%s not counted", e.Name())
		}
	}
	assert.Positive(t, lines["valkeygo"+codesize.GeneratedSuffix], "valkeygo is generated")
	assert.NotContains(t, lines, "valkeygo", "valkeygo has no hand-written file")

	blocks, err := codesize.SharedBlocks(root, 15)
	require.NoError(t, err)
	pkg := regexp.MustCompile(`^drivers/([^/]+)/[^/]+\.go$`)
	for _, b := range blocks {
		t.Log(b)
		a, c := pkg.FindStringSubmatch(b.A.File), pkg.FindStringSubmatch(b.B.File)
		require.NotNil(t, a, b.A.File)
		require.NotNil(t, c, b.B.File)
		assert.NotEqual(t, a[1], c[1], "%v: a block within one package", b)
		assert.NotContains(t, []string{a[1], c[1]}, "valkeygo", "%v: valkeygo is generated", b)
		assert.GreaterOrEqual(t, b.Lines, 15)
		assert.Equal(t, code(t, root, b.A), code(t, root, b.B), "%v: not the same code", b)
	}
}

// code returns the lines of s that hold code, trimmed, their trailing
// comments cut: a rougher normalization than the package's, enough to
// compare the blocks of Go as gofmt writes it.
func code(t *testing.T, root string, s codesize.Span) []string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(root, s.File)) //nolint:gosec // G304: a file of the repository SharedBlocks named
	require.NoError(t, err)
	var out []string
	for _, l := range strings.Split(string(src), "\n")[s.Start-1 : s.End] {
		if i := strings.Index(l, " // "); i >= 0 {
			l = l[:i]
		}
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "//") {
			out = append(out, l)
		}
	}
	return out
}
