// Command redlock-sim runs a campaign of the deterministic Redlock
// simulation (internal/sim) and prints, per configuration, the schedules
// run, the faults injected and the violations each checker found; then,
// for the configurations of release announcements ("waiters"), the
// handoff times (release to next acquisition) and the acquisitions an
// announcement woke, and each announced configuration's mean handoff
// against its polling twin's; and, for the configurations of members
// with replicas ("failover"), the failovers, the promotions of replicas
// that lagged or were disconnected, and the WAITs that fell short.
//
//	go run ./cmd/redlock-sim                      # 1,000 schedules per configuration
//	go run ./cmd/redlock-sim -schedules 10000     # the committed campaign (results/simulation)
//	go run ./cmd/redlock-sim -match '^rw: failover, WAIT N=3 '   # one configuration, by a regular expression
//
// Configurations within the algorithm's assumptions must show no
// violation; each "broken:" or "bug:" configuration breaks one assumption,
// or re-introduces a fixed bug, and must show violations. It exits 1 when
// either fails.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/internal/sim"
)

func main() {
	schedules := flag.Int("schedules", 1000, "schedules per configuration")
	seed := flag.Uint64("seed", 1, "seed of each configuration's first schedule; the others follow it")
	only := flag.String("only", "", "run only the configurations whose name starts with one of these comma-separated prefixes")
	match := flag.String("match", "", "run only the configurations whose name matches this regular expression (names hold commas, which -only splits at)")
	flag.Parse()
	if *schedules < 1 {
		fmt.Fprintln(os.Stderr, "redlock-sim: -schedules must be at least 1")
		os.Exit(2)
	}
	re, err := regexp.Compile(*match)
	if err != nil {
		fmt.Fprintln(os.Stderr, "redlock-sim: -match:", err)
		os.Exit(2)
	}
	cfgs := matching(selected(configs(), *only), re)
	if len(cfgs) == 0 {
		fmt.Fprintf(os.Stderr, "redlock-sim: no configuration starts with %q and matches %q\n", *only, *match)
		os.Exit(2)
	}
	ok, err := campaign(os.Stdout, cfgs, *seed, *schedules)
	if err != nil {
		fmt.Fprintln(os.Stderr, "redlock-sim: writing the report:", err)
		os.Exit(1)
	}
	if !ok {
		os.Exit(1)
	}
}

// selected returns the configurations whose name starts with one of the
// comma-separated prefixes of only, or all of them if only is empty.
func selected(cfgs []sim.Config, only string) []sim.Config {
	if only == "" {
		return cfgs
	}
	var out []sim.Config
	for _, c := range cfgs {
		for _, p := range strings.Split(only, ",") {
			if p != "" && strings.HasPrefix(c.Name, p) {
				out = append(out, c)
				break
			}
		}
	}
	return out
}

// matching returns the configurations whose name re matches.
func matching(cfgs []sim.Config, re *regexp.Regexp) []sim.Config {
	var out []sim.Config
	for _, c := range cfgs {
		if re.MatchString(c.Name) {
			out = append(out, c)
		}
	}
	return out
}

// configs returns every configuration of the campaign: those within the
// assumptions first, then the broken ones.
func configs() []sim.Config {
	var out []sim.Config
	for _, n := range []int{3, 5, 7} {
		for _, fo := range []core.FanOut{core.Multiplexed, core.Sequential} {
			out = append(out, sim.Assumed(n, fo), sim.AssumedPersistent(n, fo), sim.AssumedWorstClocks(n, fo), sim.Liveness(n, fo))
		}
	}
	out = append(out, sim.ShortExtendLocker(5))
	for _, n := range []int{3, 5, 7} {
		for _, fo := range []core.FanOut{core.Multiplexed, core.Sequential} {
			out = append(out, sim.AssumedFenced(n, fo), sim.AssumedPersistentFenced(n, fo), sim.AssumedWorstClocksFenced(n, fo))
		}
		out = append(out, sim.FenceContended(n))
	}
	out = append(out, waiterConfigs()...)
	out = append(out, leaseConfigs()...)
	out = append(out, queueConfigs()...)
	out = append(out, processConfigs()...)
	out = append(out, failoverConfigs()...)
	out = append(out, cancelConfigs()...)
	out = append(out, sim.RWConfigs()...)
	out = append(out, sim.AllConfigs()...)
	out = append(out, sim.PermitConfigs()...)
	out = append(out, sim.BrokenKinds()...)
	for _, n := range []int{3, 5} {
		out = append(out, sim.InstantRestart(n), sim.FastNodeClocks(n), sim.PastValidity(n), sim.SharedToken(n),
			sim.FenceCountersLost(n), sim.FenceRaiseSkipped(n), sim.QueueSkipsHead(n), sim.ProcessesForgetSuccessor(n),
			sim.FailoverNoWait(n), sim.FailoverNoWaitFenced(n))
	}
	return out
}

// failoverConfigs returns the configurations of members with replicas
// that fail over, the drivers WAITing for every replica, within the
// assumptions: N=3 and 5, both fan-outs, with and without Fencing, and
// with failed masters that rejoin at once with their data.
func failoverConfigs() []sim.Config {
	var out []sim.Config
	for _, n := range []int{3, 5} {
		for _, fo := range []core.FanOut{core.Multiplexed, core.Sequential} {
			out = append(out, sim.Failover(n, fo), sim.FailoverFenced(n, fo))
		}
	}
	return append(out, sim.FailoverPersistent(3, core.Multiplexed), sim.FailoverPersistent(5, core.Multiplexed),
		sim.FailoverPersistentFenced(3, core.Multiplexed), sim.FailoverPersistentFenced(5, core.Multiplexed))
}

// cancelConfigs returns configurations within the assumptions whose
// callers give a third of their acquisitions up (sim.WithCancels): the
// plain ones within half a TTL of the start, where attempts, cleanups and
// short waits are; the waiters', the Fair queue's and the processes'
// within 100 ms, where waits are long.
func cancelConfigs() []sim.Config {
	var out []sim.Config
	for _, n := range []int{3, 5} {
		for _, fo := range []core.FanOut{core.Multiplexed, core.Sequential} {
			a := sim.Assumed(n, fo)
			out = append(out, sim.WithCancels(a, a.TTL/2))
		}
	}
	const within = 100 * time.Millisecond
	for _, c := range []sim.Config{sim.WaitersFaulty(3, core.Multiplexed), sim.WaitersFaulty(5, core.Sequential),
		sim.Queue(3), sim.Queue(5), sim.QueueFaulty(3, core.Multiplexed), sim.QueueFaulty(5, core.Multiplexed),
		sim.QueueFaulty(5, core.Sequential), sim.QueuePersistent(5),
		sim.Processes(5), sim.ProcessesFair(3), sim.ProcessesFair(5),
		sim.ProcessesFairFaulty(5, core.Multiplexed), sim.ProcessesFairFaulty(3, core.Sequential)} {
		out = append(out, sim.WithCancels(c, within))
	}
	return append(out, sim.PairsGivingUp(3, false), sim.PairsGivingUp(5, false), sim.PairsGivingUp(3, true), sim.PairsGivingUp(5, true))
}

// failover reports whether cfg has members with replicas.
func failover(cfg sim.Config) bool { return cfg.Replication.Replicas > 0 }

// waiterConfigs returns the configurations of release announcements,
// within the assumptions: each polling one and its announced twin, then
// the ones with every announcement fault, forged announcements alone, and
// liveness after a holder crash with listening waiters.
func waiterConfigs() []sim.Config {
	var out []sim.Config
	for _, n := range []int{3, 5} {
		out = append(out, sim.Waiters(n), sim.WaitersAnnounced(n))
	}
	for _, n := range []int{3, 5, 7} {
		out = append(out, sim.WaitersFaulty(n, core.Multiplexed))
	}
	out = append(out, sim.WaitersFaulty(3, core.Sequential), sim.WaitersFaulty(5, core.Sequential),
		sim.WaitersPersistent(5), sim.WaitersWorstClocks(5), sim.WaitersFenced(3), sim.WaitersFenced(5),
		sim.WaitersForged(3), sim.WaitersForged(5),
		sim.WaitersLiveness(3, core.Multiplexed), sim.WaitersLiveness(5, core.Sequential),
		sim.WaitersStale(3), sim.WaitersStale(5), sim.WaitersStaleFaulty(5))
	return out
}

// leaseConfigs returns the configurations of leases (core.Lease) within
// the assumptions: majority outages and straggling majorities while
// locks are leased, MaxHold, and unlocks racing extensions.
func leaseConfigs() []sim.Config {
	var out []sim.Config
	for _, n := range []int{3, 5} {
		out = append(out, sim.LeaseOutage(n, core.Multiplexed), sim.LeaseOutage(n, core.Sequential),
			sim.LeaseHung(n), sim.LeaseMaxHold(n), sim.LeaseUnlockRace(n))
	}
	return out
}

// queueConfigs returns the configurations of the Fair waiter queue
// within the assumptions: fault-free, with every fault and the queue's
// own (entries lost, nodes ordering differently), and with persistent
// nodes and stale keys; and with few tries, where last attempts abound.
func queueConfigs() []sim.Config {
	var out []sim.Config
	for _, n := range []int{3, 5} {
		out = append(out, sim.Queue(n), sim.QueueFaulty(n, core.Multiplexed), sim.QueueFewTries(n))
	}
	return append(out, sim.QueueFaulty(5, core.Sequential), sim.QueuePersistent(5))
}

// processConfigs returns the configurations of processes of several
// waiters (Config.Waiters), which hand the key on within themselves,
// within the assumptions: announced and Fair, fault-free and with every
// fault, both fan-outs.
func processConfigs() []sim.Config {
	var out []sim.Config
	for _, n := range []int{3, 5} {
		out = append(out, sim.Processes(n), sim.ProcessesFair(n))
	}
	for _, n := range []int{3, 5} {
		for _, fo := range []core.FanOut{core.Multiplexed, core.Sequential} {
			out = append(out, sim.ProcessesFaulty(n, fo), sim.ProcessesFairFaulty(n, fo))
		}
	}
	return out
}

// waiters reports whether cfg is one of waiterConfigs or queueConfigs,
// with or without callers that give up.
func waiters(cfg sim.Config) bool {
	name := strings.TrimPrefix(cfg.Name, "cancels, ")
	return strings.HasPrefix(name, "waiters") || strings.HasPrefix(name, "queue") || cfg.Waiters > 1
}

// broken reports whether cfg breaks an assumption on purpose.
func broken(cfg sim.Config) bool {
	return strings.HasPrefix(cfg.Name, "broken:") || strings.HasPrefix(cfg.Name, "bug:")
}

// printer prints to w and keeps the first write error, so that a report
// printed line by line is checked once, at its end.
type printer struct {
	w   io.Writer
	err error
}

func (p *printer) printf(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}

func (p *printer) println(args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintln(p.w, args...)
	}
}

// campaign runs and prints every configuration and reports whether each
// came out as it must, and the first error writing to w.
func campaign(w io.Writer, cfgs []sim.Config, seed uint64, schedules int) (bool, error) {
	out := &printer{w: w}
	start := time.Now()
	out.printf("redlock-sim: %d schedules per configuration, seeds %d..%d, %d CPUs, %s\n\n",
		schedules, seed, seed+uint64(schedules)-1, runtime.GOMAXPROCS(0), revision()) //nolint:gosec // G115: main checks schedules >= 1
	out.printf("%-58s %9s %8s %7s %8s %8s | %8s %7s %6s %6s %6s %6s %6s %6s %6s %6s %6s %6s | %5s %5s %5s %5s %5s %5s %5s %5s %5s %5s %5s %5s %5s\n",
		"configuration", "schedules", "acquired", "extends", "fenced", "raises",
		"lost", "late", "ncrash", "empty", "clost", "pause", "ccrash", "outage", "stale", "ulrace", "lloss", "cancel",
		"excl", "live", "hyg", "lostv", "fence", "lateL", "longW", "skip", "stuck", "gath", "stay", "jump", "unhrd")
	ok := true
	var total sim.Result
	var within, withinCfgs int
	var firsts []string
	var waited, failed, gaveUp, kinds []result
	for _, cfg := range cfgs {
		r := sim.Campaign(cfg, seed, schedules)
		if waiters(cfg) {
			waited = append(waited, result{cfg, r})
		}
		if failover(cfg) {
			failed = append(failed, result{cfg, r})
		}
		if cfg.Faults.Cancels > 0 {
			gaveUp = append(gaveUp, result{cfg, r})
		}
		if cfg.Primitive != sim.PrimMutex {
			kinds = append(kinds, result{cfg, r})
		}
		total.Schedules += r.Schedules
		if !broken(cfg) {
			within += r.Schedules
			withinCfgs++
		}
		f, v := r.Faults, r.Violations
		verdict := ""
		switch {
		case broken(cfg) && v.Total() == 0:
			verdict, ok = "  MISSED: no violation found", false
		case !broken(cfg) && v.Total() != 0:
			verdict, ok = "  VIOLATED", false
		}
		out.printf("%-58s %9d %8d %7d %8d %8d | %8d %7d %6d %6d %6d %6d %6d %6d %6d %6d %6d %6d | %5d %5d %5d %5d %5d %5d %5d %5d %5d %5d %5d %5d %5d%s\n",
			cfg.Name, r.Schedules, r.Acquisitions, r.Extensions, r.Fenced, r.Raises,
			f.Lost, f.Late, f.NodeCrashes, f.EmptyRestarts, f.CountersLost, f.ClientPauses, f.ClientCrashes,
			f.Outages, f.StaleKeys, f.UnlockRaces, f.LeaseLosses, f.Cancels,
			v.Exclusion, v.Liveness, v.Hygiene, v.LostValid, v.Fence, v.LateLoss, v.LongWait, v.Skipped, v.Stuck, v.Gathered, v.Stayed, v.Jumped, v.Unheard, verdict)
		if r.First != "" {
			firsts = append(firsts, cfg.Name+": "+r.First)
		}
	}
	if len(waited) > 0 {
		announcements(out, waited)
	}
	if len(failed) > 0 {
		failovers(out, failed)
	}
	if len(gaveUp) > 0 {
		cancels(out, gaveUp)
	}
	if len(kinds) > 0 {
		primitives(out, kinds)
	}
	out.printf("\n%d schedules in %v; %d of them in the %d configurations within the assumptions.\n",
		total.Schedules, time.Since(start).Round(time.Second), within, withinCfgs)
	out.println(`Columns: acquisitions, extensions, acquisitions that returned a fence
(Fencing) and fence raise rounds run; faults injected (messages lost,
commands applied late, node crashes, restarts without data, fence counters
lost in a crash, client pauses, client crashes, majority outages, stale
keys set on a minority, unlocks that abandoned an extension in flight,
locks a lease declared lost, acquisitions their callers gave up) and
violations found (mutual exclusion,
liveness after a holder crash, release hygiene, a lease going on after a
round proved the lock lost, a fence not above that of every acquisition
completed before it, a loss declared at or after the end of validity, a
waiter whose quorum was announced free waiting past its retry delay, a
Fair waiter overtaken more than Config.MaxOvertaken times in one wait, a
process whose head waited with nothing to wake it, replies held back
that would have ended their round, a Fair acquisition that ended
without the lock still queued on a node that answered its last round, a
process queued again under a ticket older than its return to the
queue, a quiet release left to nobody of its process and followed by no
attempt while another process waited).`)
	if len(firsts) > 0 {
		out.println("\nFirst violation per configuration:")
		for _, s := range firsts {
			out.println("  " + s)
		}
	}
	return ok, out.err
}

// revision returns the commit the binary was built from, with "+dirty"
// for uncommitted changes, as the go command stamps it.
func revision() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "commit unknown"
	}
	var rev, dirty string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if rev == "" {
		return "commit unknown"
	}
	return "commit " + rev + dirty
}

type result struct {
	cfg sim.Config
	r   sim.Result
}

// announcements prints what release announcements did in the waiter
// configurations, and each announced configuration's mean handoff against
// its polling twin's.
func announcements(out *printer, rs []result) {
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	out.printf("\nRelease announcements and handoffs:\n%-58s %8s %8s %7s | %8s %8s | %7s %5s %8s %8s | %8s %8s %7s | %6s %6s %6s %6s %6s %6s\n",
		"configuration", "acquired", "attempts", "per acq", "handoffs", "mean ms",
		"woken", "%", "woken ms", "other ms",
		"publish", "fed", "missed", "drop", "late", "dup", "forged", "subdrp", "nottl")
	mean := map[string]time.Duration{}
	for _, x := range rs {
		r, h, a := x.r, x.r.Handoff, x.r.Announce
		mean[x.cfg.Name] = h.Mean()
		per, pct := 0.0, 0.0
		if r.Acquisitions > 0 {
			per = float64(r.Attempts) / float64(r.Acquisitions)
			pct = 100 * float64(a.Won) / float64(r.Acquisitions)
		}
		out.printf("%-58s %8d %8d %7.2f | %8d %8.2f | %7d %5.1f %8.2f %8.2f | %8d %8d %7d | %6d %6d %6d %6d %6d %6d\n",
			x.cfg.Name, r.Acquisitions, r.Attempts, per, h.N, ms(h.Mean()),
			a.Won, pct, ms(h.MeanAnnounced()), ms(h.MeanOther()),
			a.Published, a.Fed, a.Missed, a.Dropped, a.Late, a.Duplicated, a.Forged, a.SubDrops, a.UnknownTTL)
	}
	queues(out, rs)
	out.println(`Columns: acquisitions and attempts (rounds that tried to set the key);
handoffs (releases while another client waited, each until the next
acquisition) and their mean real time; acquisitions won by an attempt an
announcement woke, their share, and the mean handoff they and the others
ended; announcements published by nodes, fed to acquisitions (forged and
duplicates included) and "maybe missed" ones (subscriptions that started,
dropped or came back); faults injected (announcements dropped, late,
duplicated, forged; subscriptions dropped; held replies without a TTL).`)
	for _, x := range rs {
		if !strings.HasPrefix(x.cfg.Name, "waiters, announced N=") {
			continue
		}
		polled, ok := mean[strings.Replace(x.cfg.Name, "announced", "polling", 1)]
		if a := mean[x.cfg.Name]; ok && a > 0 {
			out.printf("Handoff with announcements %.2f ms, polling %.2f ms: %.1fx shorter (%s).\n",
				ms(a), ms(polled), float64(polled)/float64(a), strings.TrimPrefix(x.cfg.Name, "waiters, announced "))
		}
	}
}

// queues prints what the Fair queues did in the queue configurations.
func queues(out *printer, rs []result) {
	out.printf("\nFair queues:\n%-58s %8s %9s %8s %8s %8s %8s %8s\n",
		"configuration", "acquired", "handoffs", "lost", "skewed", "overtake", "max", "byattmpt")
	for _, x := range rs {
		if !x.cfg.Fair {
			continue
		}
		q := x.r.Queue
		out.printf("%-58s %8d %9d %8d %8d %8d %8d %8d\n", x.cfg.Name, x.r.Acquisitions, q.Handoffs, q.Lost, q.Skewed, q.Overtakes, q.MaxOvertaken, q.QueuedByAttempt)
	}
	out.println(`Columns: acquisitions; keys handed to a waiter; queue entries lost and
tickets moved (QueueLoss, QueueSkew); acquisitions won while a waiter with
an earlier ticket waited (once per such waiter), and the most times one
waiter was overtaken in one wait; failed attempts that queued their
waiter on every node in their own round, with no cleanup round.`)
	out.printf("\nProcesses of several waiters:\n%-58s %8s %8s %8s %8s %8s\n",
		"configuration", "acquired", "chained", "opened", "retold", "max")
	for _, x := range rs {
		if x.cfg.Waiters <= 1 {
			continue
		}
		q := x.r.Queue
		out.printf("%-58s %8d %8d %8d %8d %8d\n", x.cfg.Name, x.r.Acquisitions, q.Chained, q.Opened, q.Retold, q.MaxOvertaken)
	}
	out.println(`Columns: acquisitions; releases handed on within a process (quiet), and
those its waiters followed that were open to every process; early tells
of a handed-on release told again once it was done; with Fair, the most
times one process's head was overtaken in one wait (bound: Config's plus
MaxChain+1 per other process).`)
}

// failovers prints what the failovers did in the configurations of
// members with replicas.
func failovers(out *printer, rs []result) {
	out.printf("\nFailovers:\n%-58s %8s %8s %9s %7s %7s %8s %9s\n",
		"configuration", "acquired", "fenced", "failover", "behind", "dropped", "linkdrop", "waitshort")
	for _, x := range rs {
		r, f := x.r, x.r.Faults
		out.printf("%-58s %8d %8d %9d %7d %7d %8d %9d\n", x.cfg.Name, r.Acquisitions, r.Fenced,
			f.Failovers, f.Behind, f.Dropped, f.ReplicaDrops, f.WaitsShort)
	}
	out.println(`Columns: acquisitions, and those that returned a fence; failovers, and
among them promotions of a replica that lacked writes its master had
applied and of a replica whose link had dropped; replica links dropped;
WAITs that fell short (each a vote the driver refused).`)
}

// cancels prints where the acquisitions their callers gave up were then,
// in the configurations with sim.WithCancels.
func cancels(out *printer, rs []result) {
	out.printf("\nAcquisitions given up:\n%-58s %8s %8s | %7s %7s %7s %7s %7s | %7s %7s %7s\n",
		"configuration", "acquired", "given up", "wait", "giveup", "unsent", "attempt", "cleanup", "queued", "reann", "freed")
	for _, x := range rs {
		r, c := x.r, x.r.Faults.Cancelled
		out.printf("%-58s %8d %8d | %7d %7d %7d %7d %7d | %7d %7d %7d\n", x.cfg.Name, r.Acquisitions, r.Faults.Cancels,
			c.Wait, c.GiveUp, c.Unsent, c.Attempt, c.Cleanup, c.Queued, r.Queue.Reannounced, r.Queue.Freed)
	}
	out.println(`Columns: acquisitions; acquisitions their callers gave up, by where
each was then: in a wait (Cancel), in a wait at a deadline (GiveUp),
woken for an attempt not yet sent, in an attempt or fence raise, in a
cleanup or leave round; with Fair, those given up while queued on the
nodes (their own ticket, or their process's as its head); quiet releases
whose waiters left without the key, made heard (Room.Released once
done, Room.Leave as the last waiter leaves): a TryLock, or with Fair a
Spec.HandOn round; with Fair, the times Room.Ended woke the head: a lock
of the process that attempted at once ended without the key, having
taken it or freed it on some node, and the head was woken (or the next
to come told).`)
}

// primitives prints what the reader/writer lock, the multi-key lock and
// the semaphore did, and what their own checkers found.
func primitives(out *printer, rs []result) {
	ms := func(ns int64) float64 { return float64(ns) / float64(time.Millisecond) }
	out.printf("\nReader/writer, multi-key and semaphore locks:\n%-58s %8s %8s %8s %8s | %8s %8s | %8s %9s %9s %9s | %6s %6s %6s %6s\n",
		"configuration", "reads", "writes", "all", "permits", "shared", "marks", "wr waits", "mean ms", "max ms", "bound ms",
		"writer", "keys", "K", "wrWait")
	for _, x := range rs {
		k, v := x.r.Kinds, x.r.Violations
		mean := 0.0
		if k.WriterWaits > 0 {
			mean = ms(k.WriterWaitTotal / int64(k.WriterWaits))
		}
		out.printf("%-58s %8d %8d %8d %8d | %8d %8d | %8d %9.2f %9.2f %9.2f | %6d %6d %6d %6d\n",
			x.cfg.Name, k.Reads, k.Writes, k.Alls, k.Permits, k.Shared, k.Marks,
			k.WriterWaits, mean, ms(k.WriterWaitMax), ms(int64(x.cfg.RW.WriterBound)),
			v.Writer, v.KeySets, v.Permits, v.WriterWait)
	}
	out.println(`Columns: acquisitions of readers, writers, multi-key locks and permits;
pairs of uses that overlapped as they may (two readers, disjoint key
sets, permits held together); writer attempts refused for readers that
marked the key; writers' waits (acquisition start to grant), their mean
and longest, against the bound (0: unchecked); violations (a writer
overlapping another holder, two holders of intersecting key sets, more
than K holders, a writer waiting past its bound).`)
}
