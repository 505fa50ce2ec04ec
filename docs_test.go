package redlock_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// measured matches a figure that can only come from a measurement: a
// number followed by a unit of time too small to be configuration (µs,
// ns), a rate (ops/s, pairs/s, sections/s, sections per second) or a
// ratio (×). Milliseconds, seconds and percentages are left out: the
// docs use them for TTLs, timeouts, delays and drift, which are settings.
var measured = regexp.MustCompile(`(?:^|[^\pL\pN_/.])(\d[\d,.]*(?: \d{3})*\s?(?:µs|ns\b|ops/s|pairs/s|sections/s|sections per second|×))`)

// notMeasured are the figures in those units that are settings, not
// measurements, by file: the simulation's model, a target's bound. A
// figure of another block is still checked.
var notMeasured = map[string][]string{
	"docs/safety.md": {"50 µs"}, // the simulated replication delay (Failover)
}

// resultsLink matches a markdown link into results/.
var resultsLink = regexp.MustCompile(`\]\((?:\.\./)?results/[^)\s]*\)`)

// docBlock is a run of non-blank lines of a markdown file outside fenced
// code: a paragraph, a list, a table.
type docBlock struct {
	line int // first line, from 1
	text string
	// listed: a table or a list, whose caption may be the block above
	listed bool
}

// docSection is a heading's blocks, up to the next heading.
type docSection struct {
	heading string
	blocks  []docBlock
}

func docSections(data string) []docSection {
	secs := []docSection{{heading: "(top)"}}
	var cur []string
	start := 0
	flush := func() {
		if len(cur) > 0 {
			s := &secs[len(secs)-1]
			first := strings.TrimSpace(cur[0])
			s.blocks = append(s.blocks, docBlock{line: start, text: strings.Join(cur, "\n"),
				listed: strings.HasPrefix(first, "|") || strings.HasPrefix(first, "- ")})
		}
		cur = nil
	}
	in := false
	for i, l := range strings.Split(data, "\n") {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "```") {
			flush()
			in = !in
			continue
		}
		switch {
		case in:
		case t == "":
			flush()
		case strings.HasPrefix(t, "#"):
			flush()
			secs = append(secs, docSection{heading: t})
		default:
			if len(cur) == 0 {
				start = i + 1
			}
			cur = append(cur, l)
		}
	}
	flush()
	return secs
}

// TestDocFiguresLinkResults: every paragraph, list or table of docs/*.md
// that quotes a measured figure (see measured) links to the file of
// results/ it comes from, in itself or in the first block of its
// section; a table or a list may have the link in the block just above
// it, its caption. Inline code is not read (a command's flags are no
// figure). Figures in ms, s, %, allocations or schedules are not
// checked: the docs use those units for settings too (TTLs, timeouts,
// delays, drift, CI's schedule counts), and telling them apart needs a
// reader.
func TestDocFiguresLinkResults(t *testing.T) {
	files, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no docs/*.md")
	}
	inline := regexp.MustCompile("`[^`]*`")
	for _, file := range files {
		data, err := os.ReadFile(file) //nolint:gosec // G304: docs/*.md of the repository
		if err != nil {
			t.Fatal(err)
		}
		for _, sec := range docSections(string(data)) {
			head := len(sec.blocks) > 0 && resultsLink.MatchString(sec.blocks[0].text)
			for i, b := range sec.blocks {
				if head || resultsLink.MatchString(b.text) {
					continue
				}
				fig := ""
				for _, m := range measured.FindAllStringSubmatch(inline.ReplaceAllString(b.text, "x"), -1) {
					if !slices.Contains(notMeasured[filepath.ToSlash(file)], m[1]) {
						fig = m[1]
						break
					}
				}
				if fig == "" {
					continue
				}
				if b.listed && i > 0 && resultsLink.MatchString(sec.blocks[i-1].text) {
					continue
				}
				t.Errorf("%s:%d (%s): %q is a measured figure without a link to results/ in its paragraph, its table's caption or its section's first paragraph",
					file, b.line, sec.heading, fig)
			}
		}
	}
}

// TestHandoffBoundIsNoFloor: docs/benchmarks.md gives the handoff target
// from the release call as the bound, not as the floor, and says
// what the floor is: four one-way legs for a waiter the servers wake,
// one round only for a same-Client hand-on. It once called one round the
// floor for every waiter.
func TestHandoffBoundIsNoFloor(t *testing.T) {
	b, err := os.ReadFile("docs/benchmarks.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Join(strings.Fields(string(b)), " ")
	_, item, ok := strings.Cut(doc, "**Handoff from the release call.**")
	if !ok {
		t.Fatal("docs/benchmarks.md: no item on the handoff from the release call")
	}
	item, _, _ = strings.Cut(item, "- **")
	if strings.Contains(item, "the floor is one round") {
		t.Errorf("the handoff item calls one round the floor: %s", item)
	}
	for _, want := range []string{"the issue's", "one direct PING round to all the servers plus 100 µs", "four one-way legs", "about two rounds"} {
		if !strings.Contains(item, want) {
			t.Errorf("the handoff item lacks %q: %s", want, item)
		}
	}
}
