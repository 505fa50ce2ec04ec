package engine

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/redlock-go/redlock/core"
)

// answerConn answers every command at once, without allocating: 1 to a
// script, OK to a SET.
type answerConn struct{}

func (answerConn) Exchange(_ context.Context, cmds [][]string, replies []Reply) error {
	for i, c := range cmds {
		replies[i] = Reply{Kind: KindInt, Int: 1}
		if c[0] == "SET" {
			replies[i] = Reply{Kind: KindOK}
		}
	}
	return nil
}

func (answerConn) Close() error { return nil }

// TestBatchesOutliveACollection: a round's batch, once closed, is the
// next round's, garbage collections between them or not, and taking it
// allocates nothing. A sync.Pool would drop it at the second collection
// (and allocate to take one after the first): an uncontended pair over a
// real server then cost about a tenth of an allocation more than the Lock,
// which testing.AllocsPerRun, rounding down, does not show.
func TestBatchesOutliveACollection(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts: the race detector allocates on its own")
	}
	dial := func(context.Context, int) (Conn, error) { return answerConn{}, nil }
	e := mustNew(t, Config{Names: []string{"a:1", "b:1", "c:1", "d:1", "e:1"}, Dial: dial})
	defer e.Close()
	ctx := context.Background()
	round := func(cmd core.Command) core.Batch {
		b := e.Begin(ctx)
		dl := time.Now().Add(time.Minute)
		for i := range 5 {
			b.Send(i, cmd, dl)
		}
		for range 5 {
			if r, ok := b.Receive(nil); !ok || r.Status != core.StatusOK {
				t.Fatalf("reply %+v, ok=%v", r, ok)
			}
		}
		b.Close()
		return b
	}
	round(acquire("k", 1))
	round(release("k", 1))
	// A batch that sends nothing is recycled by its Close, at once.
	b := e.Begin(ctx)
	b.Close()
	for range 2 {
		runtime.GC()
	}
	next := e.Begin(ctx)
	assert.True(t, next == b, "a new batch, not the one closed before the collections")
	next.Close()
	// Per collection, a sync.Pool allocates at least once to take a batch.
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		runtime.GC()
		e.Begin(ctx).Close()
	}), "allocations taking a batch after a collection")
}
