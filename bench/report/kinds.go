package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/redlock-go/redlock/bench/matrix"
	"github.com/redlock-go/redlock/bench/measure"
)

// The primitives beyond the mutex (the Kinds scenario): their table,
// their markdown section and their targets, each a ratio to the mutex
// cell measured beside it in the same run.

// The bounds of the kinds' targets.
const (
	rlockOverLock        = 1.2 // the uncontended reader pair's p50 over the mutex pair's
	readersOverMutexKeys = 0.8 // pairs/s of the readers of one key over clients on a key each
	writerWaitTTLs       = 2   // a writer's wait p99 behind short readers, in TTLs
	permitsOverMutexKeys = 0.8 // sections/s of the semaphore over as many mutex keys
	lockAllOverLocks     = 0.5 // LockAll's pair p50 over as many sequential Locks'
)

// kindRecords returns the Kinds records that were measured.
func kindRecords(recs []matrix.Record) []matrix.Record {
	var ks []matrix.Record
	for _, r := range recs {
		if r.Scenario == matrix.Kinds {
			ks = append(ks, r)
		}
	}
	return ks
}

// kindDrivers returns the drivers of the Kinds records, in run order.
func kindDrivers(ks []matrix.Record) []string {
	var ds []string
	for _, r := range ks {
		if !slices.Contains(ds, r.Driver) {
			ds = append(ds, r.Driver)
		}
	}
	return ds
}

// kindTargets are the kinds' targets, per driver: each compares a cell
// with the mutex cell run beside it, so that both sides are the same
// driver, servers and moment; then the exclusion of every hot cell.
// latNote and tputNote are the run's notes on latency and throughput
// targets (unpinned, pinned, miniredis).
func kindTargets(recs []matrix.Record, latNote, tputNote string) []Target {
	ks := kindRecords(recs)
	if len(ks) == 0 {
		return nil
	}
	var ts []Target
	for _, d := range kindDrivers(ks) {
		get := func(v string) *matrix.Record {
			for i := range ks {
				if ks[i].Driver == d && ks[i].Variant == v && ks[i].Ops > 0 {
					return &ks[i]
				}
			}
			return nil
		}
		has := func(v string) bool {
			return slices.ContainsFunc(ks, func(r matrix.Record) bool { return r.Driver == d && r.Variant == v })
		}
		subj := "redlock+" + d
		n := ks[0].Nodes
		ratioRow := func(a, b string, name, goal string, bound float64, fromAbove bool, figure func(r matrix.Record) float64, unit, note string) {
			if !has(a) && !has(b) {
				return
			}
			ra, rb := get(a), get(b)
			if ra == nil || rb == nil || figure(*rb) <= 0 {
				ts = append(ts, Target{Name: name, Goal: goal, Figures: "not measured: the " + a + " or the " + b + " cell" + kindWhy(ks, d, a, b)})
				return
			}
			ratio := figure(*ra) / figure(*rb)
			figs := fmt.Sprintf("%s %s vs %s %s", kindFig(figure(*ra)), unit, kindFig(figure(*rb)), unit)
			// Measured in interleaved rounds: the median of the rounds'
			// own ratios, as the peers' targets take it.
			if rs := p50Ratios(*ra, *rb); unit == "µs" && rs != nil {
				ratio = measure.MedianOf(rs)
				figs = fmt.Sprintf("the median of the rounds' ratios; rounds %s vs %s µs, each the median of %d repeats",
					p50Rounds(*ra), p50Rounds(*rb), max(len(ra.RepeatP50Us), 1))
			} else if rs := roundRatios(*ra, *rb); unit != "µs" && rs != nil {
				ratio = measure.MedianOf(rs)
				figs = fmt.Sprintf("the median of the rounds' ratios; rounds %s vs %s %s", tputRounds(*ra), tputRounds(*rb), unit)
			} else if len(ra.RepeatP50Us) > 1 && unit == "µs" {
				figs += fmt.Sprintf("; the median of repeats %s vs %s", repeats(*ra), repeats(*rb))
			}
			pass := ratio <= bound
			if !fromAbove {
				pass = ratio >= bound
			}
			ts = append(ts, Target{Name: name, Goal: goal, Measured: true, Figures: figs, Ratio: ratio, Pass: pass, Note: note})
		}
		p50 := func(r matrix.Record) float64 { return r.P50Us }
		tput := func(r matrix.Record) float64 { return r.Throughput }
		ratioRow(matrix.KindRLock, matrix.KindLock,
			fmt.Sprintf("rwlock: %s N=%d, 1 client: RLock+Unlock pair vs Lock+Unlock pair, p50", subj, n),
			fmt.Sprintf("p50 ≤ %.3g× the mutex pair's, uncontended, %s", rlockOverLock, "pinned"),
			rlockOverLock, true, p50, "µs", latNote)
		ratioRow(matrix.KindReaders, matrix.KindMutexKeys,
			fmt.Sprintf("rwlock: %s N=%d: %s readers on one key vs as many clients on a mutex key each, pairs/s", subj, n, kindClients(get(matrix.KindReaders))),
			fmt.Sprintf("pairs/s ≥ %.3g× the mutex keys', unpinned", readersOverMutexKeys),
			readersOverMutexKeys, false, tput, "pairs/s", tputNote)
		ts = append(ts, writerWaitTarget(ks, d, subj, n, has, get)...)
		ratioRow(matrix.KindPermits, matrix.KindMutexPermits,
			fmt.Sprintf("semaphore: %s N=%d, K=%d, %s contenders vs the same on %d mutex keys, sections/s", subj, n, matrix.Permits, kindClients(get(matrix.KindPermits)), matrix.Permits),
			fmt.Sprintf("sections/s ≥ %.3g× the %d mutex keys', unpinned", permitsOverMutexKeys, matrix.Permits),
			permitsOverMutexKeys, false, tput, "sections/s", tputNote)
		ratioRow(matrix.KindLockAll, matrix.KindLock3,
			fmt.Sprintf("LockAll: %s N=%d, 1 client: LockAll of %d keys vs %d sequential Locks, pair p50", subj, n, matrix.LockAllKeys, matrix.LockAllKeys),
			fmt.Sprintf("p50 ≤ %.3g× the sequential Locks' (taken, then unlocked, one after the other), uncontended, pinned", lockAllOverLocks),
			lockAllOverLocks, true, p50, "µs", latNote)
	}

	// Exclusion, in every hot cell.
	var broken, cells []string
	var sections, expired int64
	for _, r := range ks {
		if !matrix.KindHot(r.Variant) || r.Exclusion == nil {
			continue
		}
		e := r.Exclusion
		sections += e.Sections
		expired += e.Expired
		cell := fmt.Sprintf("%s %s", r.Driver, r.Variant)
		switch {
		case e.MaxShared > 1:
			cell += fmt.Sprintf(" (up to %d readers at once)", e.MaxShared)
		case e.Limit > 1:
			cell += fmt.Sprintf(" (up to %d of %d holders)", e.MaxHolders, e.Limit)
		}
		cells = append(cells, cell)
		if !e.Ok() {
			broken = append(broken, fmt.Sprintf("%s %s: %s", r.Driver, r.Variant, strings.TrimPrefix(matrix.ViolationNote(*e), "EXCLUSION BROKEN: ")))
		}
	}
	if len(cells) == 0 {
		return ts
	}
	figs := fmt.Sprintf("%d cells, %d sections: no violation, every counter exact; %s", len(cells), sections, strings.Join(cells, ", "))
	if len(broken) > 0 {
		figs = "EXCLUSION BROKEN: " + strings.Join(broken, "; ")
	}
	t := Target{Name: "kinds: exclusion in every hot cell (rwlock, semaphore, LockAll)",
		Goal:    "no writer beside another holder, at most K permit holders, no two LockAll holders of a key; each one-holder key's counter equals its sections",
		Figures: figs, Ratio: float64(len(broken)), Measured: true, Pass: len(broken) == 0}
	if expired > 0 {
		t.Note = fmt.Sprintf("%d sections ended past their lock's validity (the machine stalled them): outside the assumptions", expired)
	}
	return append(ts, t)
}

// writerWaitTarget is the row of a writer's wait behind a stream of
// short readers: its p99 in the cell's TTLs.
func writerWaitTarget(ks []matrix.Record, d, subj string, n int, has func(string) bool, get func(string) *matrix.Record) []Target {
	if !has(matrix.KindWriterWait) {
		return nil
	}
	name := fmt.Sprintf("rwlock: %s N=%d: a writer's wait behind a stream of readers each holding under a TTL, p99", subj, n)
	goal := fmt.Sprintf("p99 ≤ %d TTL (the cell's TTL)", writerWaitTTLs)
	r := get(matrix.KindWriterWait)
	if r == nil || r.Exclusion == nil || r.Exclusion.Waits == 0 || r.Exclusion.TTLMs <= 0 {
		return []Target{{Name: name, Goal: goal, Figures: "not measured: the writer-wait cell" + kindWhy(ks, d, matrix.KindWriterWait)}}
	}
	e := r.Exclusion
	ttlUs := float64(e.TTLMs) * 1e3
	ratio := e.WaitP99Us / ttlUs
	figs := fmt.Sprintf("p99 %.1f ms, TTL %d ms (p50 %.1f ms, max %.1f ms, %d waits; %d readers holding %d–%d ms each)",
		e.WaitP99Us/1e3, e.TTLMs, e.WaitP50Us/1e3, e.WaitMaxUs/1e3, e.Waits, r.Clients, e.TTLMs/10, e.TTLMs/2)
	note := "ratio: the p99 in TTLs"
	if e.OtherWaitP99Us > 0 {
		note = join(note, fmt.Sprintf("what the mark costs the readers: their waits p50 %.1f ms, p99 %.1f ms", e.OtherWaitP50Us/1e3, e.OtherWaitP99Us/1e3))
	}
	return []Target{{Name: name, Goal: goal, Measured: true, Figures: figs, Ratio: ratio, Pass: ratio <= writerWaitTTLs, Note: note}}
}

// kindWhy says why the cells of variants of driver d have no figures,
// from their notes or first errors.
func kindWhy(ks []matrix.Record, d string, variants ...string) string {
	for _, r := range ks {
		if r.Driver != d || !slices.Contains(variants, r.Variant) {
			continue
		}
		switch {
		case r.Ops == 0 && r.Note != "":
			return why(r.Note)
		case r.Acquired == 0 && r.FirstError != "":
			return why(r.FirstError)
		}
	}
	return ""
}

func kindClients(r *matrix.Record) string {
	if r == nil {
		return "the"
	}
	return fmt.Sprint(r.Clients)
}

func kindFig(v float64) string {
	if v >= 100 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

// kindCellText says what a Kinds cell runs, in a few words.
func kindCellText(r matrix.Record) string {
	switch r.Variant {
	case matrix.KindRLock:
		return "TryRLock + Unlock"
	case matrix.KindLock:
		return "TryLock + Unlock"
	case matrix.KindLockAll:
		return fmt.Sprintf("TryLockAll of %d keys + Unlock", matrix.LockAllKeys)
	case matrix.KindLock3:
		return fmt.Sprintf("%d TryLocks, then %d Unlocks", matrix.LockAllKeys, matrix.LockAllKeys)
	case matrix.KindReaders:
		return "TryRLock + Unlock, one key"
	case matrix.KindMutexKeys:
		return "TryLock + Unlock, a key each"
	case matrix.KindPermits:
		return fmt.Sprintf("LockPermit K=%d, section, Unlock", matrix.Permits)
	case matrix.KindMutexPermits:
		return fmt.Sprintf("Lock of %d keys, section, Unlock", matrix.Permits)
	case matrix.KindWriterWait:
		return "RLock readers + 1 WLock writer"
	case matrix.KindLockAllHot:
		return fmt.Sprintf("LockAll of %d of %d keys", matrix.LockAllKeys, matrix.LockAllKeys+1)
	}
	return r.Variant
}

// kindExcl is a Kinds cell's exclusion column: "-" for an uncontended
// cell, ok or BROKEN with what broke.
func kindExcl(r matrix.Record) string {
	e := r.Exclusion
	if e == nil {
		return "-"
	}
	if e.Ok() {
		return "ok"
	}
	return "BROKEN" // the figures follow the table, in the cell's note
}

// kindRounds is a cell's rounds per pair, or per section for the
// contenders that wait (every round of the cell's Client: attempts,
// cleanups, releases), or "-" when not counted.
func kindRounds(r matrix.Record) string {
	if r.RoundsPerOp <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.3g", r.RoundsPerOp)
}

// kindWait is the writer's cell's wait column, p99 ms, or "".
func kindWait(r matrix.Record) string {
	if e := r.Exclusion; e != nil && e.Waits > 0 {
		return fmt.Sprintf("%.1f", e.WaitP99Us/1e3)
	}
	return ""
}

// kindsTable writes the Kinds cells as an aligned table.
func kindsTable(out *strings.Builder, recs []matrix.Record) {
	header := []string{"subject", "cell", "N", "cl", "ops/s", "p50", "p99", "max", "allocs", "rnd", "cCPU", "sCPU", "w p99", "excl"}
	errCol := slices.ContainsFunc(recs, func(r matrix.Record) bool { return r.Errors > 0 })
	if errCol {
		header = append(header, "errors")
	}
	rows := [][]string{header}
	notes := []string{""}
	var broken []string
	for _, r := range recs {
		c := fmt.Sprint(r.Clients)
		if r.SharedKey {
			c += "*"
		}
		row := []string{r.Subject(), r.Variant, fmt.Sprint(r.Nodes), c}
		if r.Ops == 0 {
			rows = append(rows, row)
			notes = append(notes, note(r))
			continue
		}
		row = append(row, fmt.Sprintf("%.0f", r.Throughput), us(r.P50Us), us(r.P99Us), us(r.MaxUs),
			fmt.Sprintf("%.1f", r.AllocsPerOp), kindRounds(r), cpu(r.ClientCPUUsPerOp), cpu(r.ServersCPUUsPerOp), kindWait(r), kindExcl(r))
		if errCol {
			row = append(row, fmt.Sprint(r.Errors))
		}
		rows = append(rows, row)
		notes = append(notes, "")
		if r.Note != "" {
			broken = append(broken, fmt.Sprintf("%s %s: %s", r.Subject(), r.Variant, note(r)))
		}
	}
	out.WriteString("kinds: the rwlock, the semaphore and LockAll, each beside the mutex cell it is compared with, servers on 127.0.0.1\n")
	writeAligned(out, rows, notes, func(j int) bool { return j < 2 })
	out.WriteString("cl: clients or contenders (*: on one key); ops/s: pairs or, for the contenders that wait, critical sections per second;\n" +
		"p50..max: a pair's µs, or an acquire's wait; rnd: rounds per pair or section; w p99: the writer's wait, ms;\n" +
		"excl: exclusion check, ok or BROKEN (what broke follows); -: an uncontended cell, not checked.\n")
	for _, b := range broken {
		out.WriteString(shorten(b, TableWidth) + "\n")
	}
}

// kindsMarkdown writes the kinds' section: what each cell is, then the
// table.
func kindsMarkdown(b *strings.Builder, recs []matrix.Record) {
	b.WriteString("\n## Scenario: reader/writer lock, semaphore, LockAll\n\n")
	fmt.Fprintf(b, "N=%d on the loopback servers, multiplexed, one `redlock.Client` per cell. Each cell runs beside the mutex cell its target divides by, "+
		"over the same driver: the uncontended RLock pair beside the Lock pair, LockAll of %d keys beside %d TryLocks in a row (then %d Unlocks), "+
		"readers on one key beside as many clients on a mutex key each, the semaphore (K=%d, `LockPermit`, waiting) beside as many contenders on %d mutex keys (`Lock`, waiting). "+
		"The writer's cell has %d readers loop `RLock`, hold a tenth to a half of the cell's TTL, `Unlock`, and one writer loop `WLock`, a section, `Unlock`, half a TTL's pause; "+
		"its figure is the writer's wait, from the `WLock` call to its return. LockAll contended has %d contenders take %d of %d keys each (every two sets intersect). "+
		"Every contended cell's sections enter an exclusion check (`measure.Ledger`): a writer, a mutex or a LockAll holder alone in each key it holds, no reader beside a writer, "+
		"at most K permit holders, and each one-holder key's read-modify-write counter exact; readers alone must never be refused.\n\n",
		recs[0].Nodes, matrix.LockAllKeys, matrix.LockAllKeys, matrix.LockAllKeys, matrix.Permits, matrix.Permits, matrix.WriterWaitReaders,
		matrix.LockAllContenders, matrix.LockAllKeys, matrix.LockAllKeys+1)
	b.WriteString("| subject | cell | what | N | clients | ops/s | p50 µs | p99 µs | max µs | allocs/op | rounds per pair or section | client CPU µs/op | servers CPU µs/op | won % | writer wait p50 / p99 / max ms | exclusion | errors |\n")
	b.WriteString("|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|---|--:|\n")
	for _, r := range recs {
		if r.Ops == 0 {
			fmt.Fprintf(b, "| %s | %s | %s | %d | %s | %s ||||||||||||\n", r.Subject(), r.Variant, kindCellText(r), r.Nodes, clients(r), strings.ReplaceAll(note(r), "|", "/"))
			continue
		}
		wait := ""
		if e := r.Exclusion; e != nil && e.Waits > 0 {
			wait = fmt.Sprintf("%.1f / %.1f / %.1f (TTL %d ms, %d waits; the readers' p50 / p99: %.1f / %.1f)",
				e.WaitP50Us/1e3, e.WaitP99Us/1e3, e.WaitMaxUs/1e3, e.TTLMs, e.Waits, e.OtherWaitP50Us/1e3, e.OtherWaitP99Us/1e3)
		}
		ex := kindExcl(r)
		if e := r.Exclusion; e != nil && e.Ok() {
			ex = fmt.Sprintf("ok, %d sections", e.Sections)
			if e.MaxShared > 1 {
				ex += fmt.Sprintf(", up to %d readers at once", e.MaxShared)
			}
			if e.Limit > 1 {
				ex += fmt.Sprintf(", up to %d of %d holders", e.MaxHolders, e.Limit)
			}
		} else if e != nil {
			ex = "**" + r.Note + "**"
		}
		fmt.Fprintf(b, "| %s | %s | %s | %d | %s | %.0f | %s | %s | %s | %.1f | %s | %s | %s | %s | %s | %s | %d |\n",
			r.Subject(), r.Variant, kindCellText(r), r.Nodes, clients(r), r.Throughput, us(r.P50Us), us(r.P99Us), us(r.MaxUs),
			r.AllocsPerOp, kindRounds(r), cpu(r.ClientCPUUsPerOp), cpu(r.ServersCPUUsPerOp), won(r), wait, ex, r.Errors)
	}
}
