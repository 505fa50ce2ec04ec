package measure

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// chanLock is an in-process lock whose waits end with ctx.
type chanLock struct{ ch chan struct{} }

func newChanLock() *chanLock { return &chanLock{ch: make(chan struct{}, 1)} }

func (l *chanLock) Contender(string) Contender { return l }

func (l *chanLock) Lock(ctx context.Context) error {
	select {
	case l.ch <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (l *chanLock) Unlock(context.Context) error { <-l.ch; return nil }

func TestHandoffExclusive(t *testing.T) {
	const sections = 300
	r, h := RunHandoff(context.Background(), newChanLock(), HandoffSpec{Contenders: 4, Key: "k", Sections: sections})
	if r.Ops != sections || r.Errors != 0 {
		t.Fatalf("ops %d errors %d (%s), want %d sections", r.Ops, r.Errors, r.FirstError, sections)
	}
	if !h.Exclusive() || h.Counter != h.Entered || h.Entered < sections {
		t.Errorf("exclusion: %+v", h)
	}
	// Every counted section but the first follows a counted release.
	if h.Handoffs != sections-1 {
		t.Errorf("handoffs = %d, want %d", h.Handoffs, sections-1)
	}
	if h.P50Us > h.P99Us || h.P99Us > h.MaxUs {
		t.Errorf("percentiles out of order: %+v", h)
	}
}

// noLock excludes nothing.
type noLock struct{}

func (noLock) Contender(string) Contender   { return noLock{} }
func (noLock) Lock(context.Context) error   { return nil }
func (noLock) Unlock(context.Context) error { return nil }

// TestHandoffCatchesOverlap: with a lock that excludes nothing, two
// sections meet inside (the first one's work waits for the second's), and
// the harness reports the overlap and the lost update.
func TestHandoffCatchesOverlap(t *testing.T) {
	var (
		mu    sync.Mutex
		first chan struct{}
	)
	// The first call of each pair waits for the second, which lets it go:
	// both are inside at once, each between its load and its store.
	meet := func() {
		mu.Lock()
		if first == nil {
			ch := make(chan struct{})
			first = ch
			mu.Unlock()
			<-ch
			return
		}
		close(first)
		first = nil
		mu.Unlock()
	}
	r, h := RunHandoff(context.Background(), noLock{}, HandoffSpec{Contenders: 2, Key: "k", Sections: 2, Work: meet})
	if r.Ops != 2 {
		t.Fatalf("ops = %d, want 2", r.Ops)
	}
	if h.Overlaps < 1 || h.LostUpdates() < 1 || h.Exclusive() {
		t.Errorf("overlap not reported: %+v, lost %d", h, h.LostUpdates())
	}
}

// failLock never acquires.
type failLock struct{}

var errRefused = errors.New("refused")

func (failLock) Contender(string) Contender   { return failLock{} }
func (failLock) Lock(context.Context) error   { return errRefused }
func (failLock) Unlock(context.Context) error { return nil }

func TestHandoffFailuresSpendTheBudget(t *testing.T) {
	r, h := RunHandoff(context.Background(), failLock{}, HandoffSpec{Contenders: 3, Key: "k", Sections: 10})
	if r.Ops != 0 || r.Errors < 10 || r.FirstError != errRefused.Error() || h.Handoffs != 0 {
		t.Errorf("result %+v, handoff %+v", r, h)
	}
}

// heldLock is held by someone else for ever: every wait ends with ctx.
type heldLock struct{}

func (heldLock) Contender(string) Contender { return heldLock{} }
func (heldLock) Lock(ctx context.Context) error {
	<-ctx.Done()
	return ctx.Err()
}
func (heldLock) Unlock(context.Context) error { return errors.New("not held") }

// TestHandoffWindowEndsWaits: waiters blocked on a lock held elsewhere
// return when the window closes, and a wait ended that way is no error.
func TestHandoffWindowEndsWaits(t *testing.T) {
	r, h := RunHandoff(context.Background(), heldLock{}, HandoffSpec{Contenders: 4, Key: "k", Warmup: time.Millisecond, Duration: time.Millisecond})
	if r.Ops != 0 || r.Errors != 0 || h.Entered != 0 {
		t.Errorf("result %+v, handoff %+v", r, h)
	}
	// A cancelled caller ends a counted run too.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if r, _ := RunHandoff(ctx, heldLock{}, HandoffSpec{Contenders: 2, Key: "k", Sections: 5}); r.Ops != 0 || r.Errors != 0 {
		t.Errorf("cancelled: %+v", r)
	}
}

// taggedLock is a chanLock whose contenders log, in order, who acquired.
type taggedLock struct {
	l   *chanLock
	mu  sync.Mutex
	n   int
	log []int
}

func (t *taggedLock) Contender(string) Contender {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.n++
	return &tagged{t: t, id: t.n}
}

type tagged struct {
	t  *taggedLock
	id int
}

func (c *tagged) Lock(ctx context.Context) error {
	if err := c.t.l.Lock(ctx); err != nil {
		return err
	}
	c.t.mu.Lock()
	c.t.log = append(c.t.log, c.id)
	c.t.mu.Unlock()
	return nil
}

func (c *tagged) Unlock(ctx context.Context) error { return c.t.l.Unlock(ctx) }

// TestHandoffGoesToAnother: a releaser does not take the lock back before
// another contender had it, so each section's holder differs from the
// previous one's.
func TestHandoffGoesToAnother(t *testing.T) {
	for _, contenders := range []int{2, 5} {
		tl := &taggedLock{l: newChanLock()}
		r, h := RunHandoff(context.Background(), tl, HandoffSpec{Contenders: contenders, Key: "k", Sections: 200})
		if r.Ops != 200 || !h.Exclusive() {
			t.Fatalf("%d contenders: %+v %+v", contenders, r, h)
		}
		for i := 1; i < len(tl.log); i++ {
			if tl.log[i] == tl.log[i-1] {
				t.Fatalf("%d contenders: contender %d took the lock twice in a row (sections %d, %d)", contenders, tl.log[i], i-1, i)
			}
		}
	}
}

// TestHandoffReadsServersCPU: the servers are read at the window's two
// edges, and their CPU is divided by the sections counted in it; a
// reading that fails says why instead of a figure.
func TestHandoffReadsServersCPU(t *testing.T) {
	const sections = 200
	srv := &fakeUsage{fakeServers: fakeServers{step: 100 * time.Millisecond}, step: 400}
	r, _ := RunHandoff(context.Background(), newChanLock(), HandoffSpec{Contenders: 2, Key: "k", Sections: sections, Servers: srv})
	if r.Ops != sections {
		t.Fatalf("ops %d, want %d (%s)", r.Ops, sections, r.FirstError)
	}
	if srv.calls != 2 {
		t.Errorf("Usage read %d times, want once at each edge of the window", srv.calls)
	}
	if r.ServersCPUUsPerOp != 500 || r.ServersReadsPerOp != 2 || r.ServersCPUError != "" {
		t.Errorf("servers' CPU %v µs and reads %v per section (%q), want 500 (100 ms over 200) and 2", r.ServersCPUUsPerOp, r.ServersReadsPerOp, r.ServersCPUError)
	}

	r, _ = RunHandoff(context.Background(), newChanLock(), HandoffSpec{Contenders: 2, Key: "k", Sections: 20, Servers: &fakeServers{step: time.Millisecond, failAt: 2}})
	if r.ServersCPUUsPerOp != 0 || r.ServersCPUError != "server down" {
		t.Errorf("a failed reading: %v µs per section, error %q", r.ServersCPUUsPerOp, r.ServersCPUError)
	}

	r, _ = RunHandoff(context.Background(), newChanLock(), HandoffSpec{Contenders: 2, Key: "k", Sections: 20})
	if r.ServersCPUUsPerOp != 0 || r.ServersCPUError != "" {
		t.Errorf("no servers to read: %v µs per section, error %q", r.ServersCPUUsPerOp, r.ServersCPUError)
	}
}
