package core_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/core/memnode"
)

// countingDriver wraps a driver and records, for every release round, how
// many commands were sent and how many replies the core waited for. A
// reply the core does not wait for is a delete that may still be in flight
// when Release returns, and that Close or process exit can drop.
type countingDriver struct {
	core.Driver
	mu       sync.Mutex
	releases []roundCount
	acquires []roundCount
}

type roundCount struct{ sent, received int }

func (d *countingDriver) Begin(ctx context.Context) core.Batch {
	return &countingBatch{Batch: d.Driver.Begin(ctx), d: d}
}

type countingBatch struct {
	core.Batch
	d  *countingDriver
	op core.Op
	c  roundCount
}

func (b *countingBatch) Send(node int, cmd core.Command, deadline time.Time) {
	b.op = cmd.Op
	b.c.sent++
	b.Batch.Send(node, cmd, deadline)
}

func (b *countingBatch) Receive(cancel <-chan struct{}) (core.Reply, bool) {
	r, ok := b.Batch.Receive(cancel)
	if ok {
		b.c.received++
	}
	return r, ok
}

func (b *countingBatch) Close() {
	b.d.mu.Lock()
	switch b.op {
	case core.OpRelease:
		b.d.releases = append(b.d.releases, b.c)
	case core.OpAcquire:
		b.d.acquires = append(b.d.acquires, b.c)
	}
	b.d.mu.Unlock()
	b.Batch.Close()
}

// requireEveryReleaseAwaited fails unless every release round so far sent
// to all n nodes and received a reply from each node that could hold the
// token: all n for a Release, and for the cleanup after a failed attempt
// each node the attempt sent its SET to (none timed out here).
func (d *countingDriver) requireEveryReleaseAwaited(t *testing.T, n int, cleanup bool) {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.releases) == 0 {
		t.Fatal("no release round ran")
	}
	for i, c := range d.releases {
		want := n
		if cleanup {
			want = d.acquires[i].sent
		}
		if c.sent != n || c.received != want {
			t.Fatalf("release round %d sent %d and awaited %d replies, want %d of %d nodes: "+
				"a delete still in flight when Release returns can be lost", i, c.sent, c.received, want, n)
		}
	}
}

// TestReleaseAwaitsEveryNode: Release, and the cleanup after a failed
// attempt, return only once every node has answered or timed out, in both
// fan-outs, so that no key with the token is left on a node that answered.
// The nodes answer at different times, so a multiplexed round that stopped
// at the quorum would leave the slowest deletes unawaited.
func TestReleaseAwaitsEveryNode(t *testing.T) {
	for _, n := range []int{3, 5} {
		t.Run("N="+strconv.Itoa(n), func(t *testing.T) {
			forModes(t, func(t *testing.T, mode core.FanOut) {
				t.Run("release", func(t *testing.T) {
					clock := memnode.NewManualClock(epoch)
					c := memnode.New(n, clock)
					for i := range n {
						c.SetLatency(i, time.Duration(i+1)*ms)
					}
					d := &countingDriver{Driver: c}
					l := newCountingLocker(t, d, mode, clock)
					lock, err := l.Acquire(context.Background(), "k")
					if err != nil {
						t.Fatal(err)
					}
					if err := l.Release(context.Background(), lock); err != nil {
						t.Fatal(err)
					}
					d.requireEveryReleaseAwaited(t, n, false)
				})
				t.Run("cleanup", func(t *testing.T) {
					clock := memnode.NewManualClock(epoch)
					c := memnode.New(n, clock)
					for i := range n {
						c.SetLatency(i, time.Duration(i+1)*ms)
					}
					// A majority held by another token: the attempt fails and
					// its cleanup round releases every node.
					for i := range core.Quorum(n) {
						c.Set(i, "k", core.TokenFromUint64s(7, 7), time.Minute)
					}
					d := &countingDriver{Driver: c}
					l := newCountingLocker(t, d, mode, clock)
					if _, err := l.Acquire(context.Background(), "k"); !errors.Is(err, core.ErrTaken) {
						t.Fatalf("err = %v, want ErrTaken", err)
					}
					d.requireEveryReleaseAwaited(t, n, true)
				})
			})
		})
	}
}

func newCountingLocker(t *testing.T, d core.Driver, mode core.FanOut, clock *memnode.ManualClock) *locker {
	t.Helper()
	l, err := newLocker(d, clock, core.Config{TTL: time.Second, NodeTimeout: 50 * ms, FanOut: mode,
		Tokens: &seqTokens{}, Jitter: fixedRand(0), Retry: core.RandomDelay(1, 0, 0)})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestCleanupDoesNotWaitAgainForHungNodes: a failed attempt's cleanup sends
// its delete to every node but does not wait again for the nodes that just
// timed out on the attempt (the delete is queued behind the SET there), so
// each attempt against hung nodes costs one node timeout, not two: an
// acquisition fails within tries × node timeout plus the retry delays.
func TestCleanupDoesNotWaitAgainForHungNodes(t *testing.T) {
	forModes(t, func(t *testing.T, mode core.FanOut) {
		const timeout, delay = 50 * ms, 10 * ms
		e := newEnv(t, 5, mode, core.Config{TTL: time.Second, NodeTimeout: timeout, Retry: core.RandomDelay(3, delay, delay)})
		for _, i := range []int{1, 2, 3} {
			e.c.SetHung(i, true)
		}
		calls := [5]int{}
		for i := range calls {
			calls[i] = e.c.Calls(i)
		}
		start := e.clock.Now()
		_, err := e.l.Acquire(context.Background(), "k")
		if !errors.Is(err, core.ErrQuorumUnreachable) {
			t.Fatalf("err = %v", err)
		}
		// Multiplexed: each attempt waits one node timeout for the three
		// hung nodes at once. Sequential: it waits for nodes 1, 2 and 3 in
		// turn, and the quorum is lost after the third.
		want := 3*timeout + 2*delay
		if mode == core.Sequential {
			want = 3*3*timeout + 2*delay
		}
		if got := e.clock.Now().Sub(start); got != want {
			t.Fatalf("acquisition took %v on the manual clock, want %v", got, want)
		}
		// Every node still got every attempt's cleanup delete.
		if got := e.c.Calls(0) - calls[0]; got != 6 {
			t.Fatalf("node 0 got %d commands, want 3 SETs and 3 deletes", got)
		}
		for _, i := range []int{1, 2, 3} {
			if got := e.c.Calls(i) - calls[i]; got != 6 {
				t.Fatalf("hung node %d was handed %d commands, want 3 SETs and 3 deletes", i, got)
			}
		}
	})
}

// TestCleanupWithEveryNodeHung: when every node timed out, the cleanup
// awaits nobody and must not block waiting for a reply.
func TestCleanupWithEveryNodeHung(t *testing.T) {
	forModes(t, func(t *testing.T, mode core.FanOut) {
		e := newEnv(t, 3, mode, core.Config{NodeTimeout: 50 * ms, Retry: core.RandomDelay(2, 10*ms, 10*ms)})
		for i := range 3 {
			e.c.SetHung(i, true)
		}
		start := e.clock.Now()
		if _, err := e.l.Acquire(context.Background(), "k"); !errors.Is(err, core.ErrQuorumUnreachable) {
			t.Fatalf("err = %v", err)
		}
		want := 2*50*ms + 10*ms
		if mode == core.Sequential {
			want = 2*2*50*ms + 10*ms // the quorum is lost at the second hung node
		}
		if got := e.clock.Now().Sub(start); got != want {
			t.Fatalf("took %v, want %v", got, want)
		}
	})
}
