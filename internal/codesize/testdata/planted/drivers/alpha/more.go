package alpha

// own is alpha.go's Own again, in the same package: not shared
// between two drivers.
func own(m map[string][]int) []int {
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
