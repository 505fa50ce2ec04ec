package plots

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

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
		st, err := os.Stat(filepath.Join(dir, f))
		if err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
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
