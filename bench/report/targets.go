package report

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/redlock-go/redlock/bench/matrix"
	"github.com/redlock-go/redlock/bench/multiproc"
)

// Target is one of the project's performance targets, checked against
// figures of the same run.
type Target struct {
	Name string `json:"name"`
	// Goal states the bound, Figures the numbers it was checked with.
	Goal    string  `json:"goal"`
	Figures string  `json:"figures"`
	Ratio   float64 `json:"ratio,omitempty"`
	// Measured is false when a needed cell is missing from the run.
	Measured bool   `json:"measured"`
	Pass     bool   `json:"pass"`
	Note     string `json:"note,omitempty"`
}

// redisDrivers are the redlock drivers over real Redis clients, in the
// order their target rows are printed.
var redisDrivers = []string{"redigo", "rueidis", "radix", "goredis"}

// Reference subjects for the comparisons.
const (
	refPeer   = "redsync"
	refClient = "redigo"
	// zero is the largest per-op count that rounds to 0 at two decimals:
	// a long measured window amortises the runtime's own background
	// allocations and goroutines below it.
	zero = 0.005
)

// Notes on the run rather than on one target: Targets writes each once.
const (
	noteUnpinned = "unpinned run: latency targets are defined pinned (--pin: taskset -c 0, GOMAXPROCS=1)"
	notePinned   = "pinned run: the throughput target is defined unpinned"
	noteMini     = "miniredis servers: not a real deployment"
)

// Evaluate computes the targets from the records of one run. nodes is the
// N the targets are stated at (5), clients the high concurrency (32).
func Evaluate(recs []matrix.Record, env Env, nodes, clients int) []Target {
	var ts []Target
	latNote, tputNote := "", ""
	if !env.Pinned {
		latNote = noteUnpinned
	} else {
		tputNote = notePinned
	}
	if strings.HasPrefix(env.Servers, "miniredis") {
		latNote = join(latNote, noteMini)
		tputNote = join(tputNote, noteMini)
	}
	find := func(c matrix.Cell) *matrix.Record {
		r := matrix.Find(recs, c)
		if r == nil || r.Ops == 0 {
			return nil
		}
		return r
	}
	missing := func(name, goal string, what ...string) Target {
		return Target{Name: name, Goal: goal, Figures: "not measured: " + strings.Join(what, ", ")}
	}
	lb := func(lib, drv string, n int, fan string, c int) *matrix.Record {
		return find(matrix.Cell{Library: lib, Driver: drv, Scenario: matrix.Loopback, Nodes: n, FanOut: fan, Clients: c})
	}

	// 1. Core overhead over the in-memory driver, in a run with the
	// loopback matrix (not in one of the fencing and lease table or the
	// hot key alone).
	matrixRun := slices.ContainsFunc(recs, func(r matrix.Record) bool {
		return r.Scenario == matrix.Loopback || r.Scenario == matrix.Proxy
	})
	for _, fan := range []string{"multiplexed", "sequential"} {
		if !matrixRun {
			break
		}
		name := fmt.Sprintf("core overhead, mem N=%d %s", nodes, fan)
		goal := "0 allocs/op and mean ≤ 1 µs per acquire+release"
		r := lb(matrix.Redlock, "mem", nodes, fan, 1)
		if r == nil {
			ts = append(ts, missing(name, goal, "redlock+mem"))
			continue
		}
		ts = append(ts, Target{Name: name, Goal: goal, Measured: true,
			Figures: fmt.Sprintf("%.2f allocs/op, mean %.2f µs (p50 %.2f µs)", r.AllocsPerOp, r.MeanUs, r.P50Us),
			Ratio:   r.MeanUs,
			Pass:    r.AllocsPerOp < zero && r.MeanUs <= 1, Note: latNote})
	}

	// 2. Against redsync+redigo at N, one client.
	peer := lb(refPeer, refClient, nodes, matrix.FanConcurrent, 1)
	for _, d := range redisDrivers {
		subj := "redlock+" + d
		r := lb(matrix.Redlock, d, nodes, "multiplexed", 1)
		name := fmt.Sprintf("%s N=%d multiplexed vs redsync+redigo: p50", subj, nodes)
		goal := "p50 ≤ 0.75× redsync+redigo"
		aname := fmt.Sprintf("%s N=%d multiplexed vs redsync+redigo: allocs", subj, nodes)
		agoal := "allocs/op ≤ 1/3 of redsync+redigo's"
		gname := fmt.Sprintf("%s N=%d multiplexed: goroutines per op", subj, nodes)
		ggoal := "no goroutine started per op"
		if r == nil {
			continue // driver not in this run
		}
		ts = append(ts, Target{Name: gname, Goal: ggoal, Measured: true,
			Figures: fmt.Sprintf("%.3f goroutines/op", r.GoroutinesPerOp), Ratio: r.GoroutinesPerOp,
			Pass: r.GoroutinesPerOp < zero})
		if peer == nil {
			ts = append(ts, missing(name, goal, "redsync+redigo"), missing(aname, agoal, "redsync+redigo"))
			continue
		}
		ratio := r.P50Us / peer.P50Us
		ts = append(ts, Target{Name: name, Goal: goal, Measured: true,
			Figures: fmt.Sprintf("%.1f µs vs %.1f µs", r.P50Us, peer.P50Us), Ratio: ratio,
			Pass: ratio <= 0.75, Note: latNote})
		aratio := r.AllocsPerOp / peer.AllocsPerOp
		ts = append(ts, Target{Name: aname, Goal: agoal, Measured: true,
			Figures: fmt.Sprintf("%.1f vs %.1f allocs/op", r.AllocsPerOp, peer.AllocsPerOp), Ratio: aratio,
			Pass: aratio <= 1.0/3})
	}

	// 3. Behind the latency proxy.
	if env.ProxyDelayMs > 0 {
		rtt := 2 * env.ProxyDelayMs * 1000 // µs
		for _, d := range redisDrivers {
			subj := "redlock+" + d
			for _, fan := range []string{"multiplexed", "sequential"} {
				px := find(matrix.Cell{Library: matrix.Redlock, Driver: d, Scenario: matrix.Proxy, Nodes: nodes, FanOut: fan, Clients: 1})
				floor := lb(matrix.Redlock, d, nodes, fan, 1)
				if px == nil && floor == nil {
					continue
				}
				trips, bound := 2, 1.15
				goal := fmt.Sprintf("p50 ≤ 1.15× (2 round trips + loopback floor)")
				if fan == "sequential" {
					trips = 2 * nodes
					goal = fmt.Sprintf("p50 ≈ %d round trips + loopback floor (0.9–1.15×)", trips)
				}
				name := fmt.Sprintf("%s N=%d %s behind a %.3g ms/direction proxy", subj, nodes, fan, env.ProxyDelayMs)
				if px == nil || floor == nil {
					ts = append(ts, missing(name, goal, "proxy or loopback cell"))
					continue
				}
				ref := float64(trips)*rtt + floor.P50Us
				ratio := px.P50Us / ref
				pass := ratio <= bound
				if fan == "sequential" {
					pass = ratio >= 0.9 && ratio <= bound
				}
				n := latNote
				if env.ProxyPingUs > 0 {
					// The same bound with the proxy's measured round trip
					// in place of the nominal one: what is the library's.
					real := float64(trips)*(env.ProxyPingUs-env.LoopbackPingUs) + floor.P50Us
					n = join(fmt.Sprintf("with the measured proxy round trip (%.0f µs): %.3g×", env.ProxyPingUs-env.LoopbackPingUs, px.P50Us/real), n)
				}
				ts = append(ts, Target{Name: name, Goal: goal, Measured: true,
					Figures: fmt.Sprintf("%.0f µs vs %d×%.0f µs + %.0f µs = %.0f µs", px.P50Us, trips, rtt, floor.P50Us, ref),
					Ratio:   ratio, Pass: pass, Note: n})
			}
		}
	}

	// 4. Throughput at high concurrency against the best peer.
	var best, bestRedlock *matrix.Record // any peer; peers that run Redlock over N servers
	for i := range recs {
		r := &recs[i]
		if r.IsPeer() && r.Scenario == matrix.Loopback && r.Nodes == nodes && r.Clients == clients && !r.SharedKey && r.Ops > 0 {
			if best == nil || r.Throughput > best.Throughput {
				best = r
			}
			if r.Library == matrix.Redsync && (bestRedlock == nil || r.Throughput > bestRedlock.Throughput) {
				bestRedlock = r
			}
		}
	}
	for _, d := range redisDrivers {
		r := lb(matrix.Redlock, d, nodes, "multiplexed", clients)
		if r == nil {
			continue
		}
		name := fmt.Sprintf("redlock+%s N=%d multiplexed, %d clients: throughput", d, nodes, clients)
		goal := "≥ 1.5× the best peer's"
		if best == nil {
			ts = append(ts, missing(name, goal, "peers"))
			continue
		}
		ratio := r.Throughput / best.Throughput
		n := tputNote
		if bestRedlock != nil && bestRedlock != best {
			n = join(fmt.Sprintf("vs the best Redlock peer, %s at %.0f ops/s: %.3g×", bestRedlock.Subject(), bestRedlock.Throughput, r.Throughput/bestRedlock.Throughput), n)
		}
		ts = append(ts, Target{Name: name, Goal: goal, Measured: true,
			Figures: fmt.Sprintf("%.0f vs %.0f ops/s (%s)", r.Throughput, best.Throughput, best.Subject()),
			Ratio:   ratio, Pass: ratio >= 1.5, Note: n})
	}
	ts = append(ts, variantTargets(recs)...)
	return append(ts, handoffTargets(recs, latNote)...)
}

// variantTargets are the targets of the fencing and lease table, at the N
// it ran: fencing adds exactly one round to a pair, on every driver and
// fan-out; core's plain and fenced pairs allocate nothing (mem).
func variantTargets(recs []matrix.Record) []Target {
	var vs []matrix.Record
	for _, r := range recs {
		if r.Scenario == matrix.Variants && r.Ops > 0 {
			vs = append(vs, r)
		}
	}
	if len(vs) == 0 {
		return nil
	}
	nodes := vs[0].Nodes
	get := func(drv, fan, variant string) *matrix.Record {
		return matrix.Find(vs, matrix.Cell{Library: matrix.Redlock, Driver: drv, Scenario: matrix.Variants, Nodes: nodes, FanOut: fan, Clients: 1, Variant: variant})
	}
	var ts []Target
	for _, d := range append([]string{"mem"}, redisDrivers...) {
		name := fmt.Sprintf("fencing adds exactly one round: redlock+%s N=%d", d, nodes)
		goal := "rounds/op fenced − plain = 1 in every fan-out"
		var figs []string
		measured, pass, ratio := false, true, 0.0
		for _, fan := range []string{"multiplexed", "sequential"} {
			p, f := get(d, fan, "plain"), get(d, fan, "fenced")
			switch {
			case p == nil && f == nil:
				continue
			case p == nil || f == nil:
				figs = append(figs, fan+": not measured: plain or fenced cell")
				pass = false
				continue
			}
			diff := f.RoundsPerOp - p.RoundsPerOp
			if !measured {
				ratio = diff
			}
			measured = true
			pass = pass && math.Abs(diff-1) < 1e-9
			figs = append(figs, fmt.Sprintf("%s %.3g → %.3g", fan, p.RoundsPerOp, f.RoundsPerOp))
		}
		if len(figs) == 0 {
			continue // driver not in the table
		}
		t := Target{Name: name, Goal: goal, Figures: strings.Join(figs, ", "), Measured: measured, Pass: measured && pass}
		if measured {
			t.Ratio = ratio
		}
		ts = append(ts, t)
	}
	var figs []string
	pass, most := true, 0.0
	for _, fan := range []string{"multiplexed", "sequential"} {
		var got []string
		for _, v := range []string{"plain", "fenced"} {
			if r := get("mem", fan, v); r != nil {
				got = append(got, fmt.Sprintf("%s %.2f", v, r.AllocsPerOp))
				pass = pass && r.AllocsPerOp < zero
				most = max(most, r.AllocsPerOp)
			}
		}
		if len(got) > 0 {
			figs = append(figs, fan+": "+strings.Join(got, ", "))
		}
	}
	if len(figs) > 0 {
		ts = append(ts, Target{Name: fmt.Sprintf("core acquire+release, plain and fenced: redlock+mem N=%d", nodes),
			Goal: "0 allocs/op", Figures: strings.Join(figs, "; ") + " allocs/op", Ratio: most, Measured: true, Pass: pass})
	}
	return ts
}

func join(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}

func verdict(t Target) string {
	switch {
	case !t.Measured:
		return "n/a"
	case t.Pass:
		return "PASS"
	}
	return "FAIL"
}

func ratio(t Target) string {
	if !t.Measured || math.IsNaN(t.Ratio) || math.IsInf(t.Ratio, 0) {
		return ""
	}
	return fmt.Sprintf("%.3g", t.Ratio)
}

// Targets writes the targets in lines of at most TableWidth columns: per
// target, its verdict, ratio and name, then its goal and figures, then its
// own notes, indented. Notes on the run (unpinned, miniredis) are numbered
// and written once, after the targets.
func Targets(w io.Writer, ts []Target) error {
	rw := len("ratio")
	for _, t := range ts {
		rw = max(rw, len(ratio(t)))
	}
	indent := strings.Repeat(" ", len("verdict  ")+rw+2) // under the name
	// shared holds the notes written once, after the targets; a target
	// refers to the first as [1].
	var shared []string
	var b strings.Builder
	fmt.Fprintf(&b, "verdict  %*s  target\n", rw, "ratio")
	for _, t := range ts {
		var own, marks []string
		for _, n := range noteParts(t.Note) {
			if n != noteUnpinned && n != notePinned && n != noteMini {
				own = append(own, n)
				continue
			}
			i := slices.Index(shared, n)
			if i < 0 {
				shared = append(shared, n)
				i = len(shared) - 1
			}
			marks = append(marks, fmt.Sprintf("[%d]", i+1))
		}
		name := t.Name
		if len(marks) > 0 {
			name += " " + strings.Join(marks, "")
		}
		b.WriteString(shorten(fmt.Sprintf("%-7s  %*s  %s", verdict(t), rw, ratio(t), name), TableWidth) + "\n")
		for _, l := range append([]string{"goal: " + t.Goal, "got:  " + t.Figures}, own...) {
			b.WriteString(shorten(indent+l, TableWidth) + "\n")
		}
	}
	for i, n := range shared {
		b.WriteString(shorten(fmt.Sprintf("[%d] %s", i+1, n), TableWidth) + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// noteParts splits a note that join built back into its parts.
func noteParts(note string) []string {
	if note == "" {
		return nil
	}
	return strings.Split(note, "; ")
}

func writeTargetsMarkdown(b *strings.Builder, ts []Target) {
	b.WriteString("| verdict | target | goal | ratio | figures | note |\n|---|---|---|--:|---|---|\n")
	for _, t := range ts {
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s |\n", verdict(t), t.Name, t.Goal, ratio(t), t.Figures, t.Note)
	}
}

// MultiProcTarget is the target row of the hot key across processes;
// false when the run has no such cell.
func MultiProcTarget(recs []multiproc.Record) (Target, bool) {
	if len(recs) == 0 {
		return Target{}, false
	}
	t := Target{}
	t.Name, t.Goal, t.Figures, t.Ratio, t.Measured, t.Pass, t.Note = multiproc.Target(recs)
	return t, true
}
