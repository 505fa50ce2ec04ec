package gamma

var calls int

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

func count() { calls++ }
