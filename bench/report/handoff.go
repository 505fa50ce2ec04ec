package report

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/redlock-go/redlock/bench/matrix"
)

// The hot key (the Handoff scenario): its table, its markdown section and
// its targets.

func exclusion(r matrix.Record) string {
	h := r.Handoff
	if h == nil {
		return ""
	}
	if h.Exclusive() {
		return "ok"
	}
	return fmt.Sprintf("BROKEN %d/%d", h.Overlaps, h.LostUpdates())
}

// handoffTable writes the Handoff cells as an aligned table.
func handoffTable(out *strings.Builder, recs []matrix.Record) {
	header := []string{"subject", "waits", "N", "cont", "CS/s", "handoffs", "p50", "p99", "ret p50", "early", "cCPU", "sCPU", "excl"}
	errCol := slices.ContainsFunc(recs, func(r matrix.Record) bool { return r.Errors > 0 })
	if errCol {
		header = append(header, "errors")
	}
	rows := [][]string{header}
	notes := []string{""}
	var broken []string
	for _, r := range recs {
		row := []string{r.Subject(), r.Waits(), fmt.Sprint(r.Nodes), fmt.Sprint(r.Clients)}
		h := r.Handoff
		if r.Ops == 0 || h == nil {
			rows = append(rows, row)
			notes = append(notes, note(r))
			continue
		}
		row = append(row, fmt.Sprintf("%.0f", r.Throughput), fmt.Sprint(h.Handoffs),
			us(h.FromCallP50Us), us(h.FromCallP99Us), us(h.P50Us), fmt.Sprint(h.Early),
			cpu(r.ClientCPUUsPerOp), cpu(r.ServersCPUUsPerOp), exclusion(r))
		if errCol {
			row = append(row, fmt.Sprint(r.Errors))
		}
		rows = append(rows, row)
		notes = append(notes, "")
		switch {
		case !h.Exclusive():
			broken = append(broken, fmt.Sprintf("%s, %d contenders:", r.HandoffName(), r.Clients), "    "+matrix.OverlapNote(*h))
		case r.Note != "":
			broken = append(broken, fmt.Sprintf("%s, %d contenders: %s", r.HandoffName(), r.Clients, note(r)))
		}
	}
	fmt.Fprintf(out, "hot key: contenders loop acquire (waiting), tiny critical section, release on one key, servers on 127.0.0.1\n")
	writeAligned(out, rows, notes, func(j int) bool { return j < 2 }) // subject, waits
	out.WriteString("cont: contenders; CS/s: critical sections per second; p50, p99: handoff µs, a release's call\n" +
		"to the next holder's acquire returning; ret p50: from the release's return instead; early: next\n" +
		"acquire returned first (0 from the return); cCPU, sCPU: CPU µs per section of the client process and\n" +
		"of the cell's servers; excl: exclusion check, ok or BROKEN overlaps/lost updates.\n")
	for _, b := range broken {
		out.WriteString(shorten(b, TableWidth) + "\n")
	}
}

// handoffMarkdown writes the hot-key section: what it measures, then the
// table.
func handoffMarkdown(b *strings.Builder, recs []matrix.Record, e Env) {
	b.WriteString("\n## Scenario: hot key (handoff)\n\n")
	fmt.Fprintf(b, "One key at N=%d on the loopback servers, 2 or more contenders in one process sharing one client of the library "+
		"(this library: one `redlock.Client` over one driver; redsync: one `Redsync`, a `Mutex` per contender; rueidislock: one `Locker`). "+
		"Each contender loops: acquire, waiting as long as it takes (`Client.Lock`; redsync `LockContext` with `WithTries(MaxInt32)` and its default delay, random 50–250 ms; "+
		"rueidislock `WithContext`), a critical section, release. ", recs[0].Nodes)
	b.WriteString("**wake** is `redlock.Client`'s default: a waiter tries again when the release is announced (or the holder's keys expire); " +
		"**poll** is `Options.Poll`: it sleeps `Options.Backoff`'s delays, random 50–250 ms, as redsync does; " +
		"rueidislock waits for its keys' client-side-caching invalidation and, within one process, for its own releases.\n\n")
	hold := ""
	if e.HandoffHoldUs > 0 {
		hold = fmt.Sprintf(", then %.0f µs more (--handoff-hold, a sleep)", e.HandoffHoldUs)
	}
	fmt.Fprintf(b, "Every handoff goes to a contender that was waiting: a contender that released tries again only once another has acquired "+
		"(otherwise a polling lock's releaser takes it back at once, its first attempt beating every sleeper's retry, and the others starve), and the critical section holds the lock "+
		"until every other contender is in its acquire call%s (otherwise the first attempt of the contender that came back races the release, "+
		"and a polling lock's handoff is that race won rather than a waiter's wait). The section's work, the same for every library, is a read-modify-write of a shared counter "+
		"around a spin of about a microsecond; two sections inside at once, or a counter short of the sections entered, would be reported (exclusion), not hidden.\n\n", hold)
	b.WriteString("**handoff p50/p99** is the time from a holder's release call to the next holder's acquire call returning, in µs: what a waiter waits once the holder decides to let go. " +
		"**from the return** measures the same handoffs from the release call's return, p50 to max; it flatters, since a waiter whose attempt was already on the wire counts as nothing: " +
		"**early** counts the handoffs in which the next acquire returned before the release call did (the keys were already gone on a quorum), 0 from the return. **CS/s** is critical sections completed per second; " +
		"**client CPU** and **servers CPU** are CPU µs per section of the process that runs the contenders (getrusage) and of the cell's servers (INFO cpu, summed).\n\n")
	b.WriteString("| subject | waits | N | contenders | CS/s | handoffs | p50 µs | p99 µs | from the return: p50 µs | p90 µs | p99 µs | max µs | early | client CPU µs | servers CPU µs | exclusion | errors |\n")
	b.WriteString("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|--:|\n")
	for _, r := range recs {
		h := r.Handoff
		if r.Ops == 0 || h == nil {
			fmt.Fprintf(b, "| %s | %s | %d | %d | %s |||||||||||||\n", r.Subject(), r.Waits(), r.Nodes, r.Clients, strings.ReplaceAll(note(r), "|", "/"))
			continue
		}
		ex := "ok"
		if !h.Exclusive() {
			ex = "**" + r.Note + "**"
		} else if r.Note != "" {
			ex = "ok; " + r.Note
		}
		fmt.Fprintf(b, "| %s | %s | %d | %d | %.0f | %d | %s | %s | %s | %s | %s | %s | %d | %s | %s | %s | %d |\n",
			r.Subject(), r.Waits(), r.Nodes, r.Clients, r.Throughput, h.Handoffs,
			us(h.FromCallP50Us), us(h.FromCallP99Us), us(h.P50Us), us(h.P90Us), us(h.P99Us), us(h.MaxUs), h.Early,
			cpu(r.ClientCPUUsPerOp), cpu(r.ServersCPUUsPerOp), ex, r.Errors)
	}
}

// Hot-key target bounds.
const (
	// The bound on the handoff p50 from the release call: a goal,
	// not a floor. A waiter woken by the servers' announcement needs four
	// one-way legs (release, publish, acquire, reply), about two rounds;
	// a same-Client hand-on, where the attempt follows the release, one.
	handoffOverPingUs = 100 // over one all-server PING round, µs
	csOverRedsync     = 10  // CS/s with wake over each redsync's
	csOverRueidislock = 1   // and at least rueidislock's
)

// driverModes returns the (driver, mode) pairs with hot-key records of
// this library: each driver in order, wake before fair.
func driverModes(hs []matrix.Record, drivers []string) [][2]string {
	var out [][2]string
	for _, d := range drivers {
		for _, m := range []string{matrix.Wake, matrix.Fair} {
			if slices.ContainsFunc(hs, func(r matrix.Record) bool {
				return r.Library == matrix.Redlock && r.Driver == d && r.Variant == m
			}) {
				out = append(out, [2]string{d, m})
			}
		}
	}
	return out
}

// handoffTargets are the hot key's targets, from its records, for this
// library's wake and fair modes (each driver's rows, one mode after the
// other): handoff p50, from the release call, under one round of a PING
// to every server (env's, measured in the run) plus 100 µs at every
// contender count; critical sections per second at least 10× each
// redsync's and above rueidislock's at every contender count, and below
// it the servers' measured CPU per section named as the limit; and no
// overlap in any cell.
func handoffTargets(recs []matrix.Record, env Env, latNote string) []Target {
	var hs []matrix.Record
	for _, r := range recs {
		if r.Scenario == matrix.Handoff && r.Handoff != nil && r.Ops > 0 {
			hs = append(hs, r)
		}
	}
	if len(hs) == 0 {
		return nil
	}
	var ts []Target
	var drivers []string
	for _, r := range hs {
		if r.Library == matrix.Redlock && r.Variant == matrix.Wake && !slices.Contains(drivers, r.Driver) {
			drivers = append(drivers, r.Driver)
		}
	}
	counts := func(sel func(matrix.Record) bool) []matrix.Record {
		var out []matrix.Record
		for _, r := range hs {
			if sel(r) {
				out = append(out, r)
			}
		}
		slices.SortFunc(out, func(a, b matrix.Record) int { return a.Clients - b.Clients })
		return out
	}
	for _, dm := range driverModes(hs, drivers) {
		d, mode := dm[0], dm[1]
		wake := counts(func(r matrix.Record) bool {
			return r.Library == matrix.Redlock && r.Driver == d && r.Variant == mode
		})
		nodes := wake[0].Nodes
		subj := "redlock+" + d + " " + mode

		// Handoff p50, from the release call: from its return, a
		// handoff whose next attempt was already on the wire counts as
		// nothing.
		var figs, fromReturn []string
		worst := 0.0
		for _, r := range wake {
			figs = append(figs, fmt.Sprintf("%d: %s µs", r.Clients, us(r.Handoff.FromCallP50Us)))
			fromReturn = append(fromReturn, fmt.Sprintf("%d: %s µs", r.Clients, us(r.Handoff.P50Us)))
			worst = max(worst, r.Handoff.FromCallP50Us)
		}
		n := join("from the release's return: "+strings.Join(fromReturn, ", "), latNote)
		var rowNotes []string
		for _, r := range wake {
			if r.Note != "" && r.Handoff.Exclusive() && !slices.Contains(rowNotes, r.Note) {
				rowNotes = append(rowNotes, r.Note)
			}
		}
		if len(rowNotes) > 0 {
			n = join(strings.Join(rowNotes, "; "), n)
		}
		if poll := counts(func(r matrix.Record) bool {
			return r.Library == matrix.Redlock && r.Driver == d && r.Variant == matrix.Poll
		}); len(poll) > 0 && mode == matrix.Wake {
			var pf []string
			for _, r := range poll {
				pf = append(pf, fmt.Sprintf("%d: %s µs", r.Clients, us(r.Handoff.P50Us)))
			}
			n = join("poll's p50: "+strings.Join(pf, ", "), n)
		}
		name := fmt.Sprintf("hot key: %s handoff p50 from the release call, N=%d", subj, nodes)
		if ping := env.LoopbackRoundPingUs; ping > 0 {
			bound := ping + handoffOverPingUs
			ts = append(ts, Target{Name: name,
				Goal: fmt.Sprintf("p50 < one PING round to all %d servers (%.0f µs, measured) + %d µs = %.0f µs at every contender count",
					nodes, ping, handoffOverPingUs, bound),
				Figures: "contenders " + strings.Join(figs, ", "), Ratio: worst / bound,
				Measured: true, Pass: worst < bound, Note: n})
		} else {
			ts = append(ts, Target{Name: name,
				Goal:    fmt.Sprintf("p50 < one measured round of a PING to all %d servers + %d µs at every contender count", nodes, handoffOverPingUs),
				Figures: "not measured: the round of PINGs to every server; contenders " + strings.Join(figs, ", "), Note: n})
		}

		// Critical sections per second against each peer.
		var peers []string
		for _, r := range hs {
			if r.IsPeer() && !slices.Contains(peers, r.Subject()) {
				peers = append(peers, r.Subject())
			}
		}
		for _, p := range peers {
			bound, goal := float64(csOverRedsync), "≥ 10× at every contender count (ratio: the smallest)"
			if strings.HasPrefix(p, matrix.Rueidislock+"+") {
				bound, goal = csOverRueidislock, "≥ 1× at every contender count (ratio: the smallest)"
			}
			name := fmt.Sprintf("hot key: %s vs %s: critical sections/s", subj, p)
			var figs []string
			least, pass, measured := math.Inf(1), true, false
			for _, r := range wake {
				peer := matrix.Find(hs, matrix.Cell{Library: strings.SplitN(p, "+", 2)[0], Driver: strings.SplitN(p, "+", 2)[1],
					Scenario: matrix.Handoff, Nodes: r.Nodes, Clients: r.Clients, SharedKey: true})
				if peer == nil || peer.Throughput <= 0 {
					figs = append(figs, fmt.Sprintf("%d: not measured", r.Clients))
					pass = false
					continue
				}
				ratio := r.Throughput / peer.Throughput
				measured = true
				least = min(least, ratio)
				pass = pass && ratio >= bound
				figs = append(figs, fmt.Sprintf("%d: %.0f vs %.0f (%.3g×)", r.Clients, r.Throughput, peer.Throughput, ratio))
			}
			t := Target{Name: name, Goal: goal, Figures: "contenders " + strings.Join(figs, ", "), Measured: measured, Pass: measured && pass}
			if measured {
				t.Ratio = least
			}
			if measured && !pass {
				t.Note = sectionsLimit(wake, env)
			}
			ts = append(ts, t)
		}
	}

	// Exclusion, in every hot-key cell, peers included.
	var broken []string
	for _, r := range hs {
		if !r.Handoff.Exclusive() {
			broken = append(broken, fmt.Sprintf("%s, %d contenders: %d overlaps, %d lost updates",
				r.HandoffName(), r.Clients, r.Handoff.Overlaps, r.Handoff.LostUpdates()))
		}
	}
	var entered int64
	for _, r := range hs {
		entered += r.Handoff.Entered
	}
	figs := fmt.Sprintf("%d cells, %d sections: no overlap, every counter exact", len(hs), entered)
	if len(broken) > 0 {
		figs = "EXCLUSION BROKEN: " + strings.Join(broken, "; ")
	}
	ts = append(ts, Target{Name: "hot key: mutual exclusion in every cell", Goal: "no two sections inside at once; the shared counter equals the sections entered",
		Figures: figs, Ratio: float64(len(broken)), Measured: true, Pass: len(broken) == 0})
	return ts
}

// sectionsLimit names what bounds a hot key's critical sections per
// second, from the CPU its cells measured: the client's and the servers'
// CPU per section and the ceiling they make on the run's CPUs (one,
// pinned), and the share of it each contender count reached. CPU is
// called the limit only where a cell reached cpuBound of its ceiling;
// below, the cell was not CPU-bound, and what it waited on, the
// handoff, is named with its share of each section's time. "" when the
// cells have no servers' CPU.
func sectionsLimit(cells []matrix.Record, env Env) string {
	cpus := env.NumCPU
	if env.Pinned {
		cpus = 1
	}
	var parts []string
	for _, r := range cells {
		if r.ServersCPUUsPerOp <= 0 {
			continue
		}
		p := fmt.Sprintf("%d: servers %.0f µs", r.Clients, r.ServersCPUUsPerOp)
		per := r.ServersCPUUsPerOp + r.ClientCPUUsPerOp
		if r.ClientCPUUsPerOp > 0 {
			p += fmt.Sprintf(" + client %.0f µs", r.ClientCPUUsPerOp)
		}
		if cpus > 0 && env.ServerAddrs == nil {
			ceiling := float64(cpus) * 1e6 / per
			share := r.Throughput / ceiling
			p += fmt.Sprintf(", ceiling %.0f/s", ceiling)
			if share >= cpuBound {
				p += fmt.Sprintf(", %.0f%% reached: the limit", 100*share)
			} else {
				p += fmt.Sprintf(", not CPU-bound: %.0f%% of the ceiling", 100*share)
				if w := handoffWait(r); w != "" {
					p += "; " + w
				}
			}
		}
		parts = append(parts, p)
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("CPU per section on %d %s (the %d servers' scripts, INFO cpu): %s",
		cpus, plural(cpus, "CPU", "CPUs"), cells[0].Servers(), strings.Join(parts, "; "))
}

// cpuBound is the share of its CPU ceiling at which a hot-key cell is
// called CPU-bound: below it, the CPU was idle a fifth of the time or
// more, waiting on something else.
const cpuBound = 0.8

// handoffWait says what a cell that was not CPU-bound waited on: the
// handoff, from a release's call to the next holder's acquire, as a
// share of each section's time (one over the sections per second, the
// key being held by one at a time). "" when the cell has no handoff
// figures.
func handoffWait(r matrix.Record) string {
	if r.Handoff == nil || r.Handoff.FromCallP50Us <= 0 || r.Throughput <= 0 {
		return ""
	}
	period := 1e6 / r.Throughput
	return fmt.Sprintf("waited on the handoff: p50 %.0f µs from a release's call to the next acquire, %.0f%% of each section's %.0f µs",
		r.Handoff.FromCallP50Us, 100*r.Handoff.FromCallP50Us/period, period)
}
