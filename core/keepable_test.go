package core_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/core/memnode"
)

// TestNewSpecRefusesLeasesThatNeverExtend: a LeaseFraction that extends
// no grant, not even one won by a round that took no time, is refused:
// the extension it makes due, at the fraction of 988 ms of validity,
// could end after LoseAt (a round bound before the validity's end).
func TestNewSpecRefusesLeasesThatNeverExtend(t *testing.T) {
	for _, tc := range []struct {
		mode     core.FanOut
		fraction float64
		refused  bool
	}{
		{core.Multiplexed, 0.898, false}, // 887.2 + 50 ≤ 938
		{core.Multiplexed, 0.9, true},    // 889.2 + 50 > 938
		{core.Sequential, 0.69, false},   // 681.7 + 150 ≤ 838
		{core.Sequential, 0.75, true},    // 741 + 150 > 838
	} {
		_, err := newLocker(memnode.New(3, memnode.NewManualClock(epoch)), memnode.NewManualClock(epoch), core.Config{
			TTL: time.Second, NodeTimeout: 50 * ms, FanOut: tc.mode, LeaseFraction: tc.fraction,
			Tokens: &seqTokens{}, Jitter: fixedRand(0)})
		switch {
		case tc.refused && (!errors.Is(err, core.ErrInvalidConfig) || !strings.Contains(err.Error(), "extends no lock")):
			t.Errorf("%v %v: %v, want ErrInvalidConfig: extends no lock", tc.mode, tc.fraction, err)
		case !tc.refused && err != nil:
			t.Errorf("%v %v: %v, want accepted", tc.mode, tc.fraction, err)
		}
	}
}

// TestNewSpecRefusesUnkeepableTTLs: a TTL whose validity, less the
// drift allowance, is below the loss margin (two round bounds) even on
// a round that takes no time is refused; at the margin it is accepted.
func TestNewSpecRefusesUnkeepableTTLs(t *testing.T) {
	for _, tc := range []struct {
		mode    core.FanOut
		n       int
		timeout time.Duration
		refused bool
	}{
		{core.Multiplexed, 3, 494 * ms, false}, // 1000 − 12 = 2×494
		{core.Multiplexed, 3, 495 * ms, true},
		{core.Sequential, 2, 247 * ms, false}, // 2×2×247
		{core.Sequential, 2, 248 * ms, true},
		{core.Sequential, 5, 98800 * time.Microsecond, false}, // 2×5×98.8
		{core.Sequential, 5, 98800*time.Microsecond + 1, true},
	} {
		_, err := newLocker(memnode.New(tc.n, memnode.NewManualClock(epoch)), memnode.NewManualClock(epoch), core.Config{
			TTL: time.Second, NodeTimeout: tc.timeout, FanOut: tc.mode, Tokens: &seqTokens{}, Jitter: fixedRand(0)})
		switch {
		case tc.refused && (!errors.Is(err, core.ErrInvalidConfig) || !strings.Contains(err.Error(), "loss margin")):
			t.Errorf("%v N=%d %v: %v, want ErrInvalidConfig: loss margin", tc.mode, tc.n, tc.timeout, err)
		case !tc.refused && err != nil:
			t.Errorf("%v N=%d %v: %v, want accepted", tc.mode, tc.n, tc.timeout, err)
		}
	}
}

// TestLeaseOfASlowGrantExtendsInTime: under a LeaseFraction that extends
// a grant won at once, a grant won slowly may have too little validity
// left after the fraction for an extension to end by LoseAt. Its lease
// extends at the latest instant a round can still end by LoseAt (a round
// bound before it), rather than let a usable lock lapse unextended, which
// a caller's own Extend would have kept.
func TestLeaseOfASlowGrantExtendsInTime(t *testing.T) {
	// 988 ms at once: 884.3 + 50 ≤ 938. 45 ms late: 943 ms of validity,
	// extension due at 844.0, + 50 > 893: it goes at 843.
	e := newEnv(t, 3, core.Multiplexed, core.Config{LeaseFraction: 0.895})
	for i := range 3 {
		e.c.SetLatency(i, 45*ms)
	}
	g, err := e.l.Acquire(context.Background(), "k")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		e.c.SetLatency(i, 0)
	}
	ls := e.l.Lease(g)
	latest := ls.LoseAt().Add(-50 * ms)
	if !ls.WakeAt().Equal(latest) {
		t.Fatalf("WakeAt %v, want %v: a round bound before LoseAt %v", ls.WakeAt(), latest, ls.LoseAt())
	}
	loseAt := ls.LoseAt()
	rounds := e.l.keep(context.Background(), &ls, latest)
	if len(rounds) != 1 || !rounds[0].start.Equal(latest) || rounds[0].err != nil {
		t.Fatalf("rounds %+v: want one extension, at %v, that succeeds", rounds, latest)
	}
	if ls.Err() != nil || !ls.LoseAt().After(loseAt) {
		t.Fatalf("err %v, LoseAt %v: want the grant kept past %v", ls.Err(), ls.LoseAt(), loseAt)
	}
}
