package redlock_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// pendingLinks are files the README links to that another change writes.
// A missing one is logged, not failed; once it exists it is checked like
// any other link. Remove an entry when its file lands.
var pendingLinks = map[string]string{}

// mdFence is one fenced block of a markdown file.
type mdFence struct {
	lang  string
	line  int // of the opening fence, from 1
	lines []string
}

func fences(t *testing.T, file string) []mdFence {
	t.Helper()
	data, err := os.ReadFile(file) //nolint:gosec // G304: the repository's own markdown, named by the test
	if err != nil {
		t.Fatal(err)
	}
	var out []mdFence
	var cur *mdFence
	for i, l := range strings.Split(string(data), "\n") {
		trimmed := strings.TrimSpace(l)
		if cur == nil {
			if strings.HasPrefix(trimmed, "```") {
				cur = &mdFence{lang: strings.TrimSpace(strings.TrimPrefix(trimmed, "```")), line: i + 1}
			}
			continue
		}
		if trimmed == "```" {
			out = append(out, *cur)
			cur = nil
			continue
		}
		cur.lines = append(cur.lines, l)
	}
	if cur != nil {
		t.Fatalf("%s:%d: unclosed code block", file, cur.line)
	}
	return out
}

// exampleBodies returns the body of every Example function of the file,
// comments included, one trimmed line per element.
func exampleBodies(t *testing.T, file string) map[string][]string {
	t.Helper()
	src, err := os.ReadFile(file) //nolint:gosec // G304: the repository's own example file, named by the test
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	bodies := map[string][]string{}
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "Example") || fn.Body == nil {
			continue
		}
		from := fset.Position(fn.Body.Lbrace).Offset + 1
		to := fset.Position(fn.Body.Rbrace).Offset
		bodies[fn.Name.Name] = trimLines(strings.Split(string(src[from:to]), "\n"))
	}
	return bodies
}

// trimLines drops indentation and blank lines.
func trimLines(lines []string) []string {
	var out []string
	for _, l := range lines {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

func containsRun(body, block []string) bool {
	for i := 0; i+len(block) <= len(body); i++ {
		match := true
		for j := range block {
			if body[i+j] != block[j] {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}

// TestReadmeGoBlocksAreExamples: every ```go block of README.md is, line
// for line modulo indentation, in the body of one Example of
// readme_example_test.go, so the README's code compiles (and runs, where
// the Example has an Output) and cannot drift from it.
func TestReadmeGoBlocksAreExamples(t *testing.T) {
	bodies := exampleBodies(t, "readme_example_test.go")
	n := 0
	for _, b := range fences(t, "README.md") {
		if b.lang != "go" {
			continue
		}
		n++
		block := trimLines(b.lines)
		found := false
		for _, body := range bodies {
			if containsRun(body, block) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("README.md:%d: this go block is in no Example body of readme_example_test.go:\n%s", b.line, strings.Join(b.lines, "\n"))
		}
	}
	if n == 0 {
		t.Error("README.md has no go block")
	}
	// The driver table's Dial calls, inline code, are the Example's too.
	readme, _ := os.ReadFile("README.md")
	example, _ := os.ReadFile("readme_example_test.go")
	for _, m := range regexp.MustCompile("`([a-z]+\\.Dial\\([^`]*\\))`").FindAllStringSubmatch(string(readme), -1) {
		if !strings.Contains(string(example), m[1]) {
			t.Errorf("README.md: %s is in no Example of readme_example_test.go", m[1])
		}
	}
}

// TestReadmeShellCommands: each command of the README's shell blocks names
// things that exist: a go run's package directory, a script.
func TestReadmeShellCommands(t *testing.T) {
	n := 0
	for _, b := range fences(t, "README.md") {
		if b.lang != "sh" && b.lang != "bash" && b.lang != "shell" {
			continue
		}
		for _, l := range b.lines {
			cmd := strings.TrimSpace(l)
			if i := strings.Index(cmd, "#"); i >= 0 {
				cmd = strings.TrimSpace(cmd[:i])
			}
			if cmd == "" {
				continue
			}
			n++
			f := strings.Fields(cmd)
			switch {
			case len(f) >= 3 && f[0] == "go" && f[1] == "run":
				pkg := f[2]
				if !strings.HasPrefix(pkg, "./") {
					t.Errorf("README.md:%d: %q: go run of a path outside the module", b.line, cmd)
					continue
				}
				if fi, err := os.Stat(pkg); err != nil || !fi.IsDir() {
					t.Errorf("README.md:%d: %q: no package directory %s", b.line, cmd, pkg)
				}
			case len(f) >= 2 && f[0] == "go" && f[1] == "test":
				for _, arg := range f[2:] {
					if strings.HasPrefix(arg, "./") {
						dir := strings.TrimSuffix(strings.TrimSuffix(arg, "..."), "/")
						if _, err := os.Stat(dir); err != nil {
							t.Errorf("README.md:%d: %q: no directory %s", b.line, cmd, dir)
						}
					}
				}
			case strings.HasPrefix(f[0], "./") || strings.HasPrefix(f[0], ".ci/"):
				if _, err := os.Stat(f[0]); err != nil {
					t.Errorf("README.md:%d: %q: no file %s", b.line, cmd, f[0])
				}
			case f[0] == "bash" && len(f) >= 2:
				if _, err := os.Stat(f[1]); err != nil {
					t.Errorf("README.md:%d: %q: no file %s", b.line, cmd, f[1])
				}
			}
		}
	}
	if n == 0 {
		t.Error("README.md has no shell command")
	}
}

var mdLink = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)\)`)

// TestDocLinks: every relative link of README.md and docs/*.md points at
// a file that exists, and a link's #fragment at one of its headings.
func TestDocLinks(t *testing.T) {
	files, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	files = append([]string{"README.md"}, files...)
	for _, file := range files {
		data, err := os.ReadFile(file) //nolint:gosec // G304: README.md and docs/*.md of the repository
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(stripCode(string(data)), "\n") {
			for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				path, frag, _ := strings.Cut(target, "#")
				full := file
				if path != "" {
					full = filepath.Join(filepath.Dir(file), path)
				}
				if _, err := os.Stat(full); err != nil { //nolint:gosec // G703: a link of the repository's docs, checked to exist
					if why, ok := pendingLinks[filepath.ToSlash(full)]; ok {
						t.Logf("%s:%d: %s does not exist yet (%s)", file, i+1, full, why)
						continue
					}
					t.Errorf("%s:%d: link %q: %v", file, i+1, target, err)
					continue
				}
				if frag != "" && strings.HasSuffix(full, ".md") && !anchors(t, full)[frag] {
					t.Errorf("%s:%d: link %q: no heading %q in %s", file, i+1, target, frag, full)
				}
			}
		}
	}
}

// stripCode blanks fenced blocks and inline code, keeping the line count,
// so that code that looks like a link is not taken for one.
func stripCode(s string) string {
	lines := strings.Split(s, "\n")
	in := false
	inline := regexp.MustCompile("`[^`]*`")
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			in = !in
			lines[i] = ""
			continue
		}
		if in {
			lines[i] = ""
			continue
		}
		lines[i] = inline.ReplaceAllString(l, "x")
	}
	return strings.Join(lines, "\n")
}

// anchors returns the GitHub anchors of a markdown file's headings.
func anchors(t *testing.T, file string) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(file) //nolint:gosec // G304: the repository's own markdown, named by the test
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	seen := map[string]int{}
	for _, l := range strings.Split(stripFences(string(data)), "\n") {
		if !strings.HasPrefix(l, "#") {
			continue
		}
		h := strings.TrimSpace(strings.TrimLeft(l, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(h) {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteRune('-')
			}
		}
		slug := b.String()
		if k := seen[slug]; k > 0 {
			out[slug+"-"+strconv.Itoa(k)] = true
		} else {
			out[slug] = true
		}
		seen[slug]++
	}
	return out
}

func stripFences(s string) string {
	lines := strings.Split(s, "\n")
	in := false
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			in = !in
			lines[i] = ""
		} else if in {
			lines[i] = ""
		}
	}
	return strings.Join(lines, "\n")
}

// TestReadmeIsAFrontDoor: the README stays short; detail goes to docs/.
func TestReadmeIsAFrontDoor(t *testing.T) {
	data, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(string(data), "\n"); lines > 250 || len(data) > 16000 {
		t.Errorf("README.md has %d lines and %d bytes; keep it within 250 lines and 16,000 bytes, and move detail to docs/", lines, len(data))
	}
}
