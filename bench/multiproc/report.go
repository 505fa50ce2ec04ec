package multiproc

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"
)

// PlotFile is the name of the scenario's plot (bench/plots draws it).
const PlotFile = "multiproc_fairness.png"

// The target's bounds, on the wake cell.
const (
	GoalAttempts = 1.5    // attempts per acquisition, at most
	GoalGapP50Us = 1000.0 // handoff p50 from the Unlock call in µs, below
	GoalFairness = 2.0    // max/min acquisitions per contender, at most
)

// TargetMode is the mode the target holds to: the servers' waiter queue,
// which hands each release to one process, in turn.
const TargetMode = Fair

// Target is the scenario's row of the Targets table: measured is false
// when no TargetMode cell acquired anything; pass when it meets all three
// bounds, overlapped nowhere and starved no contender. figures show every
// mode's three numbers.
func Target(recs []Record) (name, goal, figures string, ratio float64, measured, pass bool, note string) {
	var subj *Record
	for i := range recs {
		if recs[i].Mode == TargetMode && subj == nil {
			subj = &recs[i]
		}
	}
	driver, procs, gor := "redigo", 4, 8
	if subj != nil {
		driver = subj.Driver
		if subj.Procs != 4 || subj.Goroutines != 8 || subj.HoldUs != 1000 {
			note = fmt.Sprintf("measured at %d×%d with %.0f µs sections; the target is stated at 4×8 with 1 ms", subj.Procs, subj.Goroutines, subj.HoldUs)
		}
	}
	name = fmt.Sprintf("%d processes × %d waiters on one key (%s, "+TargetMode+")", procs, gor, driver)
	goal = fmt.Sprintf("attempts/acquisition ≤ %.1f, handoff p50 from the Unlock call < %.0f ms, fairness (max/min acquisitions per contender) ≤ %.0f "+
		"(ratio: the worst of the three over its bound; a starved contender counts as one acquisition)",
		GoalAttempts, GoalGapP50Us/1000, GoalFairness)
	var figs []string
	for _, r := range recs {
		if r.Sections == 0 {
			figs = append(figs, fmt.Sprintf("%s: not measured (%s)", r.Mode, firstNonEmpty(r.Note, r.FirstError, "no sections")))
			continue
		}
		figs = append(figs, fmt.Sprintf("%s: %.2f attempts/acq, p50 %s from the Unlock call (%s from its return; %.0f%% early), fairness %s, %.0f sections/s",
			r.Mode, r.AttemptsPerAcq, ms(r.FromCallP50Us), ms(r.GapP50Us), r.EarlyPercent(), r.FairnessText(), r.Throughput))
	}
	figures = strings.Join(figs, "; ")
	if subj == nil || subj.Sections == 0 {
		return name, goal, figures, 0, false, false, note
	}
	ratio = max(subj.AttemptsPerAcq/GoalAttempts, subj.FromCallP50Us/GoalGapP50Us, subj.fairnessBound()/GoalFairness)
	pass = subj.AttemptsPerAcq <= GoalAttempts && subj.FromCallP50Us < GoalGapP50Us &&
		subj.Starved == 0 && subj.Fairness > 0 && subj.Fairness <= GoalFairness && subj.Exclusive()
	if !subj.Exclusive() {
		note = joinNote(note, "sections overlapped")
	}
	return name, goal, figures, ratio, true, pass, note
}

// fairnessBound is Fairness, with a contender that starved counted as
// one acquisition: finite, and at most the true ratio.
func (r Record) fairnessBound() float64 {
	if r.Starved == 0 {
		return r.Fairness
	}
	return float64(slices.Max(r.PerContender))
}

// EarlyPercent is the share of handoffs whose next Lock returned before
// the previous Unlock did.
func (r Record) EarlyPercent() float64 {
	if r.Handoffs == 0 {
		return 0
	}
	return 100 * float64(r.Early) / float64(r.Handoffs)
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// ms formats µs as milliseconds.
func ms(us float64) string { return fmt.Sprintf("%.2f ms", us/1000) }

// exclusion says whether a cell's sections overlapped.
func exclusion(r Record) string {
	if r.Exclusive() {
		return "ok"
	}
	return fmt.Sprintf("VIOLATED: %d overlaps, %d lost", r.Overlaps, r.LostUpdates())
}

func row(r Record) []string {
	return []string{r.Driver, r.Mode, fmt.Sprint(r.Nodes), fmt.Sprintf("%d×%d", r.Procs, r.Goroutines),
		fmt.Sprintf("%.0f", r.Throughput), fmt.Sprintf("%.2f", r.AttemptsPerAcq),
		fmt.Sprintf("%.0f", r.GapP50Us), fmt.Sprintf("%.0f", r.GapP99Us), fmt.Sprintf("%.0f", r.GapMaxUs),
		fmt.Sprintf("%.0f", r.EarlyPercent()), fmt.Sprintf("%.0f", r.FromCallP50Us), fmt.Sprintf("%.0f", r.FromCallP99Us),
		r.FairnessText(), exclusion(r), fmt.Sprint(r.Errors)}
}

var header = []string{"driver", "mode", "N", "procs×gor", "sections/s", "att/acq", "gap p50", "p99", "max", "early%", "call p50", "p99", "fairness", "exclusion", "errors"}

// Table writes the cells as aligned text for the terminal.
func Table(w io.Writer, recs []Record) error {
	if len(recs) == 0 {
		return nil
	}
	rows := [][]string{header}
	for _, r := range recs {
		rows = append(rows, row(r))
	}
	widths := make([]int, len(header))
	for _, rw := range rows {
		for i, c := range rw {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "hot key across processes: one key at N=%d, %.0f µs critical sections, %.3g s\n", recs[0].Nodes, recs[0].HoldUs, recs[0].Seconds)
	for _, rw := range rows {
		var l strings.Builder
		for i, c := range rw {
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c))
			if i > 0 {
				l.WriteString("  ")
			}
			if i < 2 || i == 13 {
				l.WriteString(c + pad)
			} else {
				l.WriteString(pad + c)
			}
		}
		b.WriteString(strings.TrimRight(l.String(), " ") + "\n")
	}
	b.WriteString("gap: a section's Unlock returned → the next section's Lock returned, any process, µs (early: the Lock\n" +
		"returned first, counted 0); call: the same from the Unlock call; att/acq: acquire rounds per acquisition;\n" +
		"fairness: max/min acquisitions per contender.\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// Markdown returns the scenario's section of results.md: what it is, its
// table, per-contender acquisitions, and its plot.
func Markdown(recs []Record) string {
	if len(recs) == 0 {
		return ""
	}
	r0 := recs[0]
	var b strings.Builder
	b.WriteString("\n## Scenario: hot key across processes\n\n")
	fmt.Fprintf(&b, "%d processes of %d goroutines each (%d contenders) loop on one key at N=%d: `Client.Lock`, a critical section that spins %.0f µs, `Unlock`; "+
		"%.3g s measured after a warm-up, the same window for every process. Each process is a child of redlock-bench with its own Client and driver. "+
		"**wake** is the Client's default, woken by release announcements; **poll** is `Options.Poll`, sleeping `Options.Backoff`'s random delays; **fair** is `Options.Fair`, the servers' waiter queue. "+
		"att/acq is the acquire rounds (driver batches carrying an acquire) of the Lock calls that acquired in the window, over those acquisitions. "+
		"The gap runs from a section's `Unlock` returning to the next section's `Lock` returning, in whichever processes, on CLOCK_MONOTONIC (one clock for all); "+
		"the next section is the next in the order of entry, so a `Lock` that returned before the previous `Unlock` did (its keys were deleted on a quorum already) is an early handoff, counted 0; "+
		"\"from call\" measures the same handoffs from the `Unlock` call, never negative. "+
		"fairness is the most acquisitions of one contender over the fewest. "+
		"exclusion: each section marks itself inside a shared memory page that every process maps, and the cell fails on any overlap.\n\n",
		r0.Procs, r0.Goroutines, r0.Procs*r0.Goroutines, r0.Nodes, r0.HoldUs, r0.Seconds)
	b.WriteString("| driver | mode | N | procs×gor | sections/s | att/acq | gap p50 µs | p90 µs | p99 µs | max µs | handoffs | early % | from call p50 µs | from call p99 µs | fairness | exclusion | errors |\n")
	b.WriteString("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|--:|\n")
	for _, r := range recs {
		if r.Sections == 0 && r.Note != "" {
			fmt.Fprintf(&b, "| %s | %s | %d | %d×%d | %s |||||||||||||\n", r.Driver, r.Mode, r.Nodes, r.Procs, r.Goroutines, strings.ReplaceAll(r.Note, "|", "/"))
			continue
		}
		c := row(r)
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %.0f | %s | %s | %d | %s | %s | %s | %s | %s | %s |\n",
			c[0], c[1], c[2], c[3], c[4], c[5], c[6], r.GapP90Us, c[7], c[8], r.Handoffs, c[9], c[10], c[11], c[12], c[13], c[14])
	}
	var latest []string
	for _, r := range recs {
		if r.Handoffs > 0 {
			latest = append(latest, fmt.Sprintf("%s %.0f / %.0f µs", r.Mode, r.LatestRelP50Us, r.LatestRelP99Us))
		}
	}
	if len(latest) > 0 {
		fmt.Fprintf(&b, "\nThe gap by the timestamps alone, each acquire paired with the latest `Unlock` that returned before it (an early acquire then pairs with a release a whole section back), p50 / p99: %s.\n",
			strings.Join(latest, ", "))
	}
	b.WriteString("\nAcquisitions per contender, process by process:\n\n")
	for _, r := range recs {
		fmt.Fprintf(&b, "- %s %s:", r.Driver, r.Mode)
		for p := 0; p < r.Procs; p++ {
			lo, hi := p*r.Goroutines, min((p+1)*r.Goroutines, len(r.PerContender))
			if lo >= hi {
				break
			}
			parts := make([]string, 0, hi-lo)
			for _, n := range r.PerContender[lo:hi] {
				parts = append(parts, fmt.Sprint(n))
			}
			fmt.Fprintf(&b, " [%s]", strings.Join(parts, " "))
		}
		b.WriteString("\n")
	}
	if measuredAny(recs) {
		fmt.Fprintf(&b, "\n![%s](%s)\n", strings.TrimSuffix(PlotFile, ".png"), PlotFile)
	}
	return b.String()
}

func measuredAny(recs []Record) bool {
	for _, r := range recs {
		if r.Sections > 0 {
			return true
		}
	}
	return false
}
