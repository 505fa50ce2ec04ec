package contract

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock/core"
)

// BatchCloseEarly drives the Batch directly: Close before all
// replies, with a node that never answers (the node under test, its
// servers SIGSTOPped), must not block, and Receive with a closed cancel
// channel returns false. The release sent to the hung node behind the
// acquire still goes out, after it, once the node continues: the node
// ends without the key. The driver stays usable.
func BatchCloseEarly(t *testing.T, n Target) {
	d, down, key := n.D, n.I, n.Key("close-early")
	nodes := len(n.Names)
	cont := n.Pause(t, down)

	tok := core.TokenFromUint64s(1, uint64(time.Now().UnixNano()))
	CloseEarly(t, d, nodes, down, key, tok, time.Minute)
	cont()

	require.Eventually(t, func() bool {
		exists, err := n.At.Master(t, down, key).Do("EXISTS", key)
		return err == nil && exists == int64(0)
	}, Timeout, 20*time.Millisecond, "the release went out after the acquire it follows")
	for i := range nodes {
		r := SendOne(d, i, AcquireCmd(n.Key("after")), 2*time.Second)
		assert.Equal(t, core.StatusOK, r.Status, "node %d: %v", i, r.Err)
	}
}

// CloseEarly is the Batch half of BatchCloseEarly, for any driver whose
// node down does not answer: an acquire of key with tok (ttl) sent to
// every node, one reply received and the Batch closed; then a release to
// node down alone, whose Receive with a closed cancel channel gives up.
// Neither may block.
func CloseEarly(t *testing.T, d core.Driver, nodes, down int, key string, tok core.Token, ttl time.Duration) {
	t.Helper()
	ctx := t.Context()
	deadline := time.Now().Add(time.Minute)
	acquire := core.Command{Op: core.OpAcquire, Key: key, Token: tok, TTL: ttl}
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		b := d.Begin(ctx)
		for i := range nodes {
			b.Send(i, acquire, deadline)
		}
		r, ok := b.Receive(nil)
		if assert.True(t, ok) {
			assert.Equal(t, core.StatusOK, r.Status, "%v", r.Err)
			assert.True(t, r.Node >= 0 && r.Node < nodes, "node %d of %d", r.Node, nodes)
			assert.NotEqual(t, down, r.Node, "the stopped node cannot answer")
		}
		b.Close()

		// Receive on a closed cancel channel gives up while the only
		// outstanding command waits on the stopped node.
		b = d.Begin(ctx)
		b.Send(down, ReleaseCmd(key, tok), deadline)
		cancelled := make(chan struct{})
		close(cancelled)
		_, ok = b.Receive(cancelled)
		assert.False(t, ok, "Receive must return when cancel is closed")
		b.Close()
	}()
	select {
	case <-closed:
	case <-time.After(Timeout):
		require.FailNow(t, "Batch.Close or Receive blocked on a node that does not answer")
	}
}
