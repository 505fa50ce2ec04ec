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
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/redlock-go/redlock/bench/matrix"
	"github.com/redlock-go/redlock/bench/multiproc"
	"github.com/redlock-go/redlock/bench/servers"
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
	LoopbackPingUs float64 `json:"loopback_ping_us,omitempty"`
	ProxyPingUs    float64 `json:"proxy_ping_us,omitempty"`
	// LoopbackRoundPingUs and ProxyRoundPingUs are the median time for a
	// PING sent to every server at once to be answered by all, direct and
	// through the proxies: the floor of a multiplexed round, which waits
	// for its slowest node.
	LoopbackRoundPingUs float64 `json:"loopback_round_ping_us,omitempty"`
	ProxyRoundPingUs    float64 `json:"proxy_round_ping_us,omitempty"`
	CellSeconds         float64 `json:"cell_seconds"`
	// CurveSeconds is the measured time of the throughput curve's points
	// that are not in the matrix; HandoffSeconds that of a hot-key cell.
	CurveSeconds   float64 `json:"curve_seconds,omitempty"`
	HandoffSeconds float64 `json:"handoff_seconds,omitempty"`
	// HandoffHoldUs is how long a hot-key section held the lock once
	// every other contender waited (measure.HandoffSpec.Hold).
	HandoffHoldUs float64  `json:"handoff_hold_us,omitempty"`
	WarmupSecs    float64  `json:"warmup_seconds"`
	TTLMs         int64    `json:"ttl_ms"`
	PoolSize      int      `json:"pool_size"`
	Notes         []string `json:"notes,omitempty"`
	// Pipelined is the servers' pipelined limit, measured on the servers
	// of the targets' N after the cells: the servers' CPU per pair with
	// the pair's commands pipelined, no client in the way.
	Pipelined *servers.Pipelined `json:"pipelined_limit,omitempty"`
	// PipelinedAtClients is the same loop at half the targets'
	// concurrency deep: as many commands as that many clients, one
	// command each in flight per server, can put in one read.
	PipelinedAtClients *servers.Pipelined `json:"pipelined_at_clients,omitempty"`
}

// Run is everything a run produced.
type Run struct {
	Env     Env             `json:"env"`
	Records []matrix.Record `json:"records"`
	Targets []Target        `json:"targets"`
	// MultiProc is the hot key across processes (bench/multiproc).
	MultiProc []multiproc.Record `json:"multiproc,omitempty"`
}

// TableWidth is the width, in columns, that Table's lines fit in.
const TableWidth = 120

// Table writes the records as aligned text, one block per scenario, each
// line at most TableWidth columns wide, then a summary of the cells that
// had errors: their counts and first error texts, shortened. An errors
// column is added when a cell had errors. p99.9 is in the markdown and
// JSON reports.
func Table(w io.Writer, recs []matrix.Record) error {
	var variants, handoff, kinds []matrix.Record
	recs, variants = splitScenario(recs, matrix.Variants)
	recs, handoff = splitScenario(recs, matrix.Handoff)
	recs, kinds = splitScenario(recs, matrix.Kinds)
	header := []string{"subject", "N", "fan-out", "clients", "ops/s", "p50", "p90", "p99", "max", "allocs", "B/op", "gor/op", "won%", "cCPU", "sCPU"}
	errCol := slices.ContainsFunc(recs, func(r matrix.Record) bool { return r.Errors > 0 })
	if errCol {
		header = append(header, "errors")
	}
	const textCols = 3 // subject, N, fan-out: left-aligned; the rest are right-aligned
	type block struct {
		title string
		rows  [][]string
		notes []string // per row: a note in place of the figures, or ""
	}
	blocks := []*block{
		{title: "loopback: servers on 127.0.0.1"},
		{title: "proxy: each server behind the latency proxy"},
	}
	shared := false
	for _, r := range recs {
		b := blocks[0]
		if r.Scenario == matrix.Proxy {
			b = blocks[1]
		}
		c := fmt.Sprint(r.Clients)
		if r.SharedKey {
			c += "*"
			shared = true
		}
		row := []string{r.Subject(), fmt.Sprint(r.Nodes), r.FanOut, c}
		if r.Ops == 0 && r.Note != "" {
			b.rows = append(b.rows, row)
			b.notes = append(b.notes, note(r))
			continue
		}
		row = append(row, fmt.Sprintf("%.0f", r.Throughput),
			us(r.P50Us), us(r.P90Us), us(r.P99Us), us(r.MaxUs),
			fmt.Sprintf("%.1f", r.AllocsPerOp), fmt.Sprintf("%.0f", r.BytesPerOp), fmt.Sprintf("%.2f", r.GoroutinesPerOp), won(r),
			cpu(r.ClientCPUUsPerOp), cpu(r.ServersCPUUsPerOp))
		if errCol {
			row = append(row, fmt.Sprint(r.Errors))
		}
		b.rows = append(b.rows, row)
		b.notes = append(b.notes, "")
	}
	widths := make([]int, len(header))
	for _, row := range append([][]string{header}, append(blocks[0].rows, blocks[1].rows...)...) {
		for i, c := range row {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	// Two spaces between columns, or one between numbers if that is what
	// it takes to fit.
	numGap, total := "  ", 0
	for _, wd := range widths {
		total += wd + 2
	}
	if total-2 > TableWidth {
		numGap = " "
	}
	var out strings.Builder
	line := func(row []string, note string) {
		var l strings.Builder
		for i, c := range row {
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c))
			switch {
			case i == 0:
			case i == 1 || i <= textCols && numGap == "  ":
				l.WriteString("  ")
			default:
				l.WriteString(numGap)
			}
			if i < textCols && i != 1 {
				l.WriteString(c + pad)
			} else {
				l.WriteString(pad + c)
			}
		}
		if note != "" {
			l.WriteString("  " + note)
		}
		out.WriteString(shorten(strings.TrimRight(l.String(), " "), TableWidth) + "\n")
	}
	first := true
	for _, b := range blocks {
		if len(b.rows) == 0 {
			continue
		}
		if !first {
			out.WriteString("\n")
		}
		first = false
		out.WriteString(b.title + "\n")
		line(header, "")
		for i, row := range b.rows {
			line(row, b.notes[i])
		}
	}
	if len(blocks[0].rows)+len(blocks[1].rows) > 0 {
		out.WriteString("\nLatency in µs per acquire+release pair; allocs, B and goroutines (gor) per pair;\n" +
			"won%: pairs that got the lock; cCPU, sCPU: CPU µs per pair of the client process (getrusage)\n" +
			"and of the cell's servers (INFO cpu, summed). p99.9 and more: results.md and run.json.\n")
	}
	if shared {
		out.WriteString("*: every client locks the same key (contended).\n")
	}
	if len(variants) > 0 {
		if out.Len() > 0 {
			out.WriteString("\n")
		}
		variantTable(&out, variants)
	}
	if len(handoff) > 0 {
		if out.Len() > 0 {
			out.WriteString("\n")
		}
		handoffTable(&out, handoff)
	}
	if len(kinds) > 0 {
		if out.Len() > 0 {
			out.WriteString("\n")
		}
		kindsTable(&out, kinds)
	}
	if _, err := io.WriteString(w, out.String()); err != nil {
		return err
	}
	return ErrorSummary(w, append(append(append(recs, variants...), handoff...), kinds...))
}

// splitScenario separates the cells of scenario (the Variants' fencing
// and lease cells, the Handoff's hot key) from the others, keeping the
// order of each.
func splitScenario(recs []matrix.Record, scenario string) (others, of []matrix.Record) {
	for _, r := range recs {
		if r.Scenario == scenario {
			of = append(of, r)
		} else {
			others = append(others, r)
		}
	}
	return others, of
}

// plainOf returns the plain variant's record of r's driver, N and fan-out,
// or nil.
func plainOf(variants []matrix.Record, r matrix.Record) *matrix.Record {
	c := r.Cell
	c.Variant = "plain"
	p := matrix.Find(variants, c)
	if p == nil || p.Ops == 0 {
		return nil
	}
	return p
}

// vsPlain is r's p50 over its plain variant's, "1.23×", or "" without one.
func vsPlain(variants []matrix.Record, r matrix.Record) string {
	p := plainOf(variants, r)
	if p == nil || p.P50Us <= 0 || r.Ops == 0 {
		return ""
	}
	return fmt.Sprintf("%.2f×", r.P50Us/p.P50Us)
}

func rounds(r matrix.Record) string {
	if r.RoundsPerOp == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", r.RoundsPerOp)
}

// variantTable writes the fencing and lease cells as an aligned table of
// their own, with rounds per pair and p50 against the plain variant.
func variantTable(out *strings.Builder, recs []matrix.Record) {
	header := []string{"subject", "variant", "N", "fan-out", "ops/s", "p50", "mean", "p99", "p50/plain", "allocs", "B/op", "gor/op", "rounds/op"}
	errCol := slices.ContainsFunc(recs, func(r matrix.Record) bool { return r.Errors > 0 })
	if errCol {
		header = append(header, "errors")
	}
	rows := [][]string{header}
	notes := []string{""}
	for _, r := range recs {
		row := []string{r.Subject(), r.Variant, fmt.Sprint(r.Nodes), r.FanOut}
		if r.Ops == 0 {
			rows = append(rows, row)
			notes = append(notes, note(r))
			continue
		}
		row = append(row, fmt.Sprintf("%.0f", r.Throughput), us(r.P50Us), us(r.MeanUs), us(r.P99Us), vsPlain(recs, r),
			fmt.Sprintf("%.1f", r.AllocsPerOp), fmt.Sprintf("%.0f", r.BytesPerOp), fmt.Sprintf("%.2f", r.GoroutinesPerOp), rounds(r))
		if errCol {
			row = append(row, fmt.Sprint(r.Errors))
		}
		rows = append(rows, row)
		notes = append(notes, "")
	}
	fmt.Fprintf(out, "fencing and lease: acquire+release at N=%d, one client, servers on 127.0.0.1\n", recs[0].Nodes)
	// subject, variant and fan-out are text, left-aligned; N is a number
	writeAligned(out, rows, notes, func(j int) bool { return j < 4 && j != 2 })
	out.WriteString("plain: redlock.Client TryLock+Unlock of the bare handle; fenced: with Options.Fencing;\n" +
		"handle: plain + the handle's Context (its watcher goroutine);\n" +
		"lease: plain with Lease{Fraction: 1/3}, no extension within a pair (its setup and teardown only).\n" +
		"rounds/op: driver rounds (Begin calls) per pair, counted exactly; p50/plain: p50 over the plain row's.\n")
}

// ErrorSummary writes, for the cells that had errors, the count of failed
// pairs and the first error's text, shortened to one line: the text is
// written once for all the cells that share it. It writes nothing when no
// cell had errors.
func ErrorSummary(w io.Writer, recs []matrix.Record) error {
	var texts []string
	cells := map[string][]string{}
	n := 0
	for _, r := range recs {
		if r.Errors == 0 {
			continue
		}
		n++
		t := errorText(r.FirstError)
		if _, ok := cells[t]; !ok {
			texts = append(texts, t)
		}
		cells[t] = append(cells[t], fmt.Sprintf("%s: %d of %d pairs failed", cellName(r), r.Errors, r.Ops))
	}
	if n == 0 {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nerrors in %d %s (the first error of each cell; full text in run.json):\n", n, plural(n, "cell", "cells"))
	for _, t := range texts {
		for _, c := range cells[t] {
			b.WriteString(shorten("  "+c, TableWidth) + "\n")
		}
		b.WriteString(shorten("      "+t, TableWidth) + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// cellName names a cell in words: "redlock+redigo loopback N=5
// multiplexed, 32 clients on 1 key".
func cellName(r matrix.Record) string {
	c := fmt.Sprintf("%d %s", r.Clients, plural(r.Clients, "client", "clients"))
	if r.SharedKey {
		c += " on 1 key"
	}
	sc := r.Scenario
	if r.Variant != "" {
		sc += " (" + r.Variant + ")"
	}
	return fmt.Sprintf("%s %s N=%d %s, %s", r.Subject(), sc, r.Nodes, r.FanOut, c)
}

func clients(r matrix.Record) string {
	if r.SharedKey {
		return fmt.Sprintf("%d (1 key)", r.Clients)
	}
	return fmt.Sprint(r.Clients)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// benchKey matches the quoted lock key of a benchmark cell in an error
// text, with the length the core adds when it quotes only a key's start;
// the key only repeats the cell's coordinates.
var benchKey = regexp.MustCompile(`"bench:[^"]*"(\.\.\. \([0-9]+ bytes\))?`)

// errorText returns the first line of an error text with the cell's lock
// key elided.
func errorText(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if s == "" {
		return "(no error text)"
	}
	return benchKey.ReplaceAllString(s, `"<key>"`)
}

// shorten cuts s to at most n runes, ending it with "…" if it was cut.
func shorten(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// note returns the first line of a record's note, shortened for a table.
func note(r matrix.Record) string {
	n, _, _ := strings.Cut(r.Note, "\n")
	return shorten(n, 101)
}

// cpu formats a CPU time per pair in µs, "-" when it was not measured.
func cpu(v float64) string {
	if v <= 0 {
		return "-"
	}
	return us(v)
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
	if e.CurveSeconds > 0 {
		fmt.Fprintf(&b, "- throughput curve: the points beside the matrix's concurrencies, %.2g s each after the warm-up\n", e.CurveSeconds)
	}
	if e.HandoffSeconds > 0 {
		fmt.Fprintf(&b, "- hot key: %.2g s per cell after the warm-up; a section releases once every other contender waits", e.HandoffSeconds)
		if e.HandoffHoldUs > 0 {
			fmt.Fprintf(&b, ", and %.0f µs more", e.HandoffHoldUs)
		}
		b.WriteString("\n")
	}
	if e.LoopbackRoundPingUs > 0 {
		fmt.Fprintf(&b, "- a PING to every server of the targets' N at once, answered by all: %.0f µs (the median of 200 rounds), the floor of a multiplexed round\n", e.LoopbackRoundPingUs)
	}
	if e.ProxyDelayMs > 0 {
		fmt.Fprintf(&b, "- latency proxy: %.3g ms added in each direction (one round trip = %.3g ms + loopback)", e.ProxyDelayMs, 2*e.ProxyDelayMs)
		if e.ProxyPingUs > 0 {
			fmt.Fprintf(&b, "; measured PING round trip %.0f µs through it, %.0f µs direct", e.ProxyPingUs, e.LoopbackPingUs)
			if e.ProxyRoundPingUs > 0 {
				fmt.Fprintf(&b, "; a PING to every server at once, answered by all: %.0f µs through the proxies, %.0f µs direct",
					e.ProxyRoundPingUs, e.LoopbackRoundPingUs)
			}
		}
		b.WriteString("\n")
	}
	if p := e.Pipelined; p != nil {
		fmt.Fprintf(&b, "- the servers' pipelined limit: %.2f µs of the servers' CPU per pair (INFO cpu), SET NX PX then the release script by EVALSHA, %d pairs per batch on %d servers at once, %d pairs each or more in %.2g s%s\n",
			p.ServersCPUUsPerOp, p.Depth, p.Servers, p.Pairs, p.Seconds, loopRounds(p))
		if p.ClientCPUUsPerOp > 0 {
			fmt.Fprintf(&b, "  - the loop's own client CPU: %.2f µs per pair (getrusage)\n", p.ClientCPUUsPerOp)
		}
		if p.ServersReadsPerOp > 0 {
			fmt.Fprintf(&b, "  - the servers' reads of the loop's input: %.3g per pair (INFO stats)\n", p.ServersReadsPerOp)
		}
	}
	if p := e.PipelinedAtClients; p != nil {
		fmt.Fprintf(&b, "- the same loop %d pairs per batch (the most the targets' clients put in one read): %.2f µs of the servers' CPU per pair",
			p.Depth, p.ServersCPUUsPerOp)
		if p.ClientCPUUsPerOp > 0 {
			fmt.Fprintf(&b, ", %.2f µs of the client's", p.ClientCPUUsPerOp)
		}
		if p.ServersReadsPerOp > 0 {
			fmt.Fprintf(&b, ", %.3g of the servers' reads", p.ServersReadsPerOp)
		}
		b.WriteString(loopRounds(p) + "\n")
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
		b.WriteString("| subject | N | fan-out | clients | ops/s | p50 µs | p90 µs | p99 µs | p99.9 µs | max µs | allocs/op | B/op | gor/op | won % | client CPU µs/op | servers CPU µs/op | errors |\n")
		b.WriteString("|---|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|\n")
		var repeated []string
		for _, r := range recs {
			if r.Ops == 0 {
				fmt.Fprintf(&b, "| %s | %d | %s | %s | %s |||||||||||||\n", r.Subject(), r.Nodes, r.FanOut, clients(r), strings.ReplaceAll(note(r), "|", "/"))
				continue
			}
			fmt.Fprintf(&b, "| %s | %d | %s | %s | %.0f | %s | %s | %s | %s | %s | %.1f | %.0f | %.2f | %s | %s | %s | %d |\n",
				r.Subject(), r.Nodes, r.FanOut, clients(r), r.Throughput,
				us(r.P50Us), us(r.P90Us), us(r.P99Us), us(r.P999Us), us(r.MaxUs),
				r.AllocsPerOp, r.BytesPerOp, r.GoroutinesPerOp, won(r), cpu(r.ClientCPUUsPerOp), cpu(r.ServersCPUUsPerOp), r.Errors)
			if len(r.RepeatP50Us) > 1 {
				l := fmt.Sprintf("%s N=%d %s, %s: %s", r.Subject(), r.Nodes, r.FanOut, clients(r), repeats(r))
				if len(r.RoundP50Us) > 1 {
					l += fmt.Sprintf(" (the median round; every round's p50: %s µs)", p50Rounds(r))
				}
				repeated = append(repeated, l)
			}
		}
		b.WriteString("\nclient CPU: user+system CPU of the process that ran the loop (getrusage) over the measured window, per pair; " +
			"servers CPU: used_cpu_sys + used_cpu_user of INFO cpu of the cell's servers, summed, per pair; -: not measured.\n")
		if len(repeated) > 0 {
			b.WriteString("\nCells measured more than once, each row the repeat of median p50; the p50 of every repeat, in run order:\n\n")
			for _, l := range repeated {
				fmt.Fprintf(&b, "- %s\n", l)
			}
		}
	}
	if _, variants := splitScenario(run.Records, matrix.Variants); len(variants) > 0 {
		variantMarkdown(&b, variants, e)
	}
	if _, handoff := splitScenario(run.Records, matrix.Handoff); len(handoff) > 0 {
		handoffMarkdown(&b, handoff, e)
	}
	if _, kinds := splitScenario(run.Records, matrix.Kinds); len(kinds) > 0 {
		kindsMarkdown(&b, kinds)
	}
	b.WriteString(multiproc.Markdown(run.MultiProc))
	var failed []matrix.Record
	for _, r := range run.Records {
		if r.Errors > 0 {
			failed = append(failed, r)
		}
	}
	if len(failed) > 0 {
		b.WriteString("\n## Errors\n\nThe first error of each cell that had any (the lock key elided; full text in run.json).\n\n")
		for _, r := range failed {
			fmt.Fprintf(&b, "- %s: %d of %d pairs failed; first: `%s`\n",
				cellName(r), r.Errors, r.Ops, strings.ReplaceAll(errorText(r.FirstError), "`", "'"))
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

// variantMarkdown writes the fencing and lease section: what each row is,
// then the table.
func variantMarkdown(b *strings.Builder, recs []matrix.Record, e Env) {
	fmt.Fprintf(b, "\n## Scenario: fencing and lease\n\n")
	fmt.Fprintf(b, "Acquire+release pairs at N=%d, one client, on the loopback servers: the same drivers through four APIs. ", recs[0].Nodes)
	b.WriteString("Every row is `redlock.Client`'s `TryLock`, then the handle's `Unlock`. " +
		"**plain** is the bare handle, without a lease and without asking for its Context, so no goroutine starts: the pair of the loopback table. " +
		"**fenced** is that pair with `Options.Fencing`, reading the handle's `Fence`: the acquire round also increments the key's fence counter on each node where the SET lands, " +
		"and one more round raises the counter to the largest value on a majority before the lock is returned. " +
		"**handle** is the plain pair that also asks for the handle's `Context`: the handle's state, " +
		"its Context and its watcher goroutine (one goroutine per lock, stopped by Unlock). " +
		"**lease** is the plain pair with `Lease{Fraction: 1.0/3}`, whose watcher starts with the lock: ")
	if e.TTLMs > 0 {
		fmt.Fprintf(b, "with the TTL of %d ms the first extension would fall about %.3g s after the acquisition, ", e.TTLMs, float64(e.TTLMs)/3000)
	} else {
		b.WriteString("the first extension would fall a third of the validity after the acquisition, ")
	}
	b.WriteString("so none runs within a pair and the row measures what the lease costs to set up and tear down, not its extensions.\n\n" +
		"rounds/op is the driver's rounds (`core.Driver.Begin` calls) per pair, counted exactly over the measured window: " +
		"every row's driver is wrapped in a counter that adds one atomic increment per round. " +
		"p50/plain is the row's p50 over the plain row's of the same driver and fan-out.\n\n")
	b.WriteString("| subject | variant | N | fan-out | ops/s | p50 µs | mean µs | p99 µs | p50/plain | allocs/op | B/op | gor/op | rounds/op | errors |\n")
	b.WriteString("|---|---|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|\n")
	for _, r := range recs {
		if r.Ops == 0 {
			fmt.Fprintf(b, "| %s | %s | %d | %s | %s |||||||||\n", r.Subject(), r.Variant, r.Nodes, r.FanOut, strings.ReplaceAll(note(r), "|", "/"))
			continue
		}
		fmt.Fprintf(b, "| %s | %s | %d | %s | %.0f | %s | %s | %s | %s | %.1f | %.0f | %.2f | %s | %d |\n",
			r.Subject(), r.Variant, r.Nodes, r.FanOut, r.Throughput, us(r.P50Us), us(r.MeanUs), us(r.P99Us), vsPlain(recs, r),
			r.AllocsPerOp, r.BytesPerOp, r.GoroutinesPerOp, rounds(r), r.Errors)
	}
}

// WriteFiles writes run.json and results.md into dir, which it creates.
func WriteFiles(dir string, run Run, plots []string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil { //nolint:gosec // G301: results are for reading, as the repository is
		return err
	}
	js, err := json.MarshalIndent(run, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "run.json"), append(js, '\n'), 0o644); err != nil { //nolint:gosec // G306: results are for reading, as the repository is
		return err
	}
	f, err := os.Create(filepath.Join(dir, "results.md")) //nolint:gosec // G304: the output directory the caller chose
	if err != nil {
		return err
	}
	if err := Markdown(f, run, plots); err != nil {
		_ = f.Close() // the write's error is the one to report
		return err
	}
	return f.Close()
}

// writeAligned writes rows as columns two spaces apart, each as wide as
// its widest cell, left-aligned where left says so and right-aligned
// otherwise, with each row's note after it, shortened to TableWidth.
func writeAligned(out *strings.Builder, rows [][]string, notes []string, left func(col int) bool) {
	var widths []int
	for _, row := range rows {
		for i, c := range row {
			if i == len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	for i, row := range rows {
		var l strings.Builder
		for j, c := range row {
			pad := strings.Repeat(" ", widths[j]-utf8.RuneCountInString(c))
			if j > 0 {
				l.WriteString("  ")
			}
			if left(j) {
				l.WriteString(c + pad)
			} else {
				l.WriteString(pad + c)
			}
		}
		if notes[i] != "" {
			l.WriteString("  " + notes[i])
		}
		out.WriteString(shorten(strings.TrimRight(l.String(), " "), TableWidth) + "\n")
	}
}

// loopRounds says which measurement of a pipelined loop measured more
// than once the figures are: "; the lowest of rounds 27.3, 19.4, 20.1 µs".
func loopRounds(p *servers.Pipelined) string {
	if len(p.Rounds) < 2 {
		return ""
	}
	return "; the lowest of rounds " + joined(p.Rounds, func(v float64) string { return fmt.Sprintf("%.1f", v) }) +
		" µs, one after each round of the throughput cells"
}
