package sim

import (
	"strconv"
	"strings"
	"testing"

	"github.com/redlock-go/redlock/core"
)

// TestStuckCheckerSeesAStalledLease: a holder whose lease timer is
// re-armed at the instant it fires (planted.leaseTimerStalls, the
// livelock of a lease that never leaves its extension round) stops
// virtual time; every schedule that reaches an extension ends as a Stuck
// violation naming its seed, and the campaign returns instead of hanging.
// Run replays the first one.
func TestStuckCheckerSeesAStalledLease(t *testing.T) {
	planted.leaseTimerStalls = true
	t.Cleanup(func() { planted.leaseTimerStalls = false })
	cfg := Assumed(3, core.Multiplexed)
	r := Campaign(cfg, 1, 20)
	v := r.Violations
	if v.Stuck == 0 {
		t.Fatalf("no stuck schedule: %+v", v)
	}
	if !strings.Contains(r.First, "stuck: virtual time stopped") || !strings.HasPrefix(r.First, "seed ") {
		t.Fatalf("first violation %q: want a stuck schedule named by its seed", r.First)
	}
	var seed uint64
	for s := uint64(1); s <= 20; s++ {
		if one := Run(cfg, s); one.Violations.Stuck > 0 {
			seed = s
			if !strings.HasPrefix(one.First, "seed "+strconv.FormatUint(s, 10)+" ") {
				t.Fatalf("seed %d: %q does not name its seed", s, one.First)
			}
			break
		}
	}
	if seed == 0 {
		t.Fatal("no seed replays a stuck schedule")
	}
	t.Logf("%+v in %d schedules; first: %s", v, r.Schedules, r.First)
}

// TestStuckCheckerSeesDrainedSchedule: a schedule whose events run out
// before its end, with a client still in it, is stuck; one whose
// clients have all crashed is not.
func TestStuckCheckerSeesDrainedSchedule(t *testing.T) {
	w := newWorld(Assumed(3, core.Multiplexed), 7)
	w.queue, w.now = nil, 1
	w.checkDrained(int64(w.cfg.Length))
	if w.res.Violations.Stuck != 1 || !strings.Contains(w.res.First, "seed 7 ") || !strings.Contains(w.res.First, "no event left") {
		t.Fatalf("drained schedule: %+v %q", w.res.Violations, w.res.First)
	}
	w = newWorld(Assumed(3, core.Multiplexed), 7)
	w.queue, w.now = nil, 1
	for _, c := range w.clients {
		c.crashed = true
	}
	w.checkDrained(int64(w.cfg.Length))
	if w.res.Violations.Stuck != 0 {
		t.Fatalf("every client crashed: %+v %q", w.res.Violations, w.res.First)
	}
}

// TestStuckCheckerSeesARoundThatNeverEnds: a round whose Next never
// says no (planted.roundNeverEnds) would loop for ever within one event;
// the step bound ends the schedule as stuck, naming its seed.
func TestStuckCheckerSeesARoundThatNeverEnds(t *testing.T) {
	planted.roundNeverEnds = true
	t.Cleanup(func() { planted.roundNeverEnds = false })
	r := Run(Assumed(3, core.Multiplexed), 5)
	if r.Violations.Stuck != 1 || r.Violations.Total() != 1 || !strings.HasPrefix(r.First, "seed 5 ") ||
		!strings.Contains(r.First, "past the bound") {
		t.Fatalf("%+v %q", r.Violations, r.First)
	}
	t.Log(r.First)
}
