package sim

import (
	"strconv"
	"strings"
	"time"

	"github.com/redlock-go/redlock/core"
)

const (
	ms = time.Millisecond
	us = time.Microsecond
	// assumedTries and waitersTries are the tries of Assumed's and
	// Waiters' retry policies.
	assumedTries = 3
	waitersTries = 100
)

// Assumed returns a configuration within every assumption of the
// algorithm, for n nodes and fan-out fo, with every fault the assumptions
// allow: latency, loss, timed-out commands applied late, a node crash with
// a restart delayed past the TTL, clock-rate errors of up to ±0.5% on every
// client and node (so at most 1% apart, the default drift factor), client
// pauses (before the first use too), and leases, some through a Spec
// with another TTL. Its schedules must show no violation. Sequential
// configurations over more than three nodes have a longer TTL (100 ms a
// node), so that a lease still fits its extensions.
func Assumed(n int, fo core.FanOut) Config {
	ttl := 200 * ms
	if fo == core.Sequential && n > 3 {
		// A sequential round's bound is n node timeouts: a lease fits an
		// extension only if a third of the validity leaves two bounds.
		ttl = 100 * ms * time.Duration(n)
	}
	return Config{
		Name:        "assumed N=" + strconv.Itoa(n) + " " + fo.String(),
		Nodes:       n,
		Clients:     4,
		FanOut:      fo,
		TTL:         ttl,
		NodeTimeout: 10 * ms,
		Retry:       core.RandomDelay(assumedTries, 2*ms, 20*ms),
		Length:      5 * ttl,
		Latency:     [2]time.Duration{50 * us, 3 * ms},
		Work:        [2]time.Duration{0, 2 * ttl},
		Think:       [2]time.Duration{0, 20 * ms},
		Faults: Faults{
			Loss:              0.02,
			Late:              0.02,
			LateBy:            ttl,
			NodeCrashes:       1,
			RestartDelay:      [2]time.Duration{ttl * 11 / 10, 2 * ttl},
			ClientPPM:         5000,
			NodePPM:           5000,
			Pauses:            2,
			MaxPause:          ttl,
			PauseAfterAcquire: 0.1,
			Extend:            0.7,
			ExtendTTL:         ttl / 4,
		},
	}
}

// AssumedPersistent is Assumed with nodes that keep their data (appendonly
// with fsync always) and so may restart at once.
func AssumedPersistent(n int, fo core.FanOut) Config {
	c := Assumed(n, fo)
	c.Name = "persistent, instant restart N=" + strconv.Itoa(n) + " " + fo.String()
	c.Faults.NodeCrashes = 2
	c.Faults.Persistent = true
	c.Faults.RestartDelay = [2]time.Duration{0, ms}
	return c
}

// AssumedWorstClocks is Assumed with every client clock 0.5% slow and
// every node clock 0.5% fast: 1% apart, the most the drift factor allows.
// Its times are Assumed's scaled up (a 3 s TTL, N times that when
// sequential) but for the network's and the node timeout: the lease's
// margin before the end of validity (a round's bound) is then a third of
// the clocks' 1% apart at most, so that the drift allowance, and nothing
// else, keeps these schedules safe: without it they fail.
func AssumedWorstClocks(n int, fo core.FanOut) Config {
	k := time.Duration(15)
	if fo == core.Sequential {
		k *= time.Duration(n)
	}
	c := scaled(Assumed(n, fo), k, assumedTries)
	c.Name = "clocks 1% apart N=" + strconv.Itoa(n) + " " + fo.String()
	c.Work = [2]time.Duration{c.TTL, 2 * c.TTL} // used to the end of validity
	c.Faults.WorstClocks = true
	return c
}

// scaled returns c with its lock, schedule and fault times k times
// longer, its network and node timeout as they are; its retry policy
// (random delays) keeps its tries.
func scaled(c Config, k time.Duration, tries int) Config {
	f := &c.Faults
	c.TTL, c.Length = k*c.TTL, k*c.Length
	c.Work = [2]time.Duration{k * c.Work[0], k * c.Work[1]}
	c.Think = [2]time.Duration{k * c.Think[0], k * c.Think[1]}
	c.Retry = core.RandomDelay(tries, k*c.Retry.Delay(1, 0), k*c.Retry.Delay(1, ^uint64(0)))
	f.LateBy, f.MaxPause, f.ExtendTTL = k*f.LateBy, k*f.MaxPause, k*f.ExtendTTL
	f.RestartDelay = [2]time.Duration{k * f.RestartDelay[0], k * f.RestartDelay[1]}
	return c
}

// Liveness is a fault-free configuration but for clock-rate errors, in
// which one client crashes while it holds the lock: another must acquire
// soon after the keys expire.
func Liveness(n int, fo core.FanOut) Config {
	c := Assumed(n, fo)
	c.Name = "holder crash, liveness N=" + strconv.Itoa(n) + " " + fo.String()
	c.Clients = 3
	c.Work = [2]time.Duration{c.TTL, 2 * c.TTL}
	c.Faults = Faults{ClientPPM: 5000, NodePPM: 5000, HolderCrash: true}
	return c
}

// Broken configurations: each breaks one assumption of the algorithm, or
// re-introduces a fixed bug, and its schedules must show violations.

// InstantRestart restarts crashed nodes at once, empty.
func InstantRestart(n int) Config {
	c := Assumed(n, core.Multiplexed)
	c.Name = "broken: instant restart without persistence N=" + strconv.Itoa(n)
	c.Faults.NodeCrashes = 3
	c.Faults.RestartDelay = [2]time.Duration{0, ms}
	return c
}

// FastNodeClocks lets clocks drift apart by up to 6%, beyond the 1% factor.
func FastNodeClocks(n int) Config {
	c := scaled(Assumed(n, core.Multiplexed), 10, assumedTries)
	c.Name = "broken: clock rates 6% apart N=" + strconv.Itoa(n)
	c.Clients = 6
	c.Work = [2]time.Duration{c.TTL, 2 * c.TTL} // used to the end of validity
	c.Faults.Extend = 0
	c.Faults.ClientPPM, c.Faults.NodePPM = 30_000, 30_000
	return c
}

// PastValidity has holders use the lock past its validity, as a process
// paused after its last check does (Kleppmann's scenario).
func PastValidity(n int) Config {
	c := Assumed(n, core.Multiplexed)
	c.Name = "broken: lock used past its validity N=" + strconv.Itoa(n)
	c.Faults.UsePastValidity = true
	return c
}

// SharedToken makes every attempt of an acquisition hold one token, the
// core's bug before each attempt drew its own: a late cleanup of a failed
// attempt then deletes the key the winning attempt set.
func SharedToken(n int) Config {
	c := Assumed(n, core.Multiplexed)
	c.Name = "bug: one token for every attempt N=" + strconv.Itoa(n)
	c.Clients = 6
	c.Faults.Late = 0.1
	c.Faults.SharedAttemptToken = true
	return c
}

// ShortExtendLocker leases 4 s locks through a Spec with a 20 ms TTL,
// with clocks 1% apart: it passes with the lock's own drift (42 ms), and
// breaks when an extension takes the extending Spec's (2.2 ms), the
// core's bug before extension kept the lock's drift.
func ShortExtendLocker(n int) Config {
	ttl := 4 * time.Second // clocks 1% apart: 40 ms, far above the lease's 5 ms margin
	c := Assumed(n, core.Multiplexed)
	c.Name = "extend through a 20 ms Spec, clocks 1% apart N=" + strconv.Itoa(n)
	c.TTL, c.Length = ttl, 3*ttl
	c.Clients = 5
	c.Work = [2]time.Duration{2 * ttl, 3 * ttl}
	c.Retry = core.RandomDelay(100, 20*ms, 60*ms) // a hundredth of the TTL: waiters poll through holds of seconds
	c.NodeTimeout = 5 * ms
	c.Faults = Faults{ClientPPM: 5000, NodePPM: 5000, WorstClocks: true, Extend: 1, ExtendTTL: 20 * ms}
	// One extension, as late as the lease allows, then the lock is used
	// to the loss: the extended validity is what keeps it safe.
	c.Lease = LeaseConfig{Fraction: 0.997, MaxExtensions: 1}
	return c
}

// AssumedFenced is Assumed with Fencing and two node crashes: a node that
// restarts empty after the delay still keeps its fence counter (counters
// persisted, as Fencing requires). Every acquisition must return a fence
// above those of every acquisition completed before it.
func AssumedFenced(n int, fo core.FanOut) Config {
	c := Assumed(n, fo)
	c.Name = "fenced N=" + strconv.Itoa(n) + " " + fo.String()
	c.Fencing = true
	c.Faults.NodeCrashes = 2
	return c
}

// AssumedPersistentFenced is AssumedPersistent with Fencing: nodes keep
// their keys and counters and may restart at once.
func AssumedPersistentFenced(n int, fo core.FanOut) Config {
	c := AssumedPersistent(n, fo)
	c.Name = "fenced, persistent, instant restart N=" + strconv.Itoa(n) + " " + fo.String()
	c.Fencing = true
	return c
}

// AssumedWorstClocksFenced is AssumedWorstClocks with Fencing: fences
// grow in the order acquisitions complete only because every key outlives
// its holder's validity, which the clocks 1% apart test at the bound.
func AssumedWorstClocksFenced(n int, fo core.FanOut) Config {
	c := AssumedWorstClocks(n, fo)
	c.Name = "fenced, clocks 1% apart N=" + strconv.Itoa(n) + " " + fo.String()
	c.Fencing = true
	c.Faults.NodeCrashes = 2
	return c
}

// FenceContended is AssumedFenced at its hardest for the fences, still
// within every assumption: six clients, two-second schedules of work up
// to the TTL, and three crashes per node on average, each restart delayed
// just past the TTL. Nodes that are down, lose messages or see their SET refused
// miss increments, so counters drift apart across nodes, and restarted
// nodes keep theirs. The broken fencing configurations below are this one
// with one fault added.
func FenceContended(n int) Config {
	c := AssumedFenced(n, core.Multiplexed)
	c.Name = "fenced, contended, 3 crashes per node N=" + strconv.Itoa(n)
	c.Clients = 6
	c.Length = 2 * time.Second
	c.Work = [2]time.Duration{0, c.TTL}
	c.Faults.NodeCrashes = 3 * n
	c.Faults.RestartDelay = [2]time.Duration{c.TTL * 11 / 10, c.TTL * 13 / 10}
	return c
}

// FenceCountersLost is FenceContended with fence counters lost in every
// crash: mutual exclusion holds (restarts are still delayed past the TTL),
// but a restarted node of the last holder's raised majority may join a
// later quorum whose other nodes missed increments, and the later holder's
// fence is then not larger.
func FenceCountersLost(n int) Config {
	c := FenceContended(n)
	c.Name = "broken: fence counter lost on restart N=" + strconv.Itoa(n)
	c.Faults.LoseCounters = true
	return c
}

// FenceRaiseSkipped is FenceContended with nodes that answer the raise
// without raising: the fence is M, the largest counter of the acquire
// round, and a later quorum that misses the node M came from may return
// less.
func FenceRaiseSkipped(n int) Config {
	c := FenceContended(n)
	c.Name = "bug: raise step skipped (nodes answer without raising) N=" + strconv.Itoa(n)
	c.Faults.SkipRaise = true
	return c
}

// Waiters is the family of configurations for release announcements
// (Config.Announce): five clients contend for the key with work well
// within the TTL, so that most locks are released rather than left to
// expire and a handoff follows each release, on a network of 50 µs-1 ms
// trips; they retry until they win (100 tries, as redlock's Lock does
// until its context ends), DefaultRetry's 50-250 ms apart. Nodes reply the
// holder's TTL; no client listens: every waiter polls, at the retry delay
// or the holder's expiry, whichever is first. Only clock-rate errors
// (±0.5%) are injected: its handoffs are the baseline WaitersAnnounced's
// are measured against.
func Waiters(n int) Config {
	c := Assumed(n, core.Multiplexed)
	c.Name = "waiters, polling N=" + strconv.Itoa(n)
	c.Clients = 5
	c.Latency = [2]time.Duration{50 * us, ms}
	c.Work = [2]time.Duration{0, 40 * ms}
	c.Think = [2]time.Duration{0, 20 * ms}
	c.Retry = core.DefaultRetry.WithTries(waitersTries)
	c.Faults = Faults{ClientPPM: 5000, NodePPM: 5000}
	return c
}

// WaitersAnnounced is Waiters with every client listening and no
// announcement lost: a waiter wakes on the release.
func WaitersAnnounced(n int) Config {
	c := Waiters(n)
	c.Name = "waiters, announced N=" + strconv.Itoa(n)
	c.Announce = Announcements{Listen: 1}
	return c
}

// announceFaults is every announcement fault at once: a third of the
// clients poll, announcements are lost, late by up to the TTL (past the
// waiter's next attempt), duplicated and forged, subscriptions drop and
// come back, and some held replies carry no TTL.
func announceFaults(ttl time.Duration) Announcements {
	return Announcements{Listen: 2. / 3, Drop: 0.1, Late: 0.1, LateBy: 2 * ttl, Dup: 0.1, Forged: 20,
		SubDrops: 6, Redial: [2]time.Duration{5 * ms, 50 * ms}, UnknownTTL: 0.1}
}

// WaitersFaulty is Waiters with every fault of Assumed (message loss and
// late commands, a node crash with a delayed restart, clock-rate errors,
// client pauses, extensions through a second Locker) and every
// announcement fault (announceFaults), for fan-out fo.
func WaitersFaulty(n int, fo core.FanOut) Config {
	a := Assumed(n, fo)
	c := Waiters(n)
	c.Name = "waiters, announced, all faults N=" + strconv.Itoa(n) + " " + fo.String()
	// Assumed's TTL for fo: sequential over more than three nodes, a
	// 200 ms lease would never extend (core.NewSpec refuses it).
	c.FanOut, c.TTL, c.Length = fo, a.TTL, a.Length
	c.Work = [2]time.Duration{0, c.TTL} // some extend
	c.Faults = a.Faults
	c.Announce = announceFaults(c.TTL)
	return c
}

// WaitersPersistent is WaitersFaulty with nodes that keep their data and
// restart at once, two crashes per schedule.
func WaitersPersistent(n int) Config {
	c := WaitersFaulty(n, core.Multiplexed)
	p := AssumedPersistent(n, core.Multiplexed)
	c.Name = "waiters, announced, all faults, persistent N=" + strconv.Itoa(n)
	c.Faults.NodeCrashes, c.Faults.Persistent, c.Faults.RestartDelay = p.Faults.NodeCrashes, true, p.Faults.RestartDelay
	return c
}

// WaitersWorstClocks is WaitersFaulty with clocks 1% apart (clients 0.5%
// slow, nodes 0.5% fast) and locks used to the end of their validity:
// holders' TTLs read on fast node clocks and waited out on slow client
// clocks.
func WaitersWorstClocks(n int) Config {
	c := scaled(WaitersFaulty(n, core.Multiplexed), 15, waitersTries) // see AssumedWorstClocks
	c.Name = "waiters, announced, all faults, clocks 1% apart N=" + strconv.Itoa(n)
	c.Work = [2]time.Duration{c.TTL, 2 * c.TTL}
	c.Faults.WorstClocks = true
	return c
}

// WaitersFenced is WaitersFaulty with Fencing and two node crashes.
func WaitersFenced(n int) Config {
	c := WaitersFaulty(n, core.Multiplexed)
	c.Name = "waiters, announced, all faults, fenced N=" + strconv.Itoa(n)
	c.Fencing = true
	c.Faults.NodeCrashes = 2
	return c
}

// WaitersForged is WaitersAnnounced with only forged announcements, 200
// per schedule, and nothing else wrong with announcements.
func WaitersForged(n int) Config {
	c := WaitersAnnounced(n)
	c.Name = "waiters, forged announcements only N=" + strconv.Itoa(n)
	c.Announce.Forged = 200
	return c
}

// WaitersLiveness is Liveness with listening waiters and dropping
// subscriptions: after the holder crashes nobody releases, and a waiter
// that listens waits for the holder's keys to expire, which it learnt
// from their TTLs, rather than for its retry delay.
func WaitersLiveness(n int, fo core.FanOut) Config {
	c := Liveness(n, fo)
	c.Name = "waiters, holder crash, liveness N=" + strconv.Itoa(n) + " " + fo.String()
	c.Announce = Announcements{Listen: 2. / 3, SubDrops: 3, UnknownTTL: 0.1}
	return c
}

// WaitersStale is WaitersAnnounced with stale keys: at random times a
// minority of the nodes gets the key with a token no client holds, for
// 1-2 s (five to ten TTLs), as a crashed client or a release that failed
// there leaves it. A waiter's failed attempt may then learn of the stale
// node and miss the holder's other nodes, whose replies came after the
// round was decided; once the holder releases, the announced nodes make
// a quorum and the waiter must wake then, not when the stale key expires.
func WaitersStale(n int) Config {
	c := WaitersAnnounced(n)
	c.Name = "waiters, stale keys on a minority N=" + strconv.Itoa(n)
	c.Latency = [2]time.Duration{50 * us, 3 * ms} // replies straggle behind the decision
	c.Faults.StaleKeys = 12
	c.Faults.StaleTTL = [2]time.Duration{time.Second, 2 * time.Second}
	return c
}

// WaitersStaleFaulty is WaitersStale with announcements lost, late,
// duplicated and forged, and subscriptions that drop.
func WaitersStaleFaulty(n int) Config {
	c := WaitersStale(n)
	c.Name = "waiters, stale keys, announcement faults N=" + strconv.Itoa(n)
	c.Announce = announceFaults(c.TTL)
	return c
}

// LeaseOutage has every holder lease its lock (LeaseFraction 1/3) for
// work of one to three TTLs while a majority of the nodes crashes
// together, twice a schedule, for one to two TTLs: the extensions time
// out, and each lease must declare its lock lost strictly before the end
// of its validity, with no extension round still in flight then. Message
// loss and clock-rate errors (±0.5%) are on.
func LeaseOutage(n int, fo core.FanOut) Config {
	c := Assumed(n, fo)
	c.Name = "lease, majority outage N=" + strconv.Itoa(n) + " " + fo.String()
	c.Work = [2]time.Duration{c.TTL, 3 * c.TTL}
	c.Lease = LeaseConfig{MaxExtensions: 100}
	c.Faults = Faults{Loss: 0.02, ClientPPM: 5000, NodePPM: 5000, Extend: 1, Outages: 2,
		OutageFor: [2]time.Duration{c.TTL, 2 * c.TTL}, RestartDelay: [2]time.Duration{c.TTL * 11 / 10, 2 * c.TTL}}
	return c
}

// LeaseHung is LeaseOutage with nodes that do not crash but straggle: a
// quarter of the messages are late by up to a TTL, so extensions time out
// while their commands still reach the nodes after the loss is declared.
func LeaseHung(n int) Config {
	c := LeaseOutage(n, core.Multiplexed)
	c.Name = "lease, late majority N=" + strconv.Itoa(n)
	c.Faults.Outages = 0
	c.Faults.Late, c.Faults.LateBy = 0.25, c.TTL
	return c
}

// LeaseMaxHold has leases bounded by MaxHold (two TTLs) for work of up to
// four TTLs, with every fault of Assumed: a lease declares its lock lost
// at MaxHold, and a later holder may take it then.
func LeaseMaxHold(n int) Config {
	c := Assumed(n, core.Multiplexed)
	c.Name = "lease, MaxHold N=" + strconv.Itoa(n)
	c.Work = [2]time.Duration{c.TTL, 4 * c.TTL}
	c.Lease = LeaseConfig{MaxHold: 2 * c.TTL}
	c.Faults.Extend, c.Faults.ExtendTTL = 1, 0
	return c
}

// LeaseUnlockRace ends the holders' work while their extensions are in
// flight: leases extend early (LeaseFraction 1/10) on a slow network
// (trips up to 8 ms against a 10 ms node timeout), and work ends at a
// random time, so that many unlocks abandon an extension round whose
// commands still reach the nodes, before or after the release.
func LeaseUnlockRace(n int) Config {
	c := Assumed(n, core.Multiplexed)
	c.Name = "lease, unlock racing an extension N=" + strconv.Itoa(n)
	c.Latency = [2]time.Duration{ms, 8 * ms}
	c.Work = [2]time.Duration{0, c.TTL}
	c.Lease = LeaseConfig{Fraction: 0.1, MaxExtensions: 100}
	c.Faults.Extend, c.Faults.ExtendTTL = 1, 0
	return c
}

// Queue is WaitersAnnounced with Config.Fair: the nodes queue the
// waiters and hand each release to the first (fair.go). Every client
// listens, as a Fair Client must.
func Queue(n int) Config {
	c := WaitersAnnounced(n)
	c.Name = "queue, fair N=" + strconv.Itoa(n)
	c.Fair = true
	return c
}

// QueueFaulty is WaitersFaulty with Config.Fair, every client listening,
// and the queue's own faults: entries lost on a node (QueueLoss) and
// tickets moved by up to 50 ms (QueueSkew), so that nodes disagree on
// the order.
func QueueFaulty(n int, fo core.FanOut) Config {
	c := queueFaults(WaitersFaulty(n, fo))
	c.Name = "queue, all faults N=" + strconv.Itoa(n) + " " + fo.String()
	return c
}

// queueFaults is c with Config.Fair, every client listening, and the
// queue's own faults (QueueFaulty's).
func queueFaults(c Config) Config {
	c.Fair = true
	c.Announce.Listen = 1
	c.Faults.QueueLoss, c.Faults.QueueSkew, c.Faults.SkewBy = 0.05, 0.2, 50*ms
	c.MaxOvertaken = 24
	return c
}

// QueueFewTries is Queue with acquisitions of three tries, the first
// attempt's and two retries, as Assumed's: many run out of tries while
// others hold the key, so that a last attempt, which will not wait,
// must neither queue its waiter nor end without its cleanup
// (Violations.Stayed).
func QueueFewTries(n int) Config {
	c := Queue(n)
	c.Name = "queue, fair, few tries N=" + strconv.Itoa(n)
	c.Retry = core.RandomDelay(assumedTries, 2*ms, 20*ms)
	return c
}

// QueuePersistent is QueueFaulty with nodes that keep their data, queues
// included, across crashes and stale keys on a minority.
func QueuePersistent(n int) Config {
	c := QueueFaulty(n, core.Multiplexed)
	c.Name = "queue, persistent, stale keys N=" + strconv.Itoa(n)
	c.Faults.Persistent = true
	c.Faults.StaleKeys, c.Faults.StaleTTL = 3, [2]time.Duration{10 * ms, c.TTL}
	return c
}

// QueueSkipsHead is Queue with nodes whose release hands the key to the
// second waiter whenever two or more wait: the skipped-waiter checker
// must see it.
func QueueSkipsHead(n int) Config {
	c := Queue(n)
	c.Name = "broken: queue skips its head N=" + strconv.Itoa(n)
	c.Faults.SkipHead = true
	return c
}

// Failover is Assumed with every node a quorum member of a master and two
// replicas (failover.go), the drivers WAITing for both after every
// acquisition, extension and fence raise, 4 ms at most: writes reach a
// replica in 50 µs-1 ms, one in twenty up to 20 ms later (WAIT then falls
// short: no vote). Four failovers a schedule each promote a replica at
// random, 0-5 ms after the master fails, whether it is in sync, behind or
// disconnected: three link drops a schedule keep replicas away for up to
// half a TTL. Failed masters rejoin as replicas after Assumed's restart
// delay, past the TTL, empty. Every server's clock is offset by up to
// 1 ms either way: two servers' clocks are at most 2 ms apart, within the
// drift allowance's fixed 2 ms.
func Failover(n int, fo core.FanOut) Config {
	c := Assumed(n, fo)
	c.Name = "failover, WAIT N=" + strconv.Itoa(n) + " " + fo.String()
	c.Replication = Replication{
		Replicas: 2,
		Delay:    [2]time.Duration{50 * us, ms},
		Lag:      0.05, LagBy: 20 * ms,
		Wait: true, WaitTimeout: 4 * ms,
		Failovers: 4, FailoverDelay: [2]time.Duration{0, 5 * ms}, Rejoin: c.Faults.RestartDelay,
		Drops: 3, DropFor: [2]time.Duration{10 * ms, c.TTL / 2},
		Skew: ms,
	}
	return c
}

// FailoverFenced is Failover with Fencing: the fence counters replicate
// with the keys, and WAIT keeps them from going back in a failover.
func FailoverFenced(n int, fo core.FanOut) Config {
	c := Failover(n, fo)
	c.Name = "failover, WAIT, fenced N=" + strconv.Itoa(n) + " " + fo.String()
	c.Fencing = true
	return c
}

// FailoverPersistent is Failover with servers that keep their data: a
// failed master rejoins at once, with the data it had, and is promoted
// again, before it resyncs, as often as the other replicas; the nodes'
// crashes restart them at once too (AssumedPersistent).
func FailoverPersistent(n int, fo core.FanOut) Config {
	c := Failover(n, fo)
	c.Name = "failover, WAIT, persistent N=" + strconv.Itoa(n) + " " + fo.String()
	p := AssumedPersistent(n, fo).Faults
	c.Faults.NodeCrashes, c.Faults.Persistent, c.Faults.RestartDelay = p.NodeCrashes, true, p.RestartDelay
	c.Replication.Rejoin = [2]time.Duration{0, ms}
	return c
}

// FailoverPersistentFenced is FailoverPersistent with Fencing.
func FailoverPersistentFenced(n int, fo core.FanOut) Config {
	c := FailoverPersistent(n, fo)
	c.Name = "failover, WAIT, fenced, persistent N=" + strconv.Itoa(n) + " " + fo.String()
	c.Fencing = true
	return c
}

// FailoverNoWait is Failover without WAIT, a master's reply counting as
// soon as it applied the command, and harder: six clients, eight
// failovers a schedule and three writes in ten up to 30 ms late. A
// failover may then promote a replica the key never reached, as an
// instant restart without data does: the mutual-exclusion checker must
// see the double grants. The same configuration without failovers shows
// none (TestFailoverWithoutWaitBreaksExclusion). With WAIT its lagging
// replicas refuse nearly every vote (a few acquisitions in a hundred
// schedules), so Failover, with less lag, is its WAIT counterpart.
func FailoverNoWait(n int) Config {
	c := Failover(n, core.Multiplexed)
	c.Name = "broken: failover without WAIT N=" + strconv.Itoa(n)
	c.Clients = 6
	r := &c.Replication
	r.Wait = false
	r.Failovers, r.Lag, r.LagBy = 8, 0.3, 30*ms
	return c
}

// FailoverNoWaitFenced is FailoverNoWait with Fencing: a promoted replica
// that missed increments (or the raise) hands out fences that go back.
func FailoverNoWaitFenced(n int) Config {
	c := FailoverNoWait(n)
	c.Name = "broken: failover without WAIT, fenced N=" + strconv.Itoa(n)
	c.Fencing = true
	return c
}

// Processes is WaitersAnnounced with the clients in processes
// (Config.Waiters, proc.go): three processes of four waiters each, as
// three redlock.Clients whose goroutines lock the key again and again,
// with short work (0-5 ms) and thinking (0-2 ms), so that a process
// nearly always has a waiter and hands the key on within itself, every
// MaxChain+1st release open to the others.
func Processes(n int) Config {
	c := inProcesses(WaitersAnnounced(n), 5*ms)
	c.Name = "processes, announced N=" + strconv.Itoa(n)
	return c
}

// inProcesses is c with its clients in three processes of four waiters
// (Config.Waiters), each working up to work and thinking up to 2 ms.
func inProcesses(c Config, work time.Duration) Config {
	c.Clients, c.Waiters = 12, 4
	c.Work = [2]time.Duration{0, work}
	c.Think = [2]time.Duration{0, 2 * ms}
	return c
}

// ProcessesFair is Processes with Config.Fair: the open release of a
// chain serves the nodes' queue, so that a process's head is overtaken
// at most a chain per other process (maxOvertaken).
func ProcessesFair(n int) Config {
	c := Processes(n)
	c.Name = "processes, fair N=" + strconv.Itoa(n)
	c.Fair = true
	return c
}

// ProcessesFaulty is Processes with every fault of WaitersFaulty: loss,
// late and reordered commands (an attempt may then overtake the release
// it follows), a node crash, clock-rate errors, pauses and crashes of
// whole processes, leases, and every announcement fault; fan-out fo.
func ProcessesFaulty(n int, fo core.FanOut) Config {
	c := WaitersFaulty(n, fo)
	c = inProcesses(c, c.TTL/4)
	c.Name = "processes, all faults N=" + strconv.Itoa(n) + " " + fo.String()
	return c
}

// ProcessesFairFaulty is QueueFaulty's faults (every fault, every
// client listening, queue entries lost and reordered) over processes.
func ProcessesFairFaulty(n int, fo core.FanOut) Config {
	c := queueFaults(ProcessesFaulty(n, fo))
	c.Name = "processes, fair, all faults N=" + strconv.Itoa(n) + " " + fo.String()
	return c
}

// ProcessesForgetSuccessor is Processes whose heads poke no successor as
// they leave: the stuck-process checker must see it.
func ProcessesForgetSuccessor(n int) Config {
	c := Processes(n)
	c.Name = "broken: processes forget the successor N=" + strconv.Itoa(n)
	c.Faults.ForgetSuccessor = true
	return c
}

// PairsGivingUp is Processes (ProcessesFair with fair) in three
// processes of two waiters, whose callers give up a third of their
// acquisitions within 10 ms (WithCancels): a waiter a release is handed
// to often gives up while the release runs, with nobody of its process
// left to take the key, which the release then makes heard
// (core.Room.Released; Violations.Unheard).
func PairsGivingUp(n int, fair bool) Config {
	c := Processes(n)
	if fair {
		c = ProcessesFair(n)
	}
	c.Clients, c.Waiters = 6, 2
	c = WithCancels(c, 10*ms)
	c.Name = strings.Replace(c.Name, "processes", "processes of two", 1)
	return c
}

// WithCancels is c with a third of its acquisitions given up by their
// callers at a time drawn in [0, within] after they start
// (Faults.Cancels): in a wait, in an attempt, before an attempt is sent,
// in a cleanup. Its name is c's after "cancels, ".
func WithCancels(c Config, within time.Duration) Config {
	c.Name = "cancels, " + c.Name
	c.Faults.Cancels, c.Faults.CancelWithin = 1.0/3, within
	return c
}
