package core_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/core/memnode"
)

// FuzzPublicAPI feeds arbitrary configurations, keys and tokens to
// NewSpec, and drives the step values it starts (Acquisition, Lease,
// release Round) over memnode, and by hand with stray replies: nothing
// panics, and every error matches exactly one of the package's sentinels.
func FuzzPublicAPI(f *testing.F) {
	f.Add(3, int64(1000), int64(10_000), int64(2), int64(50), 3, uint8(0), "k", uint64(1), uint64(1), int64(5))
	f.Add(0, int64(-1), int64(-5), int64(-1), int64(-1), 0, uint8(9), "", uint64(0), uint64(0), int64(-3))
	f.Add(33, int64(1), int64(999_999), int64(0), int64(0), 1, uint8(1), string(make([]byte, 5000)), uint64(0), uint64(7), int64(1<<40))
	f.Add(5, int64(3), int64(0), int64(1), int64(2), 100, uint8(1), "\x00\xff", uint64(1<<63), uint64(0), int64(0))
	f.Fuzz(func(t *testing.T, nodes int, ttlMS, driftPPM, driftMS, timeoutMS int64, tries int, fanOut uint8,
		key string, hi, lo uint64, advanceMS int64) {
		if nodes < -1 || nodes > core.MaxNodes+2 {
			nodes %= core.MaxNodes + 2
		}
		clock := memnode.NewManualClock(epoch)
		n := max(nodes, 0)
		c := memnode.New(n, clock)
		cfg := core.Config{
			TTL: time.Duration(ttlMS) * time.Millisecond, DriftPPM: driftPPM, DriftFixed: time.Duration(driftMS) * time.Millisecond,
			NodeTimeout: time.Duration(timeoutMS) * time.Millisecond, FanOut: core.FanOut(fanOut),
			Retry:  core.RandomDelay(tries%8, time.Millisecond, 3*time.Millisecond),
			Tokens: &seqTokens{}, Jitter: fixedRand(hi),
			LeaseFraction: float64(lo%4) / 4, MaxHold: time.Duration(lo%3*uint64(ttlMS)) * time.Millisecond, //nolint:gosec // G115: fuzz input wraps on purpose; none, the TTL or twice
		}
		l, err := newLocker(c, clock, cfg)
		if err != nil {
			requireKind(t, err, core.ErrInvalidConfig)
			return
		}
		ctx := context.Background()
		lock, err := l.AcquireToken(ctx, key, core.TokenFromUint64s(hi, lo))
		if err != nil {
			requireKind(t, err, core.ErrInvalidConfig, core.ErrTaken, core.ErrQuorumUnreachable, core.ErrNotHeld)
		}
		clock.Advance(time.Duration(advanceMS) * time.Millisecond % (time.Hour))
		ls := l.Lease(lock)
		if err := l.Extend(ctx, &ls); err != nil {
			requireKind(t, err, core.ErrInvalidConfig, core.ErrTaken, core.ErrQuorumUnreachable, core.ErrNotHeld, core.ErrExtensionLimit)
		}
		l.keep(ctx, &ls, clock.Now().Add(time.Duration(advanceMS)*time.Millisecond%time.Hour))
		if err := ls.Err(); err != nil {
			requireKind(t, err, core.ErrInvalidConfig, core.ErrTaken, core.ErrQuorumUnreachable, core.ErrNotHeld, core.ErrExtensionLimit)
		}
		lock = ls.Grant()
		if err := l.Release(ctx, lock); err != nil {
			requireKind(t, err, core.ErrInvalidConfig, core.ErrTaken, core.ErrQuorumUnreachable, core.ErrNotHeld)
		}
		_ = core.RemainingAt(lock, clock.Now())
		// The step-wise API with replies from nodes that do not exist or
		// repeat: ignored, never a panic.
		a, err := l.spec.Acquire(key, core.Token{}, clock.Now())
		if err != nil {
			requireKind(t, err, core.ErrInvalidConfig)
			return
		}
		r := a.Round()
		for i := 0; i < 3*c.Nodes() && !r.Done(); i++ {
			if node, _, _, ok := r.Next(clock.Now()); ok {
				r.Receive(core.Reply{Node: node, Status: core.Status(i%6 + int(lo%3))})
			}
			r.Receive(core.Reply{Node: int(int64(hi) % 64), Status: core.Status(hi % 7)}) //nolint:gosec // G115: fuzz input; stray, even negative, nodes on purpose
		}
		a.RoundDone(clock.Now())
		a.Cancel(clock.Now(), context.Canceled)
		_, _ = a.Result()
	})
}

// requireKind fails unless err matches exactly one of kinds.
func requireKind(t *testing.T, err error, kinds ...error) {
	t.Helper()
	all := []error{core.ErrInvalidConfig, core.ErrTaken, core.ErrQuorumUnreachable, core.ErrNotHeld, core.ErrCancelled, core.ErrExtensionLimit}
	matched := 0
	for _, k := range all {
		if errors.Is(err, k) {
			matched++
		}
	}
	if matched != 1 {
		t.Fatalf("error %v matches %d sentinels", err, matched)
	}
	for _, k := range kinds {
		if errors.Is(err, k) {
			return
		}
	}
	t.Fatalf("error %v is none of %v", err, kinds)
}
