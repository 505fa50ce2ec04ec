// Package docnames checks that a package's doc comments name only what
// the package declares: a comment that still says Locker after Locker was
// removed sends its reader after a name that does not exist. Tests call
// Check on a package directory; it parses the package's source (not its
// tests) with go/parser, so it needs the files on disk.
//
// A word of a doc comment is a reference, and must resolve, when it is
// written like one:
//
//   - a doc link, [Name], [Name.Member], [pkg.Name] or [*Name];
//   - a backquoted identifier, `Name` or `Name.Member`;
//   - a selector whose left side is capitalized, Type.Member: Type must
//     be a type of the package, Member one of its fields or methods
//     (promoted ones included);
//   - a selector whose left side is a package, pkg.Name: pkg must be the
//     package itself (then Name must resolve), a package one of its files
//     imports, or one of Options.Packages;
//   - a CamelCase word, with a capital letter after a lower-case one
//     (FenceKey, DefaultDriftPPM, holderExpiry);
//   - a capitalized word that does not start a sentence (Locker in "a
//     Locker with Config.Fencing").
//
// A name resolves when the package, or a package of Options.Related,
// declares it at top level or as a field or method of one of its types,
// or when it is a parameter or result of the function the comment
// documents; a word also resolves when it is the plural of such a name
// (Grants, TokenSources). Words in double quotes (titles
// of sections, error text) and all-capital words (SET, NX, OK, N) are
// prose. Anything else a package's comments write that way, a product
// name or an English word that starts a clause after a comma, goes in
// Options.Allow with the reason it is not a name of the package.
package docnames

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"unicode"
)

// Options are the names a package's comments may write like identifiers
// without the package declaring them.
type Options struct {
	// Allow maps a word (Redis, TinyGo) or a selector of another
	// project (etcd's RawNode) to the reason it is not a reference.
	Allow map[string]string
	// Packages are package names comments may qualify (sim in
	// sim.Campaign) besides the ones the package's files import.
	Packages []string
	// Related are directories of packages whose names the comments
	// write unqualified (core's "the root package's Client"): a name
	// or Type.Member declared there resolves too, and so does
	// pkg.Name qualified by such a package's name.
	Related []string
}

// Problem is a reference that does not resolve.
type Problem struct {
	Pos  token.Position // file:line of the comment line
	Name string         // the reference as written
	Why  string
}

// String is file:line: name: why, the form go vet's messages take.
func (p Problem) String() string {
	return fmt.Sprintf("%s:%d: %s: %s", p.Pos.Filename, p.Pos.Line, p.Name, p.Why)
}

// Check parses the package in dir, its non-test .go files only, and
// returns every doc-comment reference that does not resolve, in file and
// line order.
func Check(dir string, opts Options) ([]Problem, error) {
	fset := token.NewFileSet()
	files, err := parseDir(fset, dir)
	if err != nil {
		return nil, err
	}
	s := newScope(files, opts)
	for _, r := range opts.Related {
		rf, err := parseDir(token.NewFileSet(), r)
		if err != nil {
			return nil, err
		}
		s.related = append(s.related, newScope(rf, Options{}))
	}
	c := checker{scope: s, fset: fset}
	for _, f := range files {
		c.file(f)
	}
	slices.SortStableFunc(c.problems, func(a, b Problem) int {
		if a.Pos.Filename != b.Pos.Filename {
			return strings.Compare(a.Pos.Filename, b.Pos.Filename)
		}
		return a.Pos.Line - b.Pos.Line
	})
	return c.problems, nil
}

// parseDir parses the non-test .go files of dir, with their comments.
func parseDir(fset *token.FileSet, dir string) ([]*ast.File, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var files []*ast.File
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("docnames: no Go source in %s", dir)
	}
	return files, nil
}

// scope is what a package declares.
type scope struct {
	pkg      string
	names    map[string]bool            // top-level names
	types    map[string]bool            // top-level type names
	members  map[string]map[string]bool // type -> its fields and methods
	embeds   map[string][]string        // type -> the package's types it embeds
	packages map[string]bool            // names a selector may qualify
	allow    map[string]string
	related  []*scope          // Options.Related
	foreign  map[string]string // type -> the other package's type it is or is made of (Config = core.Config)
}

func newScope(files []*ast.File, opts Options) *scope {
	s := &scope{
		pkg:      files[0].Name.Name,
		names:    map[string]bool{},
		types:    map[string]bool{},
		members:  map[string]map[string]bool{},
		embeds:   map[string][]string{},
		packages: map[string]bool{},
		foreign:  map[string]string{},
		allow:    opts.Allow,
	}
	for _, p := range opts.Packages {
		s.packages[p] = true
	}
	member := func(typ, name string) {
		if s.members[typ] == nil {
			s.members[typ] = map[string]bool{}
		}
		s.members[typ][name] = true
	}
	for _, f := range files {
		for _, imp := range f.Imports {
			path := strings.Trim(imp.Path.Value, `"`)
			name := path[strings.LastIndex(path, "/")+1:]
			if imp.Name != nil {
				name = imp.Name.Name
			}
			s.packages[name] = true
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					s.names[d.Name.Name] = true
					continue
				}
				member(typeName(d.Recv.List[0].Type), d.Name.Name)
			case *ast.GenDecl:
				for _, sp := range d.Specs {
					switch sp := sp.(type) {
					case *ast.ValueSpec:
						for _, n := range sp.Names {
							s.names[n.Name] = true
						}
					case *ast.TypeSpec:
						s.names[sp.Name.Name] = true
						s.types[sp.Name.Name] = true
						if s.members[sp.Name.Name] == nil {
							s.members[sp.Name.Name] = map[string]bool{}
						}
						var fields *ast.FieldList
						switch t := sp.Type.(type) {
						case *ast.StructType:
							fields = t.Fields
						case *ast.InterfaceType:
							fields = t.Methods
						case *ast.SelectorExpr:
							s.foreign[sp.Name.Name] = t.Sel.Name
						}
						if fields == nil {
							continue
						}
						for _, fl := range fields.List {
							if len(fl.Names) == 0 {
								if n := typeName(fl.Type); n != "" {
									member(sp.Name.Name, n)
									s.embeds[sp.Name.Name] = append(s.embeds[sp.Name.Name], n)
								}
							}
							for _, n := range fl.Names {
								member(sp.Name.Name, n.Name)
							}
						}
					}
				}
			}
		}
	}
	return s
}

// typeName is the name of a receiver or embedded type: T, *T, T[P], pkg.T.
func typeName(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.Ident:
		return t.Name
	case *ast.StarExpr:
		return typeName(t.X)
	case *ast.IndexExpr:
		return typeName(t.X)
	case *ast.IndexListExpr:
		return typeName(t.X)
	case *ast.SelectorExpr:
		return t.Sel.Name
	}
	return ""
}

// hasMember reports whether typ has member m, promoted ones included.
func (s *scope) hasMember(typ, m string, seen map[string]bool) bool {
	if s.members[typ][m] {
		return true
	}
	if seen[typ] {
		return false
	}
	seen[typ] = true
	for _, e := range s.embeds[typ] {
		if s.hasMember(e, m, seen) {
			return true
		}
	}
	return false
}

// has reports whether n is a top-level name of the package or a member
// of one of its types.
func (s *scope) has(n string) bool { return s.names[n] || s.anyMember(n) }

// anyMember reports whether some type of the package has member m.
func (s *scope) anyMember(m string) bool {
	for _, ms := range s.members {
		if ms[m] {
			return true
		}
	}
	return false
}

type checker struct {
	scope    *scope
	fset     *token.FileSet
	problems []Problem
	params   map[string]bool // the documented function's parameters and results
}

// file checks every doc comment of f: the package clause's, each
// declaration's, each spec's and each field's.
func (c *checker) file(f *ast.File) {
	c.comment(f.Doc)
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			c.params = map[string]bool{}
			for _, fl := range []*ast.FieldList{d.Recv, d.Type.Params, d.Type.Results} {
				if fl == nil {
					continue
				}
				for _, p := range fl.List {
					for _, n := range p.Names {
						c.params[n.Name] = true
					}
				}
			}
			c.comment(d.Doc)
			c.params = nil
		case *ast.GenDecl:
			c.comment(d.Doc)
			for _, sp := range d.Specs {
				switch sp := sp.(type) {
				case *ast.ValueSpec:
					c.comment(sp.Doc)
					c.comment(sp.Comment)
				case *ast.TypeSpec:
					c.comment(sp.Doc)
					c.comment(sp.Comment)
					var fields *ast.FieldList
					switch t := sp.Type.(type) {
					case *ast.StructType:
						fields = t.Fields
					case *ast.InterfaceType:
						fields = t.Methods
					}
					if fields == nil {
						continue
					}
					for _, fl := range fields.List {
						c.comment(fl.Doc)
						c.comment(fl.Comment)
					}
				}
			}
		}
	}
}

// word is a run of identifier characters and dots between them; the
// doc-link and backquote forms are told by the characters around it.
var word = regexp.MustCompile(`\*?[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*`)

// listItem is the marker of a list item of a doc comment.
var listItem = regexp.MustCompile(`^\s*(?:[-*+•]|\d+[.)])\s`)

func (c *checker) comment(cg *ast.CommentGroup) {
	if cg == nil {
		return
	}
	start := true // the next capitalized word starts a sentence
	for _, cm := range cg.List {
		pos := c.fset.Position(cm.Slash)
		text := strings.TrimPrefix(cm.Text, "//")
		if strings.HasPrefix(cm.Text, "/*") {
			text = strings.TrimSuffix(strings.TrimPrefix(cm.Text, "/*"), "*/")
		}
		for i, line := range strings.Split(text, "\n") {
			at := pos
			at.Line += i
			start = c.line(at, line, start)
		}
	}
}

// line checks one line of a comment; start says whether it begins a
// sentence, and the result whether the next line does.
func (c *checker) line(pos token.Position, line string, start bool) bool {
	if strings.HasPrefix(line, "go:") || strings.HasPrefix(line, "line ") {
		return start // a directive
	}
	trimmed := strings.TrimSpace(line)
	if trimmed == "" || strings.HasPrefix(trimmed, "# ") {
		return true // a paragraph break or a heading
	}
	// gofmt indents a doc comment's code with a tab, and its lists'
	// continuation lines with spaces.
	code := strings.HasPrefix(line, "\t")
	// A list item starts a sentence: "- Clocks:", "1. reads".
	if m := listItem.FindString(line); m != "" {
		start = true
		line = strings.Repeat(" ", len(m)) + line[len(m):]
	}
	quoted := quotedSpans(line)
	prevEnd := 0
	for _, loc := range word.FindAllStringIndex(line, -1) {
		if gap := line[prevEnd:loc[0]]; strings.ContainsAny(gap, ".:?!") && strings.ContainsAny(gap, " \t") {
			start = true // the gap ends a sentence or a clause
		}
		prevEnd = loc[1]
		w := line[loc[0]:loc[1]]
		before, after := byte(' '), byte(' ')
		if loc[0] > 0 {
			before = line[loc[0]-1]
		}
		if loc[1] < len(line) {
			after = line[loc[1]]
		}
		sentenceStart := start
		start = false
		if quoted(loc[0]) {
			continue
		}
		switch {
		case before == '[' && after == ']' && !strings.HasPrefix(line[loc[1]:], "]:"):
			c.ref(pos, w, true)
		case before == '`' && after == '`':
			c.ref(pos, w, true)
		case code:
			// Code in a comment names its own variables: only
			// selectors of the package's types and of packages count.
			first, _, dotted := strings.Cut(strings.TrimPrefix(w, "*"), ".")
			if dotted && (isUpper(first[0]) || first == c.scope.pkg || c.relatedPkg(first)) {
				c.ref(pos, w, false)
			}
		default:
			c.prose(pos, w, sentenceStart)
		}
	}
	// Whether the next line starts a sentence: this one ends with one.
	end := strings.TrimRight(trimmed, `)"'`)
	return strings.HasSuffix(end, ".") || strings.HasSuffix(end, ":") ||
		strings.HasSuffix(end, "?") || strings.HasSuffix(end, "!")
}

// quotedSpans returns whether byte i of line is inside double quotes.
func quotedSpans(line string) func(i int) bool {
	var spans [][2]int
	open := -1
	for i := 0; i < len(line); i++ {
		if line[i] != '"' {
			continue
		}
		if open < 0 {
			open = i
		} else {
			spans = append(spans, [2]int{open, i})
			open = -1
		}
	}
	return func(i int) bool {
		for _, s := range spans {
			if s[0] < i && i < s[1] {
				return true
			}
		}
		return false
	}
}

// prose checks a word of running text: it is a reference only when
// written like one (see the package documentation).
func (c *checker) prose(pos token.Position, w string, sentenceStart bool) {
	w = strings.TrimPrefix(w, "*")
	if _, ok := c.scope.allow[w]; ok {
		return
	}
	if strings.Contains(w, ".") {
		first, _, _ := strings.Cut(w, ".")
		rest := w[len(first)+1:]
		sel, _, _ := strings.Cut(rest, ".")
		switch {
		case isUpper(first[0]):
			c.ref(pos, w, false)
		case isUpper(sel[0]) && (c.scope.packages[first] || first == c.scope.pkg):
			c.ref(pos, w, false)
		case isUpper(sel[0]) && !c.params[first]:
			// A lower-case qualifier of an exported name is a
			// package the comment names without importing it.
			c.report(pos, w, "qualifier "+first+" is neither an imported package nor a parameter (Options.Packages)")
		default:
			// e.g., i.e., file.go, a parameter's field: prose.
			for _, part := range strings.Split(w, ".") {
				if camel(part) {
					c.ref(pos, part, false)
				}
			}
		}
		return
	}
	switch {
	case allCaps(w):
	case camel(w):
		c.ref(pos, w, false)
	case isUpper(w[0]) && !sentenceStart:
		if !c.resolves(w) && !c.resolves(strings.TrimSuffix(w, "s")) {
			c.report(pos, w, "capitalized mid-sentence but not a name of package "+c.scope.pkg+" (Options.Allow if it is a word)")
		}
	}
}

// ref checks an explicit reference: Name, Name.Member, pkg.Name.Member.
// link says it was written as a doc link or in backquotes, where a
// lower-case single name must resolve too.
func (c *checker) ref(pos token.Position, w string, link bool) {
	w = strings.TrimPrefix(w, "*")
	if _, ok := c.scope.allow[w]; ok {
		return
	}
	parts := strings.Split(w, ".")
	scopes := append([]*scope{c.scope}, c.scope.related...)
	if len(parts) > 1 && !isUpper(parts[0][0]) {
		switch {
		case parts[0] == c.scope.pkg:
			scopes, parts = scopes[:1], parts[1:]
		case c.relatedPkg(parts[0]):
			i := slices.IndexFunc(c.scope.related, func(r *scope) bool { return r.pkg == parts[0] })
			scopes, parts = []*scope{c.scope.related[i]}, parts[1:]
		case c.scope.packages[parts[0]]:
			return // another package: not checked here
		case c.params[parts[0]]:
			return // a parameter's field or method
		default:
			c.report(pos, w, "qualifier "+parts[0]+" is neither an imported package nor a parameter (Options.Packages)")
			return
		}
	}
	if len(parts) == 1 {
		n := parts[0]
		if !link && !camel(n) && !isUpper(n[0]) {
			return
		}
		if isBuiltin(n) || c.params[n] || slices.ContainsFunc(scopes, func(s *scope) bool { return s.has(n) }) {
			return
		}
		if camel(n) && slices.ContainsFunc(scopes, func(s *scope) bool { return s.has(strings.TrimSuffix(n, "s")) }) {
			return // a plural: TokenSources
		}
		c.report(pos, w, "not declared in package "+c.scope.pkg)
		return
	}
	typ, m := parts[0], parts[1]
	for _, s := range scopes {
		if !s.names[typ] {
			continue
		}
		if !s.types[typ] {
			// A selector on a variable (ErrTaken.Error): only the
			// name itself is checked.
			return
		}
		if s.hasMember(typ, m, map[string]bool{}) {
			return
		}
		if f, ok := s.foreign[typ]; ok {
			// Another package's type under this package's name: its
			// members are that type's, when a related package has it.
			i := slices.IndexFunc(c.scope.related, func(r *scope) bool { return r.types[f] })
			if i < 0 || c.scope.related[i].hasMember(f, m, map[string]bool{}) {
				return
			}
		}
		c.report(pos, w, typ+" has no field or method "+m)
		return
	}
	c.report(pos, w, typ+" is not declared in package "+c.scope.pkg)
}

// relatedPkg reports whether name is the name of a related package.
func (c *checker) relatedPkg(name string) bool {
	return slices.ContainsFunc(c.scope.related, func(r *scope) bool { return r.pkg == name })
}

// resolves reports whether a single name is the package's: top level, a
// member of one of its types, or the documented function's parameter.
func (c *checker) resolves(n string) bool {
	if n == "" || c.params[n] || c.scope.has(n) {
		return true
	}
	return slices.ContainsFunc(c.scope.related, func(r *scope) bool { return r.has(n) })
}

func (c *checker) report(pos token.Position, name, why string) {
	c.problems = append(c.problems, Problem{Pos: pos, Name: name, Why: why})
}

func isUpper(b byte) bool { return 'A' <= b && b <= 'Z' }

// allCaps: SET, NX, OK, N, PX: commands and algebra, not names.
func allCaps(w string) bool {
	for _, r := range w {
		if unicode.IsLower(r) {
			return false
		}
	}
	return true
}

// camel reports a capital letter after a lower-case one: FenceKey,
// holderExpiry, DefaultDriftPPM; not Redis, SET or MaxN's N alone.
func camel(w string) bool {
	for i := 1; i < len(w); i++ {
		if isUpper(w[i]) && unicode.IsLower(rune(w[i-1])) {
			return true
		}
	}
	return false
}

func isBuiltin(n string) bool {
	switch n {
	case "nil", "true", "false", "iota", "error", "string", "bool", "byte", "rune",
		"int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32",
		"uint64", "uintptr", "float32", "float64", "any", "comparable",
		"len", "cap", "make", "new", "append", "copy", "delete", "panic", "recover",
		"min", "max", "clear", "close":
		return true
	}
	return false
}
