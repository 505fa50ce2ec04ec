package main

import (
	"context"
	"fmt"
	"slices"
	"testing"

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
