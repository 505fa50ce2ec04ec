package core_test

import (
	"errors"
	"testing"
	"time"

	"github.com/redlock-go/redlock/core"
)

// TestTryMakesOneAttemptThatNeverQueues: Spec.Try's acquisition ends
// after one failed attempt and its cleanup, whatever the retry policy's
// tries; on a Fair Spec its attempt is a plain SET NX (no probe: it cannot
// take a key handed to a waiter) and its cleanup a plain release, which
// queues nobody: a caller that will not wait must not be handed a release.
func TestTryMakesOneAttemptThatNeverQueues(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	for _, fair := range []bool{false, true} {
		spec, err := core.NewSpec(names{"a", "b", "c"}, core.Config{Fair: fair, TTL: 10 * time.Second,
			Tokens: &seqTokens{}, Jitter: fixedRand(0), Retry: core.RandomDelay(5, time.Millisecond, time.Millisecond)})
		if err != nil {
			t.Fatal(err)
		}
		a, err := spec.Try("k", core.Token{}, t0)
		if err != nil {
			t.Fatal(err)
		}
		att := drive(a.Round(), t0, core.StatusHeld)[0]
		wantCommand(t, "a Try's attempt is plain", att, core.Command{Op: core.OpAcquire, Key: "k", Token: att.Token, TTL: 10 * time.Second})
		a.RoundDone(t0)
		if a.Phase() != core.PhaseRound {
			t.Fatalf("fair=%v: phase %v after the failed attempt, want its cleanup", fair, a.Phase())
		}
		clean := drive(a.Round(), t0, core.StatusHeld)[0]
		wantCommand(t, "a Try's cleanup queues nobody", clean, core.Command{Op: core.OpRelease, Key: "k", Token: att.Token})
		a.RoundDone(t0)
		if a.Phase() != core.PhaseDone {
			t.Fatalf("fair=%v: phase %v after the cleanup, want done: a Try never waits", fair, a.Phase())
		}
		if _, err := a.Result(); !errors.Is(err, core.ErrTaken) {
			t.Errorf("fair=%v: %v, want ErrTaken", fair, err)
		}
	}
}

// TestTryChecksKeysAsTheSpec: a Try on a Fair Spec refuses the keys of
// the waiter queues, as Acquire does, though its attempt is not Fair.
func TestTryChecksKeysAsTheSpec(t *testing.T) {
	spec := fairSpec(t, core.RetryPolicy{})
	for _, key := range []string{"redlock:queue:k", "redlock:queue-due:k", ""} {
		if _, err := spec.Try(key, core.Token{}, time.Unix(1, 0)); !errors.Is(err, core.ErrInvalidConfig) {
			t.Errorf("%q: %v, want ErrInvalidConfig", key, err)
		}
	}
}

// TestTryAllocatesNothing: a Try won on its first attempt allocates
// nothing, Fair or not.
func TestTryAllocatesNothing(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	for _, fair := range []bool{false, true} {
		spec, err := core.NewSpec(names{"a", "b", "c"}, core.Config{Fair: fair, Tokens: &seqTokens{}, Jitter: fixedRand(0)})
		if err != nil {
			t.Fatal(err)
		}
		var won bool
		if n := mallocsPerRun(100, func() {
			a, err := spec.Try("k", core.Token{}, now)
			if err != nil {
				panic(err)
			}
			for {
				node, _, _, ok := a.Round().Next(now)
				if !ok {
					break
				}
				a.Round().Receive(core.Reply{Node: node, Status: core.StatusOK})
			}
			a.RoundDone(now)
			sink, err = a.Result()
			won = err == nil
		}); n != 0 || !won {
			t.Errorf("fair=%v: %d allocations per Try, won %v; want 0, won", fair, n, won)
		}
	}
}
