package core

import (
	"testing"
	"time"
)

func TestQuorum(t *testing.T) {
	for _, tc := range []struct{ n, want int }{
		{1, 1}, {2, 2}, {3, 2}, {4, 3}, {5, 3}, {6, 4}, {7, 4}, {15, 8}, {MaxNodes, MaxNodes/2 + 1},
	} {
		if got := Quorum(tc.n); got != tc.want {
			t.Errorf("Quorum(%d) = %d, want %d", tc.n, got, tc.want)
		}
	}
}

func TestDrift(t *testing.T) {
	const maxD = time.Duration(maxDuration)
	for _, tc := range []struct {
		name  string
		ttl   time.Duration
		ppm   int64
		fixed time.Duration
		want  time.Duration
	}{
		{"distlock default 10s", 10 * time.Second, 10_000, 2 * time.Millisecond, 102 * time.Millisecond},
		{"php walk-through 1s", time.Second, 10_000, 2 * time.Millisecond, 12 * time.Millisecond},
		{"fixed only", time.Second, 0, 2 * time.Millisecond, 2 * time.Millisecond},
		{"rounds up to the ns", 1, 10_000, 0, 1},
		{"rounds up 199ns", 199, 10_000, 0, 2},
		{"zero ttl", 0, 10_000, 5, 5},
		{"huge ttl, no overflow", maxD, 10_000, 0, maxD/100 + 1},
		{"huge ttl, ppm near 1", maxD, 999_999, 0, maxD - maxD/1_000_000},
		{"saturates", maxD, 999_999, maxD, maxD},
	} {
		if got := Drift(tc.ttl, tc.ppm, tc.fixed); got != tc.want {
			t.Errorf("%s: Drift(%d, %d, %d) = %d, want %d", tc.name, tc.ttl, tc.ppm, tc.fixed, got, tc.want)
		}
	}
}

func TestValidity(t *testing.T) {
	const maxD = time.Duration(maxDuration)
	for _, tc := range []struct {
		name                string
		ttl, elapsed, drift time.Duration
		want                time.Duration
	}{
		{"plain", 10 * time.Second, time.Second, 102 * time.Millisecond, 8898 * time.Millisecond},
		{"exactly zero", 100, 40, 60, 0},
		{"one ns left", 100, 40, 59, 1},
		{"ttl below drift", 2 * time.Millisecond, 0, 3 * time.Millisecond, 0},
		{"ttl equal drift", 3, 0, 3, 0},
		{"elapsed equals ttl", 100, 100, 0, 0},
		{"elapsed beyond ttl", 100, 1 << 40, 0, 0},
		{"clock went backwards", 100, -1, 0, 0},
		{"clock went far backwards", 100, -maxD, 0, 0},
		{"huge ttl", maxD, 1, maxD / 100, maxD - 1 - maxD/100},
		{"huge drift", 100, 0, maxD, 0},
	} {
		if got := Validity(tc.ttl, tc.elapsed, tc.drift); got != tc.want {
			t.Errorf("%s: Validity(%d, %d, %d) = %d, want %d", tc.name, tc.ttl, tc.elapsed, tc.drift, got, tc.want)
		}
	}
}

func TestTally(t *testing.T) {
	type rec struct {
		node int
		s    Status
	}
	const (
		ok, held, miss, fail, tout = StatusOK, StatusHeld, StatusMissing, StatusError, StatusTimeout
	)
	for _, tc := range []struct {
		name  string
		n     int
		recs  []rec
		votes []Vote // after each record
		cause error  // of the final tally, if lost
	}{
		{"n=1 won", 1, []rec{{0, ok}}, []Vote{VoteWon}, nil},
		{"n=1 held", 1, []rec{{0, held}}, []Vote{VoteLost}, ErrTaken},
		{"n=3 early win", 3, []rec{{2, ok}, {0, ok}}, []Vote{VotePending, VoteWon}, nil},
		{"n=3 early loss", 3, []rec{{0, held}, {1, held}}, []Vote{VotePending, VoteLost}, ErrTaken},
		{"n=5 majority held", 5, []rec{{0, held}, {2, held}, {4, held}}, []Vote{VotePending, VotePending, VoteLost}, ErrTaken},
		{"n=5 errors decide", 5, []rec{{0, fail}, {1, tout}, {2, held}}, []Vote{VotePending, VotePending, VoteLost}, ErrQuorumUnreachable},
		{"n=5 minority down wins", 5, []rec{{0, fail}, {1, ok}, {2, tout}, {3, ok}, {4, ok}},
			[]Vote{VotePending, VotePending, VotePending, VotePending, VoteWon}, nil},
		{"n=3 missing", 3, []rec{{0, miss}, {1, miss}}, []Vote{VotePending, VoteLost}, ErrNotHeld},
		{"n=5 missing and held: held alone denies", 5, []rec{{0, held}, {1, held}, {2, held}, {3, miss}},
			[]Vote{VotePending, VotePending, VoteLost, VoteLost}, ErrTaken},
		{"n=5 missing and held mixed", 5, []rec{{0, held}, {1, miss}, {2, miss}}, []Vote{VotePending, VotePending, VoteLost}, ErrNotHeld},
		{"n=4 even quorum is 3", 4, []rec{{0, ok}, {1, ok}, {2, held}, {3, ok}}, []Vote{VotePending, VotePending, VotePending, VoteWon}, nil},
		{"n=4 split 2-2 loses", 4, []rec{{0, ok}, {1, ok}, {2, held}, {3, held}}, []Vote{VotePending, VotePending, VotePending, VoteLost}, ErrTaken},
		{"duplicate ignored", 3, []rec{{0, ok}, {0, ok}}, []Vote{VotePending, VotePending}, nil},
		{"out of range ignored", 3, []rec{{3, ok}, {-1, ok}}, []Vote{VotePending, VotePending}, nil},
	} {
		tl := NewTally(tc.n)
		for i, r := range tc.recs {
			tl.Record(r.node, r.s, nil)
			if got := tl.Vote(); got != tc.votes[i] {
				t.Errorf("%s: after record %d: vote %v, want %v", tc.name, i, got, tc.votes[i])
			}
		}
		if tc.cause != nil {
			if got := tl.cause(); got != tc.cause {
				t.Errorf("%s: cause %v, want %v", tc.name, got, tc.cause)
			}
		}
	}
}

func TestTallyRejects(t *testing.T) {
	tl := NewTally(3)
	if tl.Record(0, 0, nil) || tl.Record(0, StatusTimeout+1, nil) {
		t.Fatal("Record accepted an invalid status")
	}
	if !tl.Record(1, StatusOK, nil) || tl.Record(1, StatusHeld, nil) {
		t.Fatal("Record must accept a node once")
	}
	if s, _ := tl.Status(1); s != StatusOK {
		t.Fatalf("Status(1) = %v", s)
	}
	if tl.Pending() != 2 {
		t.Fatalf("Pending = %d", tl.Pending())
	}
	if big := NewTally(MaxNodes + 10); big.Nodes() != MaxNodes {
		t.Fatalf("NewTally clamps to MaxNodes, got %d", big.Nodes())
	}
}

func TestRetryPolicy(t *testing.T) {
	const ms = time.Millisecond
	p := RandomDelay(3, 50*ms, 250*ms)
	for _, tc := range []struct {
		random uint64
		want   time.Duration
	}{{0, 50 * ms}, {1 << 63, 150 * ms}, {^uint64(0), 250*ms - 1}} {
		if got := p.Delay(1, tc.random); got != tc.want {
			t.Errorf("RandomDelay.Delay(1, %#x) = %v, want %v", tc.random, got, tc.want)
		}
	}
	e := ExponentialBackoff(10, 10*ms, 100*ms)
	for _, tc := range []struct {
		k    int
		want time.Duration // the window: Delay with all-ones random is window-1
	}{{1, 10 * ms}, {2, 20 * ms}, {3, 40 * ms}, {4, 80 * ms}, {5, 100 * ms}, {64, 100 * ms}, {1000, 100 * ms}} {
		if got := e.Delay(tc.k, ^uint64(0)); got != tc.want-1 {
			t.Errorf("Exponential.Delay(%d, max) = %v, want %v", tc.k, got, tc.want-1)
		}
		if got := e.Delay(tc.k, 0); got != 0 {
			t.Errorf("Exponential.Delay(%d, 0) = %v, want 0 (full jitter)", tc.k, got)
		}
	}
	r := p.Start()
	var delays int
	for {
		r.Attempt()
		if _, ok := r.Next(7); !ok {
			break
		}
		delays++
	}
	if r.Attempts() != 3 || delays != 2 {
		t.Errorf("3 tries gave %d attempts and %d delays", r.Attempts(), delays)
	}
	for _, bad := range []RetryPolicy{RandomDelay(0, 0, 0), RandomDelay(1, 2, 1), RandomDelay(1, -1, 1), ExponentialBackoff(2, -1, 5)} {
		if bad.validate() == "" {
			t.Errorf("%+v validated", bad)
		}
	}
	if NoRetry().Tries() != 1 || !(RetryPolicy{}).IsZero() {
		t.Error("NoRetry / IsZero")
	}
	if w := e.WithTries(1 << 30); w.Tries() != 1<<30 || w.Delay(3, ^uint64(0)) != e.Delay(3, ^uint64(0)) {
		t.Errorf("WithTries changed the delays: %+v", w)
	}
	if w := (RetryPolicy{}).WithTries(7); w.Tries() != 7 || w.Delay(1, 0) != DefaultRetry.Delay(1, 0) {
		t.Errorf("the zero policy's WithTries is not DefaultRetry's delays: %+v", w)
	}
}

func TestTokenHex(t *testing.T) {
	tok := TokenFromUint64s(0x0123456789abcdef, 0xfedcba9876543210)
	if got, want := tok.String(), "0123456789abcdeffedcba9876543210"; got != want {
		t.Fatalf("String = %q, want %q", got, want)
	}
	if len(tok.String()) != HexSize {
		t.Fatal("HexSize")
	}
}

func TestSystemClockSleep(t *testing.T) {
	c := SystemClock{}
	done := make(chan struct{})
	close(done)
	if c.Sleep(time.Hour, done) {
		t.Fatal("Sleep ignored a closed cancel channel")
	}
	if c.Sleep(0, done) {
		t.Fatal("Sleep(0) ignored a closed cancel channel")
	}
	if !c.Sleep(time.Microsecond, nil) {
		t.Fatal("Sleep with nil cancel must complete")
	}
}
