// Package alpha is a planted driver: Shared is copied in beta, reworded
// and spaced out; Near, 14 lines, in gamma.
package alpha

import "fmt"

// Shared keeps the words seen twice or more, cut to ten bytes.
func Shared(words []string) map[string]int { // block:shared{
	counts := map[string]int{}
	for _, w := range words {
		switch {
		case w == "":
			continue
		case len(w) > 10:
			w = w[:10]
		}
		counts[w]++
	}
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

// Print is alpha's own.
func Print(xs []int) { fmt.Println(xs) }

// Own is alpha's alone, repeated in more.go, the same package.
func Own(m map[string][]int) []int {
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

// Near alternates signs; gamma has it too.
func Near(xs []int) int { // block:near{
	total := 0
	for i, x := range xs {
		if i%2 == 0 {
			total += x
		} else {
			total -= x
		}
	}
	if total < 0 {
		total = -total
	}
	return total
} // }block:near
