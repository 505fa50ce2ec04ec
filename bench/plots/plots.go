// Package plots draws a run's figures with gonum.org/v1/plot: latency
// against N per subject and fan-out, throughput against concurrency, and
// latency against N behind the latency proxy.
package plots

import (
	"fmt"
	"image/color"
	"math"
	"path/filepath"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/redlock-go/redlock/bench/matrix"
)

// series is one line: a name and its points.
type series struct {
	name string
	xys  plotter.XYs
}

// group collects records into lines keyed by name, x and y taken by the
// given functions, in the order the names first appear; points sorted by x.
func group(recs []matrix.Record, keep func(matrix.Record) bool, name func(matrix.Record) string, x, y func(matrix.Record) float64) []series {
	var out []series
	idx := map[string]int{}
	for _, r := range recs {
		if r.Ops == 0 || !keep(r) {
			continue
		}
		n := name(r)
		i, ok := idx[n]
		if !ok {
			i = len(out)
			idx[n] = i
			out = append(out, series{name: n})
		}
		out[i].xys = append(out[i].xys, plotter.XY{X: x(r), Y: y(r)})
	}
	for i := range out {
		slices.SortFunc(out[i].xys, func(a, b plotter.XY) int {
			switch {
			case a.X < b.X:
				return -1
			case a.X > b.X:
				return 1
			}
			return 0
		})
	}
	return out
}

func lineName(r matrix.Record) string { return r.Subject() + " " + r.FanOut }

func newPlot(title, x, y string, logY bool) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = x
	p.Y.Label.Text = y
	if logY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	p.Legend.Top = true
	p.Legend.Left = true
	p.Add(plotter.NewGrid())
	return p
}

// midRight moves the legend to the right, below the top: in the latency
// plots the redis lines climb to the top right and mem runs along the
// bottom, leaving the middle free.
func midRight(p *plot.Plot) {
	p.Legend.Left = false
	p.Legend.YOffs = -1.3 * vg.Inch
}

func addSeries(p *plot.Plot, ss []series) error {
	for i, s := range ss {
		l, pts, err := plotter.NewLinePoints(s.xys)
		if err != nil {
			return err
		}
		l.Color = plotutil.Color(i)
		l.Dashes = plotutil.Dashes(i / 7)
		pts.Color = plotutil.Color(i)
		pts.Shape = plotutil.Shape(i)
		p.Add(l, pts)
		p.Legend.Add(s.name, l, pts)
	}
	return nil
}

// Files lists, in the order Write draws them, every file Write may write.
var Files = []string{"latency_vs_nodes.png", "p99_vs_nodes.png", "throughput_vs_concurrency.png", "proxy_latency.png"}

// Write draws the run's plots into dir as PNG files and returns their file
// names, relative to dir. A plot with no data is skipped, and so is the
// throughput plot of a run with one concurrency.
func Write(dir string, recs []matrix.Record, proxyDelayMs float64) ([]string, error) {
	var files []string
	save := func(p *plot.Plot, name string) error {
		if err := p.Save(10*vg.Inch, 6*vg.Inch, filepath.Join(dir, name)); err != nil {
			return err
		}
		files = append(files, name)
		return nil
	}

	// Latency against N, loopback, one client.
	lat := group(recs,
		func(r matrix.Record) bool { return r.Scenario == matrix.Loopback && r.Clients == 1 && !r.SharedKey },
		lineName,
		func(r matrix.Record) float64 { return float64(r.Nodes) },
		func(r matrix.Record) float64 { return r.P50Us })
	if len(lat) > 0 {
		p := newPlot("p50 latency of acquire+release vs N (loopback, 1 client)", "N (nodes; keys for rueidislock)", "p50 µs (log)", true)
		midRight(p)
		if err := addSeries(p, lat); err != nil {
			return files, err
		}
		if err := save(p, Files[0]); err != nil {
			return files, err
		}
	}
	p99 := group(recs,
		func(r matrix.Record) bool { return r.Scenario == matrix.Loopback && r.Clients == 1 && !r.SharedKey },
		lineName,
		func(r matrix.Record) float64 { return float64(r.Nodes) },
		func(r matrix.Record) float64 { return r.P99Us })
	if len(p99) > 0 {
		p := newPlot("p99 latency of acquire+release vs N (loopback, 1 client)", "N (nodes; keys for rueidislock)", "p99 µs (log)", true)
		midRight(p)
		if err := addSeries(p, p99); err != nil {
			return files, err
		}
		if err := save(p, Files[1]); err != nil {
			return files, err
		}
	}

	// Throughput against concurrency at the largest N, multiplexed or the
	// peer's own fan-out.
	maxN := 0
	for _, r := range recs {
		if r.Scenario == matrix.Loopback && !r.SharedKey {
			maxN = max(maxN, r.Nodes)
		}
	}
	tp := group(recs,
		func(r matrix.Record) bool {
			return r.Scenario == matrix.Loopback && !r.SharedKey && r.FanOut != "sequential" &&
				(r.Nodes == maxN || r.Library == matrix.Redislock) && r.Driver != "mem"
		},
		func(r matrix.Record) string { return fmt.Sprintf("%s %s N=%d", r.Subject(), r.FanOut, r.Nodes) },
		func(r matrix.Record) float64 { return float64(r.Clients) },
		func(r matrix.Record) float64 { return r.Throughput })
	// One concurrency makes no line, and a log axis of one value panics.
	if slices.ContainsFunc(tp, func(s series) bool { return len(s.xys) > 1 }) {
		p := newPlot(fmt.Sprintf("throughput vs concurrency (loopback, distinct keys, N=%d)", maxN), "client goroutines (log)", "acquire+release pairs per second", false)
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
		if err := addSeries(p, tp); err != nil {
			return files, err
		}
		if err := save(p, Files[2]); err != nil {
			return files, err
		}
	}

	// Behind the proxy, with the ideal lines of 2 and 2N round trips.
	px := group(recs,
		func(r matrix.Record) bool { return r.Scenario == matrix.Proxy },
		lineName,
		func(r matrix.Record) float64 { return float64(r.Nodes) },
		func(r matrix.Record) float64 { return r.P50Us / 1000 })
	if len(px) > 0 && proxyDelayMs > 0 {
		var ns []float64
		for _, s := range px {
			for _, xy := range s.xys {
				if !slices.Contains(ns, xy.X) {
					ns = append(ns, xy.X)
				}
			}
		}
		slices.Sort(ns)
		rtt := 2 * proxyDelayMs
		var two, twoN plotter.XYs
		for _, n := range ns {
			two = append(two, plotter.XY{X: n, Y: 2 * rtt})
			twoN = append(twoN, plotter.XY{X: n, Y: 2 * n * rtt})
		}
		p := newPlot(fmt.Sprintf("p50 latency behind a %.3g ms each-way proxy (1 client)", proxyDelayMs), "N (nodes)", "p50 ms", false)
		if err := addSeries(p, px); err != nil {
			return files, err
		}
		for i, ref := range []series{{"ideal: 2 round trips", two}, {"ideal: 2N round trips", twoN}} {
			l, err := plotter.NewLine(ref.xys)
			if err != nil {
				return files, err
			}
			l.Color = color.Gray{Y: uint8(60 + 80*i)}
			l.Width = vg.Points(1.5)
			l.Dashes = []vg.Length{vg.Points(2), vg.Points(4)}
			p.Add(l)
			p.Legend.Add(ref.name, l)
		}
		p.Y.Min = 0
		p.Y.Max = math.Max(p.Y.Max, 2*ns[len(ns)-1]*rtt*1.1)
		if err := save(p, Files[3]); err != nil {
			return files, err
		}
	}
	return files, nil
}
