package plots

import (
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/redlock-go/redlock/bench/matrix"
	"github.com/redlock-go/redlock/bench/measure"
)

func TestWriteDrawsEveryPlot(t *testing.T) {
	var recs []matrix.Record
	for _, n := range []int{1, 3, 5} {
		for _, c := range []int{1, 32} {
			recs = append(recs,
				matrix.Record{Cell: matrix.Cell{Library: "redlock", Driver: "redigo", Scenario: matrix.Loopback, Nodes: n, FanOut: "multiplexed", Clients: c},
					Result: measure.Result{Ops: 10, P50Us: 40 + float64(n), P99Us: 90, Throughput: 1000 * float64(c)}},
				matrix.Record{Cell: matrix.Cell{Library: "redsync", Driver: "redigo", Scenario: matrix.Loopback, Nodes: n, FanOut: matrix.FanConcurrent, Clients: c},
					Result: measure.Result{Ops: 10, P50Us: 50 * float64(n), P99Us: 99, Throughput: 500 * float64(c)}})
		}
		recs = append(recs, matrix.Record{Cell: matrix.Cell{Library: "redlock", Driver: "redigo", Scenario: matrix.Proxy, Nodes: n, FanOut: "sequential", Clients: 1},
			Result: measure.Result{Ops: 10, P50Us: 4000 * float64(n)}})
	}
	recs = append(recs, handoffRecords()...)
	dir := t.TempDir()
	if d := os.Getenv("PLOTS_KEEP"); d != "" {
		dir = d
	}
	files, err := Write(dir, recs, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(files, Files) {
		t.Fatalf("files = %v, want every plot: %v", files, Files)
	}
	for _, f := range files {
		st, err := os.Stat(filepath.Join(dir, f)) //nolint:gosec // G703: a file Write reported writing in t.TempDir()
		if err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// handoffRecords are hot-key records: this library with wake and with
// polling, and the peers, at 2, 8 and 32 contenders; one early p50 of 0.
func handoffRecords() []matrix.Record {
	var recs []matrix.Record
	for _, s := range []struct {
		lib, drv, fan, variant string
		p50                    float64
	}{
		{"redlock", "redigo", "multiplexed", matrix.Wake, 300},
		{"redlock", "redigo", "multiplexed", matrix.Poll, 120000},
		{"redsync", "redigo", matrix.FanConcurrent, "", 130000},
		{"redsync", "rueidis", matrix.FanConcurrent, "", 125000},
		{"rueidislock", "rueidis", matrix.FanKeys, "", 350},
	} {
		for _, c := range []int{2, 8, 32} {
			p50 := s.p50 / float64(c)
			if c == 32 && s.variant == matrix.Wake {
				p50 = 0
			}
			recs = append(recs, matrix.Record{
				Cell:    matrix.Cell{Library: s.lib, Driver: s.drv, Scenario: matrix.Handoff, Nodes: 5, FanOut: s.fan, Clients: c, SharedKey: true, Variant: s.variant},
				Result:  measure.Result{Ops: 100, Acquired: 100, Throughput: 1e6 / (s.p50 + 10)},
				Handoff: &measure.Handoff{Handoffs: 99, P50Us: p50, P99Us: 4 * s.p50, FromCallP50Us: p50, FromCallP99Us: 4 * s.p50, Entered: 120, Counter: 120},
			})
		}
	}
	return recs
}

// TestLegendBesideTheData: the legend is drawn beside the data area, so
// the image is wider than the plot itself.
func TestLegendBesideTheData(t *testing.T) {
	dir := t.TempDir()
	files, err := Write(dir, handoffRecords(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"handoff_latency.png", "hotkey_sections.png"}; !slices.Equal(files, want) {
		t.Fatalf("files = %v, want %v", files, want)
	}
	for _, f := range files {
		r, err := os.Open(filepath.Join(dir, f)) //nolint:gosec // G304: a file Write reported writing in t.TempDir()
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := png.DecodeConfig(r)
		_ = r.Close() // read-only: a failed Close loses nothing
		if err != nil {
			t.Fatal(err)
		}
		if w := vg.Length(cfg.Width) * vg.Inch / vgimg.DefaultDPI; w <= plotW+legendGap {
			t.Errorf("%s: %d px wide, no room for a legend beside a %v plot", f, cfg.Width, plotW)
		}
	}
}

func TestWriteOneConcurrency(t *testing.T) {
	recs := []matrix.Record{
		{Cell: matrix.Cell{Library: "redlock", Driver: "redigo", Scenario: matrix.Loopback, Nodes: 3, FanOut: "multiplexed", Clients: 1},
			Result: measure.Result{Ops: 10, P50Us: 40, P99Us: 90, Throughput: 1000}},
		{Cell: matrix.Cell{Library: "redsync", Driver: "redigo", Scenario: matrix.Loopback, Nodes: 3, FanOut: matrix.FanConcurrent, Clients: 1},
			Result: measure.Result{Ops: 10, P50Us: 50, P99Us: 99, Throughput: 900}},
	}
	files, err := Write(t.TempDir(), recs, 0)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"latency_vs_nodes.png", "p99_vs_nodes.png"}; !slices.Equal(files, want) {
		t.Fatalf("files = %v, want %v", files, want)
	}
}
