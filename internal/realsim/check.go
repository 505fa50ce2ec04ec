package realsim

import (
	"fmt"
	"maps"
	"slices"
	"time"
)

// check runs the checkers over a schedule's history of holdings, in
// virtual time (one clock for every Client and node: exact, no drift).
//
//   - exclusion: no two holders of a key worked under it at once: the
//     intervals [start, stop) of two holdings of one key do not overlap;
//   - fences: with Fencing, each holder of a key has a fence greater than
//     every earlier holder's;
//   - late loss: a lock's Context is cancelled no later than its Until,
//     the last validity its holder was told: a holder that works while
//     its Context lives never works past its validity.
func check(cfg *Config, hs []*holding) []Violation {
	var vs []Violation
	byKey := map[string][]*holding{}
	for _, h := range hs {
		byKey[h.key] = append(byKey[h.key], h)
		switch {
		case h.stop.IsZero():
			// a holder torn down mid-work: the stuck report says so
		case !h.done.IsZero() && h.lost && h.done.After(h.until):
			vs = append(vs, Violation{"late loss", fmt.Sprintf("%s: Context cancelled by a loss %v after its Until", h, h.done.Sub(h.until))})
		case (h.done.IsZero() || h.done.After(h.stop)) && h.stop.After(h.until):
			vs = append(vs, Violation{"late loss", fmt.Sprintf("%s: worked %v past its Until with its Context live", h, h.stop.Sub(h.until))})
		}
	}
	for _, key := range slices.Sorted(maps.Keys(byKey)) {
		list := byKey[key]
		slices.SortStableFunc(list, func(a, b *holding) int { return a.start.Compare(b.start) })
		for i, a := range list {
			for _, b := range list[i+1:] {
				if !b.start.Before(end(a)) {
					break // sorted by start: no later one overlaps a
				}
				if b.start.Before(end(a)) && a.start.Before(end(b)) {
					vs = append(vs, Violation{"exclusion", fmt.Sprintf("%s and %s overlap by %v", a, b, end(a).Sub(b.start))})
				}
			}
			if cfg.Fencing && i > 0 && a.fence <= list[i-1].fence {
				vs = append(vs, Violation{"fences", fmt.Sprintf("%s has fence %d after %s's %d", a, a.fence, list[i-1], list[i-1].fence)})
			}
		}
	}
	return vs
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
	return fmt.Sprintf("process %d goroutine %d on %q [%s, %s)", h.proc, h.gor, h.key,
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
