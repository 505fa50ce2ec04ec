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
	if len(rs) < 2 {
		if len(rs) == 0 {
			return Result{}
		}
		return rs[0]
	}
	ok, p50s := byKey(rs, func(r Result) float64 { return r.P50Us })
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
	m, all := medianRound(rs, func(r Result) float64 { return r.Throughput })
	if all != nil {
		m.RepeatThroughput = all
	}
	return m
}

// MedianLatency returns the round of one repeated cell with the median
// p50, with RoundP50Us set to every round's p50, in the order given: the
// p50 targets' cells are measured in rounds interleaved with their
// peers' (each round the median of its repeats, see Median), and a slow
// stretch of the machine in one round does not decide a ratio. With an
// even count, the figures are the lower middle round's. Rounds without
// pairs do not count unless none has any. A single result is returned as
// it is.
func MedianLatency(rs []Result) Result {
	m, all := medianRound(rs, func(r Result) float64 { return r.P50Us })
	if all != nil {
		m.RoundP50Us = all
	}
	return m
}

// medianRound returns the round of rs with the median key (the lower
// middle one for an even count) and every round's key in the order given;
// a single result as it is, with no keys.
func medianRound(rs []Result, key func(Result) float64) (Result, []float64) {
	if len(rs) < 2 {
		return Median(rs), nil
	}
	ok, all := byKey(rs, key)
	return ok[(len(ok)-1)/2], all
}

// MedianOf returns the median of xs (the mean of the middle two for an
// even count, 0 for none); xs is not modified.
func MedianOf(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// byKey returns the repeats with pairs (all of them if none has any)
// sorted by key, stably, and every repeat's key in the order given.
func byKey(rs []Result, key func(Result) float64) (sorted []Result, keys []float64) {
	keys = make([]float64, len(rs))
	for i, r := range rs {
		keys[i] = key(r)
		if r.Ops > 0 {
			sorted = append(sorted, r)
		}
	}
	if len(sorted) == 0 {
		sorted = slices.Clone(rs)
	}
	slices.SortStableFunc(sorted, func(a, b Result) int { return cmp.Compare(key(a), key(b)) })
	return sorted, keys
}
