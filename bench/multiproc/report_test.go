package multiproc

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func cell(mode string, att, p50, fair float64) Record {
	return Record{Driver: "redigo", Mode: mode, Nodes: 5, Procs: 4, Goroutines: 8, HoldUs: 1000, Seconds: 5,
		Sections: 2500, Throughput: 500, Attempts: int64(att * 2500), AttemptsPerAcq: att,
		// From the return, a handoff is shorter: the bound counts from the call.
		Handoffs: 2499, FromCallP50Us: p50, FromCallP99Us: 3 * p50, GapP50Us: p50 / 4, GapP99Us: p50, Fairness: fair,
		PerContender: make([]int64, 32), Exclusion: Exclusion{Entered: 2600, Counter: 2600}}
}

func TestTarget(t *testing.T) {
	poll := cell(Poll, 1.5, 1800, 7.5)
	for _, tc := range []struct {
		name string
		wake Record
		pass bool
	}{
		{"all three hold", cell(Fair, 1.4, 900, 1.8), true},
		{"too many attempts", cell(Fair, 4.27, 900, 1.8), false},
		{"slow handoff", cell(Fair, 1.4, 1440, 1.8), false},
		{"p50 of exactly 1 ms", cell(Fair, 1.4, 1000, 1.8), false},
		{"unfair", cell(Fair, 1.4, 900, 2.1), false},
		{"a contender starved", func() Record { r := cell(Fair, 1.4, 900, 0); r.Starved, r.PerContender = 1, []int64{0, 5, 5}; return r }(), false},
		{"overlap", func() Record { r := cell(Fair, 1.4, 900, 1.8); r.Overlaps = 1; return r }(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name, goal, figs, ratio, measured, pass, _ := Target([]Record{tc.wake, poll})
			assert.Equal(t, tc.pass, ratio <= 1 && tc.wake.Exclusive() && tc.wake.FromCallP50Us < GoalGapP50Us, "ratio %v", ratio)
			assert.Equal(t, "4 processes × 8 waiters on one key (redigo, fair)", name)
			assert.Contains(t, goal, "≤ 1.5")
			assert.True(t, measured)
			assert.Equal(t, tc.pass, pass)
			assert.Contains(t, figs, "fair: ")
			assert.Contains(t, figs, "poll: 1.50 attempts/acq, p50 1.80 ms from the Unlock call (0.45 ms from its return; 0% early), fairness 7.50, 500 sections/s")
		})
	}
	_, _, _, _, measured, pass, _ := Target([]Record{poll, cell(Wake, 1.4, 900, 1.8)})
	assert.False(t, measured, "no fair cell")
	assert.False(t, pass)
	small := cell(Fair, 1.4, 900, 1.8)
	small.Procs, small.Goroutines = 2, 2
	_, _, _, _, measured, _, note := Target([]Record{small})
	assert.True(t, measured)
	assert.Contains(t, note, "measured at 2×2")
}

func TestTablesRender(t *testing.T) {
	recs := []Record{cell(Wake, 1.4, 900, 1.8), cell(Poll, 1.5, 1800, 7.5)}
	recs[1].Starved, recs[1].Fairness = 3, 0
	recs[1].Overlaps = 2
	var b strings.Builder
	require.NoError(t, Table(&b, recs))
	out := b.String()
	assert.Contains(t, out, "redigo  wake")
	assert.Contains(t, out, "inf (3 starved)")
	assert.Contains(t, out, "VIOLATED: 2 overlaps")
	md := Markdown(recs)
	assert.Contains(t, md, "## Scenario: hot key across processes")
	assert.Contains(t, md, "| redigo | wake | 5 | 4×8 | 500 | 1.40 | 225 | 0 | 900 | 0 | 2499 | 0 | 900 | 2700 |")
	assert.Contains(t, md, "("+PlotFile+")")
	assert.Contains(t, md, "p50 / p99: wake 0 / 0 µs, poll 0 / 0 µs.")
	assert.Equal(t, 4, strings.Count(md, "[0 0 0 0 0 0 0 0]")/2, "each cell's 32 contenders in 4 processes")
	assert.Empty(t, Markdown(nil))
}
