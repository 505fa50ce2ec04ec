package realsim

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// check runs the checkers over a schedule's history of holdings, in
// virtual time (one clock for every Client and node: exact, no drift).
//
//   - exclusion: no two holders of a key worked under it at once: the
//     intervals [start, stop) of two holdings of one key do not overlap;
//     for the primitives beyond the mutex, by the kind of holding:
//   - writer overlap: a writer of a reader/writer lock overlaps no other
//     holder of its key, reader or writer (readers share);
//   - key sets: no two holders of intersecting key sets (LockAll, and a
//     Lock as a set of one key) worked at once;
//   - permits: no more than K holders of a semaphore's permits worked at
//     once;
//   - fences: with Fencing, each holder of a key (mutex, writer, key
//     set) has a fence greater than every earlier holder's, and a reader's
//     fence is at least that of every writer whose WLock returned before
//     the reader's RLock began: a reader reads the last writer's fence;
//   - late loss: a lock's Context is cancelled no later than its Until,
//     the last validity its holder was told: a holder that works while
//     its Context lives never works past its validity.
func check(cfg *Config, hs []*holding) []Violation {
	var vs []Violation
	byKey := map[string][]*holding{}
	for _, h := range hs {
		for _, k := range h.names() {
			byKey[k] = append(byKey[k], h)
		}
		switch {
		case h.stop.IsZero():
			// a holder torn down mid-work: the stuck report says so
		case !h.done.IsZero() && h.lost && h.done.After(h.until):
			vs = append(vs, Violation{"late loss", fmt.Sprintf("%s: Context cancelled by a loss %v after its Until", h, h.done.Sub(h.until))})
		case (h.done.IsZero() || h.done.After(h.stop)) && h.stop.After(h.until):
			vs = append(vs, Violation{"late loss", fmt.Sprintf("%s: worked %v past its Until with its Context live", h, h.stop.Sub(h.until))})
		}
	}
	seen := map[[2]*holding]bool{} // pairs reported: two key sets may share several keys
	for _, key := range slices.Sorted(maps.Keys(byKey)) {
		list := byKey[key]
		slices.SortStableFunc(list, func(a, b *holding) int { return a.start.Compare(b.start) })
		var last *holding // the last holder of key that excludes every other
		for i, a := range list {
			for _, b := range list[i+1:] {
				if !b.start.Before(end(a)) {
					break // sorted by start: no later one overlaps a
				}
				if kind := conflict(a, b); kind != "" && b.start.Before(end(a)) && a.start.Before(end(b)) && !seen[[2]*holding{a, b}] {
					seen[[2]*holding{a, b}] = true
					vs = append(vs, Violation{kind, fmt.Sprintf("%s and %s overlap by %v", a, b, end(a).Sub(b.start))})
				}
			}
			if !cfg.Fencing {
				continue
			}
			switch a.kind {
			case "permit":
				// each slot has its counter: fences of two permits compare not
			case "read":
				vs = append(vs, readerFence(a, list[:i])...)
			default:
				if last != nil && a.fence <= last.fence {
					vs = append(vs, Violation{"fences", fmt.Sprintf("%s has fence %d after %s's %d", a, a.fence, last, last.fence)})
				}
				last = a
			}
		}
		vs = append(vs, checkPermits(list)...)
	}
	return vs
}

// conflict returns the violation two holdings of one key are when they
// overlap: "" for two readers, or two permits (checkPermits counts
// them); "writer overlap" when a writer is one of them; "key sets" when
// a LockAll is one of them; else "exclusion".
func conflict(a, b *holding) string {
	switch {
	case a.kind == "read" && b.kind == "read", a.kind == "permit" && b.kind == "permit":
		return ""
	case a.kind == "write" || b.kind == "write":
		return "writer overlap"
	case a.kind == "all" || b.kind == "all":
		return "key sets"
	}
	return "exclusion"
}

// readerFence checks reader r's fence against the writers of its key in
// before (the holders that started before it): at least the fence of
// every writer whose WLock returned before r's RLock began. The writer's
// fence is raised on a quorum before WLock returns, and the reader's
// quorum reads one of those counters after. (A reader's fence may exceed
// a later writer's: a failed writer's increment on a node outside the
// later writer's quorum; it is not checked.)
func readerFence(r *holding, before []*holding) []Violation {
	for _, w := range before {
		if w.kind != "read" && w.start.Before(r.began) && r.fence < w.fence {
			return []Violation{{"fences", fmt.Sprintf("reader %s has fence %d, below the fence %d of writer %s, which returned before the reader began", r, r.fence, w.fence, w)}}
		}
	}
	return nil
}

// checkPermits checks the permits of one semaphore key, list sorted by
// start: no more than K holders worked at once.
func checkPermits(list []*holding) []Violation {
	var working []*holding // the permits held at the current start
	for _, a := range list {
		if a.kind != "permit" {
			continue
		}
		working = slices.DeleteFunc(working, func(h *holding) bool { return !a.start.Before(end(h)) })
		working = append(working, a)
		if len(working) > a.permits {
			var who []string
			for _, h := range working {
				who = append(who, h.String())
			}
			return []Violation{{"permits", fmt.Sprintf("%d holders of %d permits at once: %s", len(working), a.permits, strings.Join(who, ", "))}}
		}
	}
	return nil
}

// names returns the keys h holds.
func (h *holding) names() []string {
	if h.keys != nil {
		return h.keys
	}
	return []string{h.key}
}

// end is when a holder stopped working under its lock; a holder torn
// down mid-work counts as working to the end of time.
func end(h *holding) time.Time {
	if h.stop.IsZero() {
		return time.Unix(1<<40, 0)
	}
	return h.stop
}

func (h *holding) String() string {
	what := strconv.Quote(h.key)
	switch h.kind {
	case "read", "write":
		what = h.kind + " " + what
	case "all":
		what = fmt.Sprintf("all %q", h.keys)
	case "permit":
		what = fmt.Sprintf("a permit of %d of %s", h.permits, what)
	}
	return fmt.Sprintf("process %d goroutine %d on %s [%s, %s)", h.proc, h.gor, what,
		h.start.Format("15:04:05.000000"), h.stop.Format("15:04:05.000000"))
}

// checkWaits is the long-wait checker, where cfg.LongWait is set: no Lock
// call waited longer than cfg.LongWait while a quorum of nodes, up and
// not paused, had its key free by a release (announced): a key released
// on a quorum is taken soon, by this waiter or another. Nodes whose key
// expired do not count: a waiter learns of those only from the expiry a
// failed attempt read, and waits for it, as the step-level campaign's
// checker allows.
func checkWaits(cfg *Config, calls []call, free map[string][]span) []Violation {
	if cfg.LongWait <= 0 {
		return nil
	}
	var vs []Violation
	for _, c := range calls {
		for _, f := range free[c.key] {
			from, to := later(c.start, f.from), earlier(c.end, f.to)
			if d := to.Sub(from); d > cfg.LongWait {
				vs = append(vs, Violation{"long wait", fmt.Sprintf("a Lock of %q waited %v (from %s) while a quorum of nodes had it free",
					c.key, d, from.Format("15:04:05.000000"))})
				break
			}
		}
	}
	return vs
}

// checkWriterWaits is the writer-wait checker, where cfg.WriterWait is
// set: no WLock call waited longer than cfg.WriterWait, the one writer
// of its key waiting behind a stream of readers each holding under a
// TTL (a WLock that gave up at its deadline waited until then).
func checkWriterWaits(cfg *Config, writes []call) []Violation {
	if cfg.WriterWait <= 0 {
		return nil
	}
	var vs []Violation
	for _, w := range writes {
		if d := w.end.Sub(w.start); d > cfg.WriterWait {
			vs = append(vs, Violation{"writer wait", fmt.Sprintf("a WLock of %q waited %v (from %s) behind readers, past the bound %v",
				w.key, d, w.start.Format("15:04:05.000000"), cfg.WriterWait)})
		}
	}
	return vs
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
