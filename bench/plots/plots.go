// Package plots draws a run's figures with gonum.org/v1/plot: latency
// against N per subject and fan-out, throughput against concurrency, and
// latency against N behind the latency proxy; for the hot key, handoff
// latency and critical sections per second against contenders. Every
// legend is drawn beside the data area, never over it, and every line has
// its own colour and marker.
package plots

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

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
		p.Y.Tick.Marker = decadeTicks{}
	}
	p.Legend.Top = true
	p.Legend.Left = true
	p.Add(plotter.NewGrid())
	return p
}

// palette is ten colours told apart easily (Tableau 10): a line's colour
// is its own up to ten lines, and its marker up to seven.
var palette = []color.Color{
	color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, // blue
	color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}, // orange
	color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}, // green
	color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}, // red
	color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff}, // purple
	color.RGBA{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff}, // brown
	color.RGBA{R: 0xe3, G: 0x77, B: 0xc2, A: 0xff}, // pink
	color.RGBA{R: 0x7f, G: 0x7f, B: 0x7f, A: 0xff}, // grey
	color.RGBA{R: 0xbc, G: 0xbd, B: 0x22, A: 0xff}, // olive
	color.RGBA{R: 0x17, G: 0xbe, B: 0xcf, A: 0xff}, // cyan
}

// peerDashes is the dash pattern of the peers' lines: this library's are
// solid, so that the two sides read apart at a glance.
var peerDashes = []vg.Length{vg.Points(6), vg.Points(3)}

// isPeerLine reports whether a line's name is a peer's: it does not
// start with this library's name.
func isPeerLine(name string) bool {
	return len(name) < len("redlock+") || name[:len("redlock+")] != "redlock+"
}

// style gives line i of a plot its colour, marker and dashes: peers'
// lines dashed.
func style(i int, name string, l *plotter.Line, pts *plotter.Scatter) {
	c := palette[i%len(palette)]
	l.Color, pts.Color = c, c
	l.Width = vg.Points(1.5)
	pts.Shape = plotutil.Shape(i)
	pts.Radius = vg.Points(3.5)
	if isPeerLine(name) {
		l.Dashes = peerDashes
	}
	if i >= len(palette) {
		l.Dashes = plotutil.Dashes(1 + i/len(palette))
	}
}

// distinctXs returns the x values of ss, each once, in increasing order.
func distinctXs(ss []series) []float64 {
	var xs []float64
	for _, s := range ss {
		for _, xy := range s.xys {
			if !slices.Contains(xs, xy.X) {
				xs = append(xs, xy.X)
			}
		}
	}
	slices.Sort(xs)
	return xs
}

// countTicks marks the x axis at the x values of ss, labelled as whole
// numbers: the concurrencies or contenders measured, which a log axis's
// powers of ten would not show.
func countTicks(p *plot.Plot, ss []series) {
	var ticks plot.ConstantTicks
	for _, x := range distinctXs(ss) {
		ticks = append(ticks, plot.Tick{Value: x, Label: fmt.Sprintf("%g", x)})
	}
	p.X.Tick.Marker = ticks
}

func addSeries(p *plot.Plot, ss []series) error {
	for i, s := range ss {
		l, pts, err := plotter.NewLinePoints(s.xys)
		if err != nil {
			return err
		}
		style(i, s.name, l, pts)
		p.Add(l, pts)
		p.Legend.Add(s.name, l, pts)
	}
	return nil
}

// logAxes makes the x axis logarithmic, and the y axis too if logY.
func logAxes(p *plot.Plot, logY bool) {
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	if logY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = decadeTicks{}
	}
}

// decadeTicks marks a log axis at 1, 2 and 5 times each power of ten,
// labelled, and at the other digits, unlabelled: an axis that spans a
// decade or two still reads (gonum's LogTicks labels powers of ten only).
type decadeTicks struct{}

// Ticks implements plot.Ticker.
func (decadeTicks) Ticks(min, max float64) []plot.Tick {
	if min <= 0 || max <= min {
		return plot.LogTicks{Prec: -1}.Ticks(min, max)
	}
	var ticks []plot.Tick
	for e := math.Floor(math.Log10(min)); math.Pow(10, e) <= max; e++ {
		base := math.Pow(10, e)
		for d := 1.0; d < 10; d++ {
			v := d * base
			if v < min || v > max {
				continue
			}
			t := plot.Tick{Value: v}
			if d == 1 || d == 2 || d == 5 {
				t.Label = strconv.FormatFloat(v, 'f', -1, 64)
			}
			ticks = append(ticks, t)
		}
	}
	return ticks
}

// Plot size: the data area and axes, and at most this wide a legend
// beside them.
const (
	plotW, plotH = 9 * vg.Inch, 6 * vg.Inch
	legendGap    = 0.2 * vg.Inch
)

// savePNG writes p to file as a PNG with its legend to the right of the
// plot, outside the data area, so that the legend hides no line.
func savePNG(p *plot.Plot, file string) error {
	leg := p.Legend
	p.Legend = plot.NewLegend() // p draws no legend of its own
	leg.Top, leg.Left = true, true
	leg.XOffs, leg.YOffs = 0, 0
	c, err := draw.NewFormattedCanvas(plotW+4*vg.Inch, plotH, "png")
	if err != nil {
		return err
	}
	dc := draw.New(c)
	lw := leg.Rectangle(dc).Size().X + 2*legendGap
	w := plotW + lw
	// A canvas of the needed width: the plot, then the legend.
	if c, err = draw.NewFormattedCanvas(w, plotH, "png"); err != nil {
		return err
	}
	dc = draw.New(c)
	p.Draw(draw.Crop(dc, 0, -lw, 0, 0))
	top := -legendGap
	if p.Title.Text != "" {
		top -= p.Title.TextStyle.Rectangle(p.Title.Text).Size().Y + p.Title.Padding
	}
	leg.Draw(draw.Crop(dc, plotW+legendGap, 0, 0, top))
	f, err := os.Create(file) //nolint:gosec // G304: a plot file in the output directory the caller chose
	if err != nil {
		return err
	}
	if _, err := c.WriteTo(f); err != nil {
		_ = f.Close() // the write's error is the one to report
		return err
	}
	return f.Close()
}

// Files lists, in the order Write draws them, every file Write may write.
var Files = []string{"latency_vs_nodes.png", "p99_vs_nodes.png", "throughput_vs_concurrency.png", "proxy_latency.png", "handoff_latency.png", "hotkey_sections.png"}

// Write draws the run's plots into dir as PNG files and returns their file
// names, relative to dir. A plot with no data is skipped, and so is the
// throughput plot of a run with one concurrency.
func Write(dir string, recs []matrix.Record, proxyDelayMs float64) ([]string, error) {
	var files []string
	save := func(p *plot.Plot, name string) error {
		if err := savePNG(p, filepath.Join(dir, name)); err != nil {
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
		if err := addSeries(p, p99); err != nil {
			return files, err
		}
		if err := save(p, Files[1]); err != nil {
			return files, err
		}
	}

	// Throughput against concurrency at N=5 (else the largest N),
	// multiplexed or the peer's own fan-out; bsm/redislock, at N=1 only,
	// is left out.
	tn := 0
	for _, r := range recs {
		if r.Scenario == matrix.Loopback && !r.SharedKey {
			tn = max(tn, r.Nodes)
			if r.Nodes == 5 {
				tn = 5
				break
			}
		}
	}
	tp := group(recs,
		func(r matrix.Record) bool {
			return r.Scenario == matrix.Loopback && !r.SharedKey && r.FanOut != "sequential" &&
				r.Nodes == tn && r.Driver != "mem" && r.Library != matrix.Redislock
		},
		func(r matrix.Record) string { return fmt.Sprintf("%s %s", r.Subject(), r.FanOut) },
		func(r matrix.Record) float64 { return float64(r.Clients) },
		func(r matrix.Record) float64 { return r.Throughput })
	// One concurrency makes no line, and a log axis of one value panics.
	if slices.ContainsFunc(tp, func(s series) bool { return len(s.xys) > 1 }) {
		p := newPlot(fmt.Sprintf("throughput vs concurrency (loopback, distinct keys, N=%d)", tn), "client goroutines (log)", "acquire+release pairs per second (log)", false)
		logAxes(p, true)
		countTicks(p, tp)
		if err := addSeries(p, tp); err != nil {
			return files, err
		}
		if err := save(p, Files[2]); err != nil {
			return files, err
		}
	}

	// Behind the proxy, with the ideal lines of 2 and 2N round trips.
	px := group(recs,
		func(r matrix.Record) bool { return r.Scenario == matrix.Proxy && r.Clients == 1 && !r.SharedKey },
		lineName,
		func(r matrix.Record) float64 { return float64(r.Nodes) },
		func(r matrix.Record) float64 { return r.P50Us / 1000 })
	if len(px) > 0 && proxyDelayMs > 0 {
		ns := distinctXs(px)
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
			l.Color = color.Gray{Y: uint8(60 + 80*i)} //nolint:gosec // G115: i is 0 or 1: 60 or 140
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
	return files, writeHandoff(recs, save)
}

// writeHandoff draws the hot key's plots: handoff p50 and p99 against
// contenders, and critical sections per second against contenders, each
// subject beside the others, log axes.
func writeHandoff(recs []matrix.Record, save func(*plot.Plot, string) error) error {
	hot := func(r matrix.Record) bool {
		return r.Scenario == matrix.Handoff && r.Handoff != nil && r.Handoff.Handoffs > 0
	}
	contenders := func(r matrix.Record) float64 { return float64(r.Clients) }
	// From the release call: from its return, a handoff whose next
	// attempt was already on the wire counts as nothing. A p50 of 0 has
	// no place on a log axis: it is drawn at 1 µs, below any real one.
	floor := func(v float64) float64 { return max(v, 1) }
	p50 := group(recs, hot, matrix.Record.HandoffName, contenders, func(r matrix.Record) float64 { return floor(r.Handoff.FromCallP50Us) })
	p99 := group(recs, hot, matrix.Record.HandoffName, contenders, func(r matrix.Record) float64 { return floor(r.Handoff.FromCallP99Us) })
	if !slices.ContainsFunc(p50, func(s series) bool { return len(s.xys) > 1 }) {
		return nil
	}
	nodes := 0
	for _, r := range recs {
		if hot(r) {
			nodes = r.Nodes
			break
		}
	}
	p := newPlot(fmt.Sprintf("hot key: handoff latency vs contenders (one key, N=%d; solid p50, dotted p99)", nodes), "contenders (log)", "release called → next acquire returned, µs (log)", false)
	logAxes(p, true)
	countTicks(p, p50)
	for i, s := range p50 {
		l, pts, err := plotter.NewLinePoints(s.xys)
		if err != nil {
			return err
		}
		style(i, s.name, l, pts)
		l.Dashes = nil
		p.Add(l, pts)
		p.Legend.Add(s.name+" p50", l, pts)
		l99, pts99, err := plotter.NewLinePoints(p99[i].xys)
		if err != nil {
			return err
		}
		style(i, s.name, l99, pts99)
		l99.Dashes = []vg.Length{vg.Points(1.5), vg.Points(3)}
		pts99.Shape = draw.RingGlyph{}
		p.Add(l99, pts99)
		p.Legend.Add(s.name+" p99", l99, pts99)
	}
	if err := save(p, Files[4]); err != nil {
		return err
	}
	cs := group(recs, func(r matrix.Record) bool { return r.Scenario == matrix.Handoff && r.Ops > 0 }, matrix.Record.HandoffName, contenders,
		func(r matrix.Record) float64 { return r.Throughput })
	p = newPlot(fmt.Sprintf("hot key: critical sections per second vs contenders (one key, N=%d)", nodes), "contenders (log)", "critical sections per second (log)", false)
	logAxes(p, true)
	countTicks(p, cs)
	if err := addSeries(p, cs); err != nil {
		return err
	}
	return save(p, Files[5])
}
