package core_test

import (
	"testing"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/internal/sim"
)

// TestSimulationWakesOnRelease: in the simulation's contended schedules
// (five clients, work well within the TTL, DefaultRetry's delays), nodes
// that announce their releases to waiters that listen, without loss, cut
// the mean handoff (a release's start to the next acquisition, real time
// of the simulation) to well under a third of the polling one, the same
// schedules otherwise; most acquisitions are won by an attempt an
// announcement woke, and none while every waiter polls.
func TestSimulationWakesOnRelease(t *testing.T) {
	const schedules = 60
	for _, n := range []int{3, 5} {
		polled := sim.Campaign(sim.Waiters(n), 1, schedules)
		heard := sim.Campaign(sim.WaitersAnnounced(n), 1, schedules)
		for _, r := range []sim.Result{polled, heard} {
			if r.Violations.Total() != 0 {
				t.Fatalf("N=%d: %+v; first: %s", n, r.Violations, r.First)
			}
			if r.Handoff.N < 10*schedules {
				t.Fatalf("N=%d: only %d handoffs in %d schedules", n, r.Handoff.N, schedules)
			}
		}
		if a := polled.Announce; a.Wakes != 0 || a.Won != 0 || a.Fed != 0 {
			t.Fatalf("N=%d, polling: %+v", n, a)
		}
		if a := heard.Announce; a.Dropped+a.Late+a.Duplicated+a.Forged+a.SubDrops != 0 || 5*a.Won < 4*heard.Acquisitions {
			t.Fatalf("N=%d, announced: %d of %d acquisitions woken: %+v", n, a.Won, heard.Acquisitions, a)
		}
		p, h := polled.Handoff.Mean(), heard.Handoff.Mean()
		t.Logf("N=%d: mean handoff %v polling, %v announced (%.1fx); attempts per acquisition %.2f polling, %.2f announced",
			n, p, h, float64(p)/float64(h),
			float64(polled.Attempts)/float64(polled.Acquisitions), float64(heard.Attempts)/float64(heard.Acquisitions))
		if 3*h >= p {
			t.Fatalf("N=%d: mean handoff %v announced, %v polling: not under a third", n, h, p)
		}
	}
}

// TestSimulationAnnouncementFaults: announcements lost, late past the
// next attempt, duplicated and forged, subscriptions that drop and come
// back, waiters that poll and held replies without a TTL, on top of every
// fault the assumptions allow (fenced too): no checker finds anything in
// a few hundred schedules, and every fault was injected.
func TestSimulationAnnouncementFaults(t *testing.T) {
	const schedules = 300
	for _, cfg := range []sim.Config{sim.WaitersFaulty(5, core.Multiplexed), sim.WaitersFaulty(3, core.Sequential), sim.WaitersFenced(5)} {
		t.Run(cfg.Name, func(t *testing.T) {
			r := sim.Campaign(cfg, 1, schedules)
			if r.Violations.Total() != 0 {
				t.Fatalf("%+v in %d schedules; first: %s", r.Violations, r.Schedules, r.First)
			}
			a, f := r.Announce, r.Faults
			if a.Dropped == 0 || a.Late == 0 || a.Duplicated == 0 || a.Forged == 0 || a.SubDrops == 0 || a.UnknownTTL == 0 ||
				a.Won == 0 || f.Lost == 0 || f.NodeCrashes == 0 || f.ClientPauses == 0 {
				t.Fatalf("faults not injected, or nothing woken: %+v, %+v", a, f)
			}
			if cfg.Fencing && r.Fenced != r.Acquisitions {
				t.Fatalf("%d of %d acquisitions fenced", r.Fenced, r.Acquisitions)
			}
		})
	}
}

// TestSimulationForgedAnnouncements: announcements of releases that never
// happened, the only announcement fault, start attempts (more than the
// true announcements alone) and never cause a violation, even when every
// true announcement is lost and only forgeries (and the subscriptions'
// "maybe missed") wake anyone.
func TestSimulationForgedAnnouncements(t *testing.T) {
	const schedules = 30
	onlyForged := func(cfg sim.Config) sim.Config {
		cfg.Name += ", every true announcement lost"
		cfg.Announce.Drop, cfg.Announce.Forged = 1, 1000
		return cfg
	}
	fenced := sim.WaitersForged(5)
	fenced.Name += ", fenced"
	fenced.Fencing = true
	for _, cfg := range []sim.Config{sim.WaitersForged(3), fenced, onlyForged(sim.WaitersForged(5)), onlyForged(fenced)} {
		t.Run(cfg.Name, func(t *testing.T) {
			r := sim.Campaign(cfg, 1, schedules)
			if r.Violations.Total() != 0 {
				t.Fatalf("%+v in %d schedules; first: %s", r.Violations, r.Schedules, r.First)
			}
			a := r.Announce
			if a.Forged < cfg.Announce.Forged*schedules*9/10 || a.Wakes == 0 || a.Late+a.Duplicated+a.SubDrops != 0 {
				t.Fatalf("forgeries not fed, or nothing woken: %+v", a)
			}
			clean := cfg
			clean.Announce.Forged = 0
			if c := sim.Campaign(clean, 1, schedules); c.Announce.Wakes >= a.Wakes {
				t.Fatalf("forgeries woke nothing: %d wakes with them, %d without", a.Wakes, c.Announce.Wakes)
			}
		})
	}
}
