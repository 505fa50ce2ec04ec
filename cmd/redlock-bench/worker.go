package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/redlock-go/redlock/bench/matrix"
	"github.com/redlock-go/redlock/bench/measure"
	"github.com/redlock-go/redlock/bench/target"
	"github.com/redlock-go/redlock/core"
)

// workerEnv makes this program a cell runner: the parent redlock-bench
// starts itself with it set, as it starts the peer command, and speaks the
// same protocol (matrix.PeerRequest in, matrix.PeerMessage lines out).
const workerEnv = "REDLOCK_BENCH_WORKER"

// worker runs the cells of the request on stdin and reports on stdout.
func worker(stdin io.Reader, stdout, stderr io.Writer) int {
	var req matrix.PeerRequest
	if err := json.NewDecoder(stdin).Decode(&req); err != nil {
		logln(stderr, "redlock-bench worker: reading the request:", err)
		return 2
	}
	opts := target.DialOptions{Username: req.Username, Password: req.Password, PoolSize: req.PoolSize}
	if req.TLS {
		var err error
		if opts.TLS, err = matrix.ClientTLS(req.TLSCA); err != nil {
			logln(stderr, "redlock-bench worker:", err)
			return 2
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	enc := json.NewEncoder(stdout)
	for _, c := range req.Cells {
		if ctx.Err() != nil {
			return 1
		}
		if err := enc.Encode(matrix.PeerMessage{Start: &c}); err != nil {
			logln(stderr, "redlock-bench worker: writing to the parent:", err)
			return 1
		}
		rec := measureCell(ctx, req, opts, c)
		if err := enc.Encode(matrix.PeerMessage{Done: &rec}); err != nil {
			logln(stderr, "redlock-bench worker: writing to the parent:", err)
			return 1
		}
	}
	return 0
}

// noAnnounceNote is the note of a wake cell over a driver that does not
// announce releases: its Client polls.
const noAnnounceNote = "the driver does not announce releases: this wake row polls"

// measureCell runs one of this library's cells.
func measureCell(ctx context.Context, req matrix.PeerRequest, opts target.DialOptions, c matrix.Cell) matrix.Record {
	rec := matrix.Record{Cell: c}
	fan, err := target.ParseFanOut(c.FanOut)
	if err != nil {
		rec.Note = err.Error()
		return rec
	}
	addrs := req.Addrs[matrix.ScenarioAddrs(c.Scenario)]
	if target.InMemory(c.Driver) {
		addrs = make([]string, c.Nodes)
	}
	if len(addrs) < c.Nodes {
		rec.Note = fmt.Sprintf("%d servers for N=%d", len(addrs), c.Nodes)
		return rec
	}
	drv, closeDrv, err := target.Dial(c.Driver, addrs[:c.Nodes], opts)
	if err != nil {
		rec.Note = "dial: " + err.Error()
		return rec
	}
	// The cell is measured before this runs: a failed close of its
	// connections changes nothing in the record.
	defer func() { _ = closeDrv() }()
	if c.Scenario == matrix.Handoff {
		// One Client over the driver, shared by every contender.
		h, err := target.NewHotKey(drv, c.Variant, req.TTL)
		if err != nil {
			rec.Note = err.Error()
			return rec
		}
		rec := req.MeasureHandoff(ctx, h, c)
		if _, ok := drv.(core.Announcer); !ok && c.Variant == matrix.Wake {
			// The Client said so in the log; the record says it too.
			rec.Note = strings.TrimPrefix(rec.Note+"; "+noAnnounceNote, "; ")
		}
		return rec
	}
	if c.Scenario == matrix.Kinds {
		return measureKind(ctx, req, drv, c)
	}
	var s measure.Subject
	if c.Variant != "" {
		// The variant wraps the driver in a round counter: the result
		// has rounds per pair.
		s, err = target.NewVariant(c.Variant, drv, fan, req.TTL)
	} else {
		s, err = target.NewRedlock(drv, fan, req.TTL)
	}
	if err != nil {
		rec.Note = err.Error()
		return rec
	}
	rec.Result = req.Measure(ctx, s, c)
	if target.InMemory(c.Driver) && c.Clients == 1 && c.Variant == "" && c.Scenario == matrix.Loopback && rec.Ops > 0 {
		// The core overhead target's floor, beside its cell.
		if f := req.Measure(ctx, target.NewMemFloor(c.Nodes, fan, req.TTL), c); f.Errors == 0 && f.Ops > 0 {
			rec.FloorMeanUs = f.MeanUs
		} else {
			why := f.FirstError
			if why == "" {
				why = "no pair in its window"
			}
			rec.Note = strings.TrimPrefix(rec.Note+"; floor not measured: "+why, "; ")
		}
	}
	return rec
}

// measureKind runs one cell of the primitives beyond the mutex: a pair
// cell through the matrix's loop, a hot one through
// measure.RunSections, each with its exclusion check.
func measureKind(ctx context.Context, req matrix.PeerRequest, drv core.Driver, c matrix.Cell) matrix.Record {
	rec := matrix.Record{Cell: c}
	switch c.Variant {
	case matrix.KindPermits, matrix.KindMutexPermits, matrix.KindWriterWait, matrix.KindLockAllHot:
		ttl := req.WriterWaitTTL()
		cs, rounds, err := target.Sections(drv, c, c.KeyPrefix(req.RunID)+"hot", req.TTL, ttl)
		if err != nil {
			rec.Note = err.Error()
			return rec
		}
		rec = req.MeasureSections(ctx, cs, measure.NewLedger(), rounds, c)
		if c.Variant == matrix.KindWriterWait {
			rec.Exclusion.TTLMs = ttl.Milliseconds()
		}
		return rec
	}
	s, err := target.NewKindPair(drv, c.Variant, req.TTL)
	if err != nil {
		rec.Note = err.Error()
		return rec
	}
	rec.Result = req.Measure(ctx, s, c)
	if matrix.KindHot(c.Variant) {
		e := s.Check(rec.Result)
		rec.Exclusion = &e
		if !e.Ok() {
			rec.Note = matrix.ViolationNote(e)
		}
	}
	return rec
}
