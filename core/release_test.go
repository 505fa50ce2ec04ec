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
}

type roundCount struct{ sent, received int }

func (d *countingDriver) Begin(ctx context.Context) core.Batch {
	return &countingBatch{Batch: d.Driver.Begin(ctx), d: d}
}

type countingBatch struct {
	core.Batch
	d       *countingDriver
	release bool
	c       roundCount
}

func (b *countingBatch) Send(node int, cmd core.Command, deadline time.Time) {
	b.release = cmd.Op == core.OpRelease
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
	if b.release {
		b.d.mu.Lock()
		b.d.releases = append(b.d.releases, b.c)
		b.d.mu.Unlock()
	}
	b.Batch.Close()
}

// requireEveryReleaseAwaited fails unless every release round so far sent
// to all n nodes and received n replies.
func (d *countingDriver) requireEveryReleaseAwaited(t *testing.T, n int) {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.releases) == 0 {
		t.Fatal("no release round ran")
	}
	for i, c := range d.releases {
		if c.sent != n || c.received != n {
			t.Fatalf("release round %d sent %d and awaited %d replies of %d nodes: "+
				"a delete still in flight when Release returns can be lost", i, c.sent, c.received, n)
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
					d.requireEveryReleaseAwaited(t, n)
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
					d.requireEveryReleaseAwaited(t, n)
				})
			})
		})
	}
}

func newCountingLocker(t *testing.T, d core.Driver, mode core.FanOut, clock core.Clock) *core.Locker {
	t.Helper()
	l, err := core.New(d, core.Config{TTL: time.Second, NodeTimeout: 50 * ms, FanOut: mode,
		Clock: clock, Tokens: &seqTokens{}, Jitter: fixedRand(0), Retry: core.NoRetry()})
	if err != nil {
		t.Fatal(err)
	}
	return l
}
