package report

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/redlock-go/redlock/bench/matrix"
	"github.com/redlock-go/redlock/bench/measure"
	"github.com/redlock-go/redlock/bench/multiproc"
	"github.com/redlock-go/redlock/bench/servers"
)

// Target is one of the project's performance targets, checked against
// figures of the same run.
type Target struct {
	Name string `json:"name"`
	// Goal states the bound, Figures the numbers it was checked with.
	Goal    string  `json:"goal"`
	Figures string  `json:"figures"`
	Ratio   float64 `json:"ratio,omitempty"`
	// Measured is false when a needed cell is missing from the run.
	Measured bool   `json:"measured"`
	Pass     bool   `json:"pass"`
	Note     string `json:"note,omitempty"`
}

// pinnedOr says whether the run was pinned to one CPU, for a goal whose
// comparison means most when client and servers share that CPU.
func pinnedOr(env Env) string {
	if env.Pinned {
		return "pinned"
	}
	return "unpinned"
}

// redisDrivers are the redlock drivers over real Redis clients, in the
// order their target rows are printed.
var redisDrivers = []string{"redigo", "rueidis", "radix", "goredis", "valkeygo"}

// Reference subjects for the comparisons.
const (
	refPeer   = "redsync"
	refClient = "redigo"
	// zero is the largest per-op count that rounds to 0 at two decimals:
	// a long measured window amortises the runtime's own background
	// allocations and goroutines below it.
	zero = 0.005
	// handleAllocs is what a Client allocates of an uncontended pair: the
	// *Lock that TryLock returns.
	handleAllocs = 1
)

// The bounds of the targets that are ratios within the run, and the one
// absolute count.
const (
	proxyMuxBound        = 1.05 // multiplexed p50 behind the proxy over 2 measured round trips + floor
	p50OverRedsync       = 0.9  // one-client p50 over redsync+redigo's, pinned
	p50OverRedsyncBefore = 0.75 // the bound that row had before, kept in its note
	p50OverPingRounds    = 1.1  // one-client p50 over two measured all-server PING rounds
	tputOverRedsync      = 5    // throughput at high concurrency over the best redsync's
	tputOverRueidislock  = 2    // and over rueidislock's
	ceilingShare         = 0.8  // throughput at high concurrency over the CPU ceiling
	serversOverPipelined = 1.5  // servers' CPU per pair over the pipelined limit's
	clientOverServers    = 0.3  // client CPU per pair over the servers'
	goredisAllocs        = 32   // go-redis driver's allocations per pair at N=5
)

// allocDrivers are the subjects of the uncontended-allocations row: core
// (over the in-memory driver) and the two drivers whose clients allocate
// nothing per command.
var allocDrivers = []string{"mem", "redigo", "radix"}

// proxyCell is a cell of the proxy targets: its fan-out and clients.
type proxyCell struct {
	fan     string
	clients int
}

// proxyCells are the proxy targets' cells: multiplexed at one client and
// at the high concurrency, sequential at one client.
func proxyCells(clients int) []proxyCell {
	cs := []proxyCell{{"multiplexed", 1}}
	if clients > 1 {
		cs = append(cs, proxyCell{"multiplexed", clients})
	}
	return append(cs, proxyCell{"sequential", 1})
}

// repeats lists a record's repeated p50s, "30, 31, 90 µs", or its one p50.
func repeats(r matrix.Record) string {
	if len(r.RepeatP50Us) < 2 {
		return us(r.P50Us) + " µs"
	}
	return joined(r.RepeatP50Us, us) + " µs"
}

// joined lists xs, each as f writes it: "412, 398, 405".
func joined(xs []float64, f func(float64) string) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = f(x)
	}
	return strings.Join(s, ", ")
}

// p50Rounds lists a record's p50 in each interleaved round, "412, 398,
// 405".
func p50Rounds(r matrix.Record) string { return joined(r.RoundP50Us, us) }

// p50Ratios returns r's p50 over peer's round by round, when both were
// measured in the same rounds (measure.MedianLatency); nil otherwise.
func p50Ratios(r, peer matrix.Record) []float64 {
	return ratiosOf(r.RoundP50Us, peer.RoundP50Us)
}

// tputRounds lists a record's throughput in each interleaved round,
// "22355, 19001, 23410", or "" if it was measured once.
func tputRounds(r matrix.Record) string {
	if len(r.RepeatThroughput) < 2 {
		return ""
	}
	return joined(r.RepeatThroughput, func(t float64) string { return fmt.Sprintf("%.0f", t) })
}

// roundRatios returns r's throughput over peer's round by round, when
// both were measured in the same rounds (measure.MedianThroughput); nil
// otherwise.
func roundRatios(r, peer matrix.Record) []float64 {
	return ratiosOf(r.RepeatThroughput, peer.RepeatThroughput)
}

// ratiosOf returns a[i]/b[i] for rounds measured on both sides, or nil
// if a round is missing or has no figure (0: a round without pairs) on
// either side.
func ratiosOf(a, b []float64) []float64 {
	if len(a) < 2 || len(a) != len(b) {
		return nil
	}
	out := make([]float64, len(a))
	for i := range a {
		if a[i] <= 0 || b[i] <= 0 {
			return nil
		}
		out[i] = a[i] / b[i]
	}
	return out
}

// pipeDepth is the pipelined limit's depth in words, "100", or "N".
func pipeDepth(env Env) string {
	if env.Pipelined == nil {
		return "N"
	}
	return fmt.Sprint(env.Pipelined.Depth)
}

// why adds a reading error to a "not measured" item.
func why(err string) string {
	if err == "" {
		return ""
	}
	return " (" + firstLineOf(err) + ")"
}

func firstLineOf(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return shorten(s, 80)
}

// Notes on the run rather than on one target: Targets writes each once.
const (
	noteUnpinned = "unpinned run: latency targets are defined pinned (--pin: taskset -c 0, GOMAXPROCS=1)"
	notePinned   = "pinned run: the throughput target is defined unpinned"
	noteMini     = "miniredis servers: not a real deployment"
)

// Evaluate computes the targets from the records of one run. nodes is the
// N the targets are stated at (5), clients the high concurrency (32).
func Evaluate(recs []matrix.Record, env Env, nodes, clients int) []Target {
	var ts []Target
	latNote, tputNote := "", ""
	if !env.Pinned {
		latNote = noteUnpinned
	} else {
		tputNote = notePinned
	}
	if strings.HasPrefix(env.Servers, "miniredis") {
		latNote = join(latNote, noteMini)
		tputNote = join(tputNote, noteMini)
	}
	find := func(c matrix.Cell) *matrix.Record {
		r := matrix.Find(recs, c)
		if r == nil || r.Ops == 0 {
			return nil
		}
		return r
	}
	missing := func(name, goal string, what ...string) Target {
		return Target{Name: name, Goal: goal, Figures: "not measured: " + strings.Join(what, ", ")}
	}
	lb := func(lib, drv string, n int, fan string, c int) *matrix.Record {
		return find(matrix.Cell{Library: lib, Driver: drv, Scenario: matrix.Loopback, Nodes: n, FanOut: fan, Clients: c})
	}

	// 1. Core overhead over the in-memory driver (mean ≤ coreGoalUs), in a run with the
	// loopback matrix (not in one of the fencing and lease table or the
	// hot key alone).
	matrixRun := slices.ContainsFunc(recs, func(r matrix.Record) bool {
		return r.Scenario == matrix.Loopback || r.Scenario == matrix.Proxy
	})
	for _, fan := range []string{"multiplexed", "sequential"} {
		if !matrixRun {
			break
		}
		name := fmt.Sprintf("core overhead, mem N=%d %s", nodes, fan)
		goal := "at most 1 allocs/op (the handle) and mean ≤ 1 µs per acquire+release"
		r := lb(matrix.Redlock, "mem", nodes, fan, 1)
		if r == nil {
			ts = append(ts, missing(name, goal, "redlock+mem"))
			continue
		}
		note := latNote
		if f := r.FloorMeanUs; f > 0 {
			note = join(note, fmt.Sprintf("the bare in-memory pair (target.MemFloor: a token, memnode's acquire to a quorum of %d and release, the pair's 3 clock readings, no core, no runner): mean %.2f µs; this cell %.2f× it, %.2f µs above it",
				nodes, f, r.MeanUs/f, r.MeanUs-f))
			if f > coreGoalUs {
				note += "; the floor alone is above the goal"
			}
		}
		ts = append(ts, Target{Name: name, Goal: goal, Measured: true,
			Figures: fmt.Sprintf("%.2f allocs/op, mean %.2f µs (p50 %.2f µs)", r.AllocsPerOp, r.MeanUs, r.P50Us),
			Ratio:   r.MeanUs,
			Pass:    r.AllocsPerOp < handleAllocs+zero && r.MeanUs <= coreGoalUs, Note: note})
	}

	// 2. Against redsync+redigo at N, one client: p50 (the median of the
	// cells' repeats, when they were repeated) and allocations.
	peer := lb(refPeer, refClient, nodes, matrix.FanConcurrent, 1)
	for _, d := range redisDrivers {
		subj := "redlock+" + d
		r := lb(matrix.Redlock, d, nodes, "multiplexed", 1)
		name := fmt.Sprintf("%s N=%d multiplexed vs redsync+redigo: p50", subj, nodes)
		goal := fmt.Sprintf("p50 ≤ %.3g× redsync+redigo, %s", p50OverRedsync, pinnedOr(env))
		aname := fmt.Sprintf("%s N=%d multiplexed vs redsync+redigo: allocs", subj, nodes)
		agoal := "allocs/op ≤ 1/3 of redsync+redigo's"
		gname := fmt.Sprintf("%s N=%d multiplexed: goroutines per op", subj, nodes)
		ggoal := "no goroutine started per op"
		if r == nil {
			continue // driver not in this run
		}
		ts = append(ts, Target{Name: gname, Goal: ggoal, Measured: true,
			Figures: fmt.Sprintf("%.3f goroutines/op", r.GoroutinesPerOp), Ratio: r.GoroutinesPerOp,
			Pass: r.GoroutinesPerOp < zero})
		ts = append(ts, pingFloorTarget(subj, *r, env, nodes, latNote))
		if d == "goredis" {
			ts = append(ts, Target{Name: fmt.Sprintf("%s N=%d multiplexed: allocs per pair", subj, nodes),
				Goal: fmt.Sprintf("≤ %d allocs/op", goredisAllocs), Measured: true,
				Figures: fmt.Sprintf("%.1f allocs/op", r.AllocsPerOp), Ratio: r.AllocsPerOp / goredisAllocs,
				Pass: r.AllocsPerOp <= goredisAllocs})
		}
		if peer == nil {
			ts = append(ts, missing(name, goal, "redsync+redigo"), missing(aname, agoal, "redsync+redigo"))
			continue
		}
		ratio := r.P50Us / peer.P50Us
		figs := fmt.Sprintf("%.1f µs vs %.1f µs", r.P50Us, peer.P50Us)
		how := "the ratio of one p50 each"
		if rs := p50Ratios(*r, *peer); rs != nil {
			ratio = measure.MedianOf(rs)
			how = "the median of the interleaved rounds' ratios"
			figs = fmt.Sprintf("the median of the rounds' ratios; rounds %s vs %s µs, each the median of %d repeats",
				p50Rounds(*r), p50Rounds(*peer), max(len(r.RepeatP50Us), 1))
		} else if len(r.RepeatP50Us) > 1 || len(peer.RepeatP50Us) > 1 {
			how = "the ratio of the repeats' medians (no interleaved rounds to pair)"
			figs = fmt.Sprintf("median %s; repeats %s vs %s", figs, repeats(*r), repeats(*peer))
		}
		goal += "; " + how
		before := "met"
		if ratio > p50OverRedsyncBefore {
			before = "not met"
		}
		ts = append(ts, Target{Name: name, Goal: goal, Measured: true,
			Figures: figs, Ratio: ratio,
			Pass: ratio <= p50OverRedsync, Note: join(fmt.Sprintf("the earlier goal, ≤ %.3g×, %s", p50OverRedsyncBefore, before), latNote)})
		aratio := r.AllocsPerOp / peer.AllocsPerOp
		ts = append(ts, Target{Name: aname, Goal: agoal, Measured: true,
			Figures: fmt.Sprintf("%.1f vs %.1f allocs/op", r.AllocsPerOp, peer.AllocsPerOp), Ratio: aratio,
			Pass: aratio <= 1.0/3})
	}

	if t, ok := allocTarget(lb, nodes); ok {
		ts = append(ts, t)
	}

	// 3. Behind the latency proxy. Multiplexed, at one client and at the
	// high concurrency: against two round trips through the proxy as
	// measured (its PING round trip less the direct one) plus the
	// loopback cell's p50 at the same concurrency. Sequential, one
	// client: against 2N nominal round trips plus the loopback floor.
	if env.ProxyDelayMs > 0 {
		nominal := 2 * env.ProxyDelayMs * 1000 // µs
		measured := env.ProxyPingUs - env.LoopbackPingUs
		for _, d := range redisDrivers {
			subj := "redlock+" + d
			for _, cell := range proxyCells(clients) {
				fan := cell.fan
				px := find(matrix.Cell{Library: matrix.Redlock, Driver: d, Scenario: matrix.Proxy, Nodes: nodes, FanOut: fan, Clients: cell.clients})
				floor := lb(matrix.Redlock, d, nodes, fan, cell.clients)
				if px == nil && floor == nil {
					continue
				}
				name := fmt.Sprintf("%s N=%d %s behind a %.3g ms/direction proxy", subj, nodes, fan, env.ProxyDelayMs)
				if fan == "multiplexed" {
					name = fmt.Sprintf("%s N=%d %s, %d %s, behind a %.3g ms/direction proxy",
						subj, nodes, fan, cell.clients, plural(cell.clients, "client", "clients"), env.ProxyDelayMs)
				}
				if fan == "sequential" {
					trips := 2 * nodes
					goal := fmt.Sprintf("p50 ≈ %d round trips + loopback floor (0.9–1.15×)", trips)
					if px == nil || floor == nil {
						ts = append(ts, missing(name, goal, "proxy or loopback cell"))
						continue
					}
					ref := float64(trips)*nominal + floor.P50Us
					ratio := px.P50Us / ref
					n := latNote
					if env.ProxyPingUs > 0 {
						real := float64(trips)*measured + floor.P50Us
						n = join(fmt.Sprintf("with the measured proxy round trip (%.0f µs): %.3g×", measured, px.P50Us/real), n)
					}
					ts = append(ts, Target{Name: name, Goal: goal, Measured: true,
						Figures: fmt.Sprintf("%.0f µs vs %d×%.0f µs + %.0f µs = %.0f µs", px.P50Us, trips, nominal, floor.P50Us, ref),
						Ratio:   ratio, Pass: ratio >= 0.9 && ratio <= 1.15, Note: n})
					continue
				}
				goal := fmt.Sprintf("p50 ≤ %.3g× (2 measured proxy round trips + loopback floor)", proxyMuxBound)
				if px == nil || floor == nil {
					ts = append(ts, missing(name, goal, "proxy or loopback cell"))
					continue
				}
				rtt, n := measured, latNote
				if env.ProxyPingUs <= 0 {
					rtt = nominal
					n = join("proxy round trip not measured (TLS or no PING): the nominal one", n)
				}
				ref := 2*rtt + floor.P50Us
				ratio := px.P50Us / ref
				if env.ProxyRoundPingUs > 0 {
					round := env.ProxyRoundPingUs - env.LoopbackRoundPingUs
					n = join(fmt.Sprintf("with the measured round of PINGs to all servers through the proxies (%.0f µs): %.3g×",
						round, px.P50Us/(2*round+floor.P50Us)), n)
				}
				ts = append(ts, Target{Name: name, Goal: goal, Measured: true,
					Figures: fmt.Sprintf("%.0f µs vs 2×%.0f µs + %.0f µs = %.0f µs", px.P50Us, rtt, floor.P50Us, ref),
					Ratio:   ratio, Pass: ratio <= proxyMuxBound, Note: n})
			}
		}
	}

	// 4. Throughput at high concurrency: against the best Redlock peer
	// (redsync over any client), and against rueidislock (one server).
	var bestRedlock, rueidis *matrix.Record
	for i := range recs {
		r := &recs[i]
		if r.IsPeer() && r.Scenario == matrix.Loopback && r.Nodes == nodes && r.Clients == clients && !r.SharedKey && r.Ops > 0 {
			if r.Library == matrix.Redsync && (bestRedlock == nil || r.Throughput > bestRedlock.Throughput) {
				bestRedlock = r
			}
			if r.Library == matrix.Rueidislock && (rueidis == nil || r.Throughput > rueidis.Throughput) {
				rueidis = r
			}
		}
	}
	for _, d := range redisDrivers {
		r := lb(matrix.Redlock, d, nodes, "multiplexed", clients)
		if r == nil {
			continue
		}
		for _, vs := range []struct {
			peer       *matrix.Record
			short, who string
			bound      float64
		}{
			{bestRedlock, "redsync", "the best Redlock peer's (redsync over any client)", tputOverRedsync},
			{rueidis, "rueidislock", "rueidislock's (one server)", tputOverRueidislock},
		} {
			name := fmt.Sprintf("redlock+%s N=%d multiplexed, %d clients: throughput vs %s", d, nodes, clients, vs.short)
			goal := fmt.Sprintf("≥ %.3g× %s", vs.bound, vs.who)
			if vs.peer == nil {
				ts = append(ts, missing(name, goal, vs.short))
				continue
			}
			ratio := r.Throughput / vs.peer.Throughput
			n := tputNote
			if ceiling, how, ok := cpuCeiling(env); ok {
				n = join(fmt.Sprintf("CPU ceiling %.0f ops/s (%s), %.3g× the peer; this cell reaches %.0f%% of it",
					ceiling, how, ceiling/vs.peer.Throughput, 100*r.Throughput/ceiling), n)
			}
			figs := fmt.Sprintf("%.0f vs %.0f ops/s (%s)", r.Throughput, vs.peer.Throughput, vs.peer.Subject())
			if rs := roundRatios(*r, *vs.peer); len(rs) > 1 {
				// Each round's two sides ran seconds apart: the ratio is
				// the median of the rounds' own.
				ratio = measure.MedianOf(rs)
				figs = fmt.Sprintf("the median of the rounds' ratios; rounds %s vs %s ops/s (%s); the median rounds %.0f vs %.0f",
					tputRounds(*r), tputRounds(*vs.peer), vs.peer.Subject(), r.Throughput, vs.peer.Throughput)
			} else if a := tputRounds(*r); a != "" {
				figs = fmt.Sprintf("%s; rounds %s ops/s, the peer's measured once", figs, a)
			}
			ts = append(ts, Target{Name: name, Goal: goal, Measured: true,
				Figures: figs, Ratio: ratio, Pass: ratio >= vs.bound, Note: n})
		}
	}

	// The same cells as a share of the CPU ceiling.
	for _, d := range redisDrivers {
		if r := lb(matrix.Redlock, d, nodes, "multiplexed", clients); r != nil {
			ts = append(ts, ceilingTarget(fmt.Sprintf("redlock+%s N=%d multiplexed, %d clients", d, nodes, clients), *r, env, tputNote))
		}
	}

	// 5. CPU at high concurrency: the servers' CPU per pair against the
	// servers' pipelined limit, and the client's against the servers'.
	for _, d := range redisDrivers {
		r := lb(matrix.Redlock, d, nodes, "multiplexed", clients)
		if r == nil {
			continue
		}
		subj := fmt.Sprintf("redlock+%s N=%d multiplexed, %d clients", d, nodes, clients)
		name := subj + ": servers' CPU per pair vs the pipelined limit"
		goal := fmt.Sprintf("≤ %.3g× the servers' CPU per pair pipelined %s deep", serversOverPipelined, pipeDepth(env))
		p := env.Pipelined
		switch {
		case r.ServersCPUUsPerOp <= 0:
			ts = append(ts, missing(name, goal, "the servers' CPU of the cell"+why(r.ServersCPUError)))
		case p == nil || p.ServersCPUUsPerOp <= 0:
			ts = append(ts, missing(name, goal, "the pipelined limit"))
		default:
			ratio := r.ServersCPUUsPerOp / p.ServersCPUUsPerOp
			t := Target{Name: name, Goal: goal, Measured: true,
				Figures: fmt.Sprintf("%.2f vs %.2f µs/pair (%d servers, %d deep)", r.ServersCPUUsPerOp, p.ServersCPUUsPerOp, p.Servers, p.Depth),
				Ratio:   ratio, Pass: ratio <= serversOverPipelined}
			if p.Servers != r.Servers() {
				t.Note = fmt.Sprintf("the limit ran on %d servers, the cell on %d", p.Servers, r.Servers())
			}
			if q := env.PipelinedAtClients; q != nil && q.ServersCPUUsPerOp > 0 {
				t.Note = join(fmt.Sprintf("pipelined %d deep, the most %d clients put in one read: %.2f µs/pair (%.3g× the %d-deep limit; this cell %.3g× it)",
					q.Depth, clients, q.ServersCPUUsPerOp, q.ServersCPUUsPerOp/p.ServersCPUUsPerOp, p.Depth, r.ServersCPUUsPerOp/q.ServersCPUUsPerOp), t.Note)
			}
			t.Note = join(t.Note, readsNote(r, env.PipelinedAtClients, p))
			ts = append(ts, t)
		}
		name = subj + ": client CPU per pair vs the servers'"
		goal = fmt.Sprintf("≤ %.3g× the servers' CPU per pair", clientOverServers)
		switch {
		case r.ClientCPUUsPerOp <= 0:
			ts = append(ts, missing(name, goal, "the client's CPU (getrusage)"))
		case r.ServersCPUUsPerOp <= 0:
			ts = append(ts, missing(name, goal, "the servers' CPU of the cell"+why(r.ServersCPUError)))
		default:
			ratio := r.ClientCPUUsPerOp / r.ServersCPUUsPerOp
			t := Target{Name: name, Goal: goal, Measured: true,
				Figures: fmt.Sprintf("%.2f vs %.2f µs/pair", r.ClientCPUUsPerOp, r.ServersCPUUsPerOp),
				Ratio:   ratio, Pass: ratio <= clientOverServers}
			// What the bare pipelined loop's client pays against its
			// servers: the same commands with no lock, no goroutine
			// handoff, loopback's kernel work included.
			for _, q := range []*servers.Pipelined{env.PipelinedAtClients, env.Pipelined} {
				if q != nil && q.ClientCPUUsPerOp > 0 && q.ServersCPUUsPerOp > 0 {
					t.Note = join(t.Note, fmt.Sprintf("the bare pipelined loop %d deep: client %.2f vs servers %.2f µs/pair (%.3g×)",
						q.Depth, q.ClientCPUUsPerOp, q.ServersCPUUsPerOp, q.ClientCPUUsPerOp/q.ServersCPUUsPerOp))
				}
			}
			ts = append(ts, t)
		}
	}
	ts = append(ts, variantTargets(recs)...)
	ts = append(ts, handoffTargets(recs, env, latNote)...)
	return append(ts, kindTargets(recs, latNote, tputNote)...)
}

// pingFloorTarget is the one-client p50 of subj's multiplexed cell r
// against its physical floor: two rounds (the acquisition's and the
// release's) of a PING sent to all the target's servers at once and
// answered by all, measured in the same run.
func pingFloorTarget(subj string, r matrix.Record, env Env, nodes int, latNote string) Target {
	name := fmt.Sprintf("%s N=%d multiplexed, 1 client: p50 vs two all-server PING rounds", subj, nodes)
	goal := fmt.Sprintf("p50 ≤ %.3g× two measured rounds of a PING to all %d servers at once", p50OverPingRounds, nodes)
	ping := env.LoopbackRoundPingUs
	if ping <= 0 {
		return Target{Name: name, Goal: goal, Figures: "not measured: the round of PINGs to every server (none with --tls)"}
	}
	floor := 2 * ping
	ratio := r.P50Us / floor
	figs := fmt.Sprintf("%s µs vs 2×%.0f µs = %.0f µs", us(r.P50Us), ping, floor)
	switch {
	case len(r.RoundP50Us) > 1:
		figs += fmt.Sprintf("; the median of rounds %s µs, each the median of %d repeats", p50Rounds(r), max(len(r.RepeatP50Us), 1))
	case len(r.RepeatP50Us) > 1:
		figs += "; the median of repeats " + repeats(r)
	}
	note := fmt.Sprintf("%.0f µs above the floor", r.P50Us-floor)
	// What a pair costs the CPUs beyond the PINGs: the client's work and
	// the servers' commands, measured in the cell.
	if r.ClientCPUUsPerOp > 0 && r.ServersCPUUsPerOp > 0 {
		note += fmt.Sprintf("; this cell's CPU per pair: client %.0f µs (%.3g× the floor), servers %.0f µs",
			r.ClientCPUUsPerOp, r.ClientCPUUsPerOp/floor, r.ServersCPUUsPerOp)
	}
	return Target{Name: name, Goal: goal, Measured: true, Figures: figs, Ratio: ratio,
		Pass: ratio <= p50OverPingRounds, Note: join(note, latNote)}
}

// allocTarget is the uncontended pair's allocations per pair, one client
// at nodes, multiplexed, over core alone (mem) and the drivers of
// allocDrivers; false when none of them ran.
func allocTarget(lb func(lib, drv string, n int, fan string, c int) *matrix.Record, nodes int) (Target, bool) {
	var names, figs []string
	measured, pass, most := true, true, 0.0
	for _, d := range allocDrivers {
		label := d
		if d == "mem" {
			label = "core"
		}
		names = append(names, label)
		r := lb(matrix.Redlock, d, nodes, "multiplexed", 1)
		if r == nil {
			measured = false
			figs = append(figs, "not measured")
			continue
		}
		figs = append(figs, fmt.Sprintf("%.2f", r.AllocsPerOp))
		pass = pass && r.AllocsPerOp < handleAllocs+zero
		most = max(most, r.AllocsPerOp)
	}
	if !slices.ContainsFunc(figs, func(f string) bool { return f != "not measured" }) {
		return Target{}, false
	}
	t := Target{Name: fmt.Sprintf("uncontended pair allocations, N=%d multiplexed, 1 client: %s", nodes, strings.Join(names, " / ")),
		Goal:    fmt.Sprintf("≤ %d allocs/op each: none but the handle's *Lock (0 where it does not escape)", handleAllocs),
		Figures: strings.Join(figs, " / ") + " allocs/op", Measured: measured, Pass: measured && pass}
	if measured {
		t.Ratio = most
	}
	return t, true
}

// cpuCeiling is the most pairs per second a client can do on a machine
// whose CPUs it shares with its servers: the CPUs (one, pinned) over
// what the bare pipelined loop at the clients' depth costs the client
// and the servers together per pair. how says what it was computed from;
// ok is false when the loop was not measured or the servers run
// elsewhere.
func cpuCeiling(env Env) (ceiling float64, how string, ok bool) {
	q := env.PipelinedAtClients
	if q == nil || q.ClientCPUUsPerOp <= 0 || q.ServersCPUUsPerOp <= 0 || env.NumCPU <= 0 || env.ServerAddrs != nil {
		return 0, "", false
	}
	cpus := env.NumCPU
	if env.Pinned { // client and servers on one CPU
		cpus = 1
	}
	ceiling = float64(cpus) * 1e6 / (q.ClientCPUUsPerOp + q.ServersCPUUsPerOp)
	return ceiling, fmt.Sprintf("%d %s over the bare pipelined loop %d deep: %.2f + %.2f µs/pair",
		cpus, plural(cpus, "CPU", "CPUs"), q.Depth, q.ClientCPUUsPerOp, q.ServersCPUUsPerOp), true
}

// ceilingTarget is the throughput of subj's high-concurrency cell r as a
// share of the CPU ceiling.
func ceilingTarget(subj string, r matrix.Record, env Env, note string) Target {
	name := subj + ": pairs/s as a share of the CPU ceiling"
	goal := fmt.Sprintf("≥ %.0f%% of the CPU ceiling (the CPUs over the bare pipelined loop's client + servers' CPU per pair)", 100*ceilingShare)
	ceiling, how, ok := cpuCeiling(env)
	if !ok {
		what := "the pipelined loop at the clients' depth"
		if env.ServerAddrs != nil {
			what = "a CPU ceiling (the servers run elsewhere)"
		}
		return Target{Name: name, Goal: goal, Figures: "not measured: " + what}
	}
	share := r.Throughput / ceiling
	figs := fmt.Sprintf("%.0f of %.0f pairs/s (%s)", r.Throughput, ceiling, how)
	if rounds := tputRounds(r); rounds != "" {
		figs += "; the median of rounds " + rounds + " pairs/s"
	}
	if r.ClientCPUUsPerOp > 0 && r.ServersCPUUsPerOp > 0 {
		q := env.PipelinedAtClients
		note = join(fmt.Sprintf("this cell's CPU per pair: client %.2f + servers %.2f µs, %.3g× the loop's", r.ClientCPUUsPerOp, r.ServersCPUUsPerOp,
			(r.ClientCPUUsPerOp+r.ServersCPUUsPerOp)/(q.ClientCPUUsPerOp+q.ServersCPUUsPerOp)), note)
	}
	return Target{Name: name, Goal: goal, Measured: true, Figures: figs, Ratio: share, Pass: share >= ceilingShare, Note: note}
}

// variantTargets are the targets of the fencing and lease table, at the N
// it ran: fencing adds exactly one round to a pair, on every driver and
// fan-out; core's plain and fenced pairs allocate nothing (mem).
func variantTargets(recs []matrix.Record) []Target {
	var vs []matrix.Record
	for _, r := range recs {
		if r.Scenario == matrix.Variants && r.Ops > 0 {
			vs = append(vs, r)
		}
	}
	if len(vs) == 0 {
		return nil
	}
	nodes := vs[0].Nodes
	get := func(drv, fan, variant string) *matrix.Record {
		return matrix.Find(vs, matrix.Cell{Library: matrix.Redlock, Driver: drv, Scenario: matrix.Variants, Nodes: nodes, FanOut: fan, Clients: 1, Variant: variant})
	}
	var ts []Target
	for _, d := range append([]string{"mem"}, redisDrivers...) {
		name := fmt.Sprintf("fencing adds exactly one round: redlock+%s N=%d", d, nodes)
		goal := "rounds/op fenced − plain = 1 in every fan-out"
		var figs []string
		measured, pass, ratio := false, true, 0.0
		for _, fan := range []string{"multiplexed", "sequential"} {
			p, f := get(d, fan, "plain"), get(d, fan, "fenced")
			switch {
			case p == nil && f == nil:
				continue
			case p == nil || f == nil:
				figs = append(figs, fan+": not measured: plain or fenced cell")
				pass = false
				continue
			}
			diff := f.RoundsPerOp - p.RoundsPerOp
			if !measured {
				ratio = diff
			}
			measured = true
			pass = pass && math.Abs(diff-1) < 1e-9
			figs = append(figs, fmt.Sprintf("%s %.3g → %.3g", fan, p.RoundsPerOp, f.RoundsPerOp))
		}
		if len(figs) == 0 {
			continue // driver not in the table
		}
		t := Target{Name: name, Goal: goal, Figures: strings.Join(figs, ", "), Measured: measured, Pass: measured && pass}
		if measured {
			t.Ratio = ratio
		}
		ts = append(ts, t)
	}
	var figs []string
	pass, most := true, 0.0
	for _, fan := range []string{"multiplexed", "sequential"} {
		var got []string
		for _, v := range []string{"plain", "fenced"} {
			if r := get("mem", fan, v); r != nil {
				got = append(got, fmt.Sprintf("%s %.2f", v, r.AllocsPerOp))
				pass = pass && r.AllocsPerOp < handleAllocs+zero
				most = max(most, r.AllocsPerOp)
			}
		}
		if len(got) > 0 {
			figs = append(figs, fan+": "+strings.Join(got, ", "))
		}
	}
	if len(figs) > 0 {
		ts = append(ts, Target{Name: fmt.Sprintf("core acquire+release, plain and fenced: redlock+mem N=%d", nodes),
			Goal: "at most 1 allocs/op (the handle)", Figures: strings.Join(figs, "; ") + " allocs/op", Ratio: most, Measured: true, Pass: pass})
	}
	return ts
}

// coreGoalUs is the core overhead target's goal: the mean in-memory
// pair, in µs.
const coreGoalUs = 1.0

func join(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}

func verdict(t Target) string {
	switch {
	case !t.Measured:
		return "n/a"
	case t.Pass:
		return "PASS"
	}
	return "FAIL"
}

func ratio(t Target) string {
	if !t.Measured || math.IsNaN(t.Ratio) || math.IsInf(t.Ratio, 0) {
		return ""
	}
	return fmt.Sprintf("%.3g", t.Ratio)
}

// Targets writes the targets in lines of at most TableWidth columns: per
// target, its verdict, ratio and name, then its goal and figures, then its
// own notes, indented. Notes on the run (unpinned, miniredis) are numbered
// and written once, after the targets.
func Targets(w io.Writer, ts []Target) error {
	rw := len("ratio")
	for _, t := range ts {
		rw = max(rw, len(ratio(t)))
	}
	indent := strings.Repeat(" ", len("verdict  ")+rw+2) // under the name
	// shared holds the notes written once, after the targets; a target
	// refers to the first as [1].
	var shared []string
	var b strings.Builder
	fmt.Fprintf(&b, "verdict  %*s  target\n", rw, "ratio")
	for _, t := range ts {
		var own, marks []string
		for _, n := range noteParts(t.Note) {
			if n != noteUnpinned && n != notePinned && n != noteMini {
				own = append(own, n)
				continue
			}
			i := slices.Index(shared, n)
			if i < 0 {
				shared = append(shared, n)
				i = len(shared) - 1
			}
			marks = append(marks, fmt.Sprintf("[%d]", i+1))
		}
		name := t.Name
		if len(marks) > 0 {
			name += " " + strings.Join(marks, "")
		}
		b.WriteString(shorten(fmt.Sprintf("%-7s  %*s  %s", verdict(t), rw, ratio(t), name), TableWidth) + "\n")
		for _, l := range append([]string{"goal: " + t.Goal, "got:  " + t.Figures}, own...) {
			b.WriteString(shorten(indent+l, TableWidth) + "\n")
		}
	}
	for i, n := range shared {
		b.WriteString(shorten(fmt.Sprintf("[%d] %s", i+1, n), TableWidth) + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// noteParts splits a note that join built back into its parts.
func noteParts(note string) []string {
	if note == "" {
		return nil
	}
	return strings.Split(note, "; ")
}

func writeTargetsMarkdown(b *strings.Builder, ts []Target) {
	b.WriteString("| verdict | target | goal | ratio | figures | note |\n|---|---|---|--:|---|---|\n")
	for _, t := range ts {
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s |\n", verdict(t), t.Name, t.Goal, ratio(t), t.Figures, t.Note)
	}
}

// MultiProcTarget is the target row of the hot key across processes;
// false when the run has no such cell.
func MultiProcTarget(recs []multiproc.Record) (Target, bool) {
	if len(recs) == 0 {
		return Target{}, false
	}
	t := Target{}
	t.Name, t.Goal, t.Figures, t.Ratio, t.Measured, t.Pass, t.Note = multiproc.Target(recs)
	return t, true
}

// readsNote says how many reads of their input the servers made per pair
// in r, and so how many commands a read carried (a pair sends two to each
// of its servers), beside the pipelined loops' reads: a server's CPU per
// pair falls with the commands a read carries. "" when r has no count.
func readsNote(r *matrix.Record, loops ...*servers.Pipelined) string {
	if r.ServersReadsPerOp <= 0 {
		return ""
	}
	s := fmt.Sprintf("the servers read their input %.3g times per pair, %.3g commands a read", r.ServersReadsPerOp, float64(2*r.Servers())/r.ServersReadsPerOp)
	for _, q := range loops {
		if q != nil && q.ServersReadsPerOp > 0 {
			s += fmt.Sprintf("; the loop %d deep %.3g times (%.3g a read)", q.Depth, q.ServersReadsPerOp, float64(2*q.Servers)/q.ServersReadsPerOp)
		}
	}
	return s
}
