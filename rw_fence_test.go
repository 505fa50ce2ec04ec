package redlock_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/core/memnode"
	"github.com/redlock-go/redlock/internal/testguard"
)

// TestReaderFenceIsAReading: docs/primitives.md's promise for a reader's
// fence under Fencing. It is at least the fence of every writer that
// held the key before it, whichever nodes its quorum and theirs were
// (they meet on a node that holds the last writer's raise). It is not a
// write fence: a writer's failed attempts increment the counters of the
// nodes that admitted them, without a raise, so a reader meeting such a
// node reads a fence no writer held, and a later writer whose quorum
// misses that node gets a lower fence than the reader's.
func TestReaderFenceIsAReading(t *testing.T) {
	ctx := testguard.Context(t)
	d := memnode.New(3, core.SystemClock{})
	c, err := redlock.NewClient(d, redlock.Options{Fencing: true})
	require.NoError(t, err)
	fence := func(l *redlock.Lock) uint64 {
		t.Helper()
		f, err := l.Fence()
		require.NoError(t, err)
		return f
	}
	write := func(down int) uint64 {
		t.Helper()
		d.SetDown(down, true)
		defer d.SetDown(down, false)
		w, err := c.TryWLock(ctx, "k")
		require.NoError(t, err)
		defer func() { require.NoError(t, w.Unlock(ctx)) }()
		return fence(w)
	}
	read := func(down int) uint64 {
		t.Helper()
		d.SetDown(down, true)
		defer d.SetDown(down, false)
		r, err := c.TryRLock(ctx, "k")
		require.NoError(t, err)
		defer func() { require.NoError(t, r.Unlock(ctx)) }()
		return fence(r)
	}

	// Writers on quorums {0, 1}, then {1, 2}; a reader on {0, 2} meets
	// the last writer's raise on node 2 alone.
	w1 := write(2)
	w2 := write(0)
	require.Greater(t, w2, w1, "a writer's fence above the earlier writer's")
	assert.GreaterOrEqual(t, read(1), w2, "a reader's fence below the last writer's before it")

	// Five failed writer attempts, each admitted by node 2 alone, cleaned
	// up: node 2's counter is 5 above any fence a writer held.
	for i := range 5 {
		tk := core.Token{9, 9, 9, 9, 9, 9, 9, 9, 0, 0, 0, 0, 0, 0, 0, byte(i + 1)}
		for _, op := range []core.Op{core.OpAcquireFenced, core.OpRelease} {
			b := d.Begin(ctx)
			b.Send(2, core.Command{Kind: core.KindWrite, Op: op, Key: "k", Token: tk, TTL: time.Second}, time.Now().Add(time.Second))
			r, ok := b.Receive(nil)
			b.Close()
			require.True(t, ok)
			require.Equal(t, core.StatusOK, r.Status, "%v", op)
		}
	}
	require.Equal(t, w2+5, d.Fence(2, "k"))

	r := read(1) // quorum {0, 2}
	assert.GreaterOrEqual(t, r, w2, "a reader's fence below the last writer's before it")
	w3 := write(2) // quorum {0, 1}: it misses node 2
	assert.Greater(t, w3, w2, "a writer's fence above the earlier writer's")
	assert.Less(t, w3, r, "a later writer's fence is not above a reader's that met a failed attempt's count (docs/primitives.md)")
}
