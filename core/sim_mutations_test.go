//go:build redlock_mutations

package core_test

import (
	"flag"
	"testing"
	"time"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/internal/sim"
)

// TestSimulationSeesExtendDriftBug: the deterministic simulation, which
// drives this package's Acquisition and Round, finds mutual-exclusion
// violations when an extension takes the extending Spec's drift instead
// of the lock's (1 s locks extended through a 20 ms Spec, clocks up to 1%
// apart), and none with the fix.
func TestSimulationSeesExtendDriftBug(t *testing.T) {
	cfg := sim.ShortExtendLocker(5)
	const schedules = 60
	fixed := sim.Campaign(cfg, 1, schedules)
	if fixed.Violations.Total() != 0 {
		t.Fatalf("with the lock's drift: %+v; first: %s", fixed.Violations, fixed.First)
	}
	if fixed.Extensions == 0 {
		t.Fatal("no extension in any schedule")
	}
	restore := core.ExtendWithSpecDrift()
	broken := sim.Campaign(cfg, 1, schedules)
	restore()
	if broken.Violations.Exclusion == 0 {
		t.Fatalf("the bug went unseen in %d schedules (%d extensions)", broken.Schedules, broken.Extensions)
	}
	t.Logf("with the bug: %+v; first: %s", broken.Violations, broken.First)
}

// TestSimulationSeesLostLockReportedValid: with extensions that leave a
// lock proved lost still valid, the simulation's checker reports it.
func TestSimulationSeesLostLockReportedValid(t *testing.T) {
	cfg := sim.InstantRestart(3) // restarts lose keys: extensions find them missing
	const schedules = 40
	if r := sim.Campaign(sim.Assumed(3, core.Multiplexed), 1, schedules); r.Violations.LostValid != 0 {
		t.Fatalf("with the fix: %+v; first: %s", r.Violations, r.First)
	}
	restore := core.ExtendKeepsLostLock()
	broken := sim.Campaign(cfg, 1, schedules)
	restore()
	if broken.Violations.LostValid == 0 {
		t.Fatalf("the bug went unseen in %d schedules (%d extensions): %+v", broken.Schedules, broken.Extensions, broken.Violations)
	}
	t.Logf("with the bug: %+v; first: %s", broken.Violations, broken.First)
}

// TestSimulationSeesSkippedFenceRaise: the simulation's fence checker
// finds fences that do not grow when a fenced acquisition hands out the
// largest counter of its acquire round without raising a majority's
// counters to it first, and none with the raise round.
func TestSimulationSeesSkippedFenceRaise(t *testing.T) {
	cfg := sim.FenceContended(3)
	const schedules = 40
	fixed := sim.Campaign(cfg, 1, schedules)
	if fixed.Violations.Total() != 0 {
		t.Fatalf("with the raise: %+v; first: %s", fixed.Violations, fixed.First)
	}
	if fixed.Fenced == 0 || fixed.Raises < fixed.Fenced {
		t.Fatalf("with the raise: %d acquisitions fenced, %d raise rounds", fixed.Fenced, fixed.Raises)
	}
	restore := core.SkipFenceRaise()
	broken := sim.Campaign(cfg, 1, schedules)
	restore()
	if broken.Raises != 0 || broken.Fenced == 0 {
		t.Fatalf("without the raise: %d raise rounds, %d acquisitions fenced", broken.Raises, broken.Fenced)
	}
	if broken.Violations.Fence == 0 {
		t.Fatalf("the skipped raise went unseen in %d schedules (%d acquisitions): %+v", broken.Schedules, broken.Acquisitions, broken.Violations)
	}
	t.Logf("without the raise: %+v; first: %s", broken.Violations, broken.First)
}

// TestSimulationSeesLateLeaseLoss: a lease that declares the loss at the
// end of the validity, its last extension round ending there (the defect
// of a Context cancelled after Until), is reported by the late-loss
// checker in the lease configurations, and by none with the fix.
func TestSimulationSeesLateLeaseLoss(t *testing.T) {
	seesDefect(t, []sim.Config{sim.LeaseOutage(3, core.Multiplexed), sim.LeaseOutage(5, core.Sequential), sim.LeaseHung(5)},
		core.LeaseLosesAtValidity, "late loss", func(v sim.Violations) int { return v.LateLoss })
}

// simSchedules, when positive, replaces the number of schedules the
// defect tests run of each configuration: docs/safety.md's counts are
// these tests' logs at -sim.schedules 1000
// (results/simulation/checkers-not-blind.txt).
var simSchedules = flag.Int("sim.schedules", 0, "schedules of each configuration in TestSimulationSees* (0: each test's own)")

func schedulesOr(n int) int {
	if *simSchedules > 0 {
		return *simSchedules
	}
	return n
}

// seesDefect runs 100 schedules of each configuration with the fix, which
// must find nothing, and with the defect that mutate re-introduces, in
// which count (of the checker that must see it) must be positive.
func seesDefect(t *testing.T, cfgs []sim.Config, mutate func() func(), what string, count func(sim.Violations) int) {
	t.Helper()
	for _, cfg := range cfgs {
		fixed := sim.Campaign(cfg, 1, schedulesOr(100))
		if fixed.Violations.Total() != 0 {
			t.Fatalf("%s, with the fix: %+v; first: %s", cfg.Name, fixed.Violations, fixed.First)
		}
		restore := mutate()
		broken := sim.Campaign(cfg, 1, schedulesOr(100))
		restore()
		if count(broken.Violations) == 0 {
			t.Fatalf("%s: the %s went unseen in %d schedules: %+v", cfg.Name, what, broken.Schedules, broken.Violations)
		}
		t.Logf("%s, with the defect: %+v; first: %s", cfg.Name, broken.Violations, broken.First)
	}
}

// TestSimulationSeesDriftLeftOut: every configuration with clocks 1%
// apart, on its own, reports mutual-exclusion violations once the drift
// allowance is left out of validity, and none with it: nothing else (the
// lease's margin, say) hides the drift.
func TestSimulationSeesDriftLeftOut(t *testing.T) {
	for _, n := range []int{3, 5, 7} {
		for _, fo := range []core.FanOut{core.Multiplexed, core.Sequential} {
			for _, cfg := range []sim.Config{sim.AssumedWorstClocks(n, fo), sim.AssumedWorstClocksFenced(n, fo)} {
				restore := core.ValidityWithoutDrift()
				broken := sim.Campaign(cfg, 1, schedulesOr(60))
				restore()
				if broken.Violations.Exclusion == 0 {
					t.Fatalf("%s: drift left out went unseen in %d schedules: %+v", cfg.Name, broken.Schedules, broken.Violations)
				}
				t.Logf("%s, with the defect: %d schedules, %d mutual-exclusion violations", cfg.Name, broken.Schedules, broken.Violations.Exclusion)
			}
		}
	}
}

// TestSimulationSeesWaitBehindStaleKey: a wait that counts only the
// announcements of nodes the failed attempt found held (the defect of a
// waiter stalled by a stale key on a minority) is reported by the
// waiters' liveness checker, with stale keys and without, and by none
// with the fix.
func TestSimulationSeesWaitBehindStaleKey(t *testing.T) {
	seesDefect(t, []sim.Config{sim.WaitersStale(3), sim.WaitersStale(5), sim.WaitersAnnounced(5)},
		core.WakeOnHeldOnly, "stalled wait", func(v sim.Violations) int { return v.LongWait })
}

// TestSimulationSeesAChainThatNeverOpens: a process whose releases are
// all handed on within it (Queue.Follow never opening one) keeps the key
// from the other processes' heads, which the skipped-waiter checker
// reports in the Fair process configurations, and none with the fix.
func TestSimulationSeesAChainThatNeverOpens(t *testing.T) {
	seesDefect(t, []sim.Config{sim.ProcessesFair(3), sim.ProcessesFair(5)},
		core.ChainNeverOpens, "chain that never opens", func(v sim.Violations) int { return v.Skipped })
}

// TestSimulationSeesAPlaceIgnored: a head that ignores its process's
// place in the nodes' queue (Queue.Look) queues it at
// the back at its first failed attempt, which the skipped-waiter checker
// reports in the Fair process configurations, and none with the fix.
func TestSimulationSeesAPlaceIgnored(t *testing.T) {
	seesDefect(t, []sim.Config{sim.ProcessesFair(3), sim.ProcessesFair(5)},
		core.PlaceIgnored, "place ignored", func(v sim.Violations) int { return v.Skipped })
}

// TestSimulationSeesAnOverstatedNeeded: a Round.Needed that asks for one
// reply too many holds back replies that would have ended the round,
// which the gathering checker reports, and none with the fix.
func TestSimulationSeesAnOverstatedNeeded(t *testing.T) {
	seesDefect(t, []sim.Config{sim.Assumed(3, core.Multiplexed), sim.Assumed(5, core.Multiplexed)},
		core.NeededOverstates, "overstated Needed", func(v sim.Violations) int { return v.Gathered })
}

// TestSimulationSeesAPlaceThatOutlivesItsHead: a process's place
// recorded from a head that nobody followed, and that gave up and left
// the queue, puts the process's next waiter ahead of those that queued
// since, under the old ticket: the jumped checker reports it, and
// nothing with the fix.
func TestSimulationSeesAPlaceThatOutlivesItsHead(t *testing.T) {
	const within = 100 * time.Millisecond
	seesDefect(t, []sim.Config{sim.WithCancels(sim.ProcessesFair(5), within)},
		core.PlaceOutlivesHead, "place that outlives its head", func(v sim.Violations) int { return v.Jumped })
}

// TestSimulationSeesABehindThatKeepsItsTicket: a waiter behind its
// process's head that keeps the ticket of its own earlier attempt gives
// up with a leave round, which takes the process out of the nodes' queue
// while its head waits; the head then queues it again under the old
// place, ahead of those that queued since: the jumped checker reports
// it, and nothing with the fix.
func TestSimulationSeesABehindThatKeepsItsTicket(t *testing.T) {
	const within = 100 * time.Millisecond
	seesDefect(t, []sim.Config{sim.WithCancels(sim.ProcessesFair(3), within)},
		core.BehindKeepsTicket, "waiter behind that keeps its ticket", func(v sim.Violations) int { return v.Jumped })
}

// TestSimulationSeesACancelThatStaysQueued: a Fair waiter cancelled
// before its attempt is sent, or during the cleanup that queued it, that
// ends without its leave round (the bug bece5cd fixed, which real
// servers showed once in about seventy runs) stays queued on the nodes,
// which the stayed-waiter checker reports, and none with the fix. The
// simulation, as the Client, never cancels a cleanup (it acts on the
// cancel in the wait after it), so it sees the first half; the second
// is TestFairCancelDuringTheQueueingCleanupLeaves's.
func TestSimulationSeesACancelThatStaysQueued(t *testing.T) {
	const within = 100 * time.Millisecond
	seesDefect(t, []sim.Config{sim.WithCancels(sim.Queue(3), within), sim.WithCancels(sim.QueueFaulty(5, core.Multiplexed), within)},
		core.CancelStaysQueued, "cancel that stays queued", func(v sim.Violations) int { return v.Stayed })
}

// TestSimulationSeesAnUnheardRelease: a quiet release whose waiter gave
// up, left unannounced (Queue.Reannounce saying no, or only Queue.Left,
// when the waiter leaves after the release is done), is reported by the
// unheard checker while other processes wait; with the reannouncement,
// none is, and the simulation makes some.
func TestSimulationSeesAnUnheardRelease(t *testing.T) {
	cfgs := []sim.Config{sim.PairsGivingUp(3, false), sim.PairsGivingUp(5, true)}
	for _, cfg := range cfgs {
		if r := sim.Campaign(cfg, 1, schedulesOr(100)); r.Queue.Reannounced == 0 {
			t.Fatalf("%s: no quiet release was reannounced in %d schedules", cfg.Name, r.Schedules)
		}
	}
	unheard := func(v sim.Violations) int { return v.Unheard }
	seesDefect(t, cfgs, core.NeverReannounce, "unheard release", unheard)
	seesDefect(t, cfgs, core.NeverReannounceAtLeave, "release left unheard by a later leave", unheard)
}

// TestSimulationSeesAFreedKeyLeftToTheTimer: a Lock that attempted at
// once, its Client's wait room looking empty, while another Lock of the
// Client was in the round that queued the process (seed 16809 of the
// Fair processes of two, when a cleanup queued the waiter): its attempt
// took the key on two nodes, which took the process out of their
// queues, and its caller gave it up. The other Lock, now the head,
// waited for a turn that no quorum would give it until its timed retry,
// overtaken 62 times (bound 59). With Queue.Freed the head attempts at
// once, which queues the process again.
//
// Since an attempt queues its waiter in its own round, the campaign no
// longer reaches that interleaving: with the defect, 12,000 schedules
// of each of the processes of two and 2,500 of each Fair process
// configuration with cancels find nothing (the head's own attempts,
// and a cancelled attempt's leave, which Freed also answers, queue it
// again soon enough). The root's TestFairCancelledAttemptWakesItsClientsHead
// stages it on memnode with an hour's retry delay and a clock that
// stands still, and fails without Freed. Here: with the fix, Freed
// wakes heads in the campaign and no checker finds anything.
func TestSimulationSeesAFreedKeyLeftToTheTimer(t *testing.T) {
	for _, cfg := range []sim.Config{sim.PairsGivingUp(3, true), sim.PairsGivingUp(5, true)} {
		if r := sim.Campaign(cfg, 1, schedulesOr(100)); r.Violations.Total() != 0 || r.Queue.Freed == 0 {
			t.Fatalf("%s, with the fix: %d yes from Freed, %+v; first: %s", cfg.Name, r.Queue.Freed, r.Violations, r.First)
		}
	}
}

// TestSimulationSeesALastAttemptThatQueues: a Fair attempt with no try
// left that queues its waiter all the same, held on every node, ends
// the acquisition with no cleanup, queued on every node (the new
// one-round path's defect): the stayed-waiter checker reports it, and
// nothing with the fix.
func TestSimulationSeesALastAttemptThatQueues(t *testing.T) {
	seesDefect(t, []sim.Config{sim.QueueFewTries(3), sim.QueueFewTries(5)},
		core.LastAttemptQueues, "last attempt that queues", func(v sim.Violations) int { return v.Stayed })
}

// TestSimulationSeesAWriterOutOfTriesKeepingItsMark: the liveness
// checker of the reader/writer lock's holder-crash configurations finds
// a writer that, out of tries, keeps its mark in its last cleanup (as a
// waiting writer does): readers stay out for the mark's life while
// nobody waits behind it. With the fix, none.
func TestSimulationSeesAWriterOutOfTriesKeepingItsMark(t *testing.T) {
	const schedules = 400
	for _, cfg := range []sim.Config{sim.RWLiveness(3, core.Multiplexed), sim.RWLiveness(5, core.Sequential)} {
		if r := sim.Campaign(cfg, 1, schedules); r.Violations.Total() != 0 {
			t.Fatalf("%s, with the fix: %+v; first: %s", cfg.Name, r.Violations, r.First)
		}
	}
	restore := core.OutOfTriesKeepsMark()
	defer restore()
	cfg := sim.RWLiveness(3, core.Multiplexed)
	broken := sim.Campaign(cfg, 1, schedules)
	if broken.Violations.Liveness == 0 {
		t.Fatalf("%s: the bug went unseen in %d schedules: %+v", cfg.Name, broken.Schedules, broken.Violations)
	}
	t.Logf("with the bug: %+v; first: %s", broken.Violations, broken.First)
}
