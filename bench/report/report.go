// Package report presents a benchmark run: the terminal table, the
// markdown summary, the raw JSON with the run's environment, and the
// targets (ratios against the peers measured in the same run).
package report

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/redlock-go/redlock/bench/matrix"
)

// Env is the environment of a run.
type Env struct {
	Date        string   `json:"date"`
	Command     []string `json:"command"`
	GoVersion   string   `json:"go_version"`
	OS          string   `json:"os"`
	Arch        string   `json:"arch"`
	CPUModel    string   `json:"cpu_model"`
	NumCPU      int      `json:"num_cpu"`
	GOMAXPROCS  int      `json:"gomaxprocs"`
	Pinned      bool     `json:"pinned"`
	Affinity    string   `json:"cpu_affinity"`
	Servers     string   `json:"servers"`
	ServerAddrs []string `json:"server_addrs,omitempty"`
	// ProxyDelayMs is the latency proxy's delay in each direction; one
	// round trip through it costs twice that.
	ProxyDelayMs float64 `json:"proxy_delay_each_way_ms"`
	// LoopbackPingUs and ProxyPingUs are the median PING round trip to the
	// first server, direct and through its proxy: the proxy's real cost.
	LoopbackPingUs float64  `json:"loopback_ping_us,omitempty"`
	ProxyPingUs    float64  `json:"proxy_ping_us,omitempty"`
	CellSeconds    float64  `json:"cell_seconds"`
	WarmupSecs     float64  `json:"warmup_seconds"`
	TTLMs          int64    `json:"ttl_ms"`
	PoolSize       int      `json:"pool_size"`
	Notes          []string `json:"notes,omitempty"`
}

// Run is everything a run produced.
type Run struct {
	Env     Env             `json:"env"`
	Records []matrix.Record `json:"records"`
	Targets []Target        `json:"targets"`
}

// Table writes the records as an aligned text table.
func Table(w io.Writer, recs []matrix.Record) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "subject\tscenario\tN\tfan-out\tclients\tops/s\tp50 µs\tp90 µs\tp99 µs\tp99.9 µs\tmax µs\tallocs/op\tB/op\tgor/op\twon%\terrors\t")
	for _, r := range recs {
		clients := fmt.Sprint(r.Clients)
		if r.SharedKey {
			clients += " (1 key)"
		}
		if r.Note != "" && r.Ops == 0 {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t\t\t\t\t\t\t\t\t\t\t\n", r.Subject(), r.Scenario, r.Nodes, r.FanOut, clients, note(r))
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%.0f\t%s\t%s\t%s\t%s\t%s\t%.1f\t%.0f\t%.2f\t%s\t%s\t\n",
			r.Subject(), r.Scenario, r.Nodes, r.FanOut, clients, r.Throughput,
			us(r.P50Us), us(r.P90Us), us(r.P99Us), us(r.P999Us), us(r.MaxUs),
			r.AllocsPerOp, r.BytesPerOp, r.GoroutinesPerOp, won(r), errs(r))
	}
	return tw.Flush()
}

// note returns the first line of a record's note, shortened for a table.
func note(r matrix.Record) string {
	n, _, _ := strings.Cut(r.Note, "\n")
	if len(n) > 100 {
		n = n[:100] + "…"
	}
	return n
}

func us(v float64) string {
	if v < 10 {
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.0f", v)
}

func won(r matrix.Record) string {
	if r.Ops == 0 {
		return ""
	}
	return fmt.Sprintf("%.0f", 100*float64(r.Acquired)/float64(r.Ops))
}

func errs(r matrix.Record) string {
	if r.Errors == 0 {
		return "0"
	}
	e, _, _ := strings.Cut(r.FirstError, "\n")
	if len(e) > 60 {
		e = e[:60] + "…"
	}
	return fmt.Sprintf("%d: %s", r.Errors, e)
}

// Markdown writes the run as a markdown document: environment, targets,
// then one table per scenario.
func Markdown(w io.Writer, run Run, plots []string) error {
	e := run.Env
	var b strings.Builder
	fmt.Fprintf(&b, "# redlock-bench results\n\n")
	fmt.Fprintf(&b, "- date: %s\n- command: `%s`\n- go: %s %s/%s, GOMAXPROCS=%d, %d CPUs (%s)\n",
		e.Date, strings.Join(e.Command, " "), e.GoVersion, e.OS, e.Arch, e.GOMAXPROCS, e.NumCPU, e.CPUModel)
	fmt.Fprintf(&b, "- pinned: %v (affinity %s)\n- servers: %s\n", e.Pinned, e.Affinity, e.Servers)
	fmt.Fprintf(&b, "- each cell: %.1f s after %.1f s warm-up; TTL %d ms; pool size %d\n", e.CellSeconds, e.WarmupSecs, e.TTLMs, e.PoolSize)
	if e.ProxyDelayMs > 0 {
		fmt.Fprintf(&b, "- latency proxy: %.3g ms added in each direction (one round trip = %.3g ms + loopback)", e.ProxyDelayMs, 2*e.ProxyDelayMs)
		if e.ProxyPingUs > 0 {
			fmt.Fprintf(&b, "; measured PING round trip %.0f µs through it, %.0f µs direct", e.ProxyPingUs, e.LoopbackPingUs)
		}
		b.WriteString("\n")
	}
	for _, n := range e.Notes {
		fmt.Fprintf(&b, "- note: %s\n", n)
	}
	b.WriteString("\nLatency is one acquire+release pair. allocs/op, B/op and goroutines/op (gor/op) count the whole process: in-process servers and the latency proxy are included where they run.\n")
	if len(run.Targets) > 0 {
		b.WriteString("\n## Targets\n\n")
		writeTargetsMarkdown(&b, run.Targets)
	}
	for _, sc := range []string{matrix.Loopback, matrix.Proxy} {
		var recs []matrix.Record
		for _, r := range run.Records {
			if r.Scenario == sc {
				recs = append(recs, r)
			}
		}
		if len(recs) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n## Scenario: %s\n\n", sc)
		b.WriteString("| subject | N | fan-out | clients | ops/s | p50 µs | p90 µs | p99 µs | p99.9 µs | max µs | allocs/op | B/op | gor/op | won % | errors |\n")
		b.WriteString("|---|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|\n")
		for _, r := range recs {
			clients := fmt.Sprint(r.Clients)
			if r.SharedKey {
				clients += " (1 key)"
			}
			if r.Ops == 0 {
				fmt.Fprintf(&b, "| %s | %d | %s | %s | %s |||||||||||\n", r.Subject(), r.Nodes, r.FanOut, clients, strings.ReplaceAll(note(r), "|", "/"))
				continue
			}
			fmt.Fprintf(&b, "| %s | %d | %s | %s | %.0f | %s | %s | %s | %s | %s | %.1f | %.0f | %.2f | %s | %s |\n",
				r.Subject(), r.Nodes, r.FanOut, clients, r.Throughput,
				us(r.P50Us), us(r.P90Us), us(r.P99Us), us(r.P999Us), us(r.MaxUs),
				r.AllocsPerOp, r.BytesPerOp, r.GoroutinesPerOp, won(r), strings.ReplaceAll(errs(r), "|", "/"))
		}
	}
	if len(plots) > 0 {
		b.WriteString("\n## Plots\n\n")
		for _, p := range plots {
			fmt.Fprintf(&b, "![%s](%s)\n\n", strings.TrimSuffix(p, filepath.Ext(p)), p)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteFiles writes run.json and results.md into dir, which it creates.
func WriteFiles(dir string, run Run, plots []string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	js, err := json.MarshalIndent(run, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "run.json"), append(js, '\n'), 0o644); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, "results.md"))
	if err != nil {
		return err
	}
	if err := Markdown(f, run, plots); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
