package sim

import (
	"fmt"
	"time"

	"github.com/redlock-go/redlock/core"
)

// A schedule must end: virtual time advances to Config.Length, or every
// client has crashed. One that stops instead is reported as a Stuck
// violation, with its seed, and ended there, never left to hang the
// campaign:
//
//   - more than maxSameInstant events at one virtual instant (a livelock:
//     something re-arms itself at the instant it fires, as a lease that
//     never leaves its round does);
//   - more than maxSteps events in the schedule (time that crawls);
//   - more than maxPump commands due at once from one round (a round
//     that never stops sending: a hang within one event);
//   - no event left before Length while a client that has not crashed is
//     still in the schedule (everyone waits for something that never
//     comes).

// Step bounds. A schedule of the campaigns runs a few hundred thousand
// events at most, and a few hundred at one instant.
const (
	maxSameInstant = 1 << 16
	maxSteps       = 1 << 26
	// A round sends each node's command once: one step sends N at most.
	maxPump = core.MaxNodes
)

// planted re-introduces defects that stop virtual time, so that tests can
// show the stuck checker finds them. Only tests set them
// (TestStuckCheckerSeesAStalledLease); they are false in every program.
var planted struct {
	// leaseTimerStalls re-arms an extending holder's timer at the instant
	// it fires, for ever: the livelock of a lease whose round never ends
	// nor fails.
	leaseTimerStalls bool
	// roundNeverEnds makes a round's Next, after its first command in a
	// step, give the round's command again for ever.
	roundNeverEnds bool
}

// halt ends the schedule now with a Stuck violation.
func (w *world) halt(format string, args ...any) {
	if w.halted {
		return
	}
	w.halted = true
	w.violation(&w.res.Violations.Stuck, "%s", fmt.Sprintf(format, args...))
}

// step counts event e, at its instant, against the step bounds, and
// halts the schedule when one is passed.
func (w *world) step(e event) {
	w.steps++
	if e.at == w.now {
		w.sameInstant++
	} else {
		w.sameInstant = 0
	}
	switch {
	case w.sameInstant > maxSameInstant:
		w.halt("stuck: virtual time stopped at %v: %d events at this instant, the last of kind %d for client %d, node %d",
			time.Duration(e.at), w.sameInstant, e.kind, e.c, e.n)
	case w.steps > maxSteps:
		w.halt("stuck: %d events by %v, past the step bound", w.steps, time.Duration(e.at))
	}
}

// checkDrained reports a schedule whose events ran out before its end
// while a client that has not crashed is still in it.
func (w *world) checkDrained(length int64) {
	if w.halted || len(w.queue) > 0 || w.now >= length {
		return
	}
	for _, c := range w.clients {
		if !c.crashed {
			w.halt("stuck: no event left at %v, before the schedule's end %v; client %d (state %d) waits for nothing",
				time.Duration(w.now), time.Duration(length), c.id, c.state)
			return
		}
	}
}
