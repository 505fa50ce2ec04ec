package redlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/core"
)

// outcomeOfKind is the Outcome of an error whose one kind is the key.
var outcomeOfKind = map[error]redlock.Outcome{
	core.ErrTaken:             redlock.OutcomeTaken,
	core.ErrQuorumUnreachable: redlock.OutcomeQuorumUnreachable,
	core.ErrCancelled:         redlock.OutcomeCancelled,
	core.ErrNotHeld:           redlock.OutcomeNotHeld,
	core.ErrInvalidConfig:     redlock.OutcomeInvalid,
	core.ErrExtensionLimit:    redlock.OutcomeExtensionLimit,
}

// TestEveryErrorHasOneKind enumerates the paths that fail an operation of
// the Client, its Locks and core's Spec, and checks that each error
// matches exactly one kind (core's sentinels) with errors.Is, the one
// its documentation names, and that OutcomeOf agrees: the kind's
// Outcome, or OutcomeLost for a *LostError, whose cause has the kind.
func TestEveryErrorHasOneKind(t *testing.T) {
	ctx := context.Background()
	newEnv := func(t *testing.T, opts redlock.Options) grantEnv {
		t.Helper()
		if opts.TTL == 0 {
			opts.TTL = time.Second
		}
		if opts.NodeTimeout == 0 {
			opts.NodeTimeout = 50 * ms
		}
		e, err := newGrantEnv(t, 3, opts)
		require.NoError(t, err)
		return e
	}
	held := func(t *testing.T, e grantEnv) *redlock.Lock {
		t.Helper()
		l, err := tryLock(ctx, e.client, "k")
		require.NoError(t, err)
		return l
	}
	// lose has every node lose l's keys, and extends: the proof of loss.
	lose := func(t *testing.T, e grantEnv, l *redlock.Lock) error {
		t.Helper()
		for i := range 3 {
			e.nodes.Restart(i)
		}
		return l.Extend(ctx)
	}
	invalid := func(opts redlock.Options) func(t *testing.T) error {
		return func(t *testing.T) error {
			_, err := newGrantEnv(t, 3, opts)
			return err
		}
	}
	for _, tc := range []struct {
		name string
		kind error
		lost bool // a *LostError
		err  func(t *testing.T) error
	}{
		{"TryLock of a key others hold", core.ErrTaken, false, func(t *testing.T) error {
			e := newEnv(t, redlock.Options{})
			for i := range 3 {
				e.nodes.Set(i, "k", core.TokenFromUint64s(1, 1), time.Minute)
			}
			_, err := tryLock(ctx, e.client, "k")
			return err
		}},
		{"TryLock with a majority down", core.ErrQuorumUnreachable, false, func(t *testing.T) error {
			e := newEnv(t, redlock.Options{})
			e.nodes.SetDown(0, true)
			e.nodes.SetDown(1, true)
			_, err := tryLock(ctx, e.client, "k")
			return err
		}},
		{"TryLock with a majority slower than the node timeout", core.ErrQuorumUnreachable, false, func(t *testing.T) error {
			e := newEnv(t, redlock.Options{})
			e.nodes.SetLatency(0, time.Second)
			e.nodes.SetLatency(1, time.Second)
			_, err := tryLock(ctx, e.client, "k")
			return err
		}},
		{"TryLock cancelled", core.ErrCancelled, false, func(t *testing.T) error {
			e := newEnv(t, redlock.Options{})
			cctx, cancel := context.WithCancel(ctx)
			cancel()
			_, err := tryLock(cctx, e.client, "k")
			return err
		}},
		{"Lock cancelled while it waits", core.ErrCancelled, false, func(t *testing.T) error {
			e := newEnv(t, redlock.Options{Poll: true})
			for i := range 3 {
				e.nodes.Set(i, "k", core.TokenFromUint64s(1, 1), time.Minute)
			}
			cctx, cancel := context.WithCancel(ctx)
			defer cancel()
			var err error
			done := make(chan struct{})
			go func() {
				defer close(done)
				_, err = lockKey(cctx, e.client, "k")
			}()
			cancel() // before or during its attempt, or in its wait: ErrCancelled every time
			<-done
			return err
		}},
		{"TryLock won too late", core.ErrNotHeld, false, func(t *testing.T) error {
			e := newEnv(t, redlock.Options{TTL: 100 * ms, NodeTimeout: 40 * ms})
			for i := range 3 {
				e.nodes.SetLatency(i, 30*ms)
			}
			_, err := tryLock(ctx, e.client, "k")
			return err
		}},
		{"Extend too late for a round", core.ErrNotHeld, false, func(t *testing.T) error {
			e := newEnv(t, redlock.Options{})
			l := held(t, e)
			e.clock.advance(l.Until().Sub(e.clock.Now()) - 80*ms) // 30 ms before LoseAt
			return l.Extend(ctx)
		}},
		{"Extend after a loss", core.ErrNotHeld, true, func(t *testing.T) error {
			e := newEnv(t, redlock.Options{})
			l := held(t, e)
			require.ErrorIs(t, lose(t, e, l), redlock.ErrLost)
			return l.Extend(ctx)
		}},
		{"Extend finds the keys others'", core.ErrTaken, true, func(t *testing.T) error {
			e := newEnv(t, redlock.Options{})
			l := held(t, e)
			for i := range 3 {
				e.nodes.Set(i, "k", core.TokenFromUint64s(1, 1), time.Minute)
			}
			return l.Extend(ctx)
		}},
		{"Extend with a majority down", core.ErrQuorumUnreachable, false, func(t *testing.T) error {
			e := newEnv(t, redlock.Options{})
			l := held(t, e)
			e.nodes.SetDown(0, true)
			e.nodes.SetDown(2, true)
			return l.Extend(ctx)
		}},
		{"Extend cancelled", core.ErrCancelled, false, func(t *testing.T) error {
			e := newEnv(t, redlock.Options{})
			l := held(t, e)
			cctx, cancel := context.WithCancel(ctx)
			cancel()
			return l.Extend(cctx)
		}},
		{"Extend past MaxExtensions", core.ErrExtensionLimit, false, func(t *testing.T) error {
			e := newEnv(t, redlock.Options{MaxExtensions: 1})
			l := held(t, e)
			require.NoError(t, l.Extend(ctx))
			return l.Extend(ctx)
		}},
		{"Extend after Unlock", core.ErrNotHeld, false, func(t *testing.T) error {
			e := newEnv(t, redlock.Options{})
			l := held(t, e)
			require.NoError(t, l.Unlock(ctx))
			return l.Extend(ctx)
		}},
		{"Unlock twice", core.ErrNotHeld, false, func(t *testing.T) error {
			e := newEnv(t, redlock.Options{})
			l := held(t, e)
			require.NoError(t, l.Unlock(ctx))
			return l.Unlock(ctx)
		}},
		{"Unlock after the keys expired", core.ErrNotHeld, false, func(t *testing.T) error {
			e := newEnv(t, redlock.Options{})
			l := held(t, e)
			e.clock.advance(2 * time.Second)
			return l.Unlock(ctx)
		}},
		{"Unlock of keys others took", core.ErrTaken, false, func(t *testing.T) error {
			e := newEnv(t, redlock.Options{})
			l := held(t, e)
			e.clock.advance(2 * time.Second)
			for i := range 3 {
				e.nodes.Set(i, "k", core.TokenFromUint64s(1, 1), time.Minute)
			}
			return l.Unlock(ctx)
		}},
		{"Unlock with a majority down", core.ErrQuorumUnreachable, false, func(t *testing.T) error {
			e := newEnv(t, redlock.Options{})
			l := held(t, e)
			e.nodes.SetDown(1, true)
			e.nodes.SetDown(2, true)
			return l.Unlock(ctx)
		}},
		{"Unlock after a loss", core.ErrNotHeld, true, func(t *testing.T) error {
			e := newEnv(t, redlock.Options{})
			l := held(t, e)
			require.ErrorIs(t, lose(t, e, l), redlock.ErrLost)
			return l.Unlock(ctx)
		}},
		{"the Context's cause after the validity ran out", core.ErrNotHeld, true, func(t *testing.T) error {
			e := newEnv(t, redlock.Options{})
			l := held(t, e)
			lctx := l.Context()
			e.clock.advance(time.Second)
			select {
			case <-lctx.Done():
			case <-time.After(10 * time.Second): // a hang, not a timing
				t.Fatal("the Context outlived the validity")
			}
			err := context.Cause(lctx)
			_ = l.Unlock(ctx) // the LostError again
			return err
		}},
		{"a Lease's MaxHold", core.ErrExtensionLimit, true, func(t *testing.T) error {
			// 988 ms of validity: the lease extends at 790.4 ms, and reaches
			// its MaxHold at 1 s, before the extended lock's LoseAt.
			extended := make(chan struct{}, 1)
			e := newEnv(t, redlock.Options{Lease: &redlock.Lease{Fraction: 0.8, MaxHold: time.Second},
				Observer: redlock.Observer{Extend: func(redlock.ExtendEvent) { extended <- struct{}{} }}})
			start := e.clock.Now()
			l := held(t, e)
			lctx := l.Context()
			e.clock.advance(800 * ms)
			select {
			case <-extended:
			case <-time.After(10 * time.Second): // a hang, not a timing
				t.Fatal("the lease did not extend")
			}
			e.clock.advance(start.Add(time.Second).Sub(e.clock.Now()))
			select {
			case <-lctx.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("the lease outlived its MaxHold")
			}
			err := context.Cause(lctx)
			_ = l.Unlock(ctx) // the LostError again
			return err
		}},
		{"Fence without Fencing", core.ErrInvalidConfig, false, func(t *testing.T) error {
			e := newEnv(t, redlock.Options{})
			l := held(t, e)
			defer func() { require.NoError(t, l.Unlock(ctx)) }()
			_, err := l.Fence()
			return err
		}},
		{"TryLock of an empty key", core.ErrInvalidConfig, false, func(t *testing.T) error {
			_, err := tryLock(ctx, newEnv(t, redlock.Options{}).client, "")
			return err
		}},
		{"TryLock with a nil context", core.ErrInvalidConfig, false, func(t *testing.T) error {
			_, err := tryLock(nil, newEnv(t, redlock.Options{}).client, "k") //nolint:staticcheck // SA1012: the error it gives
			return err
		}},
		{"NewClient: a negative TTL", core.ErrInvalidConfig, false, invalid(redlock.Options{TTL: -time.Second})},
		{"NewClient: a node timeout not below the TTL", core.ErrInvalidConfig, false, invalid(redlock.Options{TTL: time.Second, NodeTimeout: time.Second})},
		{"NewClient: no lock keepable", core.ErrInvalidConfig, false, invalid(redlock.Options{TTL: time.Second, NodeTimeout: 200 * ms, FanOut: core.Sequential})},
		{"NewClient: a lease that never extends", core.ErrInvalidConfig, false, invalid(redlock.Options{TTL: time.Second, NodeTimeout: 50 * ms, Lease: &redlock.Lease{Fraction: 0.95}})},
		{"NewClient: a Lease fraction out of range", core.ErrInvalidConfig, false, invalid(redlock.Options{Lease: &redlock.Lease{Fraction: 1}})},
		{"NewClient: a nil driver", core.ErrInvalidConfig, false, func(*testing.T) error {
			_, err := redlock.NewClient(nil, redlock.Options{})
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.err(t)
			require.Error(t, err)
			assert.Equal(t, []error{tc.kind}, kindsOf(err), "%v", err)
			assert.Equal(t, tc.lost, errors.Is(err, redlock.ErrLost), "%v", err)
			want := outcomeOfKind[tc.kind]
			if tc.lost {
				want = redlock.OutcomeLost
			}
			assert.Equal(t, want, redlock.OutcomeOf(err), "%v", err)
		})
	}
}
