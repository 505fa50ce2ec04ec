package matrix

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"time"

	"github.com/redlock-go/redlock/bench/measure"
)

// PeerRequest is what the redlock command sends, as JSON on standard
// input, to the peer command of the nested module bench/peers. The peer
// command answers with PeerMessages, one JSON object per line on standard
// output: a Start as each cell begins and a Done as it ends, in the order
// of Cells.
type PeerRequest struct {
	// Addrs maps a scenario (Loopback, Proxy) to its server addresses.
	Addrs map[string][]string `json:"addrs"`
	// Auth and TLS, as given to the redlock command.
	Username string `json:"username,omitempty"`
	Password string `json:"password,omitempty"`
	TLS      bool   `json:"tls,omitempty"`
	TLSCA    string `json:"tls_ca,omitempty"`
	// RunID makes keys unique to the run.
	RunID    string        `json:"run_id"`
	TTL      time.Duration `json:"ttl"`
	PoolSize int           `json:"pool_size"`
	Duration time.Duration `json:"duration"`
	Warmup   time.Duration `json:"warmup"`
	Cells    []Cell        `json:"cells"`
	// HandoffHold is the Handoff cells' measure.HandoffSpec.Hold.
	HandoffHold time.Duration `json:"handoff_hold,omitempty"`
	// WriterTTL is the TTL of the KindWriterWait cell's locks, whose
	// readers each hold for less than it; 0: DefaultWriterTTL.
	WriterTTL time.Duration `json:"writer_ttl,omitempty"`
}

// DefaultWriterTTL is the KindWriterWait cell's TTL when the request
// gives none: short, so that a window holds many of the writer's waits,
// each bounded in TTLs.
const DefaultWriterTTL = 200 * time.Millisecond

// WriterWaitTTL is the KindWriterWait cell's TTL.
func (r PeerRequest) WriterWaitTTL() time.Duration {
	if r.WriterTTL > 0 {
		return r.WriterTTL
	}
	return DefaultWriterTTL
}

// PeerMessage is one line of the peer command's output: exactly one field
// is set.
type PeerMessage struct {
	Start *Cell   `json:"start,omitempty"`
	Done  *Record `json:"done,omitempty"`
}

// Measure runs cell c of the request against s with the request's timing,
// after a garbage collection, so that the previous cell's garbage is not
// this cell's cost. Both child commands (ours and the peers') measure
// through it, so both sides of a comparison run the same loop.
//
// The result has the client's CPU per pair (this process's), and the
// servers': Measure reads INFO cpu of the cell's servers (Cell.Servers)
// at the window's edges, on connections of its own opened before the
// warm-up. A cell with Repeats above 1 is measured that many times in a
// row and the repeat of median p50 kept (measure.Median).
func (r PeerRequest) Measure(ctx context.Context, s measure.Subject, c Cell) measure.Result {
	spec := measure.Spec{
		Clients:   c.Clients,
		SharedKey: c.SharedKey,
		KeyPrefix: c.KeyPrefix(r.RunID),
		Duration:  r.duration(c),
		Warmup:    r.Warmup,
	}
	srv, cpuErr := r.cellServers(c)
	if cpuErr == nil {
		defer srv.Close()
	}
	spec.Servers = srv
	var rs []measure.Result
	for i := 0; i < max(1, c.Repeats) && (i == 0 || ctx.Err() == nil); i++ {
		if i > 0 {
			spec.KeyPrefix = c.KeyPrefix(r.RunID) + strconv.Itoa(i) + ":"
		}
		runtime.GC()
		rs = append(rs, measure.Run(ctx, s, spec))
	}
	res := measure.Median(rs)
	if cpuErr != nil {
		res.ServersCPUError = cpuErr.Error()
	}
	return res
}

// cellServers connects to cell c's servers to read their CPU, with the
// request's credentials and TLS: none (nil) for a cell without servers
// or whose scenario has too few addresses, or on an error, which it
// returns.
func (r PeerRequest) cellServers(c Cell) (measure.Servers, error) {
	n := c.Servers()
	addrs := r.Addrs[ScenarioAddrs(c.Scenario)]
	if n == 0 || len(addrs) < n {
		return nil, nil
	}
	srv, err := r.dialServers(addrs[:n])
	if err != nil {
		return nil, err
	}
	return srv, nil
}

// dialServers connects to addrs to read their CPU, with the request's
// credentials and TLS.
func (r PeerRequest) dialServers(addrs []string) (measure.Servers, error) {
	o := measure.ServerOptions{Username: r.Username, Password: r.Password}
	if r.TLS {
		var err error
		if o.TLS, err = ClientTLS(r.TLSCA); err != nil {
			return nil, err
		}
	}
	return measure.DialServers(addrs, o)
}

// duration is cell c's measured time: its own, else the request's.
func (r PeerRequest) duration(c Cell) time.Duration {
	if c.Duration > 0 {
		return c.Duration
	}
	return r.Duration
}

// MeasureHandoff runs Handoff cell c of the request against s: c.Clients
// contenders on one key, the request's warm-up, then the cell's duration,
// each section holding the lock HandoffHold, after a garbage collection. Both child commands measure through it.
// The record's Handoff is set; a section overlap is written in its Note.
// The cell's servers are read at the window's edges, as Measure reads
// them: the client's and the servers' CPU per critical section.
func (r PeerRequest) MeasureHandoff(ctx context.Context, s measure.HotSubject, c Cell) Record {
	spec := measure.HandoffSpec{
		Contenders: c.Clients,
		Key:        c.KeyPrefix(r.RunID) + "hot",
		Warmup:     r.Warmup,
		Duration:   r.duration(c),
		Hold:       r.HandoffHold,
	}
	srv, cpuErr := r.cellServers(c)
	if cpuErr == nil {
		defer srv.Close()
	}
	spec.Servers = srv
	runtime.GC()
	res, h := measure.RunHandoff(ctx, s, spec)
	if cpuErr != nil {
		res.ServersCPUError = cpuErr.Error()
	}
	rec := Record{Cell: c, Result: res, Handoff: &h}
	if !h.Exclusive() {
		rec.Note = OverlapNote(h)
	}
	return rec
}

// OverlapNote says that two critical sections overlapped: a broken lock.
func OverlapNote(h measure.Handoff) string {
	return fmt.Sprintf("EXCLUSION BROKEN: %d sections entered while another was inside, %d of %d counter updates lost",
		h.Overlaps, h.LostUpdates(), h.Entered)
}

// MeasureSections runs hot Kinds cell c of the request with contenders
// (measure.RunSections), the request's warm-up, then the cell's
// duration, after a garbage collection, its servers read at the
// window's edges; ledger is the check the contenders' sections enter.
// The record's Exclusion is set, and a violation written in its Note.
//
// rounds, when not nil, counts the rounds the contenders' driver ran:
// the record has the rounds per section.
func (r PeerRequest) MeasureSections(ctx context.Context, contenders []measure.SectionContender, ledger *measure.Ledger, rounds measure.RoundCounter, c Cell) Record {
	spec := measure.SectionsSpec{Warmup: r.Warmup, Duration: r.duration(c), Ledger: ledger, Rounds: rounds}
	srv, cpuErr := r.cellServers(c)
	if cpuErr == nil {
		defer srv.Close()
	}
	spec.Servers = srv
	runtime.GC()
	res, e := measure.RunSections(ctx, contenders, spec)
	if cpuErr != nil {
		res.ServersCPUError = cpuErr.Error()
	}
	rec := Record{Cell: c, Result: res, Exclusion: &e}
	if !e.Ok() {
		rec.Note = ViolationNote(e)
	}
	return rec
}

// ViolationNote says what a hot Kinds cell's check found: a broken lock.
func ViolationNote(e measure.Exclusion) string {
	s := fmt.Sprintf("EXCLUSION BROKEN: %d violations, %d of %d counter updates lost", e.Violations, e.LostUpdates, e.Sections)
	if e.Refused > 0 {
		s += fmt.Sprintf(", %d readers refused with no writer", e.Refused)
	}
	if e.Expired > 0 {
		s += fmt.Sprintf(" (%d sections outlived their validity: outside the assumptions)", e.Expired)
	}
	return s
}
