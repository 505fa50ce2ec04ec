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
