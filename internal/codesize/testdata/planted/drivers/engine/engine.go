package engine

import "strings"

// Upper is beta's own.
func Upper(s string) string { return strings.ToUpper(s) }

func Shared(words []string) map[string]int { // block:shared{
	counts := map[string]int{} // the same code, other comments

	for _, w := range words {
		// Skip the empty words, cut the long ones.
		switch {
		case w == "":
			continue
		case len(w) > 10: /* a block comment */
			w = w[:10]
		}

		counts[w]++
	}
	/*
		A comment of several lines
		between two lines of the block.
	*/
	if len(counts) == 0 {
		return nil
	}
	for w, n := range counts {
		if n < 2 {
			delete(counts, w)
		}
	}
	return counts
} // }block:shared

// Lower is beta's own too.
func Lower(s string) string { return strings.ToLower(s) }
