// Package multiproc is the multi-process hot key of redlock-bench: P
// processes of G goroutines each loop on one key at N=5 — this library's
// Client.Lock, a critical section that spins for a fixed time, Unlock —
// as many services contend for one resource. It measures, across every
// process:
//
//   - critical sections per second;
//   - attempts per acquisition: the acquire rounds (driver batches that
//     carry an acquire command, counted per Lock call through its ctx) of
//     the Lock calls that acquired in the window, over those
//     acquisitions;
//   - the handoff gap: from a section's Unlock returning to the next
//     section's Lock returning, whichever process either runs in, on
//     CLOCK_MONOTONIC, the one clock of every process of the machine;
//   - fairness: the most acquisitions of one contender over the fewest,
//     every contender of every process counted;
//   - exclusion: each section marks itself inside a page of a file that
//     every process maps (MAP_SHARED) and does a read-modify-write of a
//     counter there, so that two sections inside at once, in any two
//     processes, are counted; a cell with any overlap fails.
//
// The parent (Run) starts the processes by re-executing a binary in the
// child mode (Child), sends each its ChildSpec, waits for all to be ready
// (connections dialled), and gives all one start time on the shared
// clock: a warm-up, then the measured window, the same for all.
package multiproc

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Modes of waiting, as in the hot-key cells of one process: Wake is the
// Client's default (woken by release announcements), Poll is
// Options.Poll (sleeping Options.Backoff's random delays), Fair is
// Options.Fair (the servers queue the processes and hand each release to
// the first).
const (
	Wake = "wake"
	Poll = "poll"
	Fair = "fair"
)

// Modes lists the modes in run order.
var Modes = []string{Wake, Poll, Fair}

// Section is one critical section, as the child that ran it saw it.
type Section struct {
	// Contender is the goroutine's index within its process.
	Contender int `json:"c"`
	// Ticket is the section's order of entry across every process (the
	// shared page's sequence).
	Ticket int64 `json:"t"`
	// Acq is when Lock returned, Call when Unlock was called, Rel when
	// Unlock returned (0: Unlock failed), in ns on CLOCK_MONOTONIC.
	Acq  int64 `json:"a"`
	Call int64 `json:"u"`
	Rel  int64 `json:"r"`
	// Attempts is the acquire rounds of the Lock call.
	Attempts int64 `json:"n"`
}

// Gaps is the handoff gaps of a cell's sections.
type Gaps struct {
	// Handoffs is the number of gaps measured: sections in the window
	// whose predecessor's Unlock returned.
	Handoffs int64
	// Early counts the handoffs whose next Lock returned before the
	// previous Unlock did (the keys were already deleted on a quorum);
	// they are recorded as 0.
	Early int64
	// h is the gaps from the previous Unlock's return, early ones as 0;
	// call from its call, never negative.
	h, call *hdrhistogram.Histogram
}

// FromCall returns the gap at quantile q (0–100) counted from the
// previous Unlock's call instead of its return.
func (g Gaps) FromCall(q float64) time.Duration {
	if g.call == nil || g.Handoffs == 0 {
		return 0
	}
	return time.Duration(g.call.ValueAtQuantile(q))
}

// Quantile returns the gap at quantile q (0–100).
func (g Gaps) Quantile(q float64) time.Duration {
	if g.h == nil || g.Handoffs == 0 {
		return 0
	}
	return time.Duration(g.h.ValueAtQuantile(q))
}

// Mean returns the mean gap.
func (g Gaps) Mean() time.Duration {
	if g.h == nil || g.Handoffs == 0 {
		return 0
	}
	return time.Duration(g.h.Mean())
}

// Max returns the longest gap.
func (g Gaps) Max() time.Duration {
	if g.h == nil || g.Handoffs == 0 {
		return 0
	}
	return time.Duration(g.h.Max())
}

// PairGaps pairs each section whose Lock returned in [from, to) with its
// predecessor: the section whose ticket is one lower, the one that held
// the lock just before, in whichever process. The gap is the section's
// Acq minus the predecessor's Rel: the latest release that preceded the
// acquire, found by the order of entry rather than by the timestamps, so
// that an early acquire (before the previous Unlock returned) pairs with
// that Unlock, as 0, and not with the one before. A section whose
// predecessor is missing, or whose Unlock failed, gives no gap. The same
// handoffs are measured from the predecessor's Unlock call too (FromCall).
func PairGaps(secs []Section, from, to int64) Gaps {
	byTicket := make(map[int64]*Section, len(secs))
	for i := range secs {
		byTicket[secs[i].Ticket] = &secs[i]
	}
	g := Gaps{h: hdrhistogram.New(1, int64(60*time.Second), 3), call: hdrhistogram.New(1, int64(60*time.Second), 3)}
	for i := range secs {
		s := &secs[i]
		if s.Acq < from || s.Acq >= to {
			continue
		}
		p, ok := byTicket[s.Ticket-1]
		if !ok || p.Rel == 0 {
			continue
		}
		d := s.Acq - p.Rel
		if d < 0 {
			g.Early++
			d = 0
		}
		// The histograms track up to 60 s, beyond any cell: a longer value
		// would be dropped, which RecordValue's error reports.
		_ = g.h.RecordValue(max(d, 1))
		_ = g.call.RecordValue(max(s.Acq-p.Call, 1))
		g.Handoffs++
	}
	return g
}

// LatestReleaseGaps pairs each section whose Lock returned in [from, to)
// with the latest Unlock that returned before it, by the timestamps alone,
// in whichever process: an acquire that returned before its predecessor's
// Unlock did pairs with an earlier section's, a whole critical section
// back. PairGaps pairs by the order of entry instead; this is the other
// reading of "release to next acquire", kept for comparison.
func LatestReleaseGaps(secs []Section, from, to int64) Gaps {
	rels := make([]int64, 0, len(secs))
	for _, s := range secs {
		if s.Rel != 0 {
			rels = append(rels, s.Rel)
		}
	}
	slices.Sort(rels)
	g := Gaps{h: hdrhistogram.New(1, int64(60*time.Second), 3)}
	for _, s := range secs {
		if s.Acq < from || s.Acq >= to {
			continue
		}
		i, _ := slices.BinarySearch(rels, s.Acq) // rels[i-1] < s.Acq
		if i == 0 {
			continue
		}
		_ = g.h.RecordValue(max(s.Acq-rels[i-1], 1)) // up to 60 s, beyond any cell, as in PairGaps
		g.Handoffs++
	}
	return g
}

// Fairness returns the most acquisitions of one contender over the
// fewest, and the number of contenders that acquired nothing: with any,
// the ratio is infinite (+Inf). Fewer than two contenders: 1.
func Fairness(perContender []int64) (ratio float64, starved int) {
	if len(perContender) < 2 {
		return 1, 0
	}
	lo, hi := slices.Min(perContender), slices.Max(perContender)
	for _, n := range perContender {
		if n == 0 {
			starved++
		}
	}
	if lo == 0 {
		if hi == 0 {
			return math.NaN(), starved
		}
		return math.Inf(1), starved
	}
	return float64(hi) / float64(lo), 0
}

// Record is one cell's figures: one driver and mode, P processes of G
// goroutines on one key.
type Record struct {
	Driver     string  `json:"driver"`
	Mode       string  `json:"mode"`
	Nodes      int     `json:"nodes"`
	Procs      int     `json:"processes"`
	Goroutines int     `json:"goroutines_per_process"`
	HoldUs     float64 `json:"critical_section_us"`
	Seconds    float64 `json:"seconds"`
	// Sections is the acquisitions whose Lock returned in the window;
	// Throughput is Sections per second.
	Sections   int64   `json:"sections"`
	Throughput float64 `json:"sections_per_sec"`
	// Attempts is the acquire rounds of those Lock calls.
	Attempts       int64   `json:"attempts"`
	AttemptsPerAcq float64 `json:"attempts_per_acquisition"`
	// Unattributed is acquire rounds begun without a Lock call's counter
	// (none expected).
	Unattributed int64 `json:"unattributed_rounds,omitempty"`
	Handoffs     int64 `json:"handoffs"`
	Early        int64 `json:"early,omitempty"`
	// The handoff gap: a section's Unlock returned to the next section's
	// Lock returned, across processes.
	GapMeanUs float64 `json:"gap_mean_us"`
	GapP50Us  float64 `json:"gap_p50_us"`
	GapP90Us  float64 `json:"gap_p90_us"`
	GapP99Us  float64 `json:"gap_p99_us"`
	GapMaxUs  float64 `json:"gap_max_us"`
	// The same handoffs from the previous Unlock's call: never negative,
	// they show what the early ones were.
	FromCallP50Us float64 `json:"gap_from_call_p50_us"`
	FromCallP99Us float64 `json:"gap_from_call_p99_us"`
	// The gap to each acquire from the latest Unlock that returned before
	// it, by the timestamps alone (LatestReleaseGaps).
	LatestRelP50Us float64 `json:"gap_latest_release_p50_us"`
	LatestRelP99Us float64 `json:"gap_latest_release_p99_us"`
	// PerContender is each contender's acquisitions in the window,
	// process by process. Fairness is max/min of it, 0 when a contender
	// starved (Starved counts them).
	PerContender []int64 `json:"acquisitions_per_contender"`
	Fairness     float64 `json:"fairness"`
	Starved      int     `json:"starved,omitempty"`
	Exclusion
	Errors     int64  `json:"errors"`
	FirstError string `json:"first_error,omitempty"`
	// Note says why a cell was not measured.
	Note string `json:"note,omitempty"`
}

// Name is the cell's name, such as "redigo wake 4×8".
func (r Record) Name() string {
	return fmt.Sprintf("%s %s %d×%d", r.Driver, r.Mode, r.Procs, r.Goroutines)
}

// Failed reports whether the cell broke mutual exclusion.
func (r Record) Failed() bool { return !r.Exclusive() }

// FairnessText is Fairness for people: "inf (3 starved)" when a contender
// acquired nothing.
func (r Record) FairnessText() string {
	switch {
	case r.Starved > 0:
		return fmt.Sprintf("inf (%d starved)", r.Starved)
	case r.Fairness == 0:
		return "n/a"
	}
	return fmt.Sprintf("%.2f", r.Fairness)
}

// summarize computes a Record's figures from the sections of every
// child, their Contender numbered across the processes (0 to
// contenders-1), over the window [from, to).
func summarize(r *Record, secs []Section, contenders int, from, to int64) {
	r.Seconds = time.Duration(to - from).Seconds()
	r.PerContender = make([]int64, contenders)
	r.Sections, r.Attempts = 0, 0
	for _, s := range secs {
		if s.Acq >= from && s.Acq < to {
			r.Sections++
			r.Attempts += s.Attempts
			if s.Contender >= 0 && s.Contender < contenders {
				r.PerContender[s.Contender]++
			}
		}
	}
	if r.Seconds > 0 {
		r.Throughput = float64(r.Sections) / r.Seconds
	}
	if r.Sections > 0 {
		r.AttemptsPerAcq = float64(r.Attempts) / float64(r.Sections)
	}
	g := PairGaps(secs, from, to)
	r.Handoffs, r.Early = g.Handoffs, g.Early
	us := func(d time.Duration) float64 { return float64(d) / 1e3 }
	r.GapMeanUs, r.GapP50Us, r.GapP90Us = us(g.Mean()), us(g.Quantile(50)), us(g.Quantile(90))
	r.GapP99Us, r.GapMaxUs = us(g.Quantile(99)), us(g.Max())
	r.FromCallP50Us, r.FromCallP99Us = us(g.FromCall(50)), us(g.FromCall(99))
	lg := LatestReleaseGaps(secs, from, to)
	r.LatestRelP50Us, r.LatestRelP99Us = us(lg.Quantile(50)), us(lg.Quantile(99))
	f, starved := Fairness(r.PerContender)
	r.Fairness, r.Starved = 0, starved
	if !math.IsInf(f, 0) && !math.IsNaN(f) {
		r.Fairness = f
	}
}
