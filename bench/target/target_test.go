package target

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/redlock-go/redlock/bench/measure"
	"github.com/redlock-go/redlock/core"
)

func TestMemSubjectRuns(t *testing.T) {
	drv, closeFn, err := Dial("mem", []string{"a", "b", "c"}, DialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := closeFn(); err != nil {
			t.Error(err)
		}
	}()
	if drv.Nodes() != 3 {
		t.Fatalf("nodes = %d", drv.Nodes())
	}
	s, err := NewRedlock(drv, core.Multiplexed, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	r := measure.Run(context.Background(), s, measure.Spec{Clients: 2, KeyPrefix: "t:", Ops: 200})
	if r.Ops != 200 || r.Acquired != 200 || r.Errors != 0 {
		t.Fatalf("result = %+v", r)
	}
}

func TestContendedLosesAreNotErrors(t *testing.T) {
	drv, _, _ := Dial("mem", []string{"a"}, DialOptions{})
	s, _ := NewRedlock(drv, core.Sequential, 10*time.Second)
	held, err := s.C.TryLock(context.Background(), "k")
	if err != nil {
		t.Fatal(err)
	}
	ok, err := s.Worker("k").Pair(context.Background())
	if ok || err != nil {
		t.Fatalf("Pair on a held key = %v, %v; want false, nil", ok, err)
	}
	if err := held.Unlock(context.Background()); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.Worker("k").Pair(context.Background()); !ok || err != nil {
		t.Fatalf("Pair on a released key = %v, %v; want true, nil", ok, err)
	}
}

func TestUnknownDriverAndFanOut(t *testing.T) {
	if _, _, err := Dial("nope", []string{"a"}, DialOptions{}); err == nil {
		t.Error("unknown driver accepted")
	}
	if _, err := ParseFanOut("parallel"); err == nil {
		t.Error("unknown fan-out accepted")
	}
	if f, _ := ParseFanOut("sequential"); f != core.Sequential {
		t.Error("sequential")
	}
}

// TestEveryDriverCompiledIn: each name of Order has its dialer, so that
// a driver listed for the runs can be dialled.
func TestEveryDriverCompiledIn(t *testing.T) {
	for _, n := range Order {
		if !Has(n) {
			t.Errorf("driver %q in Order is not compiled in", n)
		}
	}
	if got := Drivers(); len(got) != len(Order) || got[len(got)-1] != "valkeygo" {
		t.Errorf("Drivers() = %v, want Order, valkeygo last", got)
	}
}

func TestVariantsCountRounds(t *testing.T) {
	drv, _, _ := Dial("mem", []string{"a", "b", "c", "d", "e"}, DialOptions{})
	for _, v := range Variants {
		s, err := NewVariant(v, drv, core.Multiplexed, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		r := measure.Run(context.Background(), s, measure.Spec{KeyPrefix: "v:" + v + ":", Ops: 100, Warmup: time.Millisecond})
		want := 2.0
		if v == VariantFenced {
			want = 3
		}
		if r.Ops != 100 || r.Acquired != 100 || r.RoundsPerOp != want {
			t.Errorf("%s: %d ops, %d acquired, %v rounds/op; want 100, 100, exactly %v", v, r.Ops, r.Acquired, r.RoundsPerOp, want)
		}
	}
	if _, err := NewVariant("unfenced", drv, core.Multiplexed, time.Second); err == nil {
		t.Error("unknown variant accepted")
	}
}

func TestHandleLosesContestWithoutError(t *testing.T) {
	drv, _, _ := Dial("mem", []string{"a"}, DialOptions{})
	s, _ := NewVariant(VariantLease, drv, core.Multiplexed, 10*time.Second)
	l, err := NewRedlock(drv, core.Multiplexed, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	lock, err := l.C.TryLock(context.Background(), "k")
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := s.Worker("k").Pair(context.Background()); ok || err != nil {
		t.Fatalf("Pair on a held key = %v, %v; want false, nil", ok, err)
	}
	if err := lock.Unlock(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestRoundCounterAnnounces: over a driver that announces releases (mem),
// the counter does too, so that a Client over it waits for announcements
// as over the driver itself; it counts rounds all the same.
func TestRoundCounterAnnounces(t *testing.T) {
	drv, closeFn, err := Dial("mem", []string{"a", "b", "c"}, DialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := closeFn(); err != nil {
			t.Error(err)
		}
	}()
	if _, ok := drv.(core.Announcer); !ok {
		t.Skip("mem does not announce releases")
	}
	c := CountRounds(drv)
	if _, ok := c.driver().(core.Announcer); !ok {
		t.Fatal("the counter over an Announcer does not announce")
	}
	v, err := NewVariant(VariantHandle, drv, core.Multiplexed, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := v.Worker("k").Pair(context.Background()); !ok || err != nil || v.Rounds() != 2 {
		t.Fatalf("pair: %v, %v, %d rounds", ok, err, v.Rounds())
	}
}

// TestHotKeyOnMem: the hot-key subject, woken and polling, over the
// in-memory nodes: sections never overlap and each follows a handoff.
func TestHotKeyOnMem(t *testing.T) {
	for _, mode := range []string{"wake", "poll"} {
		drv, closeFn, err := Dial("mem", []string{"a", "b", "c", "d", "e"}, DialOptions{})
		if err != nil {
			t.Fatal(err)
		}
		h, err := NewHotKey(drv, mode, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		const sections = 20
		r, hh := measure.RunHandoff(context.Background(), h, measure.HandoffSpec{Contenders: 4, Key: "hot", Sections: sections})
		if err := closeFn(); err != nil {
			t.Error(err)
		}
		if !hh.Exclusive() || r.Errors != 0 || r.Ops != sections || hh.Handoffs != sections-1 {
			t.Errorf("%s: %+v %+v", mode, r, hh)
		}
	}
	if _, err := NewHotKey(nil, "spin", time.Second); err == nil {
		t.Error("unknown wait mode accepted")
	}
}

// TestVariantsGoroutines: on the in-memory nodes, the bare handle (plain,
// fenced) starts no goroutine per pair; asking for its Context (handle) or
// a lease starts exactly one, its watcher.
func TestVariantsGoroutines(t *testing.T) {
	drv, _, _ := Dial("mem", []string{"a", "b", "c", "d", "e"}, DialOptions{})
	want := map[string]float64{VariantPlain: 0, VariantFenced: 0, VariantHandle: 1, VariantLease: 1}
	for _, v := range Variants {
		s, err := NewVariant(v, drv, core.Multiplexed, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		r := measure.Run(context.Background(), s, measure.Spec{KeyPrefix: "g:" + v + ":", Ops: 200, Warmup: time.Millisecond})
		// The count is the process's: a goroutine of the runtime or of a
		// timer now and then lands in the window (1 in 200 pairs, under
		// -race), where one per pair would be 1.
		if r.Ops != 200 || r.Acquired != 200 || r.Errors != 0 || math.Abs(r.GoroutinesPerOp-want[v]) > 0.02 {
			t.Errorf("%s: %d ops, %d acquired, %d errors (%s), %v goroutines/op; want 200, 200, 0, %v ± 0.02",
				v, r.Ops, r.Acquired, r.Errors, r.FirstError, r.GoroutinesPerOp, want[v])
		}
	}
}

// TestFencedVariantReadsGrowingFences: the fenced variant's Client fences
// every lock, and the fences of one key grow pair after pair.
func TestFencedVariantReadsGrowingFences(t *testing.T) {
	drv, _, _ := Dial("mem", []string{"a", "b", "c"}, DialOptions{})
	v, err := NewVariant(VariantFenced, drv, core.Multiplexed, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var last uint64
	for i := 0; i < 5; i++ {
		if ok, err := v.Worker("f").Pair(ctx); !ok || err != nil {
			t.Fatalf("pair %d: %v, %v", i, ok, err)
		}
		l, err := v.Client().TryLock(ctx, "f")
		if err != nil {
			t.Fatal(err)
		}
		f, err := l.Fence()
		if err != nil || f <= last {
			t.Fatalf("lock %d: fence %d, %v; want more than %d", i, f, err, last)
		}
		last = f
		if err := l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
}
