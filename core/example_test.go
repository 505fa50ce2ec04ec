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
// Production code uses redlock.CryptoTokens (AES-CTR keyed from crypto/rand).
type counterTokens struct{ n uint64 }

func (c *counterTokens) NewToken() core.Token { c.n++; return core.TokenFromUint64s(0, c.n) }

// run drives one round over a Driver until it is done, as the root
// package's redlock.Client does: send every command the round hands out,
// feed it the replies. Core itself does no I/O.
func run(d core.Driver, clock core.Clock, r *core.Round) {
	b := d.Begin(context.Background())
	defer b.Close()
	for !r.Done() {
		for {
			node, cmd, deadline, ok := r.Next(clock.Now())
			if !ok {
				break
			}
			b.Send(node, cmd, deadline)
		}
		if r.Done() {
			break
		}
		rep, ok := b.Receive(nil)
		if !ok {
			return
		}
		r.Receive(rep)
	}
}

// Example acquires, extends and releases a lock over five in-memory nodes on
// a manual clock, so that every figure printed is exact. It drives core's
// step values by hand; programs use the root package's redlock.Client,
// which does the same.
func Example() {
	clock := memnode.NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	nodes := memnode.New(5, clock)
	nodes.SetLatency(0, 3*time.Millisecond)
	spec, err := core.NewSpec(nodes, core.Config{
		TTL:    10 * time.Second,
		Tokens: &counterTokens{},
		Jitter: fixedRand(0),
	})
	if err != nil {
		panic(err)
	}
	acq, err := spec.Acquire("invoice:42", core.Token{}, clock.Now())
	if err != nil {
		panic(err)
	}
	for acq.Phase() == core.PhaseRound { // uncontended: no wait
		run(nodes, clock, acq.Round())
		acq.RoundDone(clock.Now())
	}
	lock, err := acq.Result()
	if err != nil {
		panic(err)
	}
	// Multiplexed: the quorum of 3 answered at once, node 0 after 3 ms but
	// the round did not wait for it. Drift = 10 s × 1% + 2 ms.
	fmt.Println("token", lock.Token())
	fmt.Println("validity", core.RemainingAt(lock, clock.Now()))
	fmt.Println("holders", nodes.Holders("invoice:42", lock.Token()))

	clock.Advance(5 * time.Second)
	fmt.Println("remaining", core.RemainingAt(lock, clock.Now()))
	lease := spec.Lease(lock)
	if err := lease.Extend(clock.Now()); err != nil {
		panic(err)
	}
	run(nodes, clock, lease.Round())
	err = lease.RoundDone(clock.Now())
	lock = lease.Grant()
	fmt.Println("extended", err == nil, core.RemainingAt(lock, clock.Now()))

	r, err := spec.Release(lock, clock.Now())
	if err != nil {
		panic(err)
	}
	run(nodes, clock, &r) // a release awaits every node, node 0 too
	fmt.Println("release", spec.Released(lock, &r))
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

// ExampleSpec_Acquire_taken shows the error of a lock held by another
// client on a majority of nodes: it names the nodes and matches ErrTaken.
func ExampleSpec_Acquire_taken() {
	clock := memnode.NewManualClock(time.Time{})
	nodes := memnode.New(3, clock)
	for i := 0; i < 2; i++ {
		nodes.Set(i, "report", core.TokenFromUint64s(7, 7), time.Minute)
	}
	spec, _ := core.NewSpec(nodes, core.Config{
		FanOut: core.Sequential, Retry: core.RandomDelay(1, 0, 0),
		Tokens: &counterTokens{}, Jitter: fixedRand(0),
	})
	acq, _ := spec.Acquire("report", core.Token{}, clock.Now())
	for acq.Phase() == core.PhaseRound { // the attempt, then its cleanup
		run(nodes, clock, acq.Round())
		acq.RoundDone(clock.Now())
	}
	_, err := acq.Result()
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
// 150 ms keeps 10 s − 150 ms − (1% × 10 s + 2 ms), the default drift.
func ExampleValidity() {
	ttl := 10 * time.Second
	drift := ttl/100 + 2*time.Millisecond // the default drift: 1% + 2 ms
	fmt.Println(drift, core.Validity(ttl, 150*time.Millisecond, drift))
	fmt.Println(core.Validity(ttl, -time.Millisecond, drift), "(clock ran backwards: fail safe)")
	fmt.Println(core.Quorum(5), core.Quorum(4))
	// Output:
	// 102ms 9.748s
	// 0s (clock ran backwards: fail safe)
	// 3 3
}

// ExampleRetryPolicy works out a policy's delays by hand: the policy is an
// immutable value, the delay before retry k a pure function of k and the
// random bits, which are an input.
func ExampleRetryPolicy() {
	const tries = 4
	policy := core.ExponentialBackoff(tries, 10*time.Millisecond, 25*time.Millisecond)
	for n := 1; ; n++ {
		if n == tries {
			fmt.Println("attempt", n, "failed: giving up")
			break
		}
		delay := policy.Delay(n, ^uint64(0)) // the largest jitter: window − 1ns
		fmt.Println("attempt", n, "failed: retry within", delay.Round(time.Millisecond))
	}
	// Output:
	// attempt 1 failed: retry within 10ms
	// attempt 2 failed: retry within 20ms
	// attempt 3 failed: retry within 25ms
	// attempt 4 failed: giving up
}

// ExampleRound decides a round by hand, as a library author running their
// own I/O would: the round counts the replies fed to it, and is done once
// a quorum of five answered OK.
func ExampleRound() {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	spec, _ := core.NewSpec(names{"a", "b", "c", "d", "e"}, core.Config{Tokens: &counterTokens{}, Jitter: fixedRand(0)})
	acq, _ := spec.Acquire("k", core.Token{}, now)
	r := acq.Round()
	for i, s := range []core.Status{core.StatusHeld, core.StatusOK, core.StatusTimeout, core.StatusOK, core.StatusOK} {
		node, _, _, _ := r.Next(now)
		r.Receive(core.Reply{Node: node, Status: s})
		fmt.Println(i, s, r.Done())
	}
	// Output:
	// 0 held false
	// 1 ok false
	// 2 timeout false
	// 3 ok false
	// 4 ok true
}
