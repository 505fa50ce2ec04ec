// Command codesize prints the lines of each client driver package under
// drivers/ and the blocks of code two of them share, and exits with
// status 1 when they share a block of -min lines or more. .ci/run runs
// it as the stage "driver packages share no code".
//
//	go run ./internal/codesize/cmd/codesize [-root .] [-min 15] [-tests]
package main

import (
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/redlock-go/redlock/internal/codesize"
)

func main() {
	root := flag.String("root", ".", "the module's root directory")
	minLines := flag.Int("min", 15, "report blocks of at least this many normalized lines")
	tests := flag.Bool("tests", false, "compare the packages' _test.go files too")
	flag.Parse()
	n, err := run(os.Stdout, *root, codesize.Options{MinLines: *minLines, Tests: *tests})
	if err != nil {
		fmt.Fprintln(os.Stderr, "codesize:", err)
		os.Exit(2)
	}
	if n > 0 {
		fmt.Fprintf(os.Stderr, "codesize: the driver packages share %d blocks of %d lines or more\n", n, *minLines)
		os.Exit(1)
	}
}

// run writes the report to w and returns the number of shared blocks.
func run(w io.Writer, root string, o codesize.Options) (int, error) {
	lines, err := codesize.DriverLines(root)
	if err != nil {
		return 0, err
	}
	blocks, err := codesize.Scan(root, o)
	if err != nil {
		return 0, err
	}
	var b strings.Builder
	fmt.Fprintln(&b, "non-test lines per driver package:")
	for _, name := range slices.Sorted(maps.Keys(lines)) {
		fmt.Fprintf(&b, "  %-22s %5d\n", name, lines[name])
	}
	fmt.Fprintf(&b, "shared blocks of %d lines or more (generated files excepted): %d\n", o.MinLines, len(blocks))
	for _, bl := range blocks {
		fmt.Fprintln(&b, " ", bl)
	}
	_, err = io.WriteString(w, b.String())
	return len(blocks), err
}
