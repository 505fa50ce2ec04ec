package sim

import (
	"fmt"
	"time"

	"github.com/redlock-go/redlock/core"
)

// Config describes a family of schedules; the seed draws each one.
type Config struct {
	Name    string
	Nodes   int
	Clients int
	FanOut  core.FanOut
	TTL     time.Duration
	// NodeTimeout and Retry go to every client's core.Config.
	NodeTimeout time.Duration
	Retry       core.RetryPolicy
	// Length is how much real time a schedule runs.
	Length time.Duration
	// Latency bounds one message's trip, each way.
	Latency [2]time.Duration
	// Work bounds how long a holder means to use the lock, on its clock.
	Work [2]time.Duration
	// Think bounds the pause between one acquisition's end and the next.
	Think [2]time.Duration
	// Fencing goes to every client's core.Config: acquisitions return
	// fences, and the fence checker runs.
	Fencing bool
	Faults  Faults
}

// Faults are what a schedule may inject. The zero value injects nothing.
type Faults struct {
	// Loss is the probability that one message (request or reply) is lost.
	Loss float64
	// Late is the probability that one request is held up past its
	// deadline and applied then, out of order, up to LateBy after it.
	Late   float64
	LateBy time.Duration
	// NodeCrashes is how many node crashes a schedule draws, each at a
	// random time, followed by a restart after a delay in RestartDelay.
	// Persistent nodes keep their data; others restart empty.
	NodeCrashes  int
	RestartDelay [2]time.Duration
	Persistent   bool
	// ClientPPM and NodePPM bound each clock's rate error, in parts per
	// million: the algorithm assumes they differ by less than its drift
	// factor (1% by default).
	ClientPPM, NodePPM int64
	// WorstClocks sets every client clock ClientPPM slow and every node
	// clock NodePPM fast, instead of drawing each rate: keys expire as
	// early as the bounds allow against the clients' view.
	WorstClocks bool
	// Pauses is how many client pauses a schedule draws, each up to
	// MaxPause; PauseAfterAcquire is the probability that a holder pauses
	// between the decision and its first use.
	Pauses            int
	MaxPause          time.Duration
	PauseAfterAcquire float64
	// HolderCrash crashes one client while it holds the lock, and checks
	// that another acquires soon after the keys expire (liveness).
	HolderCrash bool
	// ExtendEvery is the probability that a holder with work left extends
	// when a third of its validity remains; ExtendTTL, when set, extends
	// through a second Locker with that TTL, as a program with several
	// Lockers on one driver may.
	Extend    float64
	ExtendTTL time.Duration

	// Broken assumptions and re-introduced bugs, for the checkers' own
	// tests.
	//
	// UsePastValidity: holders use the lock until their work is done,
	// whatever its validity, and do not re-check it after a pause.
	UsePastValidity bool
	// SharedAttemptToken: every attempt of one acquisition holds the same
	// token (the core's bug before each attempt drew its own).
	SharedAttemptToken bool
	// Reorder is the probability that a request overtakes the client's
	// earlier requests to its node although it arrives before its
	// deadline: a driver that breaks core.Batch's order rule.
	Reorder float64
	// DownAfterCrash takes every node down for good when the holder
	// crashes (HolderCrash): nobody can acquire again.
	DownAfterCrash bool
	// LoseCounters: a node crash loses the node's fence counter too, even
	// on a Persistent node or one that restarts after a delay: counters
	// not persisted (appendfsync other than always), the assumption
	// Fencing rests on.
	LoseCounters bool
	// SkipRaise: nodes answer core.OpRaiseFence as if they raised the
	// counter (StatusOK where the key holds the token) but leave it: the
	// fence is handed out without the raise step.
	SkipRaise bool
}

// Result counts what a campaign of schedules did and found.
type Result struct {
	Schedules    int
	Acquisitions int
	Extensions   int
	// Fenced counts acquisitions that returned a fence above zero;
	// Raises counts fence raise rounds that ran (won or not).
	Fenced, Raises int
	Faults         FaultCounts
	Violations     Violations
	// First describes the first violation found, with its schedule's seed.
	First string
}

// FaultCounts counts injected faults.
type FaultCounts struct {
	Lost, Late                  int
	NodeCrashes, EmptyRestarts  int
	ClientPauses, ClientCrashes int
	CountersLost                int // fence counters lost with a crash
}

// Violations counts what the checkers found. Fence counts fenced
// acquisitions whose fence was not above that of every acquisition
// completed before them.
type Violations struct {
	Exclusion, Liveness, Hygiene, LostValid, Fence int
}

// Total returns the number of violations of every kind.
func (v Violations) Total() int {
	return v.Exclusion + v.Liveness + v.Hygiene + v.LostValid + v.Fence
}

func (r *Result) add(o Result) {
	r.Schedules += o.Schedules
	r.Acquisitions += o.Acquisitions
	r.Extensions += o.Extensions
	r.Fenced += o.Fenced
	r.Raises += o.Raises
	f, g := &r.Faults, o.Faults
	f.Lost += g.Lost
	f.Late += g.Late
	f.NodeCrashes += g.NodeCrashes
	f.EmptyRestarts += g.EmptyRestarts
	f.ClientPauses += g.ClientPauses
	f.ClientCrashes += g.ClientCrashes
	f.CountersLost += g.CountersLost
	v, u := &r.Violations, o.Violations
	v.Exclusion += u.Exclusion
	v.Liveness += u.Liveness
	v.Hygiene += u.Hygiene
	v.LostValid += u.LostValid
	v.Fence += u.Fence
	if r.First == "" {
		r.First = o.First
	}
}

// violation records one finding.
func (w *world) violation(count *int, format string, args ...any) {
	*count++
	if w.res.First == "" {
		w.res.First = fmt.Sprintf("seed %d at %v: ", w.seed, time.Duration(w.now)) + fmt.Sprintf(format, args...)
	}
}
