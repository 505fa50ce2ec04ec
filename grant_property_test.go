package redlock_test

import (
	"context"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/core"
)

// TestGrantsAreUsable is the property of a grant over TTL, node timeout,
// node count, fan-out, lease fraction, fencing and each node's latency
// (up to a third past the node timeout), on seeded draws: NewClient
// refuses, with ErrInvalidConfig alone, exactly the configurations in
// which no lock could be kept (by the documented formula, computed here
// from the Options' fields); every lock a TryLock or Lock returns without
// error has a live Context, an Extend that succeeds, and a live Context
// after it; every error matches one kind, which OutcomeOf names.
func TestGrantsAreUsable(t *testing.T) {
	rng := rand.New(rand.NewPCG(0x6a7a, 0x5eed)) //nolint:gosec // G404: seeded draws, repeatable
	ctx := context.Background()
	var refused, accepted, usable, failed int
	for draw := range 400 {
		n := []int{1, 2, 3, 5}[rng.IntN(4)]
		fan := []core.FanOut{core.Multiplexed, core.Sequential}[rng.IntN(2)]
		ttl := time.Duration(10+rng.IntN(491)) * ms
		timeout := time.Duration(1+rng.IntN(120)) * ms
		var lease *redlock.Lease
		if rng.IntN(3) == 0 {
			lease = &redlock.Lease{Fraction: 0.05 + 0.9*rng.Float64()}
		}
		fencing := rng.IntN(4) == 0
		latencies := make([]time.Duration, n)
		for i := range latencies {
			latencies[i] = time.Duration(rng.Int64N(int64(timeout) * 4 / 3))
		}
		useLock := rng.IntN(2) == 0
		what := func() string {
			return "draw " + strconv.Itoa(draw) + ": N=" + strconv.Itoa(n) + " " + fan.String() + " TTL " + ttl.String() +
				" node timeout " + timeout.String() + leaseString(lease)
		}

		// The oracle: the loss margin is two round bounds; the best
		// validity is the TTL less the drift allowance (1% rounded up,
		// and 2 ms); a lease extends at its fraction of it.
		bound := timeout
		if fan == core.Sequential {
			bound *= time.Duration(n)
		}
		best := ttl - (ttl+99)/100 - 2*ms
		unkeepable := best < 2*bound
		if lease != nil && time.Duration(float64(best)*lease.Fraction)+2*bound > best {
			unkeepable = true
		}

		var votes atomic.Int64
		cctx, cancel := context.WithCancel(ctx)
		var e grantEnv
		obs := redlock.Observer{
			// Lock tries until its ctx ends: end it after a few attempts.
			Vote: func(redlock.VoteEvent) {
				if votes.Add(1) > int64(8*n) {
					cancel()
				}
			},
			// Before a Lease's watcher starts: from here the test moves time.
			Acquire: func(redlock.AcquireEvent) { e.clock.setAuto(false) },
		}
		var err error
		e, err = newGrantEnv(t, n, redlock.Options{TTL: ttl, NodeTimeout: timeout, FanOut: fan, Fencing: fencing,
			Lease: lease, Observer: obs, Poll: true})
		if err != nil {
			cancel()
			require.Equal(t, []error{core.ErrInvalidConfig}, kindsOf(err), "%s: %v", what(), err)
			require.True(t, unkeepable || timeout >= ttl, "%s: a keepable configuration refused: %v", what(), err)
			refused++
			continue
		}
		require.False(t, unkeepable, "%s: a configuration that loses every lock at birth accepted", what())
		accepted++

		// Accepted: a lock won at once is usable.
		l, err := tryLock(ctx, e.client, "k")
		require.NoError(t, err, "%s: at once", what())
		requireUsable(t, e, l, what()+": at once")
		require.NoError(t, l.Unlock(ctx), "%s: at once", what())

		for i, d := range latencies {
			e.nodes.SetLatency(i, d)
		}
		votes.Store(0)
		if useLock {
			e.clock.setAuto(true) // Lock's waits pass at once
			l, err = lockKey(cctx, e.client, "k")
		} else {
			l, err = tryLock(cctx, e.client, "k")
		}
		e.clock.setAuto(false)
		cancel()
		if err != nil {
			failed++
			kinds := kindsOf(err)
			require.Len(t, kinds, 1, "%s: %v", what(), err)
			require.Equal(t, outcomeOfKind[kinds[0]], redlock.OutcomeOf(err), "%s: %v", what(), err)
			continue
		}
		usable++
		requireUsable(t, e, l, what()+" latencies "+durations(latencies))
		if err := l.Unlock(ctx); err != nil {
			require.Len(t, kindsOf(err), 1, "%s: %v", what(), err)
		}
	}
	t.Logf("%d configurations refused, %d accepted: %d slow locks usable, %d refused", refused, accepted, usable, failed)
	// The draws cover every branch.
	require.Positive(t, refused)
	require.Positive(t, usable)
	require.Positive(t, failed)
}

func leaseString(l *redlock.Lease) string {
	if l == nil {
		return ""
	}
	return " lease fraction " + strconv.FormatFloat(l.Fraction, 'g', 4, 64)
}

func durations(ds []time.Duration) string {
	s := ""
	for _, d := range ds {
		s += " " + d.String()
	}
	return s
}
