package measure

import (
	"cmp"
	"slices"
)

// Median returns the repeat of one cell with the median p50, with
// RepeatP50Us set to every repeat's p50 in the order given: one stalled
// repeat does not decide the cell's figures. With an even count, the
// figures are the lower of the two middle repeats', and P50Us is the mean
// of the two middle p50s. Repeats without pairs (Ops 0) do not count
// unless none has any. A single result is returned as it is.
func Median(rs []Result) Result {
	switch len(rs) {
	case 0:
		return Result{}
	case 1:
		return rs[0]
	}
	p50s := make([]float64, len(rs))
	var ok []Result
	for i, r := range rs {
		p50s[i] = r.P50Us
		if r.Ops > 0 {
			ok = append(ok, r)
		}
	}
	if len(ok) == 0 {
		ok = slices.Clone(rs)
	}
	slices.SortStableFunc(ok, func(a, b Result) int {
		switch {
		case a.P50Us < b.P50Us:
			return -1
		case a.P50Us > b.P50Us:
			return 1
		}
		return 0
	})
	m := ok[(len(ok)-1)/2]
	if len(ok)%2 == 0 {
		m.P50Us = (ok[len(ok)/2-1].P50Us + ok[len(ok)/2].P50Us) / 2
	}
	m.RepeatP50Us = p50s
	return m
}

// MedianThroughput returns the repeat of one cell with the median
// throughput, with RepeatThroughput set to every repeat's, in the order
// given: the throughput targets' cells are measured in rounds
// interleaved with their peers', and a slow stretch of the machine in one
// round does not decide a ratio. With an even count, the figures are the
// lower middle repeat's. Repeats without pairs do not count unless none
// has any. A single result is returned as it is.
func MedianThroughput(rs []Result) Result {
	if len(rs) < 2 {
		return Median(rs)
	}
	all := make([]float64, len(rs))
	var ok []Result
	for i, r := range rs {
		all[i] = r.Throughput
		if r.Ops > 0 {
			ok = append(ok, r)
		}
	}
	if len(ok) == 0 {
		ok = slices.Clone(rs)
	}
	slices.SortStableFunc(ok, func(a, b Result) int { return cmp.Compare(a.Throughput, b.Throughput) })
	m := ok[(len(ok)-1)/2]
	m.RepeatThroughput = all
	return m
}
