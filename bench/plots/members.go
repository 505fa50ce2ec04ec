package plots

import (
	"fmt"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
)

// MembersPoint is one cell of bench's BenchmarkMembers: the latency of a
// TryLock+Unlock pair over a quorum of Nodes members of one kind.
type MembersPoint struct {
	// Label names the members' kind, the x axis's category: "standalone",
	// "sentinel", "sentinel+WAIT", "cluster", "cluster+WAIT".
	Label string
	// Nodes is N, the number of members.
	Nodes        int
	P50Us, P99Us float64
}

// WriteMembers draws the p50 and p99 of each kind of member at each N, a
// line per N and percentile over the kinds in the order they first
// appear (p50 solid, p99 dashed), log y, to file as a PNG.
func WriteMembers(file string, pts []MembersPoint) error {
	var labels []string
	at := map[string]int{}
	for _, p := range pts {
		if _, ok := at[p.Label]; !ok {
			at[p.Label] = len(labels)
			labels = append(labels, p.Label)
		}
	}
	var ss []series
	idx := map[string]int{}
	add := func(name string, x, y float64) {
		i, ok := idx[name]
		if !ok {
			i = len(ss)
			idx[name] = i
			ss = append(ss, series{name: name})
		}
		ss[i].xys = append(ss[i].xys, plotter.XY{X: x, Y: y})
	}
	for _, pc := range []string{"p50", "p99"} {
		for _, p := range pts {
			if p.Nodes == 0 || p.P50Us <= 0 || p.P99Us <= 0 {
				continue
			}
			y := p.P50Us
			if pc == "p99" {
				y = p.P99Us
			}
			add(fmt.Sprintf("N=%d %s", p.Nodes, pc), float64(at[p.Label]), y)
		}
	}
	if len(ss) == 0 {
		return fmt.Errorf("plots: no members cell to draw")
	}
	p := newPlot("TryLock+Unlock over goredis.DialMembers, by kind of member", "members", "latency (µs)", true)
	var ticks plot.ConstantTicks
	for i, l := range labels {
		ticks = append(ticks, plot.Tick{Value: float64(i), Label: l})
	}
	p.X.Tick.Marker = ticks
	p.X.Min, p.X.Max = -0.3, float64(len(labels))-0.7
	for i, s := range ss {
		l, pts, err := plotter.NewLinePoints(s.xys)
		if err != nil {
			return err
		}
		style(i, "redlock+", l, pts) // solid: all this library's
		if strings.HasSuffix(s.name, "p99") {
			l.Dashes = peerDashes
		}
		p.Add(l, pts)
		p.Legend.Add(s.name, l, pts)
	}
	return savePNG(p, file)
}
