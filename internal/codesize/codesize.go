// Package codesize measures the client driver packages under drivers/:
// how many lines each one holds, and which blocks of code two of them
// share. The targets ask that each driver keep only its client's
// adapters and that no two drivers share a block of 15 lines or more;
// .ci/run's stage "driver packages share no code" and the benchmarks'
// targets table read both from here.
//
// A client driver package is a folder directly under drivers/ but those
// of SharedDirs. A generated file (one with Go's "Code generated ... DO
// NOT EDIT." line, as drivers/valkeygo's are) is counted apart and never
// compared: it is a copy by design, and a test keeps it fresh.
package codesize

import (
	"bytes"
	"cmp"
	"fmt"
	"go/ast"
	"go/parser"
	"go/scanner"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// SharedDirs are the folders under drivers/ that are not a client's
// driver: what the drivers share, and the public contract suite.
var SharedDirs = []string{"conformance", "engine", "internal", "wire"}

// GeneratedSuffix ends a DriverLines key that counts a package's
// generated files: "valkeygo" + GeneratedSuffix.
const GeneratedSuffix = " (generated)"

// DriverLines returns the number of lines of each client driver
// package's non-test Go files, by package folder name. A package's
// generated files are counted under the name with GeneratedSuffix, so
// that a generated package (valkeygo) appears only under that key and a
// target on hand-written lines can leave it aside.
func DriverLines(root string) (map[string]int, error) {
	files, err := driverFiles(root, false)
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, f := range files {
		key := f.pkg
		if f.generated {
			key += GeneratedSuffix
		}
		out[key] += f.lines
	}
	return out, nil
}

// A Span is lines Start to End (1-based, inclusive) of File, a path
// relative to the root, with slashes.
type Span struct {
	File       string
	Start, End int
}

// String is file:start-end.
func (s Span) String() string { return fmt.Sprintf("%s:%d-%d", s.File, s.Start, s.End) }

// A Block is code that two client driver packages share: Lines
// consecutive normalized lines (see SharedBlocks) at A in one and at B in
// the other.
type Block struct {
	A, B  Span
	Lines int
}

// String names the block's length and both its spans.
func (b Block) String() string { return fmt.Sprintf("%d lines: %s and %s", b.Lines, b.A, b.B) }

// Options say what Scan compares.
type Options struct {
	// MinLines is the least number of normalized lines a reported block
	// holds.
	MinLines int
	// Tests compares the packages' _test.go files too.
	Tests bool
}

// SharedBlocks returns the blocks of at least minLines consecutive
// normalized lines that occur in two different client driver packages'
// non-test files. A line is normalized by dropping its comments and
// trimming its spaces; blank lines, and lines that held only a comment,
// are left out. Generated files are not compared. A block is reported
// once per pair of places, as long as it runs there (maximal).
func SharedBlocks(root string, minLines int) ([]Block, error) {
	return Scan(root, Options{MinLines: minLines})
}

// Scan is SharedBlocks with the test files as an option.
func Scan(root string, o Options) ([]Block, error) {
	if o.MinLines < 1 {
		return nil, fmt.Errorf("codesize: MinLines %d, want at least 1", o.MinLines)
	}
	files, err := driverFiles(root, o.Tests)
	if err != nil {
		return nil, err
	}
	var out []Block
	for i, a := range files {
		for _, b := range files[i+1:] {
			if a.pkg != b.pkg && !a.generated && !b.generated {
				out = append(out, shared(a, b, o.MinLines)...)
			}
		}
	}
	slices.SortFunc(out, func(x, y Block) int {
		return cmp.Or(y.Lines-x.Lines, strings.Compare(x.A.File, y.A.File), x.A.Start-y.A.Start,
			strings.Compare(x.B.File, y.B.File), x.B.Start-y.B.Start)
	})
	return out, nil
}

// shared returns the maximal runs of at least minLines equal lines of a and b:
// each diagonal (a fixed offset between a's lines and b's) is walked
// once.
func shared(a, b file, minLines int) []Block {
	var out []Block
	for d := -(len(b.norm) - 1); d < len(a.norm); d++ {
		run := 0
		i := max(d, 0)
		for ; i < len(a.norm) && i-d < len(b.norm); i++ {
			if a.norm[i].text == b.norm[i-d].text {
				run++
				continue
			}
			out = appendRun(out, a, b, i, d, run, minLines)
			run = 0
		}
		out = appendRun(out, a, b, i, d, run, minLines)
	}
	return out
}

// appendRun appends the run of n equal lines that ends before a's line
// index end, on diagonal d, when it is long enough.
func appendRun(out []Block, a, b file, end, d, n, minLines int) []Block {
	if n < minLines {
		return out
	}
	start := end - n
	return append(out, Block{
		A:     Span{a.path, a.norm[start].line, a.norm[end-1].line},
		B:     Span{b.path, b.norm[start-d].line, b.norm[end-1-d].line},
		Lines: n,
	})
}

// A file is one Go file of a client driver package.
type file struct {
	pkg, path string // folder name under drivers/; path from the root, with slashes
	generated bool
	lines     int    // physical lines
	norm      []line // normalized lines, in order
}

// A line is a normalized line and its 1-based line number.
type line struct {
	text string
	line int
}

// driverFiles reads the Go files of every client driver package, their
// tests too when tests is set.
func driverFiles(root string, tests bool) ([]file, error) {
	dirs, err := os.ReadDir(filepath.Join(root, "drivers"))
	if err != nil {
		return nil, err
	}
	var out []file
	for _, d := range dirs {
		if !d.IsDir() || slices.Contains(SharedDirs, d.Name()) {
			continue
		}
		paths, err := filepath.Glob(filepath.Join(root, "drivers", d.Name(), "*.go"))
		if err != nil {
			return nil, err
		}
		for _, p := range paths {
			if !tests && strings.HasSuffix(p, "_test.go") {
				continue
			}
			f, err := readFile(root, p)
			if err != nil {
				return nil, err
			}
			f.pkg = d.Name()
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("codesize: no client driver package under %s", filepath.Join(root, "drivers"))
	}
	return out, nil
}

// readFile reads and normalizes the Go file at path.
func readFile(root, path string) (file, error) {
	src, err := os.ReadFile(path) //nolint:gosec // G304: the repository's own files
	if err != nil {
		return file{}, err
	}
	rel, err := filepath.Rel(root, path)
	if err != nil {
		return file{}, err
	}
	fset := token.NewFileSet()
	head, err := parser.ParseFile(fset, path, src, parser.PackageClauseOnly|parser.ParseComments)
	if err != nil {
		return file{}, err
	}
	f := file{path: filepath.ToSlash(rel), generated: ast.IsGenerated(head), lines: bytes.Count(src, []byte("\n"))}
	if len(src) > 0 && src[len(src)-1] != '\n' {
		f.lines++
	}
	f.norm = normalize(src)
	return f, nil
}

// normalize returns src's lines without their comments, trimmed, the
// empty ones left out.
func normalize(src []byte) []line {
	code := bytes.Clone(src)
	var s scanner.Scanner
	fset := token.NewFileSet()
	s.Init(fset.AddFile("", -1, len(src)), src, nil, scanner.ScanComments)
	for {
		pos, tok, lit := s.Scan()
		if tok == token.EOF {
			break
		}
		if tok == token.COMMENT {
			start := fset.Position(pos).Offset
			for i := start; i < start+len(lit); i++ {
				if code[i] != '\n' {
					code[i] = ' '
				}
			}
		}
	}
	var out []line
	for i, l := range strings.Split(string(code), "\n") {
		if t := strings.TrimSpace(l); t != "" {
			out = append(out, line{t, i + 1})
		}
	}
	return out
}
