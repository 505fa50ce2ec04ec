package redlock_test

// Tests that reproduce known defects. They fail on the code as it is; each
// says what it expects and how it fails today.

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/core/memnode"
	"github.com/redlock-go/redlock/drivers"
)

// TestWakeStaleMinority: five nodes; node 0 holds the key with the token of
// a crashed client (nobody will release it; it expires in 5 s). Client A
// holds the lock on nodes 1-4. Client B's Lock (wake on release, hour-long
// retry delays, so that only a wake can get it in) fails and waits. A
// unlocks: nodes 1-4 are free and announce it, a quorum B can win at once.
//
// B must take the lock before the stale key expires. Today it does not:
// its failed attempt records as held only the nodes that answered before
// the round was decided (node 0 and two others), and the wake counts
// announcements from those alone, so node 0, which never announces, holds
// B back until its key expires. The step clock shows the order: B gets in
// only when the clock is moved past the stale key's expiry.
func TestWakeStaleMinority(t *testing.T) {
	for _, mode := range []redlock.FanOut{redlock.Multiplexed, redlock.Sequential} {
		t.Run("mode="+mode.String(), func(t *testing.T) {
			const staleTTL = 5 * time.Second
			clock := newStepClock()
			nodes := memnode.New(5, clock)
			opts := redlock.Options{TTL: ttl, NodeTimeout: 50 * time.Millisecond, FanOut: mode, Clock: clock}
			a, err := redlock.NewClient(nodes, opts)
			require.NoError(t, err)
			opts.Backoff = redlock.RandomDelay(time.Hour, time.Hour)
			counted := newCounting(nodes)
			b, err := redlock.NewClient(counted, opts)
			require.NoError(t, err)

			stale := core.TokenFromUint64s(0x57a1e, 0xdead) // a crashed client's
			nodes.Set(0, "k", stale, staleTTL)
			staleEnd := clock.Now().Add(staleTTL)
			holder, err := a.TryLock(context.Background(), "k")
			require.NoError(t, err)
			require.Equal(t, 4, nodes.Holders("k", holder.Token()), "A holds nodes 1-4")
			// A has no watcher: without a Lease or Context, a Lock starts none.

			ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang guard only
			defer cancel()
			type result struct {
				l   *redlock.Lock
				err error
			}
			got := make(chan result, 1)
			go func() {
				l, err := b.Lock(ctx, "k")
				got <- result{l, err}
			}()
			// B's attempts are refused and it sleeps on the clock: the
			// only sleeper.
			waitUntil := clock.next(t)
			attempts := counted.attempts.Load()
			require.Positive(t, attempts, "B went to sleep without an attempt")

			unlocked := clock.Now()
			require.NoError(t, holder.Unlock(context.Background()))
			// The clock stays where it is: announcements arrive one by one,
			// and moving the clock to B's sleep while some are still on
			// their way would expire the stale key under it. Without a
			// wake on the release, B never gets in before the guard.
			var r result
			select {
			case r = <-got:
			case <-time.After(10 * time.Second): // a hang, not a timing
				t.Fatalf("B did not take the lock once nodes 1-4 were released and announced: it waits for the stale key's expiry, %v after the unlock on a clock the test does not move",
					staleEnd.Sub(unlocked))
			}
			require.NoError(t, r.err)
			defer func() { require.NoError(t, r.l.Unlock(context.Background())) }()
			tok, left, ok := nodes.Get(0, "k")
			assert.True(t, ok && tok == stale && left > 0,
				"B took the lock only once the stale key on node 0 had expired: its Lock returned with the clock "+
					"%v after A's unlock (the stale key's expiry was %v after it; B's wait before the unlock "+
					"was until %v after it, after %d attempts)",
				clock.Now().Sub(unlocked), staleEnd.Sub(unlocked), waitUntil.Sub(unlocked), attempts)
		})
	}
}

// TestLeaseLossBeforeUntil: a leased lock (Fraction 1/3, multiplexed) whose
// majority hangs: every extension times out. Its Context must be done
// strictly before Until, by the lock's own clock, so that work under it
// stops while the lock is still valid. Today it is cancelled exactly at
// Until: the last retry is scheduled so that its round, which lasts the
// node timeout, ends at the end of the validity.
//
// The retry delay is the default range's longest, 250 ms, every time, so
// that the run is the same every time: the retry
// that does not fit whole before the validity's end is moved to end at
// it. With random delays that happens in about three runs out of four;
// in the others a delay lands the last round's end within a node timeout
// of Until, and the lease gives up before it.
func TestLeaseLossBeforeUntil(t *testing.T) {
	f := newFixture(t, redlock.Options{FanOut: redlock.Multiplexed, Backoff: redlock.RandomDelay(250*time.Millisecond, 250*time.Millisecond),
		Lease: &redlock.Lease{Fraction: 1.0 / 3}})
	l := f.tryLock(t, "k")
	until := l.Until()
	for i := 0; i < 2; i++ {
		f.nodes.SetHung(i, true)
	}
	// runUntilDone, reading Until after every step: an extension that
	// succeeded would move the Until in force.
	for steps := 0; ; steps++ {
		require.Less(t, steps, 1000, "the watcher keeps waking without an end")
		if u := l.Until(); !u.IsZero() {
			until = u
		}
		select {
		case <-l.Context().Done():
		case at := <-f.clock.asleep:
			f.clock.set(at)
			continue
		case <-time.After(10 * time.Second): // a hang, not a timing
			t.Fatal("the watcher neither sleeps nor ends the context")
		}
		break
	}
	done := f.clock.Now()
	assert.ErrorIs(t, context.Cause(l.Context()), redlock.ErrQuorumUnreachable)
	assert.True(t, done.Before(until),
		"the lock's Context was done at %v, %v after the Until in force (%v): the loss was reported once the lock was already invalid",
		done.Format(time.StampMicro), done.Sub(until), until.Format(time.StampMicro))
	for i := 0; i < 2; i++ {
		f.nodes.SetHung(i, false)
	}
	assert.ErrorIs(t, l.Unlock(context.Background()), redlock.ErrLost)
}

// TestNewClientTypedNilDriver: a typed nil driver, as a failed Dial's
// result stored in a Driver variable would be, must be refused with
// ErrInvalidConfig, as an untyped nil is. Today NewClient calls its Nodes
// method and panics with a nil dereference.
func TestNewClientTypedNilDriver(t *testing.T) {
	_, err := redlock.NewClient(nil, redlock.Options{})
	require.ErrorIs(t, err, redlock.ErrInvalidConfig, "untyped nil")
	for _, d := range []redlock.Driver{
		(*drivers.Driver)(nil), // what every client package's Dial and New return
		(*memnode.Cluster)(nil),
	} {
		name := fmt.Sprintf("%T", d)
		t.Run(name, func(t *testing.T) {
			var err error
			func() {
				defer func() {
					if p := recover(); p != nil {
						t.Fatalf("NewClient(%s(nil)) panicked instead of returning ErrInvalidConfig: %v", name, p)
					}
				}()
				_, err = redlock.NewClient(d, redlock.Options{})
			}()
			assert.ErrorIs(t, err, redlock.ErrInvalidConfig, "NewClient(%s(nil))", name)
		})
	}
}
