package redlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/core/memnode"
	"github.com/redlock-go/redlock/internal/testguard"
)

// TestWinningWriterLeavesNoMark: a writer whose winning attempt was
// refused for a straggling reader on a minority node marks that node in
// the very round it wins; its release deletes that mark (its own), so
// that after Unlock the node does not refuse readers for a TTL although
// no writer holds or waits: with one other node down, a reader still
// gets its quorum.
func TestWinningWriterLeavesNoMark(t *testing.T) {
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
	_, _, marked := d.Mark(2, "k")
	require.True(t, marked, "the straggler's node refused the winning attempt and was marked")
	require.NoError(t, w.Unlock(ctx))

	_, left, marked := d.Mark(2, "k")
	assert.False(t, marked, "the released writer's mark still keeps readers out of node 2 for %v", left)

	d.SetDown(0, true)
	rl, err := c.TryRLock(ctx, "k")
	if assert.NoError(t, err, "a reader refused by a released writer's mark") {
		require.NoError(t, rl.Unlock(ctx))
	}
}

// TestWriterThatGivesUpLeavesNoMark: a writer refused for readers marks
// the nodes, and keeps its mark while it waits; once it stops waiting
// (TryWLock refused, WLock whose ctx ended while it waited, or was
// cancelled) its mark is gone from every node, and a new reader is
// admitted at once.
func TestWriterThatGivesUpLeavesNoMark(t *testing.T) {
	for _, tc := range []struct {
		name string
		lock func(ctx context.Context, c *redlock.Client) error
	}{
		{"TryWLock", func(ctx context.Context, c *redlock.Client) error {
			_, err := c.TryWLock(ctx, "k")
			return err
		}},
		{"WLock past its deadline", func(ctx context.Context, c *redlock.Client) error {
			ctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			defer cancel()
			_, err := c.WLock(ctx, "k")
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testguard.Context(t)
			d := memnode.New(3, core.SystemClock{})
			c, err := redlock.NewClient(d, redlock.Options{TTL: 10 * time.Second})
			require.NoError(t, err)
			reader, err := c.TryRLock(ctx, "k")
			require.NoError(t, err)
			err = tc.lock(ctx, c)
			require.Error(t, err, "a writer beside a reader")
			for i := range 3 {
				_, left, marked := d.Mark(i, "k")
				assert.False(t, marked, "node %d: the mark of a writer that gave up keeps readers out for %v", i, left)
			}
			other, err := c.TryRLock(ctx, "k")
			require.NoError(t, err, "a new reader after the writer gave up")
			require.NoError(t, other.Unlock(ctx))
			require.NoError(t, reader.Unlock(ctx))
		})
	}
}
