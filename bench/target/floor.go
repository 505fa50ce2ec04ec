package target

import (
	"context"
	"fmt"
	"time"

	"github.com/redlock-go/redlock/bench/measure"
	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/core/memnode"
)

// MemFloor is the floor under the in-memory pair (the "mem" driver's
// cells): memnode's share of a pair and the clock readings no pair can
// do without, with no core and no runner. A pair sends the acquisition
// to every node and then the release, in one batch each (multiplexed)
// or one node at a time (sequential), and reads the clock three times:
// the acquisition's start, its round's end (its validity), and the
// release's start. The core's overhead is the mem cell's figure less
// this one's, measured beside it on the same machine.
type MemFloor struct {
	drv   *memnode.Cluster
	fan   core.FanOut
	ttl   time.Duration
	nodes int
}

// NewMemFloor returns the floor of a mem cell over nodes in-memory nodes
// with the given fan-out and TTL.
func NewMemFloor(nodes int, fan core.FanOut, ttl time.Duration) *MemFloor {
	return &MemFloor{drv: memnode.New(nodes, core.SystemClock{}), fan: fan, ttl: ttl, nodes: nodes}
}

// Worker implements measure.Subject.
func (f *MemFloor) Worker(key string) measure.Worker {
	tok := core.Token{0: 0xf1, 7: 0x0f} // one key a worker: a token of its own is not needed

	return &floorWorker{f: f,
		acquire: core.Command{Op: core.OpAcquire, Key: key, Token: tok, TTL: f.ttl},
		release: core.Command{Op: core.OpRelease, Key: key, Token: tok}}
}

type floorWorker struct {
	f                *MemFloor
	acquire, release core.Command
}

// Pair runs the acquisition's round and the release's round and checks
// that every node answered OK: the floor does the work the pair does.
func (w *floorWorker) Pair(ctx context.Context) (bool, error) {
	start := time.Now()
	if err := w.round(ctx, &w.acquire, start); err != nil {
		return false, err
	}
	if time.Since(start) >= w.f.ttl { // the validity, as the round's end reads it
		return true, fmt.Errorf("target: floor: the acquisition outlived its TTL %v", w.f.ttl)
	}
	return true, w.round(ctx, &w.release, time.Now())
}

// round sends cmd to every node in one batch and takes every reply.
func (w *floorWorker) round(ctx context.Context, cmd *core.Command, now time.Time) error {
	b := w.f.drv.Begin(ctx)
	defer b.Close()
	deadline := now.Add(w.f.ttl)
	n := w.f.nodes
	for i := 0; i < n; i++ {
		b.Send(i, *cmd, deadline)
		if w.f.fan == core.Sequential {
			if err := receiveOK(b, cmd); err != nil {
				return err
			}
		}
	}
	if w.f.fan == core.Sequential {
		return nil
	}
	for i := 0; i < n; i++ {
		if err := receiveOK(b, cmd); err != nil {
			return err
		}
	}
	return nil
}

func receiveOK(b core.Batch, cmd *core.Command) error {
	r, ok := b.Receive(nil)
	switch {
	case !ok:
		return fmt.Errorf("target: floor: %v of %q: no reply", cmd.Op, cmd.Key)
	case r.Status != core.StatusOK:
		return fmt.Errorf("target: floor: %v of %q on node %d: %v (%w)", cmd.Op, cmd.Key, r.Node, r.Status, r.Err)
	}
	return nil
}
