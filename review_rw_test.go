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

// TestReviewWinningWriterLeavesNoMark (review finding): docs/primitives.md
// says "A writer that wins deletes its own mark at once". A writer whose
// winning attempt was refused for a straggling reader on a minority node
// marks that node in the very round it wins, and neither its grant nor
// its release (the mutex's) deletes that mark: after Unlock the node
// keeps refusing readers for up to a TTL although no writer holds or
// waits, and with one other node down no reader gets a quorum.
func TestReviewWinningWriterLeavesNoMark(t *testing.T) {
	ctx := testguard.Context(t)
	d := memnode.New(3, core.SystemClock{})
	// A reader's entry on node 2 alone: its entries on 0 and 1 expired a
	// moment earlier (their scripts ran earlier), or its cleanup reached
	// node 2 only.
	b := d.Begin(ctx)
	b.Send(2, core.Command{Kind: core.KindRead, Op: core.OpAcquire, Key: "k",
		Token: core.Token{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, TTL: 2 * time.Second}, time.Now().Add(time.Second))
	r, ok := b.Receive(nil)
	b.Close()
	require.True(t, ok)
	require.Equal(t, core.StatusOK, r.Status)

	c, err := redlock.NewClient(d, redlock.Options{TTL: 10 * time.Second})
	require.NoError(t, err)
	w, err := c.TryWLock(ctx, "k") // wins on nodes 0 and 1, refused on 2
	require.NoError(t, err)
	require.NoError(t, w.Unlock(ctx))

	_, left, marked := d.Mark(2, "k")
	assert.False(t, marked, "the released writer's mark still keeps readers out of node 2 for %v", left)

	// The consequence: node 0 down, nobody writing or waiting, and no
	// reader admitted (the straggler alone would not refuse one).
	d.SetDown(0, true)
	rl, err := c.TryRLock(ctx, "k")
	if assert.NoError(t, err, "a reader refused by a released writer's mark") {
		require.NoError(t, rl.Unlock(ctx))
	}
}

// TestReviewReaderFenceIsNotTheLastWritersFence (review finding):
// docs/primitives.md says a reader's fence is the last writer's, and that
// a storage refusing stale fences "tells a reader's write from a later
// writer's". But a reader takes the highest counter among its quorum's
// replies, and a writer's failed attempts increment the counters of the
// nodes that admitted them without any raise: a reader that meets such a
// node reads a fence no writer ever held, above the fences of writers that
// come after it. A storage that saw the reader's fence then refuses the
// later writer's writes as stale.
func TestReviewReaderFenceIsNotTheLastWritersFence(t *testing.T) {
	ctx := testguard.Context(t)
	d := memnode.New(3, core.SystemClock{})
	// Five failed writer attempts, each admitted by node 2 alone (the
	// other nodes held by a writer then), cleaned up: node 2's counter
	// is 5, the others' 0, and no writer ever held fence 5.
	for i := range 5 {
		tk := core.Token{9, 9, 9, 9, 9, 9, 9, 9, 0, 0, 0, 0, 0, 0, 0, byte(i + 1)}
		b := d.Begin(ctx)
		b.Send(2, core.Command{Kind: core.KindWrite, Op: core.OpAcquireFenced, Key: "k", Token: tk, TTL: time.Second}, time.Now().Add(time.Second))
		r, ok := b.Receive(nil)
		b.Close()
		require.True(t, ok)
		require.Equal(t, core.StatusOK, r.Status)
		b = d.Begin(ctx)
		b.Send(2, core.Command{Kind: core.KindWrite, Op: core.OpRelease, Key: "k", Token: tk}, time.Now().Add(time.Second))
		_, ok = b.Receive(nil)
		b.Close()
		require.True(t, ok)
	}
	require.Equal(t, uint64(5), d.Fence(2, "k"))

	c, err := redlock.NewClient(d, redlock.Options{Fencing: true})
	require.NoError(t, err)
	rl, err := c.TryRLock(ctx, "k")
	require.NoError(t, err)
	readerFence, err := rl.Fence()
	require.NoError(t, err)
	require.NoError(t, rl.Unlock(ctx))

	d.SetDown(2, true) // the next writer's quorum is nodes 0 and 1
	wl, err := c.TryWLock(ctx, "k")
	require.NoError(t, err)
	writerFence, err := wl.Fence()
	require.NoError(t, err)
	require.NoError(t, wl.Unlock(ctx))

	assert.Zero(t, readerFence, "no writer has held the key: the last writer's fence is 0")
	assert.Greater(t, writerFence, readerFence, "a later writer's fence is not above the reader's")
}
