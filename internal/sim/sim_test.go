package sim

import (
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/internal/testguard"
)

// schedulesPerConfig keeps go test well under a minute for every
// configuration below; cmd/redlock-sim runs the long campaigns (CI runs it
// too, without the race detector).
var schedulesPerConfig = map[bool]int{false: 200, true: 40}[raceEnabled]

// TestMain arms the hang guard (internal/testguard), then runs the tests
// and checks that none left a goroutine behind.
func TestMain(m *testing.M) {
	testguard.Arm()
	goleak.VerifyTestMain(m)
}

// TestWithinAssumptions: no checker finds anything in any schedule that
// keeps the algorithm's assumptions, for N in {3, 5, 7} and both fan-outs,
// while faults are injected, with and without Fencing.
func TestWithinAssumptions(t *testing.T) {
	var configs []Config
	for _, n := range []int{3, 5, 7} {
		for _, fo := range []core.FanOut{core.Multiplexed, core.Sequential} {
			configs = append(configs, Assumed(n, fo), AssumedPersistent(n, fo), AssumedWorstClocks(n, fo), Liveness(n, fo),
				AssumedFenced(n, fo), AssumedPersistentFenced(n, fo), AssumedWorstClocksFenced(n, fo))
		}
		configs = append(configs, FenceContended(n))
	}
	for _, cfg := range configs {
		t.Run(cfg.Name, func(t *testing.T) {
			r := Campaign(cfg, 1, schedulesPerConfig)
			if r.Violations.Total() != 0 {
				t.Fatalf("%+v in %d schedules; first: %s", r.Violations, r.Schedules, r.First)
			}
			// The schedules must have done something worth checking.
			if r.Acquisitions < schedulesPerConfig {
				t.Fatalf("only %d acquisitions in %d schedules", r.Acquisitions, r.Schedules)
			}
			f := r.Faults
			switch {
			case cfg.Faults.HolderCrash && f.ClientCrashes != schedulesPerConfig:
				t.Fatalf("%d holder crashes in %d schedules", f.ClientCrashes, r.Schedules)
			case !cfg.Faults.HolderCrash && (f.Lost == 0 || f.Late == 0 || f.NodeCrashes == 0 || f.ClientPauses == 0 || r.Extensions == 0):
				t.Fatalf("faults not injected: %+v, %d extensions", f, r.Extensions)
			}
			// Fenced configurations must have handed out fences, each
			// after a raise round; the others none.
			switch {
			case cfg.Fencing && (r.Fenced != r.Acquisitions || r.Raises < r.Fenced):
				t.Fatalf("%d of %d acquisitions fenced after %d raise rounds", r.Fenced, r.Acquisitions, r.Raises)
			case !cfg.Fencing && (r.Fenced != 0 || r.Raises != 0):
				t.Fatalf("without Fencing: %d acquisitions fenced, %d raise rounds", r.Fenced, r.Raises)
			}
		})
	}
}

// TestAnnouncementsWithinAssumptions: release announcements, lossless or
// with every fault (lost, late, duplicated, forged, subscriptions that
// drop and come back, waiters that poll, held replies without a TTL),
// leave every checker silent in every waiter configuration; what the
// configuration listens to and injects shows in the counts: announcements
// fed and acquisitions they woke only where clients listen, and each
// fault where it is configured.
func TestAnnouncementsWithinAssumptions(t *testing.T) {
	var configs []Config
	for _, n := range []int{3, 5, 7} {
		configs = append(configs, Waiters(n), WaitersAnnounced(n), WaitersFaulty(n, core.Multiplexed), WaitersFaulty(n, core.Sequential),
			WaitersForged(n), WaitersLiveness(n, core.Multiplexed), WaitersLiveness(n, core.Sequential))
	}
	configs = append(configs, WaitersPersistent(5), WaitersWorstClocks(3), WaitersWorstClocks(5), WaitersFenced(3), WaitersFenced(5))
	for _, cfg := range configs {
		t.Run(cfg.Name, func(t *testing.T) {
			r := Campaign(cfg, 1, schedulesPerConfig)
			if r.Violations.Total() != 0 {
				t.Fatalf("%+v in %d schedules; first: %s", r.Violations, r.Schedules, r.First)
			}
			if r.Acquisitions < schedulesPerConfig || r.Handoff.N == 0 || r.Attempts < r.Acquisitions {
				t.Fatalf("%d acquisitions, %d attempts, %d handoffs in %d schedules", r.Acquisitions, r.Attempts, r.Handoff.N, r.Schedules)
			}
			a, c := r.Announce, cfg.Announce
			if c.Listen == 0 {
				if a != (AnnounceCounts{}) {
					t.Fatalf("nobody listens, yet %+v", a)
				}
				return
			}
			if a.Published == 0 || a.Fed == 0 || a.Missed == 0 || a.Wakes == 0 || a.Won == 0 {
				t.Fatalf("announcements not heard: %+v", a)
			}
			for _, f := range []struct {
				on  bool
				got int
			}{
				{c.Drop > 0, a.Dropped}, {c.Late > 0, a.Late}, {c.Dup > 0, a.Duplicated},
				{c.Forged > 0, a.Forged}, {c.SubDrops > 0, a.SubDrops}, {c.UnknownTTL > 0, a.UnknownTTL},
			} {
				if f.on != (f.got > 0) {
					t.Fatalf("faults injected not as configured: %+v", a)
				}
			}
		})
	}
}

// TestQueueWithinAssumptions: the Fair waiter queue, fault-free or with
// every fault and its own (entries lost, tickets moved so that nodes
// order the waiters differently), persistent nodes and stale keys: no
// checker finds anything, waiters are overtaken at most MaxOvertaken
// times, and keys were handed over; failed attempts queued their
// waiters in their own round, with no cleanup round, and with few tries
// last attempts left no waiter queued.
func TestQueueWithinAssumptions(t *testing.T) {
	for _, cfg := range []Config{Queue(3), Queue(5), QueueFaulty(3, core.Multiplexed), QueueFaulty(5, core.Multiplexed),
		QueueFaulty(5, core.Sequential), QueuePersistent(5), QueueFewTries(3), QueueFewTries(5)} {
		t.Run(cfg.Name, func(t *testing.T) {
			r := Campaign(cfg, 1, schedulesPerConfig)
			if r.Violations.Total() != 0 {
				t.Fatalf("%+v in %d schedules; first: %s", r.Violations, r.Schedules, r.First)
			}
			q, f := r.Queue, cfg.Faults
			if r.Acquisitions < schedulesPerConfig || q.Handoffs == 0 || r.Announce.Published == 0 || q.QueuedByAttempt == 0 {
				t.Fatalf("%d acquisitions, %+v, %d announcements", r.Acquisitions, q, r.Announce.Published)
			}
			if (f.QueueLoss > 0) != (q.Lost > 0) || (f.QueueSkew > 0) != (q.Skewed > 0) {
				t.Fatalf("queue faults not injected as configured: %+v", q)
			}
		})
	}
}

// TestCancelsWithinAssumptions: callers that give a third of their
// acquisitions up, plain, announced, Fair (fault-free and with every
// fault) and in processes: no checker finds anything, and acquisitions
// were given up at every point where the Client can give one up, queued
// ones among them where the nodes queue. Fault-free and Fair, a failed
// attempt is held on every node, queues its waiter itself and has no
// cleanup to give up in: the Fair configurations with faults have.
func TestCancelsWithinAssumptions(t *testing.T) {
	for _, cfg := range []Config{WithCancels(Assumed(3, core.Multiplexed), 100*ms), WithCancels(Assumed(5, core.Sequential), 250*ms),
		WithCancels(WaitersFaulty(3, core.Multiplexed), 100*ms), WithCancels(Queue(5), 100*ms),
		WithCancels(QueueFaulty(3, core.Sequential), 100*ms), WithCancels(ProcessesFair(3), 100*ms)} {
		t.Run(cfg.Name, func(t *testing.T) {
			r := Campaign(cfg, 1, schedulesPerConfig)
			if r.Violations.Total() != 0 {
				t.Fatalf("%+v in %d schedules; first: %s", r.Violations, r.Schedules, r.First)
			}
			c := r.Faults.Cancelled
			faultFreeFair := cfg.Fair && cfg.Faults.QueueLoss == 0
			if faultFreeFair && r.Queue.QueuedByAttempt == 0 {
				t.Fatalf("no attempt queued its waiter everywhere in %d schedules", r.Schedules)
			}
			if r.Acquisitions < schedulesPerConfig || c.Wait == 0 || c.GiveUp == 0 || c.Unsent == 0 || c.Attempt == 0 || c.Cleanup == 0 && !faultFreeFair ||
				(c.Queued > 0) != cfg.Fair || c.Wait+c.GiveUp+c.Unsent+c.Attempt+c.Cleanup != r.Faults.Cancels {
				t.Fatalf("%d acquisitions, %d given up: %+v", r.Acquisitions, r.Faults.Cancels, c)
			}
		})
	}
}

// TestProcessesWithinAssumptions: processes of four waiters that hand
// the key on within themselves (proc.go), announced and Fair, fault-free
// and with every fault: no checker finds anything, chains were handed
// on and opened, and early tells were retold where releases fan out at
// once.
func TestProcessesWithinAssumptions(t *testing.T) {
	for _, cfg := range []Config{Processes(3), ProcessesFair(5), ProcessesFaulty(5, core.Multiplexed),
		ProcessesFaulty(3, core.Sequential), ProcessesFairFaulty(3, core.Multiplexed), ProcessesFairFaulty(5, core.Sequential)} {
		t.Run(cfg.Name, func(t *testing.T) {
			r := Campaign(cfg, 1, schedulesPerConfig)
			if r.Violations.Total() != 0 {
				t.Fatalf("%+v in %d schedules; first: %s", r.Violations, r.Schedules, r.First)
			}
			q := r.Queue
			if r.Acquisitions < schedulesPerConfig || q.Chained == 0 || (q.Retold > 0) != (cfg.FanOut == core.Multiplexed) {
				t.Fatalf("%d acquisitions, %+v", r.Acquisitions, q)
			}
			// Faults break chains before they reach MaxChain+1; fault-free
			// schedules run them to their end.
			if faultFree := cfg.Faults == (Faults{ClientPPM: 5000, NodePPM: 5000}); faultFree && (q.Opened == 0 || cfg.Fair && q.MaxOvertaken <= core.MaxChain) {
				t.Fatalf("no chain opened, or no head waited through another process's: %+v", q)
			}
		})
	}
}

// TestStuckCheckerSeesAForgottenSuccessor: heads that leave their
// process's queue without poking the successor make the stuck-process
// checker, and only it, report violations.
func TestStuckCheckerSeesAForgottenSuccessor(t *testing.T) {
	seenOnlyBy(t, ProcessesForgetSuccessor, func(v Violations) int { return v.Stuck })
}

// seenOnlyBy runs the broken configurations mk makes at N=3 and 5: the
// checker whose violations count returns, and only it, must report some.
func seenOnlyBy(t *testing.T, mk func(n int) Config, count func(Violations) int) {
	t.Helper()
	for _, n := range []int{3, 5} {
		r := Campaign(mk(n), 1, schedulesPerConfig)
		v := r.Violations
		if count(v) == 0 || v.Total() != count(v) {
			t.Fatalf("N=%d: %+v in %d schedules", n, v, r.Schedules)
		}
		t.Logf("N=%d: %+v in %d schedules; first: %s", n, v, r.Schedules, r.First)
	}
}

// TestSkippedCheckerSeesAQueueThatSkipsItsHead: nodes whose release hands
// the key to the second waiter make the skipped-waiter checker, and only
// it, report violations; the same schedules with a sound queue do not
// (TestQueueWithinAssumptions).
func TestSkippedCheckerSeesAQueueThatSkipsItsHead(t *testing.T) {
	seenOnlyBy(t, QueueSkipsHead, func(v Violations) int { return v.Skipped })
}

// TestCheckersSeeBrokenAssumptions: each broken assumption, and the bug of
// one token shared by every attempt, makes the checkers report violations:
// they are not blind.
func TestCheckersSeeBrokenAssumptions(t *testing.T) {
	for _, tc := range []struct {
		cfg       Config
		schedules int
	}{
		{InstantRestart(3), schedulesPerConfig},
		{FastNodeClocks(3), 5 * schedulesPerConfig},
		{PastValidity(3), schedulesPerConfig},
		{SharedToken(3), schedulesPerConfig},
	} {
		t.Run(tc.cfg.Name, func(t *testing.T) {
			r := Campaign(tc.cfg, 1, tc.schedules)
			if r.Violations.Exclusion == 0 {
				t.Fatalf("no mutual-exclusion violation in %d schedules: %+v", r.Schedules, r.Violations)
			}
			t.Logf("%+v in %d schedules; first: %s", r.Violations, r.Schedules, r.First)
		})
	}
}

// TestFenceCheckerSeesLostCountersAndSkippedRaise: with the schedules of
// FenceContended, which show no violation (TestWithinAssumptions), fence
// counters lost in crashes, or nodes that skip the raise, make the fence
// checker, and only it, report violations.
func TestFenceCheckerSeesLostCountersAndSkippedRaise(t *testing.T) {
	for _, cfg := range []Config{FenceCountersLost(3), FenceCountersLost(5), FenceRaiseSkipped(3), FenceRaiseSkipped(5)} {
		t.Run(cfg.Name, func(t *testing.T) {
			r := Campaign(cfg, 1, schedulesPerConfig)
			v := r.Violations
			if v.Fence == 0 || v.Total() != v.Fence {
				t.Fatalf("want fence violations only, in %d schedules (%d acquisitions, %d raise rounds): %+v",
					r.Schedules, r.Acquisitions, r.Raises, v)
			}
			if cfg.Faults.LoseCounters && r.Faults.CountersLost == 0 {
				t.Fatalf("no counter lost: %+v", r.Faults)
			}
			t.Logf("%+v in %d schedules; first: %s", v, r.Schedules, r.First)
		})
	}
}

// TestDeterministic: a schedule is a function of its configuration and
// seed.
func TestDeterministic(t *testing.T) {
	for _, cfg := range []Config{Assumed(5, core.Multiplexed), FenceCountersLost(3), WaitersFaulty(5, core.Multiplexed), FailoverFenced(3, core.Multiplexed), FailoverNoWait(3)} {
		for seed := uint64(1); seed < 20; seed++ {
			if a, b := Run(cfg, seed), Run(cfg, seed); a != b {
				t.Fatalf("%s, seed %d: %+v then %+v", cfg.Name, seed, a, b)
			}
		}
	}
}

// TestClocks: local and real readings convert both ways without letting a
// client read its deadline early.
func TestClocks(t *testing.T) {
	for _, ppm := range []int64{-30000, -5000, -1, 0, 1, 4999, 30000} {
		for _, ns := range []int64{0, 1, 999, 1e6 + 7, 123456789, 5e9 + 3} {
			l := localAt(ns, ppm)
			back := realAt(l, ppm)
			if localAt(back, ppm).Before(l) || (back > 0 && !localAt(back-1, ppm).Before(l)) {
				t.Fatalf("ppm %d, t %d: realAt(localAt) = %d is not the earliest time reading %v", ppm, ns, back, l)
			}
		}
	}
}

// TestHygieneCheckerSeesBrokenOrder: a network that lets a release overtake
// the SET it undoes (a driver breaking core.Batch's order rule) leaves keys
// behind on nodes that answered, and the hygiene checker says so.
func TestHygieneCheckerSeesBrokenOrder(t *testing.T) {
	cfg := Assumed(3, core.Multiplexed)
	cfg.Faults = Faults{Reorder: 0.5}
	cfg.Work = [2]time.Duration{0, ms}
	r := Campaign(cfg, 1, schedulesPerConfig)
	if r.Violations.Hygiene == 0 {
		t.Fatalf("no hygiene violation in %d schedules: %+v", r.Schedules, r.Violations)
	}
	t.Logf("%+v; first: %s", r.Violations, r.First)
}

// TestLivenessCheckerSeesNoProgress: when every node goes down as the
// holder crashes, nobody can acquire, and the liveness checker says so,
// for every kind: a hold beside the crashed one (a reader's, another
// slot's, a disjoint key set's) moves the deadline past its end, and
// does not hide that nobody acquires after it.
func TestLivenessCheckerSeesNoProgress(t *testing.T) {
	for _, cfg := range []Config{Liveness(3, core.Multiplexed), RWLiveness(3, core.Multiplexed),
		liveness(allKind, 3, core.Multiplexed), liveness(permitKind, 3, core.Multiplexed)} {
		cfg.Faults.DownAfterCrash = true
		r := Campaign(cfg, 1, 50)
		if r.Violations.Liveness == 0 {
			t.Errorf("%s: no liveness violation: %+v", cfg.Name, r.Violations)
		}
	}
}

// TestLivenessBoundCountsSequentialRounds: the liveness checker's bound
// allows a sequential round one node timeout per node. The campaign's seed
// 15003 of N=7 sequential acquired 0.5 ms past a bound that allowed one
// node timeout per round: the checker was wrong, not the core.
func TestLivenessBoundCountsSequentialRounds(t *testing.T) {
	r := Run(Liveness(7, core.Sequential), 15003)
	if r.Violations.Total() != 0 {
		t.Fatalf("%+v: %s", r.Violations, r.First)
	}
}

// TestFenceOrderRestsOnClocks: the fence checker's order, that in which
// acquisitions complete, is the fences' order only under the clock
// assumption. With clock rates 20% apart, an attempt whose client pauses
// in its raise round completes on its slow clock after its keys expired
// on fast nodes and another client acquired there with a larger fence:
// it completes later with a smaller fence, and the checker says so. (An
// acquisition that starts after another completed still always gets a
// larger fence, clocks or not: its SETs follow the raise.)
func TestFenceOrderRestsOnClocks(t *testing.T) {
	cfg := FastNodeClocks(3)
	cfg.Name = "broken: clock rates 20% apart, fenced N=3"
	cfg.Fencing = true
	cfg.Faults.ClientPPM, cfg.Faults.NodePPM = 100_000, 100_000
	cfg.Faults.WorstClocks = true
	cfg.Faults.Pauses = 30
	r := Campaign(cfg, 1, 300)
	if r.Violations.Fence == 0 {
		t.Fatalf("no fence violation in %d schedules: %+v", r.Schedules, r.Violations)
	}
	t.Logf("%+v; first: %s", r.Violations, r.First)
}

// TestLeasesWithinAssumptions: leases facing majority outages, late
// majorities, MaxHold and unlocks that race their extensions, and
// waiters facing stale keys on a minority, leave every checker silent;
// the faults they are about show in the counts.
func TestLeasesWithinAssumptions(t *testing.T) {
	var configs []Config
	for _, n := range []int{3, 5} {
		configs = append(configs, LeaseOutage(n, core.Multiplexed), LeaseOutage(n, core.Sequential), LeaseHung(n),
			LeaseMaxHold(n), LeaseUnlockRace(n), WaitersStale(n))
	}
	configs = append(configs, WaitersStaleFaulty(5))
	for _, cfg := range configs {
		t.Run(cfg.Name, func(t *testing.T) {
			r := Campaign(cfg, 1, schedulesPerConfig)
			if r.Violations.Total() != 0 {
				t.Fatalf("%+v in %d schedules; first: %s", r.Violations, r.Schedules, r.First)
			}
			f := r.Faults
			switch {
			case r.Acquisitions < schedulesPerConfig:
				t.Fatalf("only %d acquisitions in %d schedules", r.Acquisitions, r.Schedules)
			case cfg.Faults.Outages > 0 && (f.Outages == 0 || f.LeaseLosses == 0):
				t.Fatalf("outages not injected or no lease lost: %+v", f)
			case cfg.Faults.StaleKeys > 0 && (f.StaleKeys == 0 || r.Handoff.N == 0):
				t.Fatalf("stale keys not set or no handoff: %+v, %d handoffs", f, r.Handoff.N)
			case cfg.Lease.Fraction == 0.1 && f.UnlockRaces == 0:
				t.Fatalf("no unlock raced an extension: %+v", f)
			case cfg.Faults.Extend > 0 && r.Extensions == 0:
				t.Fatal("no extension")
			}
		})
	}
}
