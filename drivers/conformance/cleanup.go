package conformance

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/internal/redistest"
)

// testBatchCloseEarly drives the Batch directly: Close before all
// replies, with a node that never answers, must not block, and Receive
// with a closed cancel channel returns false. The release sent to the
// hung node behind the acquire still goes out, after it, once the node
// continues: the node ends without the key. The driver stays usable.
func testBatchCloseEarly(t *testing.T, open func(*testing.T, []string) Closer) {
	srvs := startServers(t, 3, redistest.Options{})
	d := open(t, addrsOf(srvs))
	n, key := len(srvs), "close-early"
	stopped := srvs[n-1]
	stopped.Stop()
	defer stopped.Cont()

	tok := core.TokenFromUint64s(1, uint64(time.Now().UnixNano()))
	deadline := time.Now().Add(time.Minute)
	acquire := core.Command{Op: core.OpAcquire, Key: key, Token: tok, TTL: time.Minute}
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		b := d.Begin(context.Background())
		for i := range n {
			b.Send(i, acquire, deadline)
		}
		r, ok := b.Receive(nil)
		if assert.True(t, ok) {
			assert.Equal(t, core.StatusOK, r.Status, "%v", r.Err)
			assert.Less(t, r.Node, n-1, "the stopped node cannot answer")
		}
		b.Close()

		// Receive on a closed cancel channel gives up while the only
		// outstanding command waits on the stopped node.
		b = d.Begin(context.Background())
		b.Send(n-1, releaseCmd(key, tok), deadline)
		cancelled := make(chan struct{})
		close(cancelled)
		_, ok = b.Receive(cancelled)
		assert.False(t, ok, "Receive must return when cancel is closed")
		b.Close()
	}()
	select {
	case <-closed:
	case <-time.After(testTimeout):
		require.FailNow(t, "Batch.Close or Receive blocked on a node that does not answer")
	}
	stopped.Cont()

	require.Eventually(t, func() bool {
		n, err := stopped.Do("EXISTS", key)
		return err == nil && n == int64(0)
	}, testTimeout, 20*time.Millisecond, "the release went out after the acquire it follows")
	for i := range n {
		r := SendOne(d, i, acquireCmd("after"), 2*time.Second)
		assert.Equal(t, core.StatusOK, r.Status, "node %d: %v", i, r.Err)
	}
}
