package target

import (
	"context"
	"fmt"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/bench/measure"
	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/core/memnode"
)

// MemFloor is the floor under the in-memory pair (the "mem" driver's
// cells): memnode's share of a pair, the token a pair draws and the
// clock readings no pair can do without, with no core and no runner. A
// pair draws a token from redlock.CryptoTokens (the Client's default),
// sends the acquisition to every node, in one batch (multiplexed) or one
// node at a time (sequential), and takes replies until a majority
// answered OK, as a round stops at its quorum; then the release, every
// reply awaited, as a release round does. It reads the clock three
// times: the acquisition's start, its round's end (its validity), and
// the release's start. The core's overhead is the mem cell's figure
// less this one's, measured beside it on the same machine.
type MemFloor struct {
	drv    *memnode.Cluster
	tokens core.TokenSource
	fan    core.FanOut
	ttl    time.Duration
	nodes  int
}

// NewMemFloor returns the floor of a mem cell over nodes in-memory nodes
// with the given fan-out and TTL.
func NewMemFloor(nodes int, fan core.FanOut, ttl time.Duration) *MemFloor {
	return &MemFloor{drv: memnode.New(nodes, core.SystemClock{}), tokens: redlock.CryptoTokens(), fan: fan, ttl: ttl, nodes: nodes}
}

// Worker implements measure.Subject.
func (f *MemFloor) Worker(key string) measure.Worker {
	return &floorWorker{f: f,
		acquire: core.Command{Op: core.OpAcquire, Key: key, TTL: f.ttl},
		release: core.Command{Op: core.OpRelease, Key: key}}
}

type floorWorker struct {
	f                *MemFloor
	acquire, release core.Command
}

// Pair runs the acquisition's round and the release's round and checks
// the answers it waited for: OK, or for the release a key missing on a
// node the sequential acquisition did not reach.
func (w *floorWorker) Pair(ctx context.Context) (bool, error) {
	start := time.Now()
	tok := w.f.tokens.NewToken()
	w.acquire.Token, w.release.Token = tok, tok
	if err := w.round(ctx, &w.acquire, start, w.f.nodes/2+1); err != nil {
		return false, err
	}
	if time.Since(start) >= w.f.ttl { // the validity, as the round's end reads it
		return true, fmt.Errorf("target: floor: the acquisition outlived its TTL %v", w.f.ttl)
	}
	return true, w.round(ctx, &w.release, time.Now(), w.f.nodes)
}

// round sends cmd to the nodes, in one batch, and takes need replies,
// each of which must be OK (receiveOK), or fails at the first that is
// not: sequentially, a node's before the next node's command, none sent
// once need answered; multiplexed, to every node, the replies once every
// command is sent.
func (w *floorWorker) round(ctx context.Context, cmd *core.Command, now time.Time, need int) error {
	b := w.f.drv.Begin(ctx)
	defer b.Close()
	deadline := now.Add(w.f.ttl)
	got := 0
	for i := 0; i < w.f.nodes && (w.f.fan != core.Sequential || got < need); i++ {
		b.Send(i, *cmd, deadline)
		if w.f.fan == core.Sequential {
			if err := receiveOK(b, cmd); err != nil {
				return err
			}
			got++
		}
	}
	for ; got < need; got++ {
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
	case r.Err != nil:
		return fmt.Errorf("target: floor: %v of %q on node %d: %w", cmd.Op, cmd.Key, r.Node, r.Err)
	case r.Status != core.StatusOK && (cmd.Op != core.OpRelease || r.Status != core.StatusMissing): // a node the acquisition did not take
		return fmt.Errorf("target: floor: %v of %q on node %d: %v", cmd.Op, cmd.Key, r.Node, r.Status)
	}
	return nil
}
