// Command peerbench measures peer Redis lock libraries for redlock-bench.
// It reads a matrix.PeerRequest (JSON) on standard input, runs each cell
// through the same loop as the redlock command (package measure), and
// writes one matrix.PeerMessage (JSON) per line on standard output: a
// start as each cell begins, the record as it ends. redlock-bench builds
// and runs it; it is not meant to be run by hand.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/redlock-go/redlock/bench/matrix"
	"github.com/redlock-go/redlock/bench/peers"
)

func main() {
	var req matrix.PeerRequest
	if err := json.NewDecoder(os.Stdin).Decode(&req); err != nil {
		fmt.Fprintln(os.Stderr, "peerbench: reading the request:", err)
		os.Exit(2)
	}
	tlsConf, err := peers.TLSConfig(req.TLS, req.TLSCA)
	if err != nil {
		fmt.Fprintln(os.Stderr, "peerbench:", err)
		os.Exit(2)
	}
	opts := peers.Options{Username: req.Username, Password: req.Password, TLS: tlsConf, TTL: req.TTL, PoolSize: req.PoolSize}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	enc := json.NewEncoder(os.Stdout)
	for _, c := range req.Cells {
		if ctx.Err() != nil {
			os.Exit(1)
		}
		c := c
		send(enc, matrix.PeerMessage{Start: &c})
		rec := measureCell(ctx, c, req, opts)
		send(enc, matrix.PeerMessage{Done: &rec})
	}
}

// send writes m to the parent; if the parent no longer reads, the run is
// over.
func send(enc *json.Encoder, m matrix.PeerMessage) {
	if err := enc.Encode(m); err != nil {
		fmt.Fprintln(os.Stderr, "peerbench:", err)
		os.Exit(1)
	}
}

// closeInto closes c after a cell, and says in rec's note if that failed.
func closeInto(rec *matrix.Record, c interface{ Close() error }) {
	if err := c.Close(); err != nil {
		if rec.Note != "" {
			rec.Note += "; "
		}
		rec.Note += "close: " + err.Error()
	}
}

func measureCell(ctx context.Context, c matrix.Cell, req matrix.PeerRequest, opts peers.Options) (rec matrix.Record) {
	rec = matrix.Record{Cell: c}
	addrs := req.Addrs[matrix.ScenarioAddrs(c.Scenario)]
	if c.Scenario == matrix.Handoff {
		s, err := peers.OpenHotKey(c, addrs, opts)
		if err != nil {
			rec.Note = err.Error()
			return rec
		}
		defer func() { closeInto(&rec, s) }()
		rec = req.MeasureHandoff(ctx, s, c)
		return rec
	}
	s, err := peers.Open(c, addrs, opts)
	if err != nil {
		rec.Note = err.Error()
		return rec
	}
	defer func() { closeInto(&rec, s) }()
	rec.Result = req.Measure(ctx, s, c)
	return rec
}
