// Package matrix describes a benchmark run: the cells to measure (library,
// driver, scenario, node count, fan-out, concurrency), the parsing of the
// command-line lists that choose them, and the Record each measured cell
// produces. The redlock command and the peer command (bench/peers) share
// it, so both sides of a comparison speak the same JSON.
package matrix

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redlock-go/redlock/bench/measure"
)

// Libraries.
const (
	Redlock     = "redlock"
	Redsync     = "redsync"
	Redislock   = "redislock"
	Rueidislock = "rueidislock"
)

// Scenarios: servers on loopback, or behind the latency proxy; Variants
// is the fencing and lease table, on the loopback servers: one cell per
// API variant of a pair (Cell.Variant) at one N and one client; Handoff
// is the hot key, on the loopback servers: contenders (Cell.Clients) loop
// acquire, critical section, release on one key, each acquire waiting as
// long as it takes (measure.RunHandoff).
const (
	Loopback = "loopback"
	Proxy    = "proxy"
	Variants = "variants"
	Handoff  = "handoff"
	// Kinds is the primitives beyond the mutex, on the loopback servers:
	// the reader/writer lock, the semaphore and the multi-key lock, each
	// cell (Cell.Variant, one of KindCells) beside the mutex cell its
	// target divides by.
	Kinds = "kinds"
)

// The cells of the Kinds scenario (Cell.Variant), in run order: each
// measured right after or before the mutex cell its target compares it
// with, over the same driver.
const (
	// KindRLock is the uncontended reader pair, TryRLock then Unlock, one
	// client; KindLock the mutex pair beside it, TryLock then Unlock.
	KindRLock = "rlock"
	KindLock  = "lock"
	// KindLockAll is the uncontended LockAll pair of LockAllKeys keys,
	// TryLockAll then Unlock, one client; KindLock3 the same keys taken
	// by as many TryLocks in a row, then unlocked in a row.
	KindLockAll = "lockall"
	KindLock3   = "lock-3"
	// KindReaders is the readers' pair, TryRLock then Unlock, by every
	// client on one key; KindMutexKeys the mutex pair by as many clients
	// on a key each.
	KindReaders   = "readers"
	KindMutexKeys = "mutex-keys"
	// KindPermits is the semaphore: contenders loop LockPermit of
	// Permits permits of one key (waiting), a section, Unlock;
	// KindMutexPermits the same contenders on Permits mutex keys, Lock
	// of the key of contender i mod Permits.
	KindPermits      = "permits"
	KindMutexPermits = "mutex-permit-keys"
	// KindWriterWait is a writer behind a stream of readers: Clients
	// readers loop RLock (waiting), a section that holds for less than
	// the cell's TTL, Unlock; one writer loops WLock (waiting), a
	// section, Unlock, then a pause. Its figure is the writer's wait.
	KindWriterWait = "writer-wait"
	// KindLockAllHot is LockAll contended: contenders loop LockAll
	// (waiting) of LockAllKeys of a pool of LockAllKeys+1 keys, every
	// two sets intersecting; its figure is the exclusion check.
	KindLockAllHot = "lockall-hot"
)

// KindCells lists the Kinds cells in run order.
var KindCells = []string{KindRLock, KindLock, KindLockAll, KindLock3, KindReaders, KindMutexKeys,
	KindPermits, KindMutexPermits, KindWriterWait, KindLockAllHot}

// The shapes of the Kinds cells that are not the run's.
const (
	// Permits is the semaphore's K.
	Permits = 4
	// LockAllKeys is how many keys a LockAll cell takes.
	LockAllKeys = 3
	// WriterWaitReaders is the readers of the writer's cell.
	WriterWaitReaders = 8
	// LockAllContenders is the contenders of KindLockAllHot.
	LockAllContenders = 8
)

// KindRounds reports whether Kinds cell c is measured in the rounds of
// Plan.Rounds: the cells of the kinds' ratio targets, so that each ratio
// is the median of the rounds' own ratios. Not the writer's cell nor
// LockAll contended, whose figures are not a ratio.
func KindRounds(c Cell) bool {
	if c.Scenario != Kinds {
		return false
	}
	switch c.Variant {
	case KindWriterWait, KindLockAllHot:
		return false
	}
	return true
}

// KindHot reports whether a Kinds cell is a hot one: contenders that
// wait (measure.RunSections), or clients sharing one key, its exclusion
// checked.
func KindHot(variant string) bool {
	switch variant {
	case KindReaders, KindMutexKeys, KindPermits, KindMutexPermits, KindWriterWait, KindLockAllHot:
		return true
	}
	return false
}

// How this library's Lock waits in a Handoff cell (its Cell.Variant).
const (
	// Wake is redlock.Client's default: a waiter tries again when the
	// release is announced, or when the holder's keys expire.
	Wake = "wake"
	// Poll is Options.Poll: a waiter sleeps Options.Backoff's random
	// 50–250 ms between attempts.
	Poll = "poll"
	// Fair is Options.Fair: the servers queue the waiting processes and
	// hand each release to the first, which alone hears it.
	Fair = "fair"
)

// WaitModes lists the Handoff variants of this library, in run order.
var WaitModes = []string{Wake, Poll, Fair}

// Peer fan-outs, named for what each peer does on the wire.
const (
	// FanConcurrent is redsync's goroutine per node, waiting for all.
	FanConcurrent = "concurrent"
	// FanSingle is one command to one server (bsm/redislock).
	FanSingle = "single"
	// FanKeys is rueidislock's sequential keys on one server.
	FanKeys = "sequential-keys"
)

// Cell is one measurement's coordinates.
type Cell struct {
	Library  string `json:"library"`
	Driver   string `json:"driver"`
	Scenario string `json:"scenario"`
	// Nodes is N: servers for Redlock and redsync, 2k-1 keys on one server
	// for rueidislock, 1 for redislock.
	Nodes   int    `json:"nodes"`
	FanOut  string `json:"fanout"`
	Clients int    `json:"clients"`
	// SharedKey is the contended case: every client locks one key.
	SharedKey bool `json:"shared_key,omitempty"`
	// Variant is the API variant of a Variants cell (bench/target's
	// Variants: plain, fenced, handle, lease), or how this library waits
	// in a Handoff cell (Wake, Poll); empty elsewhere.
	Variant string `json:"variant,omitempty"`
	// Duration is the cell's measured time when it is not the run's:
	// the throughput curve's extra points and the Handoff cells. It is
	// not a coordinate: Matches ignores it.
	Duration time.Duration `json:"duration,omitempty"`
	// Repeats, above 1, measures the cell that many times in a row and
	// keeps the repeat of median p50 (measure.Median), every repeat's p50
	// in the record's RepeatP50Us. Not a coordinate: Matches ignores it.
	Repeats int `json:"repeats,omitempty"`
}

// Servers returns how many of its scenario's servers a cell uses: N for
// this library and redsync, one for the single-server peers
// (rueidislock's keys, redislock), none for the in-memory driver.
func (c Cell) Servers() int {
	switch {
	case c.Library == Redlock && c.Driver == "mem":
		return 0
	case c.Library == Rueidislock || c.Library == Redislock:
		return 1
	}
	return c.Nodes
}

// Subject names the library and its client, "redlock+redigo".
func (c Cell) Subject() string { return c.Library + "+" + c.Driver }

// Waits says how a Handoff cell's subject waits for a held lock, in a
// word: this library's wait mode (Wake, Poll), redsync's "poll",
// rueidislock's "invalidation".
func (c Cell) Waits() string {
	switch c.Library {
	case Redlock:
		return c.Variant
	case Redsync:
		return Poll
	case Rueidislock:
		return "invalidation"
	}
	return ""
}

// HandoffName names a Handoff cell's subject and way of waiting:
// "redlock+redigo wake", "redsync+redigo poll",
// "rueidislock+rueidis invalidation".
func (c Cell) HandoffName() string { return c.Subject() + " " + c.Waits() }

// IsPeer reports whether the cell measures another library.
func (c Cell) IsPeer() bool { return c.Library != Redlock }

// Name is a benchstat-style name, such as
// "lib=redlock/driver=redigo/scenario=loopback/nodes=5/fanout=multiplexed/clients=1".
func (c Cell) Name() string {
	s := fmt.Sprintf("lib=%s/driver=%s/scenario=%s/nodes=%d/fanout=%s/clients=%d",
		c.Library, c.Driver, c.Scenario, c.Nodes, c.FanOut, c.Clients)
	if c.SharedKey {
		s += "/key=shared"
	}
	if c.Variant != "" {
		s += "/variant=" + c.Variant
	}
	return s
}

// KeyPrefix returns a key prefix unique to the cell within run.
func (c Cell) KeyPrefix(run string) string {
	return "bench:" + run + ":" + strings.ReplaceAll(c.Name(), "/", ":") + ":"
}

// Record is a measured cell.
type Record struct {
	Cell
	measure.Result
	// Handoff is a Handoff cell's handoff latencies and exclusion check;
	// its Result counts critical sections (Ops, Throughput).
	Handoff *measure.Handoff `json:"handoff,omitempty"`
	// Exclusion is a hot Kinds cell's exclusion check (and a writer's
	// waits); a contended cell's Result counts critical sections.
	Exclusion *measure.Exclusion `json:"exclusion,omitempty"`
	// FloorMeanUs is, for a one-client loopback cell of the mem driver,
	// the mean pair of its floor (target.MemFloor: memnode and the pair's
	// clock readings, no core, no runner), measured right after the cell
	// with the same spec; 0: not measured.
	FloorMeanUs float64 `json:"floor_mean_us,omitempty"`
	// Note says why the cell has no figures, or what to keep in mind.
	Note string `json:"note,omitempty"`
}

// Plan chooses the cells of a run.
type Plan struct {
	Drivers     []string // redlock drivers, "mem" included
	NodeCounts  []int
	FanOuts     []string // "sequential", "multiplexed"
	Concurrency []int
	// Proxy adds the latency-proxy scenario (clients 1, every N and
	// fan-out, drivers other than mem).
	Proxy bool
	// Contended adds one shared-key cell per driver at the largest N and
	// concurrency, multiplexed if chosen.
	Contended bool
	// Peers lists the peer subjects to run: "redsync+redigo",
	// "redsync+rueidis", "redislock+go-redis", "rueidislock+rueidis".
	Peers []string
	// Variants adds the fencing and lease table: for each driver and
	// fan-out, one client at VariantNodes, a cell per variant listed
	// (bench/target's Variants), in the Variants scenario.
	Variants []string
	// VariantsOnly leaves out every other cell: the loopback matrix, the
	// contended and proxy cells and the peers (but see HandoffOnly).
	VariantsOnly bool
	// Curve lists more concurrencies for the throughput curve: at
	// CurveNodes, on distinct keys, multiplexed (or the first fan-out)
	// for every driver but mem, and the peers' own fan-out for every peer
	// that runs at that N (not redislock). Concurrencies already in
	// Concurrency are not measured twice. Each such cell runs for
	// CurveDuration.
	Curve         []int
	CurveDuration time.Duration
	// HandoffContenders adds the hot key (the Handoff scenario) at
	// HandoffNodes for each count of contenders listed: this library
	// over each of HandoffDrivers in each of WaitModes, and every peer
	// that runs at that N. Each cell runs for HandoffDuration.
	HandoffContenders []int
	HandoffDrivers    []string
	HandoffDuration   time.Duration
	// HandoffOnly leaves out every cell but the Handoff cells (and the
	// Variants cells, with VariantsOnly).
	HandoffOnly bool
	// Kinds lists the Kinds cells (KindCells) to run at VariantNodes,
	// multiplexed, over each of KindsDrivers; the contended ones run for
	// KindsDuration (the writer's cell KindsWriterRounds times that).
	Kinds         []string
	KindsDrivers  []string
	KindsDuration time.Duration
	// KindsOnly leaves out every cell but the Kinds cells (and those
	// VariantsOnly and HandoffOnly keep).
	KindsOnly bool
	// Repeats, above 1, is the Cell.Repeats of the cells the p50 targets
	// compare: one client, on the loopback servers at VariantNodes, this
	// library's multiplexed cells over every driver but mem, and
	// redsync+redigo's.
	Repeats int
}

// repeated reports whether c is one of the cells Plan.Repeats repeats.
func (p Plan) repeated(c Cell) bool {
	if p.Repeats < 2 || c.Scenario != Loopback || c.Clients != 1 || c.SharedKey || c.Nodes != p.VariantNodes() {
		return false
	}
	if c.Library == Redlock {
		return c.Driver != "mem" && c.FanOut == "multiplexed"
	}
	return c.Library == Redsync && c.Driver == "redigo"
}

// ThroughputClients is the concurrency of the throughput targets: 32 if
// the run has it, else its largest.
func (p Plan) ThroughputClients() int {
	if slices.Contains(p.Concurrency, 32) {
		return 32
	}
	return slices.Max(p.Concurrency)
}

// Rounds returns the cells that a run with Plan.Repeats above 1 measures
// Repeats-1 more times, in rounds that alternate this library's cells
// with the peers' (see measure.MedianThroughput and
// measure.MedianLatency), so that each target compares figures taken
// seconds apart: the p50 targets' cells (repeated), and the throughput
// targets' (this library's multiplexed cells over every driver but mem,
// and redsync's and rueidislock's, at VariantNodes and ThroughputClients
// on distinct keys), and the Kinds cells of ratio targets (KindRounds).
// None with Repeats 1.
func (p Plan) Rounds(cells []Cell) []Cell {
	n, c := p.VariantNodes(), p.ThroughputClients()
	if p.Repeats < 2 {
		return nil
	}
	var out []Cell
	for _, x := range cells {
		if p.repeated(x) || KindRounds(x) {
			out = append(out, x)
			continue
		}
		if c < 2 || x.Scenario != Loopback || x.Nodes != n || x.Clients != c || x.SharedKey || x.Duration != 0 {
			continue
		}
		switch {
		case x.Library == Redlock && x.Driver != "mem" && x.FanOut == "multiplexed",
			x.Library == Redsync, x.Library == Rueidislock:
			out = append(out, x)
		}
	}
	return out
}

// CurveNodes is the N of the throughput curve's extra points, and
// HandoffNodes the N of the Handoff cells: 5 if the run has it, else its
// largest N.
func (p Plan) CurveNodes() int { return p.VariantNodes() }

// HandoffNodes is the N of the Handoff cells: see CurveNodes.
func (p Plan) HandoffNodes() int { return p.VariantNodes() }

// curveFan is the fan-out of the curve and of the contended cells:
// multiplexed if the run has it, else its first.
func (p Plan) curveFan() string {
	if slices.Contains(p.FanOuts, "multiplexed") {
		return "multiplexed"
	}
	return p.FanOuts[0]
}

// peerAt returns a peer's library, driver and fan-out, and whether it
// runs at N=n (bsm/redislock runs at N=1 only).
func peerAt(peer string, n int) (lib, drv, fan string, ok bool) {
	lib, drv, _ = strings.Cut(peer, "+")
	switch lib {
	case Redislock:
		return lib, drv, FanSingle, n == 1
	case Rueidislock:
		return lib, drv, FanKeys, true
	}
	return lib, drv, FanConcurrent, true
}

// VariantNodes is the N of the variant cells: 5 if the run has it, else
// its largest N.
func (p Plan) VariantNodes() int {
	if slices.Contains(p.NodeCounts, 5) {
		return 5
	}
	return slices.Max(p.NodeCounts)
}

// AllPeers is every peer subject, in run order.
var AllPeers = []string{"redsync+redigo", "redsync+rueidis", "redislock+go-redis", "rueidislock+rueidis"}

// Cells returns this library's cells, then the peers', in run order.
func (p Plan) Cells() []Cell {
	var cells []Cell
	maxN, maxC := slices.Max(p.NodeCounts), slices.Max(p.Concurrency)
	contendedFan := p.curveFan()
	if p.VariantsOnly || p.HandoffOnly || p.KindsOnly {
		if p.VariantsOnly {
			cells = p.variantCells()
		}
		if p.HandoffOnly {
			cells = append(cells, p.handoffCells(false)...)
			cells = append(cells, p.handoffCells(true)...)
		}
		if p.KindsOnly {
			cells = append(cells, p.kindCells()...)
		}
		return cells
	}
	for _, d := range p.Drivers {
		for _, n := range p.NodeCounts {
			for _, f := range p.FanOuts {
				for _, c := range p.Concurrency {
					cells = append(cells, Cell{Library: Redlock, Driver: d, Scenario: Loopback, Nodes: n, FanOut: f, Clients: c})
				}
			}
		}
		if p.Contended && maxC > 1 {
			cells = append(cells, Cell{Library: Redlock, Driver: d, Scenario: Loopback, Nodes: maxN, FanOut: contendedFan, Clients: maxC, SharedKey: true})
		}
	}
	if p.Proxy {
		for _, d := range p.Drivers {
			if d == "mem" {
				continue
			}
			for _, n := range p.NodeCounts {
				for _, f := range p.FanOuts {
					cells = append(cells, Cell{Library: Redlock, Driver: d, Scenario: Proxy, Nodes: n, FanOut: f, Clients: 1})
				}
			}
			// The high concurrency behind the proxy, at the targets' N.
			if maxC > 1 {
				cells = append(cells, Cell{Library: Redlock, Driver: d, Scenario: Proxy, Nodes: p.VariantNodes(), FanOut: contendedFan, Clients: maxC})
			}
		}
	}
	cells = append(cells, p.variantCells()...)
	cells = append(cells, p.curveCells(false)...)
	cells = append(cells, p.handoffCells(false)...)
	cells = append(cells, p.kindCells()...)
	for _, peer := range p.Peers {
		lib, drv, _ := strings.Cut(peer, "+")
		fan := FanConcurrent
		nodes := p.NodeCounts
		switch lib {
		case Redislock:
			fan, nodes = FanSingle, []int{1}
		case Rueidislock:
			fan = FanKeys
		}
		for _, n := range nodes {
			for _, c := range p.Concurrency {
				cells = append(cells, Cell{Library: lib, Driver: drv, Scenario: Loopback, Nodes: n, FanOut: fan, Clients: c})
			}
		}
		if lib == Redsync && p.Contended && maxC > 1 {
			cells = append(cells, Cell{Library: lib, Driver: drv, Scenario: Loopback, Nodes: maxN, FanOut: fan, Clients: maxC, SharedKey: true})
		}
		if p.Proxy && peer == "redsync+redigo" {
			for _, n := range p.NodeCounts {
				cells = append(cells, Cell{Library: lib, Driver: drv, Scenario: Proxy, Nodes: n, FanOut: fan, Clients: 1})
			}
		}
	}
	cells = append(cells, p.curveCells(true)...)
	cells = append(cells, p.handoffCells(true)...)
	for i := range cells {
		if p.repeated(cells[i]) {
			cells[i].Repeats = p.Repeats
		}
	}
	return cells
}

// curveCells returns the throughput curve's extra cells, this library's
// or the peers'.
func (p Plan) curveCells(peers bool) []Cell {
	var cells []Cell
	n := p.CurveNodes()
	var extra []int
	for _, c := range p.Curve {
		if !slices.Contains(p.Concurrency, c) {
			extra = append(extra, c)
		}
	}
	if len(extra) == 0 {
		return nil
	}
	if !peers {
		for _, d := range p.Drivers {
			if d == "mem" {
				continue
			}
			for _, c := range extra {
				cells = append(cells, Cell{Library: Redlock, Driver: d, Scenario: Loopback, Nodes: n, FanOut: p.curveFan(), Clients: c, Duration: p.CurveDuration})
			}
		}
		return cells
	}
	for _, peer := range p.Peers {
		lib, drv, fan, ok := peerAt(peer, n)
		if !ok {
			continue
		}
		for _, c := range extra {
			cells = append(cells, Cell{Library: lib, Driver: drv, Scenario: Loopback, Nodes: n, FanOut: fan, Clients: c, Duration: p.CurveDuration})
		}
	}
	return cells
}

// handoffCells returns the Handoff cells, this library's or the peers'.
func (p Plan) handoffCells(peers bool) []Cell {
	var cells []Cell
	n := p.HandoffNodes()
	if !peers {
		for _, d := range p.HandoffDrivers {
			for _, m := range WaitModes {
				for _, c := range p.HandoffContenders {
					cells = append(cells, Cell{Library: Redlock, Driver: d, Scenario: Handoff, Nodes: n, FanOut: "multiplexed", Clients: c, SharedKey: true, Variant: m, Duration: p.HandoffDuration})
				}
			}
		}
		return cells
	}
	for _, peer := range p.Peers {
		lib, drv, fan, ok := peerAt(peer, n)
		if !ok {
			continue
		}
		for _, c := range p.HandoffContenders {
			cells = append(cells, Cell{Library: lib, Driver: drv, Scenario: Handoff, Nodes: n, FanOut: fan, Clients: c, SharedKey: true, Duration: p.HandoffDuration})
		}
	}
	return cells
}

// KindsWriterRounds is how many times KindsDuration the writer's cell
// runs: each of its waits takes about a TTL, and its p99 needs many.
const KindsWriterRounds = 4

// kindCells returns the Kinds cells: per driver, each chosen cell in
// KindCells' order, which puts every cell beside the mutex cell it is
// compared with. The one-client cells are repeated as the p50 targets'
// are (Repeats).
func (p Plan) kindCells() []Cell {
	var cells []Cell
	n, c := p.VariantNodes(), 32
	if len(p.Concurrency) > 0 {
		c = p.ThroughputClients()
	}
	for _, d := range p.KindsDrivers {
		for _, v := range KindCells {
			if !slices.Contains(p.Kinds, v) {
				continue
			}
			x := Cell{Library: Redlock, Driver: d, Scenario: Kinds, Nodes: n, FanOut: "multiplexed", Clients: 1, Variant: v}
			switch v {
			case KindRLock, KindLock, KindLockAll, KindLock3:
				if p.Repeats > 1 {
					x.Repeats = p.Repeats
				}
			case KindReaders:
				x.Clients, x.SharedKey = c, true
			case KindMutexKeys:
				x.Clients = c
			case KindPermits:
				x.Clients, x.SharedKey, x.Duration = c, true, p.KindsDuration
			case KindMutexPermits:
				x.Clients, x.Duration = c, p.KindsDuration
			case KindWriterWait:
				x.Clients, x.SharedKey, x.Duration = WriterWaitReaders, true, KindsWriterRounds*p.KindsDuration
			case KindLockAllHot:
				x.Clients, x.SharedKey, x.Duration = LockAllContenders, true, p.KindsDuration
			}
			cells = append(cells, x)
		}
	}
	return cells
}

// variantCells returns the Variants cells: a driver's variants run one
// after the other, so that they are measured close together in time.
func (p Plan) variantCells() []Cell {
	var cells []Cell
	if len(p.Variants) == 0 {
		return nil
	}
	n := p.VariantNodes()
	for _, d := range p.Drivers {
		for _, f := range p.FanOuts {
			for _, v := range p.Variants {
				cells = append(cells, Cell{Library: Redlock, Driver: d, Scenario: Variants, Nodes: n, FanOut: f, Clients: 1, Variant: v})
			}
		}
	}
	return cells
}

// ScenarioAddrs returns the scenario whose servers a cell of scenario sc
// runs against: the Variants, Handoff and Kinds cells run on the
// loopback servers.
func ScenarioAddrs(sc string) string {
	if sc == Variants || sc == Handoff || sc == Kinds {
		return Loopback
	}
	return sc
}

// ParseInts parses a comma-separated list of positive integers, sorted and
// without duplicates.
func ParseInts(s string) ([]int, error) {
	var out []int
	for _, f := range splitList(s) {
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive integer", f)
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("empty list")
	}
	slices.Sort(out)
	return out, nil
}

// ParseNames parses a comma-separated list of names, each of which must be
// in allowed, keeping the order of allowed. "all" means every allowed name;
// "none" or "" means none.
func ParseNames(s string, allowed []string) ([]string, error) {
	fields := splitList(s)
	if len(fields) == 1 && fields[0] == "all" {
		return slices.Clone(allowed), nil
	}
	if len(fields) == 1 && fields[0] == "none" {
		return nil, nil
	}
	for _, f := range fields {
		if !slices.Contains(allowed, f) {
			return nil, fmt.Errorf("unknown name %q (choose from %s)", f, strings.Join(allowed, ", "))
		}
	}
	var out []string
	for _, a := range allowed {
		if slices.Contains(fields, a) {
			out = append(out, a)
		}
	}
	return out, nil
}

// splitList splits on commas, trimming spaces and dropping empty fields.
func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// Matches reports whether c matches every non-zero field of want
// (SharedKey and Variant must match exactly).
func (c Cell) Matches(want Cell) bool {
	return (want.Library == "" || c.Library == want.Library) &&
		(want.Driver == "" || c.Driver == want.Driver) &&
		(want.Scenario == "" || c.Scenario == want.Scenario) &&
		(want.Nodes == 0 || c.Nodes == want.Nodes) &&
		(want.FanOut == "" || c.FanOut == want.FanOut) &&
		(want.Clients == 0 || c.Clients == want.Clients) &&
		c.SharedKey == want.SharedKey && c.Variant == want.Variant
}

// Find returns the first record whose cell matches want, or nil.
func Find(recs []Record, want Cell) *Record {
	for i := range recs {
		if recs[i].Matches(want) {
			return &recs[i]
		}
	}
	return nil
}
