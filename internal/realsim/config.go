package realsim

import (
	"strconv"
	"strings"
	"time"

	"github.com/redlock-go/redlock"
)

const ms = time.Millisecond

// Config is one configuration of the real-Client campaign: the nodes, the
// processes (each a redlock.Client) and their goroutines, the workload
// and the faults. A configuration whose name starts "broken:" plants a
// defect or breaks an assumption: its schedules must report violations.
type Config struct {
	Name       string
	Nodes      int
	Procs      int // Clients, one per process
	Goroutines int // per process: they share its Client and wait room
	Keys       int
	TTL        time.Duration
	// NodeTimeout is every command's bound (core.Config.NodeTimeout).
	NodeTimeout time.Duration
	Sequential  bool
	// Prim is the primitive the goroutines take: the mutex (Lock and
	// TryLock), a reader/writer lock, a multi-key lock or a semaphore.
	Prim Prim
	// Readers is the share of readers (RLock, TryRLock) among a
	// reader/writer workload's acquisitions; the others are writers.
	Readers float64
	// SetSize is the most keys of one LockAll, out of Keys; Mutex is the
	// share of a multi-key workload's acquisitions that take one key with
	// Lock or TryLock instead, a set of one key to the checker.
	SetSize int
	Mutex   float64
	// Permits is the semaphore's K, for LockPermit.
	Permits int
	// WriterWait, when set, runs the writer-wait checker with this bound
	// over a PrimRW workload whose one writer (process 0's goroutine 0,
	// which calls WLock alone) waits behind a stream of readers, each
	// holding under a TTL: no WLock may wait longer. Set it only where
	// no command is lost or late and nodes neither crash nor pause.
	WriterWait time.Duration
	// Length is how long the goroutines start new operations, in virtual
	// time; they then finish what they do.
	Length time.Duration
	// Latency bounds one message's trip, each way.
	Latency [2]time.Duration
	// Work bounds how long a holder means to use the lock; Think the
	// pause before its next operation.
	Work, Think [2]time.Duration
	// Lease, Fencing, Fair go to every Client's Options.
	Lease, Fencing, Fair bool
	// Try is the share of TryLock among acquisitions; Extend the share of
	// holders that call Extend (without a Lease); Cancel the share of
	// Lock calls whose ctx is cancelled early.
	Try, Extend, Cancel float64
	// LongWait, when set, runs the long-wait checker with this bound: no
	// Lock may wait longer while a quorum of nodes, up and not paused,
	// has its key free. Set it only where announcements are not lost and
	// nodes neither crash nor pause: a waiter that hears nothing waits
	// for the holder's expiry by design.
	LongWait time.Duration
	Faults   Faults
	Defect   Defect
	// RunnerDefect, in a "bug:" configuration, names the slip planted in
	// the root package's runner for its schedules
	// (redlock.PlantRunnerDefect): only with the redlock_mutations build
	// tag (bugs.go).
	RunnerDefect string
	// Expect is the kind of violation a broken configuration must show.
	Expect string
}

// Faults are the network's and the nodes' faults.
type Faults struct {
	// LostRequest, LostReply: a command that never arrives, or whose
	// answer never does (it was applied). Late: a request or a reply
	// delayed by up to LateBy (a command applied past its deadline). Dup:
	// a command applied twice.
	LostRequest, LostReply, Late, Dup float64
	LateBy                            time.Duration
	// AnnLost, AnnLate, AnnDup: release announcements lost, late by up
	// to LateBy, or duplicated; Spurious announcements with no release.
	AnnLost, AnnLate, AnnDup float64
	Spurious                 int
	// Crashes of nodes: down for RestartDelay, then back with their
	// keys (Persistent) or empty (memnode.Restart: keys and fence
	// counters gone, as a failover to a replica that missed them).
	Crashes      int
	Persistent   bool
	RestartDelay [2]time.Duration
	// Pauses of nodes (SIGSTOP): commands wait, up to MaxPause.
	Pauses   int
	MaxPause time.Duration
}

// Prim is a primitive of the root package the goroutines take.
type Prim int

// The primitives.
const (
	// PrimMutex: Lock and TryLock.
	PrimMutex Prim = iota
	// PrimRW: RLock, TryRLock, WLock and TryWLock on each key.
	PrimRW
	// PrimAll: LockAll and TryLockAll of overlapping sets of keys, and
	// Lock and TryLock of single keys (Config.Mutex).
	PrimAll
	// PrimPermit: LockPermit and TryLockPermit with Config.Permits.
	PrimPermit
)

// Defect is a planted defect of a broken configuration.
type Defect int

// The defects.
const (
	// DefectNone plants nothing.
	DefectNone Defect = iota
	// DefectLyingNodes plants: nodes 1..N/2 answer OK to an acquire of a held
	// key: a minority of honest nodes makes a quorum.
	DefectLyingNodes
	// DefectLyingExtend plants: an extension that found the key gone or taken
	// is reported done.
	DefectLyingExtend
	// DefectFlatFence plants: fenced acquires all return fence 1.
	DefectFlatFence
	// DefectFastNodeClock plants: the nodes' clocks run twice as fast: keys
	// expire at half their TTL (an assumption broken).
	DefectFastNodeClock
	// DefectWorkPastLoss plants: holders ignore their lock's Context and work
	// until they unlock.
	DefectWorkPastLoss
	// DefectNoDeadline plants: a holder never unlocks, and Lock callers have no
	// deadline: the schedule cannot end, and must be reported stuck.
	DefectNoDeadline
	// DefectDeafWatch plants: every announcement is lost while the watch
	// says it listens, and a held key's time to live is reported as an
	// hour: a waiter sleeps through the key's release.
	DefectDeafWatch
	// DefectBlockedForever plants: a worker blocks for good after its
	// first lock, on a channel of the schedule's that nothing closes (for
	// the test that such a schedule is reported stuck rather than hang).
	DefectBlockedForever
	// DefectBlockedOutside is DefectBlockedForever on a channel made
	// outside the schedule's bubble: a block that synctest does not see
	// as durable, so that virtual time stops.
	DefectBlockedOutside
	// DefectReaderBesideWriter plants a reader script that admits a
	// reader beside a writer: a reader's acquire refused while the
	// writer's key is held is answered OK.
	DefectReaderBesideWriter
	// DefectSubsetAll plants a multi-key script that takes a subset: a
	// LockAll's acquire takes its first key alone.
	DefectSubsetAll
	// DefectCountSemaphore plants the per-node count semaphore: a node
	// admits a permit's acquire whenever it holds fewer than K of the
	// semaphore's slots, taking a free slot of its own choosing when the
	// slot named is taken (and keeping it under the holder's token for its
	// release and extensions), so that nodes count holders instead of
	// voting on one slot: with 3 nodes and K = 2, holders on AB, BC and AC
	// each have a majority.
	DefectCountSemaphore
	// DefectReaderNoFence plants a reader script that reads no fence: a
	// fenced reader's acquire answers fence 0, whatever the last writer's.
	DefectReaderNoFence
)

// stepBound is the most commands a schedule may send before it is stuck.
func (c *Config) stepBound() int {
	return 2000 * c.Procs * c.Goroutines * int(c.Length/c.TTL+1)
}

// horizon is how long, in virtual time, a schedule may run before it is
// stuck: its length, and time to finish every operation under way.
func (c *Config) horizon() time.Duration { return c.Length + 10*c.TTL + c.Faults.MaxPause }

// Broken reports whether c plants a defect or breaks an assumption: a
// "broken:" configuration, or a "bug:" one that plants a slip in the
// runner itself (Bugs).
func (c *Config) Broken() bool {
	return strings.HasPrefix(c.Name, "broken:") || strings.HasPrefix(c.Name, "bug:")
}

// options is the one place that builds a Client's Options from c, so that
// a change of the root API changes this function alone; obs is the
// process's observer. The Client draws its retry delays from its own
// jitter (redlock.NewJitter): Options take no seeded source, so a replay
// may space retries differently (see Replay in the package doc).
func options(c *Config, obs redlock.Observer) redlock.Options {
	o := redlock.Options{
		TTL:         c.TTL,
		NodeTimeout: c.NodeTimeout,
		Backoff:     redlock.RandomDelay(2*ms, 20*ms),
		Fencing:     c.Fencing,
		Fair:        c.Fair,
		Observer:    obs,
	}
	if c.Sequential {
		o.FanOut = redlock.Sequential
	}
	if c.Lease {
		o.Lease = &redlock.Lease{Fraction: 1.0 / 3, MaxHold: 4 * c.TTL}
	}
	return o
}

// base is a configuration within the assumptions, with every fault they
// allow.
func base(name string, n int) Config {
	ttl := 200 * ms
	return Config{
		Name: name + " N=" + strconv.Itoa(n), Nodes: n, Procs: 3, Goroutines: 2, Keys: 2,
		TTL: ttl, NodeTimeout: 10 * ms, Length: 4 * ttl,
		Latency: [2]time.Duration{50 * time.Microsecond, 3 * ms},
		Work:    [2]time.Duration{0, 2 * ttl}, Think: [2]time.Duration{0, 30 * ms},
		Try: 0.3, Extend: 0.5, Cancel: 0.2,
		Faults: Faults{
			LostRequest: 0.02, LostReply: 0.02, Late: 0.02, Dup: 0.02, LateBy: ttl,
			AnnLost: 0.1, AnnLate: 0.1, AnnDup: 0.1, Spurious: 3,
			Crashes: 1, Persistent: true, RestartDelay: [2]time.Duration{0, ttl},
			Pauses: 2, MaxPause: ttl / 2,
		},
	}
}

// waiters is a configuration for the long-wait checker: many Lock callers
// of one key, announcements that arrive on time (twice, perhaps),
// duplicated commands, and no lost or late command, node crash or pause.
func waiters(name string, n int) Config {
	c := base(name, n)
	c.Keys, c.Goroutines, c.Try, c.Cancel = 1, 3, 0, 0.1
	c.Work = [2]time.Duration{0, c.TTL / 2}
	f := &c.Faults
	f.AnnLost, f.AnnLate, f.Spurious, f.Crashes, f.Pauses, f.MaxPause = 0, 0, 0, 0, 0, 0
	// The longest a waiter may take to notice a free key: a retry delay
	// (20 ms), a failed attempt and its cleanup (a node timeout each),
	// the trips, and the sampling step.
	// A late command holds up the node's later ones: a slow node, not a
	// free one. A lost command leaves a stray key or a node the waiter's
	// attempt could not read: it then waits for the stray key's expiry
	// (core waits for what its failed attempt read and announcements,
	// as the step-level checker allows), though its cleanup found that
	// node free.
	f.Late, f.LostRequest, f.LostReply = 0, 0, 0
	c.LongWait = 20*ms + 2*c.NodeTimeout + 4*c.Latency[1] + 2*sampleEvery + 10*ms
	return c
}

// Configs returns the campaign's configurations: those within the
// assumptions first, then the broken ones.
func Configs() []Config {
	var cs []Config
	c := base("real: assumed", 3)
	c.Fencing = true
	cs = append(cs, c)

	c = base("real: lease", 3)
	c.Lease, c.Fencing = true, true
	cs = append(cs, c)

	c = base("real: fair", 3)
	c.Fair, c.Fencing = true, true
	cs = append(cs, c)

	c = base("real: fair lease", 5)
	c.Fair, c.Lease = true, true
	cs = append(cs, c)

	c = base("real: crash without key, restart after TTL", 3)
	c.Lease = true
	c.Faults.Crashes, c.Faults.Persistent = 2, false
	c.Faults.RestartDelay = [2]time.Duration{c.TTL * 11 / 10, 2 * c.TTL}
	cs = append(cs, c)

	c = base("real: sequential", 5)
	c.Sequential, c.Fencing = true, true
	c.TTL, c.Length = 500*ms, 2*time.Second
	c.Work = [2]time.Duration{0, 2 * c.TTL}
	cs = append(cs, c)

	c = waiters("real: waiters, announcements heard", 3)
	cs = append(cs, c)

	c = base("real: one key, many waiters", 3)
	c.Keys, c.Goroutines, c.Try, c.Lease = 1, 3, 0.1, true
	cs = append(cs, c)

	cs = append(cs, Primitives()...)
	cs = append(cs, Broken()...)
	cs = append(cs, BrokenPrimitives()...)
	return cs
}

// Broken returns the configurations that plant a defect in what the
// Client runs over, or break an assumption; each must be reported.
func Broken() []Config {
	var cs []Config
	c := base("broken: lying nodes, a minority makes a quorum", 3)
	c.Defect = DefectLyingNodes
	c.Expect = "exclusion"
	cs = append(cs, c)

	c = base("broken: extension failures reported done", 3)
	c.Defect, c.Lease, c.Extend = DefectLyingExtend, true, 1
	c.Expect = "exclusion"
	c.Faults.Crashes, c.Faults.Persistent = 2, false
	c.Faults.RestartDelay = [2]time.Duration{0, ms}
	cs = append(cs, c)

	c = base("broken: fence counter never raised", 3)
	c.Defect, c.Fencing = DefectFlatFence, true
	c.Expect = "fences"
	cs = append(cs, c)

	c = base("broken: node clocks twice as fast", 3)
	c.Defect = DefectFastNodeClock
	c.Expect = "exclusion"
	c.Work = [2]time.Duration{c.TTL, 2 * c.TTL}
	cs = append(cs, c)

	c = base("broken: instant failover without keys", 3)
	c.Keys, c.Lease = 1, true
	c.Faults.Crashes, c.Faults.Persistent = 8, false
	c.Expect = "exclusion"
	c.Faults.RestartDelay = [2]time.Duration{0, ms}
	c.Work = [2]time.Duration{c.TTL, 2 * c.TTL}
	cs = append(cs, c)

	c = base("broken: holder works past its loss", 3)
	c.Defect = DefectWorkPastLoss
	c.Expect = "exclusion"
	c.Work = [2]time.Duration{c.TTL, 2 * c.TTL}
	cs = append(cs, c)

	c = waiters("broken: waiters deaf to releases", 3)
	c.Defect = DefectDeafWatch
	c.Expect = "long wait"
	cs = append(cs, c)

	c = base("broken: no deadline, never unlocked (stuck)", 3)
	c.Defect, c.Lease = DefectNoDeadline, true
	c.Expect = "stuck"
	c.Faults = Faults{}
	cs = append(cs, c)
	return cs
}

// ConfigNamed returns the configuration named name, among Configs and
// Bugs.
func ConfigNamed(name string) (Config, bool) {
	for _, c := range append(Configs(), Bugs()...) {
		if c.Name == name {
			return c, true
		}
	}
	return Config{}, false
}

// prng is SplitMix64: a seeded generator for the schedule's choices. Not
// safe for concurrent use.
type prng struct{ s uint64 }

func newPRNG(seed uint64) *prng { return &prng{s: seed} }

func (p *prng) Uint64() uint64 {
	p.s += 0x9e3779b97f4a7c15
	z := p.s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// float returns a number in [0, 1).
func (p *prng) float() float64 { return float64(p.Uint64()>>11) / (1 << 53) }

func (p *prng) chance(q float64) bool { return q > 0 && p.float() < q }

// between returns a duration in [lo, hi].
func (p *prng) between(lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(p.Uint64()%uint64(hi-lo+1)) //nolint:gosec // G115: hi > lo
}

func (p *prng) intn(n int) int { return int(p.Uint64() % uint64(n)) } //nolint:gosec // G115: n > 0

func itoa(i int) string { return strconv.Itoa(i) }
