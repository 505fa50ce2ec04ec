package core_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/core/memnode"
)

// counterTokens issues 1, 2, 3, ... so that examples print stable tokens.
// Production code uses redlock.CryptoTokens (crypto/rand).
type counterTokens struct{ n uint64 }

func (c *counterTokens) NewToken() core.Token { c.n++; return core.TokenFromUint64s(0, c.n) }

// Example acquires, extends and releases a lock over five in-memory nodes on
// a manual clock, so that every figure printed is exact.
func Example() {
	clock := memnode.NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	nodes := memnode.New(5, clock)
	nodes.SetLatency(0, 3*time.Millisecond)
	locker, err := core.New(nodes, core.Config{
		TTL:    10 * time.Second,
		Clock:  clock,
		Tokens: &counterTokens{},
		Jitter: fixedRand(0),
	})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	lock, err := locker.Acquire(ctx, "invoice:42")
	if err != nil {
		panic(err)
	}
	// Multiplexed: the quorum of 3 answered at once, node 0 after 3 ms but
	// the round did not wait for it. Drift = 10 s × 1% + 2 ms.
	fmt.Println("token", lock.Token())
	fmt.Println("validity", lock.Validity())
	fmt.Println("holders", nodes.Holders("invoice:42", lock.Token()))

	clock.Advance(5 * time.Second)
	fmt.Println("remaining", lock.RemainingAt(clock.Now()))
	lock, err = locker.Extend(ctx, lock)
	fmt.Println("extended", err == nil, lock.RemainingAt(clock.Now()))

	fmt.Println("release", locker.Release(ctx, lock))
	fmt.Println("holders", nodes.Holders("invoice:42", lock.Token()))
	// Output:
	// token 00000000000000000000000000000001
	// validity 9.898s
	// holders 5
	// remaining 4.898s
	// extended true 9.898s
	// release <nil>
	// holders 0
}

// ExampleLocker_Acquire_taken shows the error of a lock held by another
// client on a majority of nodes: it names the nodes and matches ErrTaken.
func ExampleLocker_Acquire_taken() {
	clock := memnode.NewManualClock(time.Time{})
	nodes := memnode.New(3, clock)
	for i := 0; i < 2; i++ {
		nodes.Set(i, "report", core.TokenFromUint64s(7, 7), time.Minute)
	}
	locker, _ := core.New(nodes, core.Config{
		FanOut: core.Sequential, Retry: core.NoRetry(),
		Clock: clock, Tokens: &counterTokens{}, Jitter: fixedRand(0),
	})
	_, err := locker.Acquire(context.Background(), "report")
	fmt.Println(err)
	fmt.Println(errors.Is(err, core.ErrTaken), errors.Is(err, core.ErrCancelled))
	var e *core.Error
	if errors.As(err, &e) {
		fmt.Println("held on", e.Failed(core.StatusHeld))
	}
	// Output:
	// redlock: lock taken by others: acquire "report"; held on node 0 (mem:0), node 1 (mem:1); not consulted on node 2 (mem:2)
	// true false
	// held on [0 1]
}

// ExampleValidity works the distlock page's arithmetic: a 10 s lock won in
// 150 ms keeps 10 s − 150 ms − (1% × 10 s + 2 ms).
func ExampleValidity() {
	ttl := 10 * time.Second
	drift := core.Drift(ttl, core.DefaultDriftPPM, core.DefaultDriftFixed)
	fmt.Println(drift, core.Validity(ttl, 150*time.Millisecond, drift))
	fmt.Println(core.Validity(ttl, -time.Millisecond, drift), "(clock ran backwards: fail safe)")
	fmt.Println(core.Quorum(5), core.Quorum(4))
	// Output:
	// 102ms 9.748s
	// 0s (clock ran backwards: fail safe)
	// 3 3
}

// ExampleRetryPolicy drives the retry state machine by hand: the policy is
// an immutable value, the Retrier is one acquisition's state, and the
// random bits are an input.
func ExampleRetryPolicy() {
	policy := core.ExponentialBackoff(4, 10*time.Millisecond, 25*time.Millisecond)
	r := policy.Start()
	for {
		n := r.Attempt()
		delay, ok := r.Next(^uint64(0)) // the largest jitter: window − 1ns
		if !ok {
			fmt.Println("attempt", n, "failed: giving up")
			break
		}
		fmt.Println("attempt", n, "failed: retry within", delay.Round(time.Millisecond))
	}
	// Output:
	// attempt 1 failed: retry within 10ms
	// attempt 2 failed: retry within 20ms
	// attempt 3 failed: retry within 25ms
	// attempt 4 failed: giving up
}

// ExampleTally decides a round by hand, as a library author running their
// own I/O would.
func ExampleTally() {
	t := core.NewTally(5)
	for i, s := range []core.Status{core.StatusHeld, core.StatusOK, core.StatusTimeout, core.StatusOK, core.StatusOK} {
		t.Record(i, s, nil)
		fmt.Println(i, s, t.Vote())
	}
	// Output:
	// 0 held pending
	// 1 ok pending
	// 2 timeout pending
	// 3 ok pending
	// 4 ok won
}
