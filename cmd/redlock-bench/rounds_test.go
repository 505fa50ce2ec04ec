package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redlock-go/redlock/bench/matrix"
	"github.com/redlock-go/redlock/bench/measure"
)

// interleaveRounds alternates this library's cells with the peers', round
// by round, measures the pipelined loops after each round, and keeps each cell's median round, the first measurement
// included; a cell some round missed keeps its first measurement.
func TestInterleaveRounds(t *testing.T) {
	ours := matrix.Cell{Library: matrix.Redlock, Driver: "redigo", Scenario: matrix.Loopback, Nodes: 5, FanOut: "multiplexed", Clients: 32}
	theirs := matrix.Cell{Library: matrix.Redsync, Driver: "redigo", Scenario: matrix.Loopback, Nodes: 5, FanOut: matrix.FanConcurrent, Clients: 32}
	missed := matrix.Cell{Library: matrix.Rueidislock, Driver: "rueidis", Scenario: matrix.Loopback, Nodes: 5, FanOut: matrix.FanKeys, Clients: 32}
	other := matrix.Cell{Library: matrix.Redlock, Driver: "redigo", Scenario: matrix.Loopback, Nodes: 5, FanOut: "multiplexed", Clients: 1}
	rec := func(c matrix.Cell, tput float64) matrix.Record {
		return matrix.Record{Cell: c, Result: measure.Result{Ops: 100, Throughput: tput}}
	}
	recs := []matrix.Record{rec(ours, 900), rec(theirs, 100), rec(missed, 50), rec(other, 7)}

	var calls []string
	// Round 1 is slow for both sides, round 2 fast for both.
	tput := map[string][]float64{ours.Name(): {300, 1000}, theirs.Name(): {40, 110}, missed.Name(): {60}}
	run := func(side string) func(int, []matrix.Cell, func(matrix.Record)) error {
		return func(i int, cells []matrix.Cell, keep func(matrix.Record)) error {
			for _, c := range cells {
				calls = append(calls, fmt.Sprintf("%d %s %s", i, side, c.Library))
				if ts := tput[c.Name()]; i <= len(ts) {
					keep(rec(c, ts[i-1]))
				}
			}
			return nil
		}
	}
	after := func(i int) { calls = append(calls, fmt.Sprintf("%d loops", i)) }
	err := interleaveRounds(context.Background(), 2, []matrix.Cell{ours, theirs, missed}, recs, run("ours"), run("peers"), after)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"1 ours redlock", "1 peers redsync", "1 peers rueidislock", "1 loops", "2 ours redlock", "2 peers redsync", "2 peers rueidislock", "2 loops"}
	if !slices.Equal(calls, want) {
		t.Errorf("calls = %q, want %q", calls, want)
	}
	for _, tc := range []struct {
		r      matrix.Record
		tput   float64
		rounds []float64
	}{
		{recs[0], 900, []float64{900, 300, 1000}},
		{recs[1], 100, []float64{100, 40, 110}},
		{recs[2], 50, nil}, // round 2 did not measure it
		{recs[3], 7, nil},  // not a round cell
	} {
		if tc.r.Throughput != tc.tput || !slices.Equal(tc.r.RepeatThroughput, tc.rounds) {
			t.Errorf("%s: %v ops/s, rounds %v; want %v, %v", tc.r.Subject(), tc.r.Throughput, tc.r.RepeatThroughput, tc.tput, tc.rounds)
		}
	}
}

// A round that fails ends the rounds: every cell keeps its first
// measurement, and the error comes back for the run's notes.
func TestInterleaveRoundsFailure(t *testing.T) {
	ours := matrix.Cell{Library: matrix.Redlock, Driver: "redigo", Scenario: matrix.Loopback, Nodes: 5, FanOut: "multiplexed", Clients: 32}
	theirs := matrix.Cell{Library: matrix.Redsync, Driver: "redigo", Scenario: matrix.Loopback, Nodes: 5, FanOut: matrix.FanConcurrent, Clients: 32}
	recs := []matrix.Record{{Cell: ours, Result: measure.Result{Ops: 1, Throughput: 900}}, {Cell: theirs, Result: measure.Result{Ops: 1, Throughput: 100}}}
	boom := errors.New("peer command: exit status 1")
	var loops []int
	err := interleaveRounds(context.Background(), 2, []matrix.Cell{ours, theirs}, recs,
		func(i int, cells []matrix.Cell, keep func(matrix.Record)) error {
			keep(matrix.Record{Cell: cells[0], Result: measure.Result{Ops: 1, Throughput: 100 * float64(i)}})
			return nil
		},
		func(i int, cells []matrix.Cell, keep func(matrix.Record)) error {
			if i == 2 {
				return boom
			}
			keep(matrix.Record{Cell: cells[0], Result: measure.Result{Ops: 1, Throughput: 50}})
			return nil
		},
		func(i int) { loops = append(loops, i) })
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the round's", err)
	}
	if !slices.Equal(loops, []int{1}) {
		t.Errorf("loops after rounds %v, want [1]", loops)
	}
	for _, r := range recs {
		if r.RepeatThroughput != nil || (r.Throughput != 900 && r.Throughput != 100) {
			t.Errorf("%s: %v ops/s, rounds %v: want its first measurement alone", r.Subject(), r.Throughput, r.RepeatThroughput)
		}
	}
}

// --replot evaluates the targets again at the run's own N and
// concurrency: 5 and 32 when the matrix has them, else its largest; the
// curve's points and the shared-key cells do not count.
func TestTargetShape(t *testing.T) {
	cell := func(n, c int, curve time.Duration, shared bool) matrix.Record {
		return matrix.Record{Cell: matrix.Cell{Library: matrix.Redlock, Driver: "redigo", Scenario: matrix.Loopback, Nodes: n, FanOut: "multiplexed", Clients: c, Duration: curve, SharedKey: shared}}
	}
	for _, tc := range []struct {
		recs          []matrix.Record
		nodes, client int
	}{
		{[]matrix.Record{cell(1, 1, 0, false), cell(5, 32, 0, false), cell(5, 64, time.Second, false), cell(7, 32, 0, false)}, 5, 32},
		{[]matrix.Record{cell(1, 1, 0, false), cell(3, 16, 0, false), cell(3, 64, 0, true)}, 3, 16},
		{nil, 5, 32},
	} {
		if n, c := targetShape(tc.recs); n != tc.nodes || c != tc.client {
			t.Errorf("targetShape = %d, %d; want %d, %d", n, c, tc.nodes, tc.client)
		}
	}
}

// A p50 target's cell (repeated) keeps its median round by p50, with
// every round's p50; its throughput does not pick the round.
func TestInterleaveRoundsP50(t *testing.T) {
	ours := matrix.Cell{Library: matrix.Redlock, Driver: "radix", Scenario: matrix.Loopback, Nodes: 5, FanOut: "multiplexed", Clients: 1, Repeats: 3}
	theirs := matrix.Cell{Library: matrix.Redsync, Driver: "redigo", Scenario: matrix.Loopback, Nodes: 5, FanOut: matrix.FanConcurrent, Clients: 1, Repeats: 3}
	rec := func(c matrix.Cell, p50, tput float64) matrix.Record {
		return matrix.Record{Cell: c, Result: measure.Result{Ops: 100, P50Us: p50, Throughput: tput}}
	}
	recs := []matrix.Record{rec(ours, 400, 2000), rec(theirs, 700, 1400)}
	p50 := map[string][]float64{ours.Name(): {650, 420}, theirs.Name(): {720, 460}}
	run := func(i int, cells []matrix.Cell, keep func(matrix.Record)) error {
		for _, c := range cells {
			keep(rec(c, p50[c.Name()][i-1], 1e6/p50[c.Name()][i-1]))
		}
		return nil
	}
	if err := interleaveRounds(context.Background(), 2, []matrix.Cell{ours, theirs}, recs, run, run, func(int) {}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		r      matrix.Record
		p50    float64
		rounds []float64
	}{
		{recs[0], 420, []float64{400, 650, 420}},
		{recs[1], 700, []float64{700, 720, 460}},
	} {
		if tc.r.P50Us != tc.p50 || !slices.Equal(tc.r.RoundP50Us, tc.rounds) || tc.r.RepeatThroughput != nil {
			t.Errorf("%s: p50 %v, rounds %v, throughput rounds %v; want %v, %v, none", tc.r.Subject(), tc.r.P50Us, tc.r.RoundP50Us, tc.r.RepeatThroughput, tc.p50, tc.rounds)
		}
	}
}

// A checked cell's later rounds count in its exclusion check: a
// violation in round 2 breaks the record's check and writes its note,
// even when a round fails after it.
func TestInterleaveRoundsAddsChecks(t *testing.T) {
	cell := matrix.Cell{Library: matrix.Redlock, Driver: "redigo", Scenario: matrix.Kinds, Nodes: 5, FanOut: "multiplexed", Clients: 32, SharedKey: true, Variant: matrix.KindPermits}
	if !matrix.KindRounds(cell) {
		t.Fatal("the semaphore's cell is not a round cell")
	}
	for _, fail := range []bool{false, true} {
		first := measure.Exclusion{Sections: 100, MaxHolders: 3, Limit: 4}
		recs := []matrix.Record{{Cell: cell, Result: measure.Result{Ops: 100, Throughput: 50}, Exclusion: &first}}
		ours := func(i int, cells []matrix.Cell, keep func(matrix.Record)) error {
			if i == 3 && fail {
				return errors.New("child died")
			}
			e := measure.Exclusion{Sections: 100, MaxHolders: 4, Limit: 4}
			if i == 2 {
				e.Violations, e.MaxHolders = 1, 5
			}
			keep(matrix.Record{Cell: cell, Result: measure.Result{Ops: 100, Throughput: 60}, Exclusion: &e})
			return nil
		}
		none := func(int, []matrix.Cell, func(matrix.Record)) error { return nil }
		err := interleaveRounds(context.Background(), 3, []matrix.Cell{cell}, recs, ours, none, func(int) {})
		if fail != (err != nil) {
			t.Fatalf("fail %v: err %v", fail, err)
		}
		e := recs[0].Exclusion
		wantSections := int64(400)
		if fail {
			wantSections = 300
		}
		if e.Ok() || e.Violations != 1 || e.MaxHolders != 5 || e.Sections != wantSections || recs[0].Note == "" {
			t.Errorf("fail %v: check %+v, note %q", fail, *e, recs[0].Note)
		}
	}
}
