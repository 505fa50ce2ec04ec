package core

import (
	"errors"
	"reflect"
	"strings"
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
		if got := drift(tc.ttl, tc.ppm, tc.fixed); got != tc.want {
			t.Errorf("%s: drift(%d, %d, %d) = %d, want %d", tc.name, tc.ttl, tc.ppm, tc.fixed, got, tc.want)
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
		votes []vote // after each record
		cause error  // of the final tally, if lost
	}{
		{"n=1 won", 1, []rec{{0, ok}}, []vote{voteWon}, nil},
		{"n=1 held", 1, []rec{{0, held}}, []vote{voteLost}, ErrTaken},
		{"n=3 early win", 3, []rec{{2, ok}, {0, ok}}, []vote{votePending, voteWon}, nil},
		{"n=3 early loss", 3, []rec{{0, held}, {1, held}}, []vote{votePending, voteLost}, ErrTaken},
		{"n=5 majority held", 5, []rec{{0, held}, {2, held}, {4, held}}, []vote{votePending, votePending, voteLost}, ErrTaken},
		{"n=5 errors decide", 5, []rec{{0, fail}, {1, tout}, {2, held}}, []vote{votePending, votePending, voteLost}, ErrQuorumUnreachable},
		{"n=5 minority down wins", 5, []rec{{0, fail}, {1, ok}, {2, tout}, {3, ok}, {4, ok}},
			[]vote{votePending, votePending, votePending, votePending, voteWon}, nil},
		{"n=3 missing", 3, []rec{{0, miss}, {1, miss}}, []vote{votePending, voteLost}, ErrNotHeld},
		{"n=5 missing and held: held alone denies", 5, []rec{{0, held}, {1, held}, {2, held}, {3, miss}},
			[]vote{votePending, votePending, voteLost, voteLost}, ErrTaken},
		{"n=5 missing and held mixed", 5, []rec{{0, held}, {1, miss}, {2, miss}}, []vote{votePending, votePending, voteLost}, ErrNotHeld},
		{"n=4 even quorum is 3", 4, []rec{{0, ok}, {1, ok}, {2, held}, {3, ok}}, []vote{votePending, votePending, votePending, voteWon}, nil},
		{"n=4 split 2-2 loses", 4, []rec{{0, ok}, {1, ok}, {2, held}, {3, held}}, []vote{votePending, votePending, votePending, voteLost}, ErrTaken},
		{"duplicate ignored", 3, []rec{{0, ok}, {0, ok}}, []vote{votePending, votePending}, nil},
		{"out of range ignored", 3, []rec{{3, ok}, {-1, ok}}, []vote{votePending, votePending}, nil},
	} {
		tl := newTally(tc.n)
		for i, r := range tc.recs {
			tl.record(r.node, r.s, nil)
			if got := tl.vote(); got != tc.votes[i] {
				t.Errorf("%s: after record %d: vote %v, want %v", tc.name, i, got, tc.votes[i])
			}
		}
		if tc.cause != nil {
			if got := tl.cause(); !errors.Is(got, tc.cause) {
				t.Errorf("%s: cause %v, want %v", tc.name, got, tc.cause)
			}
		}
	}
}

func TestTallyRejects(t *testing.T) {
	tl := newTally(3)
	if tl.record(0, 0, nil) || tl.record(0, StatusTimeout+1, nil) {
		t.Fatal("Record accepted an invalid status")
	}
	if !tl.record(1, StatusOK, nil) || tl.record(1, StatusHeld, nil) {
		t.Fatal("Record must accept a node once")
	}
	if s, _ := tl.statusOf(1); s != StatusOK {
		t.Fatalf("Status(1) = %v", s)
	}
	if tl.pending() != 2 {
		t.Fatalf("Pending = %d", tl.pending())
	}
	if big := newTally(MaxNodes + 10); big.nodes() != MaxNodes {
		t.Fatalf("NewTally clamps to MaxNodes, got %d", big.nodes())
	}
}

// TestInitRoundReused: a round initialised where a used one lived (an
// attempt's round becoming its cleanup, a retry, a lease's next
// extension) starts as clean as one initialised in a zero Round: no
// status, error, TTL, count, fence or noWait of the round before.
func TestInitRoundReused(t *testing.T) {
	s := Spec{n: 5, quorum: Quorum(5)}
	s.cfg.FanOut, s.cfg.NodeTimeout = Multiplexed, time.Second
	t0 := time.Unix(1000, 0)
	var r Round
	s.initRound(&r, Command{Op: OpAcquireFenced, Key: "a", TTL: time.Minute, Probe: true}, t0)
	for i := 0; i < 5; i++ {
		if node, _, _, ok := r.Next(t0); !ok || node != i {
			t.Fatalf("command %d: node %d, ok %v", i, node, ok)
		}
	}
	errNode := errors.New("down")
	for i, rep := range []Reply{
		{Status: StatusOK, Fence: 7}, {Status: StatusHeld, TTL: time.Second},
		{Status: StatusMissing}, {Status: StatusError, Err: errNode}, {Status: StatusTimeout, Err: errNode},
	} {
		rep.Node = i
		r.Receive(rep)
	}
	r.noWait = 0b10110
	if r.received != 5 || r.fence != 7 || r.tally.ttl[1] == 0 || r.tally.errs[3] == nil {
		t.Fatalf("the first round is not dirty enough to test: %+v", r)
	}

	t1 := t0.Add(time.Hour)
	cmd := Command{Op: OpRelease, Key: "b"}
	s.initRound(&r, cmd, t1)
	var fresh Round
	s.initRound(&fresh, cmd, t1)
	if !reflect.DeepEqual(r, fresh) {
		t.Fatalf("reused round\n%+v\nwant\n%+v", r, fresh)
	}
	if fresh.tally.n != 5 || !fresh.started().Equal(t1) || !fresh.end.Equal(t1.Add(time.Second)) || fresh.timeout != time.Second {
		t.Fatalf("fresh round: n %d, start %v, end %v, timeout %v", fresh.tally.n, fresh.started(), fresh.end, fresh.timeout)
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
	r := p.start()
	var delays int
	for {
		r.attempt()
		if _, ok := r.next(7); !ok {
			break
		}
		delays++
	}
	if r.attempts != 3 || delays != 2 {
		t.Errorf("3 tries gave %d attempts and %d delays", r.attempts, delays)
	}
	for _, bad := range []RetryPolicy{RandomDelay(0, 0, 0), RandomDelay(1, 2, 1), RandomDelay(1, -1, 1), ExponentialBackoff(2, -1, 5)} {
		if bad.validate() == "" {
			t.Errorf("%+v validated", bad)
		}
	}
	if !(RetryPolicy{}).isZero() || DefaultRetry.isZero() {
		t.Error("isZero")
	}
	if w := e.WithTries(1 << 30); w.tries != 1<<30 || w.Delay(3, ^uint64(0)) != e.Delay(3, ^uint64(0)) {
		t.Errorf("WithTries changed the delays: %+v", w)
	}
	if w := (RetryPolicy{}).WithTries(7); w.tries != 7 || w.Delay(1, 0) != DefaultRetry.Delay(1, 0) {
		t.Errorf("the zero policy's WithTries is not DefaultRetry's delays: %+v", w)
	}
}

func TestTokenHex(t *testing.T) {
	tok := TokenFromUint64s(0x0123456789abcdef, 0xfedcba9876543210)
	if got, want := tok.String(), "0123456789abcdeffedcba9876543210"; got != want {
		t.Fatalf("String = %q, want %q", got, want)
	}
	if len(tok.String()) != hexSize {
		t.Fatal("hexSize")
	}
}

// TestSystemClockNow: a reading carries a monotonic reading (so that
// comparisons with time.Now's ignore wall-clock steps), lies between the
// time.Now readings around it, and never goes back.
func TestSystemClockNow(t *testing.T) {
	var c Clock = SystemClock{}
	prev := c.Now()
	for range 1000 {
		before := time.Now()
		now := c.Now()
		after := time.Now()
		if !strings.Contains(now.String(), " m=") {
			t.Fatalf("%v carries no monotonic reading", now)
		}
		if now.Before(before) || now.After(after) || now.Before(prev) {
			t.Fatalf("reading %v, between time.Now's %v and %v, after %v", now, before, after, prev)
		}
		if d := now.Round(0).Sub(before.Round(0)); d < -time.Second || d > time.Second {
			t.Fatalf("wall reading %v is %v from time.Now's", now.Round(0), d)
		}
		prev = now
	}
}

func TestSystemClockAfterFunc(t *testing.T) {
	var c Clock = SystemClock{}
	fired := make(chan struct{})
	c.AfterFunc(time.Microsecond, func() { close(fired) })
	<-fired // the test times out if it never fires
	never := c.AfterFunc(time.Hour, func() { t.Error("a stopped timer fired") })
	if !never.Stop() {
		t.Fatal("Stop of a pending timer reported it already fired")
	}
	if never.Reset(time.Hour); !never.Stop() {
		t.Fatal("Reset did not re-arm the timer")
	}
}

// TestDeriveToken: attempt 1 (and below) holds the caller's token; attempt
// k holds it with its last four bytes XORed with k−1, big-endian, so that
// the tokens of one acquisition's attempts all differ and differ from it
// only there.
func TestDeriveToken(t *testing.T) {
	base := TokenFromUint64s(0x0123456789abcdef, 0xfedcba9876543210)
	for _, tc := range []struct {
		k    int
		want Token
	}{
		{-1, base},
		{0, base},
		{1, base},
		{2, TokenFromUint64s(0x0123456789abcdef, 0xfedcba9876543211)},
		{257, TokenFromUint64s(0x0123456789abcdef, 0xfedcba9876543310)},
		{1<<30 + 1, TokenFromUint64s(0x0123456789abcdef, 0xfedcba9836543210)},
	} {
		if got := deriveToken(base, tc.k); got != tc.want {
			t.Errorf("deriveToken(base, %d) = %v, want %v", tc.k, got, tc.want)
		}
	}
	seen := map[Token]int{}
	for k := 1; k <= 1000; k++ {
		tok := deriveToken(base, k)
		if j, ok := seen[tok]; ok {
			t.Fatalf("attempts %d and %d share token %v", j, k, tok)
		}
		if [12]byte(tok[:12]) != [12]byte(base[:12]) {
			t.Fatalf("attempt %d changed more than the last four bytes: %v", k, tok)
		}
		seen[tok] = k
	}
}
