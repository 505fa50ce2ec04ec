package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	rueidisDir  = filepath.Join("..", "..", "..", "drivers", "rueidis")
	valkeygoDir = filepath.Join("..", "..", "..", "drivers", "valkeygo")
)

// TestCommittedCopyIsFresh: the committed drivers/valkeygo is what the
// generator makes of the committed drivers/rueidis, file for file, and
// holds no file the generator does not make.
func TestCommittedCopyIsFresh(t *testing.T) {
	want, err := Generate(rueidisDir)
	require.NoError(t, err)
	problems, err := stale(want, valkeygoDir)
	require.NoError(t, err)
	assert.Empty(t, problems, "drivers/valkeygo is stale: run go generate ./drivers/valkeygo\n%s", strings.Join(problems, "\n"))
}

// TestStaleSeesEachChange: on a copy of the committed package, an edited
// line, an added file and a removed one are each reported, naming the
// file, and the edited line is shown.
func TestStaleSeesEachChange(t *testing.T) {
	want, err := Generate(rueidisDir)
	require.NoError(t, err)
	dir := t.TempDir()
	for name, src := range want {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), src, 0o600))
	}
	problems, err := stale(want, dir)
	require.NoError(t, err)
	require.Empty(t, problems, "a faithful copy")

	edited := strings.Replace(string(want["members.go"]), "vk.IsValkeyNil(err)", "vk.IsValkeyNil(err) || true", 1)
	require.NotEqual(t, string(want["members.go"]), edited, "the planted edit must change members.go")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "members.go"), []byte(edited), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "extra.go"), []byte("package valkeygo\n"), 0o600))
	require.NoError(t, os.Remove(filepath.Join(dir, "export_test.go")))

	problems, err = stale(want, dir)
	require.NoError(t, err)
	require.Len(t, problems, 3, "%s", strings.Join(problems, "\n"))
	assert.Contains(t, problems[0], "export_test.go: missing")
	assert.Contains(t, problems[1], "extra.go: not made by the generator")
	assert.Contains(t, problems[2], "members.go: stale, line ")
	assert.Contains(t, problems[2], "|| true", "the hint shows the committed line")
}

// TestDifferenceMustMatch: when a difference's rueidis text is gone from
// its file, Generate fails and says which difference, rather than making
// a valkeygo without it.
func TestDifferenceMustMatch(t *testing.T) {
	for i, d := range differences {
		dir := copyDir(t, rueidisDir)
		p := filepath.Join(dir, d.File)
		src, err := os.ReadFile(p) //nolint:gosec // G304: the test's copy
		require.NoError(t, err)
		changed := strings.Replace(string(src), d.From, strings.Replace(d.From, " ", "  ", 1), 1) // still Go, no longer From
		require.NotEqual(t, string(src), changed, "difference %d", i)
		require.NoError(t, os.WriteFile(p, []byte(changed), 0o600)) //nolint:gosec // G703: the test's temporary copy
		_, err = Generate(dir)
		require.Error(t, err, "difference %d", i)
		assert.Contains(t, err.Error(), d.File)
		assert.Contains(t, err.Error(), d.Why)
	}
}

// TestNothingSaysRueidis: the generated package imports valkey-go and not
// rueidis, is package valkeygo, and names rueidis only where a
// difference writes it (the package doc says whose fork valkey-go is).
func TestNothingSaysRueidis(t *testing.T) {
	files, err := Generate(rueidisDir)
	require.NoError(t, err)
	allowed := []string{header}
	for _, d := range differences {
		allowed = append(allowed, d.To)
	}
	word := regexp.MustCompile(`(?i)rueidis`)
	for name, src := range files {
		assert.NotContains(t, name, "rueidis")
		f, err := parser.ParseFile(token.NewFileSet(), name, src, parser.ParseComments)
		require.NoError(t, err, name)
		assert.True(t, ast.IsGenerated(f), "%s: Go's tools must see it as generated", name)
		assert.Contains(t, []string{"valkeygo", "valkeygo_test"}, f.Name.Name, name)
		for _, is := range f.Imports {
			assert.NotContains(t, is.Path.Value, "rueidis", "%s imports %s", name, is.Path.Value)
		}
		text := string(src)
		for _, a := range allowed {
			text = strings.ReplaceAll(text, a, "")
		}
		assert.Empty(t, word.FindAllString(text, -1), "%s still says rueidis outside the differences", name)
	}
}

// TestRenameRules: the rules on a file that uses the client without an
// alias, an identifier that says rueidis, and the driver's name.
func TestRenameRules(t *testing.T) {
	src := `// Package rueidis wraps github.com/redis/rueidis; see drivers/rueidis.
package rueidis

import "github.com/redis/rueidis"

// rueidisConn is one rueidis client, as is a newRueidis; rueidislock is another library.
type rueidisConn struct{ c rueidis.Client }

func (c rueidisConn) nil(err error) bool { return rueidis.IsRedisNil(err) }

var name, msg = "rueidis", "rueidis's default"
`
	got, err := generateFileFrom("x.go", []byte(src), nil)
	require.NoError(t, err)
	want := header + `// Package valkeygo wraps github.com/valkey-io/valkey-go; see drivers/valkeygo.
package valkeygo

import "github.com/valkey-io/valkey-go"

// valkeyConn is one valkey-go client, as is a newValkey; rueidislock is another library.
type valkeyConn struct{ c valkey.Client }

func (c valkeyConn) nil(err error) bool { return valkey.IsValkeyNil(err) }

var name, msg = "valkeygo", "valkey-go's default"
`
	assert.Equal(t, want, string(got))
}

// copyDir copies the Go files of dir into a temporary directory.
func copyDir(t *testing.T, dir string) string {
	t.Helper()
	out := t.TempDir()
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	require.NoError(t, err)
	require.NotEmpty(t, paths)
	for _, p := range paths {
		src, err := os.ReadFile(p) //nolint:gosec // G304: the repository's own files
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(out, filepath.Base(p)), src, 0o600)) //nolint:gosec // G703: the test's temporary copy
	}
	return out
}
