package plots

import (
	"fmt"
	"path/filepath"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/redlock-go/redlock/bench/multiproc"
)

// WriteMultiProc draws the hot key across processes into dir as
// multiproc.PlotFile: each contender's acquisitions in the window, process
// by process, one bar per contender and mode side by side, each mode's
// legend with its attempts per acquisition, handoff p50 and fairness. It
// returns the file names written: none when no cell acquired anything.
func WriteMultiProc(dir string, recs []multiproc.Record) ([]string, error) {
	var drawn []multiproc.Record
	for _, r := range recs {
		if r.Sections > 0 && len(r.PerContender) > 0 {
			drawn = append(drawn, r)
		}
	}
	if len(drawn) == 0 {
		return nil, nil
	}
	r0 := drawn[0]
	p := newPlot(fmt.Sprintf("hot key across processes: acquisitions per contender (one key, N=%d)", r0.Nodes),
		fmt.Sprintf("contender: %d processes × %d goroutines, process by process; %.0f µs sections, %.3g s window", r0.Procs, r0.Goroutines, r0.HoldUs, r0.Seconds),
		"acquisitions in the window", false)
	top := 0.0
	w := vg.Points(min(8, 240/float64(len(r0.PerContender)*len(drawn))))
	for i, r := range drawn {
		vals := make(plotter.Values, len(r.PerContender))
		for j, n := range r.PerContender {
			vals[j] = float64(n)
			top = max(top, vals[j])
		}
		b, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return nil, err
		}
		c := palette[i%len(palette)]
		b.Color, b.LineStyle.Color = c, c
		b.Offset = w * vg.Length(float64(i)-float64(len(drawn)-1)/2)
		p.Add(b)
		p.Legend.Add(fmt.Sprintf("%s %s: %.2f att/acq, gap p50 %.2f ms, max/min %s", r.Driver, r.Mode, r.AttemptsPerAcq, r.GapP50Us/1000, r.FairnessText()), b)
	}
	p.Y.Min, p.Y.Max = 0, top*1.08 // the tallest bar whole
	if err := savePNG(p, filepath.Join(dir, multiproc.PlotFile)); err != nil {
		return nil, err
	}
	return []string{multiproc.PlotFile}, nil
}
