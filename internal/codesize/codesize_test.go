package codesize_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
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
// shared folder) and valkeygo (generated, with its generator's header)
// copy it too: none of those counts.
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
		"alpha":                               lines("alpha/alpha.go", "alpha/more.go"),
		"beta":                                lines("beta/beta.go"),
		"gamma":                               lines("gamma/gamma.go"),
		"valkeygo" + codesize.GeneratedSuffix: lines("valkeygo/valkeygo.go"),
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
	pkg := regexp.MustCompile(`^drivers/([^/]+)/.+\.go$`)
	for _, b := range blocks {
		t.Log(b)
		a, c := pkg.FindStringSubmatch(b.A.File), pkg.FindStringSubmatch(b.B.File)
		require.NotNil(t, a, b.A.File)
		require.NotNil(t, c, b.B.File)
		assert.NotEqual(t, a[1], c[1], "%v: a block within one package", b)
		assert.NotContains(t, []string{a[1], c[1]}, "valkeygo", "%v: valkeygo is generated", b)
		assert.GreaterOrEqual(t, b.Lines, 15)
		if !b.Renamed {
			assert.Equal(t, code(t, root, b.A), code(t, root, b.B), "%v: not the same code", b)
		}
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

// tree writes files (paths under drivers/, their sources) into a new
// temporary root and returns it.
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, src := range files {
		p := filepath.Join(root, "drivers", filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o750))
		require.NoError(t, os.WriteFile(p, []byte(src), 0o600)) //nolint:gosec // G703: the test's temporary tree
	}
	return root
}

// own is planted alpha's Own, 17 lines from its func line to its brace.
const own = `func Own(m map[string][]int) []int {
	var out []int
	for k, xs := range m {
		if k == "" {
			continue
		}
		for _, x := range xs {
			if x < 0 {
				x = -x
			}
			out = append(out, x)
		}
	}
	if len(out) == 0 {
		return []int{0}
	}
	return out
}
`

// TestRenamedCopyIsFound: a copy whose identifiers and literals were all
// changed is a block too, marked Renamed, with both its spans; the same
// text is still reported as before, and not twice.
func TestRenamedCopyIsFound(t *testing.T) {
	renamed := `func Flatten(groups map[string][]int) []int {
	var res []int
	for name, vals := range groups {
		if name == "-" {
			continue
		}
		for _, v := range vals {
			if v < 1 {
				v = -v
			}
			res = append(res, v)
		}
	}
	if len(res) == 1 {
		return []int{7}
	}
	return res
}
`
	require.NotEqual(t, own, renamed)
	root := tree(t, map[string]string{
		"alpha/alpha.go": "package alpha\n\n" + own,
		"delta/delta.go": "package delta\n\n// Flatten is alpha's Own, renamed.\n" + renamed,
		"gamma/gamma.go": "package gamma\n\n" + own,
	})
	got, err := codesize.SharedBlocks(root, 15)
	require.NoError(t, err)
	assert.Equal(t, []codesize.Block{
		{A: codesize.Span{File: "drivers/alpha/alpha.go", Start: 3, End: 20}, B: codesize.Span{File: "drivers/delta/delta.go", Start: 4, End: 21}, Lines: 18, Renamed: true},
		{A: codesize.Span{File: "drivers/alpha/alpha.go", Start: 3, End: 20}, B: codesize.Span{File: "drivers/gamma/gamma.go", Start: 3, End: 20}, Lines: 18},
		{A: codesize.Span{File: "drivers/delta/delta.go", Start: 4, End: 21}, B: codesize.Span{File: "drivers/gamma/gamma.go", Start: 3, End: 20}, Lines: 18, Renamed: true},
	}, got)
	assert.Equal(t, "18 lines, names and literals aside: drivers/alpha/alpha.go:3-20 and drivers/delta/delta.go:4-21", got[0].String())
}

// TestTrivialRunsAreNoCopy: two drivers' import blocks, const blocks and
// runs of lines of one shape are as long as a copy, and are not one: a
// renamed block holds Distinct(minLines) different shapes of more than
// two tokens. With one shape fewer than that, the same run is not
// reported; with that many, it is.
func TestTrivialRunsAreNoCopy(t *testing.T) {
	assert.Equal(t, 8, codesize.Distinct(15))
	imports := func(prefix string) string {
		var b strings.Builder
		b.WriteString("import (\n")
		for i := range 16 {
			fmt.Fprintf(&b, "\t%q\n", fmt.Sprintf("example.com/%s/p%d", prefix, i))
		}
		b.WriteString(")\n\n")
		return b.String()
	}
	consts := func(prefix string) string {
		var b strings.Builder
		b.WriteString("const (\n")
		for i := range 16 {
			fmt.Fprintf(&b, "\t%s%d = %q\n", prefix, i, prefix)
		}
		b.WriteString(")\n\n")
		return b.String()
	}
	// body is 15 lines: a first assignment, twelve of the operators ops
	// (the last one repeated), a return and a brace: len(ops)+1 distinct
	// non-trivial shapes.
	body := func(a, b string, ops []string) string {
		var s strings.Builder
		fmt.Fprintf(&s, "\t%s, %s := 1, 2\n", a, b)
		for i := range 12 {
			fmt.Fprintf(&s, "\t%s = %s %s %s\n", a, a, ops[min(i, len(ops)-1)], b)
		}
		fmt.Fprintf(&s, "\treturn %s\n}\n", a)
		return s.String()
	}
	for _, tc := range []struct {
		ops  []string
		want int
	}{
		{[]string{"+", "-", "*", "/", "%", "&"}, 0},      // 7 distinct shapes
		{[]string{"+", "-", "*", "/", "%", "&", "|"}, 1}, // 8
	} {
		root := tree(t, map[string]string{
			"alpha/alpha.go": "package alpha\n\n" + imports("a") + consts("a") + "func f() int {\n" + body("a", "b", tc.ops),
			"beta/beta.go":   "package beta\n\n" + imports("b") + consts("b") + "func g(n int) int {\n" + body("c", "d", tc.ops),
		})
		got, err := codesize.SharedBlocks(root, 15)
		require.NoError(t, err)
		require.Len(t, got, tc.want, "%d distinct shapes: %v", len(tc.ops)+1, got)
		if tc.want == 1 {
			assert.Equal(t, codesize.Block{A: codesize.Span{File: "drivers/alpha/alpha.go", Start: 42, End: 56},
				B: codesize.Span{File: "drivers/beta/beta.go", Start: 42, End: 56}, Lines: 15, Renamed: true}, got[0])
		}
	}
}

// TestOnlyTheGeneratorsFilesAreExempt: a file marked generated is left
// aside only in drivers/valkeygo, directly there, with internal/gen/
// valkeygo's header; marked generated anywhere else under a client
// package, it is an error naming it, from Scan and DriverLines alike.
func TestOnlyTheGeneratorsFilesAreExempt(t *testing.T) {
	header := codesize.Generators["valkeygo"] + "\n\n"
	ok := tree(t, map[string]string{
		"valkeygo/valkeygo.go": header + "package valkeygo\n\n" + own,
		"alpha/alpha.go":       "package alpha\n\n" + own,
	})
	lines, err := codesize.DriverLines(ok)
	require.NoError(t, err)
	assert.Contains(t, lines, "valkeygo"+codesize.GeneratedSuffix)
	blocks, err := codesize.SharedBlocks(ok, 15)
	require.NoError(t, err)
	assert.Empty(t, blocks)

	for name, src := range map[string]string{
		"alpha/more.go":               "// Code generated by hand; DO NOT EDIT.\n\npackage alpha\n",
		"alpha/internal/x/x.go":       header + "package x\n",
		"valkeygo/other.go":           "// Code generated by another tool; DO NOT EDIT.\n\npackage valkeygo\n",
		"valkeygo/internal/deep/d.go": header + "package deep\n",
	} {
		root := tree(t, map[string]string{
			"valkeygo/valkeygo.go": header + "package valkeygo\n",
			"alpha/alpha.go":       "package alpha\n",
			name:                   src,
		})
		_, err := codesize.SharedBlocks(root, 15)
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), "drivers/"+name+" is marked generated", name)
		_, err = codesize.DriverLines(root)
		require.Error(t, err, name)
	}
}

// TestGeneratorsHeader: Generators' header is the one
// internal/gen/valkeygo writes.
func TestGeneratorsHeader(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "gen", "valkeygo", "gen.go"))
	require.NoError(t, err)
	assert.Contains(t, string(src), "const header = "+strconv.Quote(codesize.Generators["valkeygo"]+"\n\n"))
}

// TestSubfoldersCount: the folders below a client package are the
// client's: their lines count under its name, and a block they share
// with another client is reported; testdata is not read.
func TestSubfoldersCount(t *testing.T) {
	root := tree(t, map[string]string{
		"alpha/alpha.go":                  "package alpha\n\n" + own,
		"beta/beta.go":                    "package beta\n",
		"beta/internal/deep/deep.go":      "package deep\n\n" + own,
		"beta/testdata/copy/copy.go":      "package copy\n\n" + own,
		"beta/internal/deep/deep_test.go": "package deep\n\n" + own,
	})
	lines, err := codesize.DriverLines(root)
	require.NoError(t, err)
	assert.Equal(t, map[string]int{"alpha": 20, "beta": 1 + 20}, lines)
	got, err := codesize.SharedBlocks(root, 15)
	require.NoError(t, err)
	assert.Equal(t, []codesize.Block{
		{A: codesize.Span{File: "drivers/alpha/alpha.go", Start: 3, End: 20}, B: codesize.Span{File: "drivers/beta/internal/deep/deep.go", Start: 3, End: 20}, Lines: 18},
	}, got)
	got, err = codesize.Scan(root, codesize.Options{MinLines: 15, Tests: true})
	require.NoError(t, err)
	assert.Len(t, got, 2, "the subfolder's test file too: %v", got)
}
