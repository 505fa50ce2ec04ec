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
	// Waiters, above 1, groups the clients into processes of that many
	// (the last may have fewer): the Locks of one redlock.Client, which
	// share its wait room (proc.go). Zero or 1: every client is a process.
	Waiters int
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
	// Fair goes to every client's core.Config: the nodes queue the
	// waiters and hand each release to the first (see fair.go), and the
	// checker of skipped waiters runs.
	Fair bool
	// MaxOvertaken bounds how often one waiter of a Fair queue may be
	// overtaken in one wait (fair.go); zero means 8. Queue faults that
	// lose or reorder entries overtake a waiter a few times more.
	MaxOvertaken int
	Faults       Faults
	// Lease configures the holders' leases (core.Lease), which decide
	// when a lock is extended and when it is lost.
	Lease LeaseConfig
	// Replication gives every node replicas that a failover may promote
	// (failover.go): each node is then a quorum member that is a Sentinel
	// group or a Cluster shard (drivers.Member).
	Replication Replication
	// Announce configures release announcements (core.Announcer) and
	// their faults. Nodes always announce their releases, as the release
	// script PUBLISHes after its compare-and-delete; the zero value has no
	// client listen, so every waiter polls.
	Announce Announcements
	// Primitive is what the clients take (kinds.go); the zero value is
	// the mutex. RW configures a reader/writer schedule, Keys is how many
	// keys a PrimAll schedule draws its key sets from (at most 8), and
	// Permits is a PrimPermits schedule's K (at most 8). Fair, Waiters
	// and Fencing are the mutex's alone.
	Primitive Primitive
	RW        RWConfig
	Keys      int
	Permits   int
}

// LeaseConfig is the core.Config of the holders' leases. A holder whose
// schedule draws Faults.Extend leases its lock, through a Spec with
// LeaseFraction (and the TTL Faults.ExtendTTL, when set); the others
// watch it only (LeaseFraction 0), as a redlock.Lock's Context does.
type LeaseConfig struct {
	// Fraction is core.Config.LeaseFraction; zero means 1/3.
	Fraction float64
	// MaxHold and MaxExtensions go to core.Config.
	MaxHold       time.Duration
	MaxExtensions int
}

func (l LeaseConfig) fraction() float64 {
	if l.Fraction == 0 {
		return 1.0 / 3
	}
	return l.Fraction
}

// Announcements says which clients listen to release announcements and
// what goes wrong with them. A listening client watches the key from its
// acquisition's first wait to its end (Announcer.Watch, then Stop, as
// redlock's Lock does): it subscribes on every node, each subscription
// confirmed a round trip later, and feeds its Acquisition every
// announcement that reaches it (Acquisition.Announce) and the nodes whose
// subscription is confirmed (Acquisition.SetListening). Each probability
// applies to one announcement to one client.
type Announcements struct {
	// Listen is the probability that a client listens; the others poll.
	Listen float64
	// Drop is the probability that an announcement is lost on the way.
	Drop float64
	// Late is the probability that an announcement is held up by up to
	// LateBy more, past the waiter's next attempt if need be.
	Late   float64
	LateBy time.Duration
	// Dup is the probability that an announcement arrives twice, the copy
	// with a delay of its own (and Late's chance to be late).
	Dup float64
	// Forged is how many announcements of releases that never happened a
	// schedule draws: each at a random time, from a random node, to a
	// random client.
	Forged int
	// SubDrops is how many subscription drops a schedule draws: at a
	// random time, a random client's subscription on a random node drops
	// (if it has one then); the client notices a latency later, is not
	// listening meanwhile, and subscribes again after a delay in Redial.
	// Node crashes drop every subscription on the node the same way.
	SubDrops int
	Redial   [2]time.Duration
	// UnknownTTL is the probability that a StatusHeld acquire reply
	// carries no TTL (Reply.TTL zero: a driver that does not read the
	// holder's PTTL).
	UnknownTTL float64
}

// Replication describes the nodes' replicas, their asynchronous
// replication, the failovers that promote them and the drivers' WAIT
// (failover.go). The zero value has no replica.
type Replication struct {
	// Replicas is how many replicas each node has.
	Replicas int
	// Delay bounds one write's trip from the master to a replica, and an
	// acknowledgement's back; Lag is the probability that a write is held
	// up by up to LagBy more (a replica, or its link, that falls behind).
	Delay [2]time.Duration
	Lag   float64
	LagBy time.Duration
	// Wait: the drivers WAIT for every replica after each acquisition,
	// extension and fence raise that the master applied (drivers.Member's
	// WithWait), for at most WaitTimeout; a WAIT that falls short makes
	// the node's reply a failure (core.StatusError), not a vote. Without
	// Wait the master's reply counts as soon as it is applied.
	Wait        bool
	WaitTimeout time.Duration
	// Failovers is how many failovers a schedule draws: at a random time
	// a random node's master fails and, after a delay in FailoverDelay,
	// one of its running replicas, drawn at random whether it is in sync,
	// behind or disconnected, becomes the master with exactly the data it
	// holds. The failed master comes back after a delay in Rejoin (with
	// its data if Faults.Persistent, else with its fence counter only) as
	// a replica of the new master, and resyncs.
	Failovers     int
	FailoverDelay [2]time.Duration
	Rejoin        [2]time.Duration
	// Drops is how many replica disconnections a schedule draws: at a
	// random time a random replica's link drops (writes in flight lost)
	// for a time in DropFor, then the replica resyncs in full.
	Drops   int
	DropFor [2]time.Duration
	// Skew bounds each server's clock offset, either way: replicas hold
	// expiries as absolute times (Redis 7 replicates PXAT), so a promoted
	// replica expires a key on its own clock. Every server of a node runs
	// at the node's rate (Faults.NodePPM).
	Skew time.Duration
}

// roundBound is the longest a round takes, in ns: the node timeout, or
// one per node when sequential.
func (c Config) roundBound() int64 {
	if c.FanOut == core.Sequential {
		return int64(c.NodeTimeout) * int64(c.Nodes)
	}
	return int64(c.NodeTimeout)
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
	// Extend is the probability that a holder leases its lock (see
	// LeaseConfig): core.Lease then extends it until the work is done, the
	// lease's bounds are reached, or it declares the lock lost. ExtendTTL,
	// when set, leases through a second Spec with that TTL, as a program
	// with several Clients on one driver may.
	Extend    float64
	ExtendTTL time.Duration
	// Outages is how many majority outages a schedule draws: at a random
	// time a majority of the nodes crash together, each restarting after
	// a delay in RestartDelay (or OutageFor, when set), so that every
	// extension times out while they are down: leases must declare their
	// locks lost before their validity ends.
	Outages   int
	OutageFor [2]time.Duration
	// StaleKeys is how many stale keys a schedule draws: at a random time
	// a minority of the nodes gets the key set with a token no client
	// holds (a crashed client's, or a release that failed there), with a
	// TTL in StaleTTL, if the key is free there. Waiters must not wait
	// for them to expire once a quorum is announced free.
	StaleKeys int
	StaleTTL  [2]time.Duration
	// Cancels is the probability that an acquisition's caller gives up
	// (its ctx ends) at a time drawn in [0, CancelWithin] after it
	// starts, as redlock's Client acts on it: in a wait, by
	// Acquisition.Cancel or, for a deadline, GiveUp, or by waking and
	// cancelling the attempt before it is sent; in an attempt, by Cancel,
	// which abandons it for its cleanup; in a cleanup, by Cancel, which
	// lets it finish. The acquisition must still leave no key and, with
	// Config.Fair, no queue entry of its own behind (Violations.Stayed).
	Cancels      float64
	CancelWithin time.Duration

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

	// With Config.Fair. QueueLoss is the probability that a node does not
	// record one queue entry (a join, or a waiter's return to the back),
	// as a node restarted between two of a waiter's cleanups would not.
	// QueueSkew is the probability that a node records a joining waiter
	// with its ticket moved by up to SkewBy either way, so that nodes
	// order the waiters differently.
	QueueLoss float64
	QueueSkew float64
	SkewBy    time.Duration
	// SkipHead (broken): a release hands the key to the second waiter
	// whenever two or more wait.
	SkipHead bool
	// ForgetSuccessor (broken, with Config.Waiters): a head that leaves
	// its process's queue pokes no successor, which then waits for
	// whatever the process hears next, if anything.
	ForgetSuccessor bool

	// With a Primitive other than the mutex (kinds.go), the planted
	// defects of the nodes' scripts. ReaderBesideWriter: a node admits a
	// reader while the writer's key is set. TakeSubset: a multi-key
	// acquire checks and takes its first key alone. CountSemaphore: the
	// unsound semaphore, in place of the permit slots: each node admits
	// a holder of the key while it counts fewer than Config.Permits, and
	// a client holds with a quorum of admissions. NoWriterMark: a writer
	// refused for readers marks nothing, and new readers keep it out.
	ReaderBesideWriter, TakeSubset, CountSemaphore, NoWriterMark bool
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
	// Attempts counts acquisition attempts (each acquisition's first and
	// every retry).
	Attempts int
	// Announce counts announcements and what happened to them.
	Announce AnnounceCounts
	// Handoff measures, for every release after which another client was
	// waiting, the real time from the release's start (the holder gives
	// the lock up) to the next acquisition.
	Handoff Handoffs
	// Queue counts what the Fair queues did.
	Queue QueueCounts
	// Kinds counts what the kinds beyond the mutex did (kinds.go).
	Kinds      KindCounts
	Violations Violations
	// First describes the first violation found, with its schedule's seed.
	First string
}

// FaultCounts counts injected faults.
type FaultCounts struct {
	Lost, Late                  int
	NodeCrashes, EmptyRestarts  int
	ClientPauses, ClientCrashes int
	CountersLost                int // fence counters lost with a crash
	Outages, StaleKeys          int // majority outages, stale keys set
	UnlockRaces                 int // unlocks with an extension in flight
	LeaseLosses                 int // locks a lease declared lost
	// Cancels counts acquisitions whose caller gave up (Faults.Cancels),
	// and Cancelled where each one was then.
	Cancels   int
	Cancelled CancelCounts
	// With Config.Replication: failovers, and among them promotions of a
	// replica that lacked writes its master had applied (Behind) and of
	// one whose link had dropped (Dropped); replica links dropped; WAITs
	// that fell short, each a vote refused.
	Failovers, Behind, Dropped int
	ReplicaDrops, WaitsShort   int
}

// CancelCounts counts where acquisitions were when their callers gave
// them up: in a wait (by Cancel, or GiveUp for a deadline), woken for an
// attempt not yet sent, in an attempt (or fence raise) under way, or in
// a cleanup or leave round; and, with Config.Fair, those given up while
// queued on the nodes (a ticket taken, not yet acquired).
type CancelCounts struct {
	Wait, GiveUp, Unsent, Attempt, Cleanup, Queued int
}

func (c *CancelCounts) add(o CancelCounts) {
	c.Wait += o.Wait
	c.GiveUp += o.GiveUp
	c.Unsent += o.Unsent
	c.Attempt += o.Attempt
	c.Cleanup += o.Cleanup
	c.Queued += o.Queued
}

// QueueCounts counts the Fair queues' work (Config.Fair).
type QueueCounts struct {
	// Handoffs counts keys handed to a waiter; Lost and Skewed the queue
	// entries QueueLoss and QueueSkew dropped and moved.
	Handoffs, Lost, Skewed int
	// Overtakes counts acquisitions won while a waiter with an earlier
	// ticket waited, once per such waiter; MaxOvertaken is the most times
	// one waiter was overtaken in one wait.
	Overtakes, MaxOvertaken int
	// With Config.Waiters: releases handed on within a process (quiet),
	// releases its waiters followed that were open to every process (one
	// in MaxChain+1 in a row), and early tells retold once the release
	// was done.
	Chained, Opened, Retold int
	// Reannounced counts quiet releases made heard (Ready.HandOn or Try,
	// of Room.Released once done, or Room.Leave as the last waiter
	// leaves): a TryLock, then
	// an open release if it won; with Fair, a Spec.HandOn round.
	Reannounced int
	// Freed counts the times Room.Ended woke the head: a lock of the process
	// that attempted at once ended without the key, having taken it or
	// freed it on some node; the head is woken to attempt at once, or,
	// none waiting, the next to come told.
	Freed int
	// QueuedByAttempt counts failed Fair attempts that went straight to
	// their wait: held on every node, they queued their waiter there in
	// their own round, and needed no cleanup round to join the queue.
	QueuedByAttempt int
}

// KindCounts counts the work of the kinds beyond the mutex: the
// acquisitions of each kind; Shared, the pairs of uses that overlapped
// as they may (two readers, two disjoint key sets, two permits); Marks,
// the writers' attempts refused for readers that marked the key; and the
// writers' waits from their acquisition's start to its grant.
type KindCounts struct {
	Reads, Writes, Alls, Permits int
	Shared, Marks                int
	WriterWaits                  int
	WriterWaitTotal              int64
	WriterWaitMax                int64
}

func (k *KindCounts) add(o KindCounts) {
	k.Reads += o.Reads
	k.Writes += o.Writes
	k.Alls += o.Alls
	k.Permits += o.Permits
	k.Shared += o.Shared
	k.Marks += o.Marks
	k.WriterWaits += o.WriterWaits
	k.WriterWaitTotal += o.WriterWaitTotal
	k.WriterWaitMax = max(k.WriterWaitMax, o.WriterWaitMax)
}

// AnnounceCounts counts release announcements.
type AnnounceCounts struct {
	// Published counts announcements sent by nodes to subscribed clients
	// (one per release applied and subscriber); Fed counts those, and the
	// forged and duplicated ones, that a client fed its Acquisition, and
	// Missed the "maybe missed" notifications of subscriptions that
	// started, dropped or came back.
	Published, Fed, Missed int
	// Faults injected.
	Dropped, Late, Duplicated, Forged, SubDrops, UnknownTTL int
	// Wakes counts attempts that an announcement started (the wait ended
	// before the retry delay and the holders' expiry would have ended
	// it); Won counts acquisitions won by such an attempt.
	Wakes, Won int
}

// Handoffs sums handoff times, in nanoseconds of real time, for every
// handoff and for those won by an announced attempt.
type Handoffs struct {
	N, Announced         int
	Total, AnnouncedTime int64
}

// Mean returns the mean handoff time, 0 without handoffs.
func (h Handoffs) Mean() time.Duration {
	if h.N == 0 {
		return 0
	}
	return time.Duration(h.Total / int64(h.N))
}

// MeanAnnounced returns the mean time of the handoffs won by an announced
// attempt, and MeanOther that of the others.
func (h Handoffs) MeanAnnounced() time.Duration {
	if h.Announced == 0 {
		return 0
	}
	return time.Duration(h.AnnouncedTime / int64(h.Announced))
}

// MeanOther returns the mean time of the handoffs not won by an announced
// attempt, 0 without such handoffs.
func (h Handoffs) MeanOther() time.Duration {
	if h.N == h.Announced {
		return 0
	}
	return time.Duration((h.Total - h.AnnouncedTime) / int64(h.N-h.Announced))
}

// Violations counts what the checkers found. Fence counts fenced
// acquisitions whose fence was not above that of every acquisition
// completed before them.
type Violations struct {
	Exclusion, Liveness, Hygiene, LostValid, Fence int
	// LateLoss counts leases that declared a lock lost at or after the
	// end of its validity: a Context cancelled too late.
	LateLoss int
	// LongWait counts waiters whose wait, once a quorum of nodes was
	// announced free, still ended after the retry delay's end: the
	// announced wake was slower than polling.
	LongWait int
	// Skipped counts waiters that acquisitions overtook more than
	// Config.MaxOvertaken times while they waited in a Fair queue (fair.go).
	Skipped int
	// Stuck counts processes (Config.Waiters) whose head waited, at the
	// end of a schedule, with nothing to wake it (proc.go), and schedules
	// whose virtual time stopped, ended there (stuck.go).
	Stuck int
	// Gathered counts replies held back (core.Gatherer) that would have
	// ended their round: a round decided later than it could be.
	Gathered int
	// Jumped counts processes (Config.Waiters) that came back to a Fair
	// queue under a ticket older than their return (fair.go): ahead of
	// the waiters that queued meanwhile.
	Jumped int
	// Stayed counts Fair acquisitions that ended without the lock (given
	// up, cancelled, or out of tries) while a node that answered their
	// last round still queued them (fair.go): each release there hands
	// the key to a waiter that is gone, and the others wait out the
	// handoff.
	Stayed int
	// Unheard counts quiet releases (Config.Waiters) that left the key to
	// nobody of their process, while another's waiter waited, with no
	// attempt of the process following (proc.go): the waiters that heard
	// nothing wait for the old key's expiry.
	Unheard int
	// With a Primitive other than the mutex (kinds.go). Writer counts a
	// writer's use that overlaps another holder's (a reader's or a
	// writer's); Permits, the times more than Config.Permits holders
	// used the semaphore at once; KeySets, overlapping uses of two
	// multi-key locks whose key sets intersect; WriterWait, writers that
	// waited past RWConfig.WriterBound while no writer held.
	Writer, Permits, KeySets, WriterWait int
}

// Total returns the number of violations of every kind.
func (v Violations) Total() int {
	return v.Exclusion + v.Liveness + v.Hygiene + v.LostValid + v.Fence + v.LateLoss + v.LongWait + v.Skipped + v.Stuck + v.Gathered + v.Stayed + v.Jumped + v.Unheard +
		v.Writer + v.Permits + v.KeySets + v.WriterWait
}

func (r *Result) add(o Result) {
	r.Schedules += o.Schedules
	r.Acquisitions += o.Acquisitions
	r.Extensions += o.Extensions
	r.Fenced += o.Fenced
	r.Raises += o.Raises
	r.Attempts += o.Attempts
	a, b := &r.Announce, o.Announce
	a.Published += b.Published
	a.Fed += b.Fed
	a.Missed += b.Missed
	a.Dropped += b.Dropped
	a.Late += b.Late
	a.Duplicated += b.Duplicated
	a.Forged += b.Forged
	a.SubDrops += b.SubDrops
	a.UnknownTTL += b.UnknownTTL
	a.Wakes += b.Wakes
	a.Won += b.Won
	h, k := &r.Handoff, o.Handoff
	h.N += k.N
	h.Announced += k.Announced
	h.Total += k.Total
	h.AnnouncedTime += k.AnnouncedTime
	f, g := &r.Faults, o.Faults
	f.Lost += g.Lost
	f.Late += g.Late
	f.NodeCrashes += g.NodeCrashes
	f.EmptyRestarts += g.EmptyRestarts
	f.ClientPauses += g.ClientPauses
	f.ClientCrashes += g.ClientCrashes
	f.CountersLost += g.CountersLost
	f.Outages += g.Outages
	f.StaleKeys += g.StaleKeys
	f.UnlockRaces += g.UnlockRaces
	f.LeaseLosses += g.LeaseLosses
	f.Cancels += g.Cancels
	f.Cancelled.add(g.Cancelled)
	f.Failovers += g.Failovers
	f.Behind += g.Behind
	f.Dropped += g.Dropped
	f.ReplicaDrops += g.ReplicaDrops
	f.WaitsShort += g.WaitsShort
	v, u := &r.Violations, o.Violations
	v.Exclusion += u.Exclusion
	v.Liveness += u.Liveness
	v.Hygiene += u.Hygiene
	v.LostValid += u.LostValid
	v.Fence += u.Fence
	v.LateLoss += u.LateLoss
	v.LongWait += u.LongWait
	v.Skipped += u.Skipped
	v.Stuck += u.Stuck
	v.Gathered += u.Gathered
	v.Stayed += u.Stayed
	v.Jumped += u.Jumped
	v.Unheard += u.Unheard
	v.Writer += u.Writer
	v.Permits += u.Permits
	v.KeySets += u.KeySets
	v.WriterWait += u.WriterWait
	r.Kinds.add(o.Kinds)
	q, p := &r.Queue, o.Queue
	q.Handoffs += p.Handoffs
	q.Lost += p.Lost
	q.Skewed += p.Skewed
	q.Overtakes += p.Overtakes
	q.MaxOvertaken = max(q.MaxOvertaken, p.MaxOvertaken)
	q.Chained += p.Chained
	q.Opened += p.Opened
	q.Retold += p.Retold
	q.Reannounced += p.Reannounced
	q.Freed += p.Freed
	q.QueuedByAttempt += p.QueuedByAttempt
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
