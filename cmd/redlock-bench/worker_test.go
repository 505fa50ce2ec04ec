package main

import (
	"context"
	"testing"
	"time"

	"github.com/redlock-go/redlock/bench/matrix"
	"github.com/redlock-go/redlock/bench/target"
)

// A one-client mem cell carries the floor of its core overhead target,
// measured beside it; other cells do not.
func TestMemCellMeasuresItsFloor(t *testing.T) {
	req := matrix.PeerRequest{RunID: "t", TTL: time.Minute, Duration: 20 * time.Millisecond}
	one := matrix.Cell{Library: matrix.Redlock, Driver: "mem", Scenario: matrix.Loopback, Nodes: 5, FanOut: "multiplexed", Clients: 1}
	rec := measureCell(context.Background(), req, target.DialOptions{}, one)
	if rec.Ops == 0 || rec.Errors != 0 || rec.FloorMeanUs <= 0 {
		t.Fatalf("cell: %d pairs, %d errors (%s), floor %v µs", rec.Ops, rec.Errors, rec.FirstError, rec.FloorMeanUs)
	}
	many := one
	many.Clients = 4
	if rec := measureCell(context.Background(), req, target.DialOptions{}, many); rec.Ops == 0 || rec.FloorMeanUs != 0 {
		t.Errorf("4 clients: %d pairs, floor %v µs; want pairs and no floor", rec.Ops, rec.FloorMeanUs)
	}
}
