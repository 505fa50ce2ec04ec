package measure

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// fake is a Subject whose pair takes a fixed time, loses every third pair
// and fails every fifth.
type fake struct {
	d     time.Duration
	calls atomic.Int64
	keys  chan string
}

func (f *fake) Worker(key string) Worker {
	if f.keys != nil {
		f.keys <- key
	}
	return fakeWorker{f}
}

type fakeWorker struct{ f *fake }

func (w fakeWorker) Pair(context.Context) (bool, error) {
	n := w.f.calls.Add(1)
	if w.f.d > 0 {
		time.Sleep(w.f.d)
	}
	switch {
	case n%5 == 0:
		return false, errors.New("boom")
	case n%3 == 0:
		return false, nil
	}
	return true, nil
}

func TestRunCountsOps(t *testing.T) {
	f := &fake{}
	r := Run(context.Background(), f, Spec{Clients: 4, Ops: 300, Warmup: 0})
	if r.Ops != 300 {
		t.Fatalf("ops = %d, want 300", r.Ops)
	}
	if r.Errors != 60 || r.FirstError != "boom" {
		t.Errorf("errors = %d (%q), want 60", r.Errors, r.FirstError)
	}
	if r.Acquired != 300-60-80 {
		t.Errorf("acquired = %d, want %d", r.Acquired, 300-60-80)
	}
	if r.Throughput <= 0 || r.Seconds <= 0 {
		t.Errorf("throughput %v over %v s", r.Throughput, r.Seconds)
	}
}

func TestPercentilesAreOrderedAndBounded(t *testing.T) {
	const d = 2 * time.Millisecond
	r := Run(context.Background(), &fake{d: d}, Spec{Clients: 1, Ops: 20})
	if r.P50Us < float64(d.Microseconds()) {
		t.Errorf("p50 %v µs below the %v sleep", r.P50Us, d)
	}
	if !(r.P50Us <= r.P90Us && r.P90Us <= r.P99Us && r.P99Us <= r.P999Us && r.P999Us <= r.MaxUs) {
		t.Errorf("percentiles out of order: %+v", r)
	}
}

func TestHistogramPercentiles(t *testing.T) {
	h := NewHistogram()
	for v := int64(1); v <= 1000; v++ {
		if err := h.RecordValue(v * 1000); err != nil { // 1..1000 µs
			t.Fatal(err)
		}
	}
	var r Result
	r.FromHistogram(h)
	near := func(got, want float64) bool { return got >= want*0.999 && got <= want*1.001+1 }
	for _, c := range []struct {
		name      string
		got, want float64
	}{{"p50", r.P50Us, 500}, {"p90", r.P90Us, 900}, {"p99", r.P99Us, 990}, {"p99.9", r.P999Us, 999}, {"max", r.MaxUs, 1000}} {
		if !near(c.got, c.want) {
			t.Errorf("%s = %v µs, want %v", c.name, c.got, c.want)
		}
	}
}

func TestDurationBoundAndKeys(t *testing.T) {
	f := &fake{d: 100 * time.Microsecond, keys: make(chan string, 8)}
	r := Run(context.Background(), f, Spec{Clients: 3, KeyPrefix: "p:", Duration: 50 * time.Millisecond})
	if r.Ops == 0 || r.Seconds < 0.05 {
		t.Fatalf("ran %d ops in %v s", r.Ops, r.Seconds)
	}
	close(f.keys)
	seen := map[string]bool{}
	for k := range f.keys {
		seen[k] = true
	}
	if len(seen) != 3 || !seen["p:0"] || !seen["p:2"] {
		t.Errorf("keys = %v, want p:0..p:2", seen)
	}
	if (Spec{SharedKey: true, KeyPrefix: "p:"}).Key(7) != "p:shared" {
		t.Error("shared key")
	}
}

func TestPerOpCounters(t *testing.T) {
	var r Result
	r.PerOp(Counters{Mallocs: 10, Bytes: 100, Goroutines: 5}, Counters{Mallocs: 30, Bytes: 300, Goroutines: 15}, 10)
	if r.AllocsPerOp != 2 || r.BytesPerOp != 20 || r.GoroutinesPerOp != 1 {
		t.Fatalf("%+v", r)
	}
}

func TestGoroutineCounterSeesCreations(t *testing.T) {
	before := ReadCounters()
	done := make(chan struct{})
	for i := 0; i < 10; i++ {
		go func() { done <- struct{}{} }()
	}
	for i := 0; i < 10; i++ {
		<-done
	}
	after := ReadCounters()
	if d := after.Goroutines - before.Goroutines; d < 10 {
		t.Fatalf("goroutines created = %d, want >= 10", d)
	}
}

// rounder is a Subject that counts three rounds per pair.
type rounder struct{ rounds atomic.Uint64 }

func (r *rounder) Worker(string) Worker { return rounderWorker{r} }
func (r *rounder) Rounds() uint64       { return r.rounds.Load() }

type rounderWorker struct{ r *rounder }

func (w rounderWorker) Pair(context.Context) (bool, error) { w.r.rounds.Add(3); return true, nil }

func TestRoundsPerOpCountsTheWindowOnly(t *testing.T) {
	r := &rounder{}
	l := Prepare(r, Spec{Clients: 3, Ops: 999})
	l.Warmup(context.Background(), time.Millisecond) // rounds outside the window
	l.Go(context.Background())
	if got := l.Result(); got.Ops != 999 || got.RoundsPerOp != 3 {
		t.Fatalf("ops %d, rounds/op %v; want 999, exactly 3", got.Ops, got.RoundsPerOp)
	}
	if got := Run(context.Background(), &fake{}, Spec{Ops: 10}); got.RoundsPerOp != 0 {
		t.Errorf("a subject without a round count: rounds/op %v", got.RoundsPerOp)
	}
}
