package contract

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers/wire"
)

// Commands checks each command's reply, and what it did to the key on
// the node's master.
func Commands(t *testing.T, n Target) {
	d, i, k := n.D, n.I, n.Key("k")
	other := core.TokenFromUint64s(1, 1)
	const s = time.Second
	assert.Equal(t, n.Names[i], d.NodeName(i))

	require.Equal(t, core.Reply{Node: i, Status: core.StatusOK}, SendOne(d, i, AcquireCmd(k), s))
	assert.Equal(t, Token.String(), n.Do(t, "GET", k), "tokens go over the wire in hex")
	assert.InDelta(t, 10000, n.PTTL(t, k), 1000, "PX is the TTL in milliseconds")

	held := core.Command{Op: core.OpAcquire, Key: k, Token: other, TTL: 10 * s}
	assert.Equal(t, core.StatusHeld, SendOne(d, i, held, s).Status)
	assert.Equal(t, core.StatusHeld, SendOne(d, i, ReleaseCmd(k, other), s).Status)
	assert.Equal(t, core.StatusHeld, SendOne(d, i, ExtendCmd(k, other, 20*s), s).Status)
	assert.Equal(t, core.StatusOK, SendOne(d, i, ExtendCmd(k, Token, 20*s), s).Status)
	assert.Greater(t, n.PTTL(t, k), int64(15000))
	assert.Equal(t, core.StatusOK, SendOne(d, i, ReleaseCmd(k, Token), s).Status)
	assert.Equal(t, core.StatusMissing, SendOne(d, i, ReleaseCmd(k, Token), s).Status)
	assert.Equal(t, core.StatusMissing, SendOne(d, i, ExtendCmd(k, Token, 20*s), s).Status)
	assert.Equal(t, int64(0), n.Do(t, "EXISTS", k), "extend never creates the key")

	// A key holding something that is not a string: an error reply, after
	// which the connection is still in step.
	list := n.Key("list")
	n.Do(t, "LPUSH", list, "x")
	r := SendOne(d, i, ReleaseCmd(list, Token), s)
	assert.Equal(t, core.StatusError, r.Status)
	assert.ErrorContains(t, r.Err, "WRONGTYPE")
	assert.Equal(t, core.StatusOK, SendOne(d, i, AcquireCmd(n.Key("k2")), s).Status)
}

// StoppedNodeTimesOut checks that a node whose servers are SIGSTOPped
// times out, alone and in a batch the other nodes answer, and answers
// again once they continue.
func StoppedNodeTimesOut(t *testing.T, n Target) {
	d, i := n.D, n.I
	require.Equal(t, core.StatusOK, SendOne(d, i, AcquireCmd(n.Key("before")), time.Second).Status)
	cont := n.Pause(t, i)

	// One command at a time: StatusTimeout, naming the node.
	for k := 0; k < 3; k++ {
		r := SendOne(d, i, AcquireCmd(n.Key("direct")), 50*time.Millisecond)
		assert.Equal(t, core.StatusTimeout, r.Status)
		assert.True(t, wire.IsTimeout(r.Err), "a deadline error: %v", r.Err)
		if assert.Error(t, r.Err) {
			assert.Contains(t, r.Err.Error(), n.Names[i], "the error names the node")
		}
	}
	// In one batch with the others, which answer.
	b := d.Begin(context.Background())
	now := time.Now()
	for j := range n.Names {
		deadline := now.Add(2 * time.Second)
		if j == i {
			deadline = now.Add(100 * time.Millisecond)
		}
		b.Send(j, AcquireCmd(n.Key("batch")), deadline)
	}
	for range n.Names {
		r, ok := b.Receive(nil)
		require.True(t, ok)
		if r.Node == i {
			assert.Equal(t, core.StatusTimeout, r.Status, "the stopped node %d: %v", i, r.Err)
		} else {
			assert.Equal(t, core.StatusOK, r.Status, "node %d answers: %v", r.Node, r.Err)
		}
	}
	b.Close()

	cont()
	// A fresh key each try: a try that timed out may still have set its
	// key once the node answered, and the same key would then be held.
	try := 0
	require.Eventually(t, func() bool {
		try++
		return SendOne(d, i, AcquireCmd(n.Key("after-"+strconv.Itoa(try))), time.Second).Status == core.StatusOK
	}, 10*time.Second, 50*time.Millisecond, "the node comes back")
}

// Close checks that Close is idempotent, and that a round after it
// fails on every node instead of hanging.
func Close(t *testing.T, n Target) {
	k := n.Key("closed")
	for i := range n.Names {
		require.Equal(t, core.StatusOK, SendOne(n.D, i, AcquireCmd(k), time.Second).Status, "node %d", i)
	}
	require.NoError(t, n.D.Close())
	require.NoError(t, n.D.Close(), "Close is idempotent")
	for i := range n.Names {
		assert.Equal(t, core.StatusError, SendOne(n.D, i, ReleaseCmd(k, Token), time.Second).Status,
			"node %d: a round after Close fails instead of hanging", i)
	}
}

// FlushOrders checks core.Flusher, where a driver's Batch implements it:
// a release flushed and not yet awaited takes effect on every node
// before an acquire of the key sent afterwards in another batch, which
// then finds the key free. A driver without it passes: the runner then
// waits for the release's replies instead.
func FlushOrders(t *testing.T, n Target, nodes int) {
	d, k := n.D, n.Key("flush")
	next := core.TokenFromUint64s(2, 2)
	const s = time.Second
	for i := range nodes {
		require.Equal(t, core.StatusOK, SendOne(d, i, AcquireCmd(k), s).Status)
	}
	for round := range 20 { // each round hands the key on: the order holds every time
		from, to := Token, next
		if round%2 == 1 {
			from, to = next, Token
		}
		rel := d.Begin(context.Background())
		f, ok := rel.(core.Flusher)
		if !ok {
			rel.Close()
			t.Logf("%T does not implement core.Flusher: nothing to check", rel)
			return
		}
		for i := range nodes {
			rel.Send(i, ReleaseCmd(k, from), time.Now().Add(s))
		}
		f.Flush()
		acq := d.Begin(context.Background())
		for i := range nodes {
			acq.Send(i, core.Command{Op: core.OpAcquire, Key: k, Token: to, TTL: 10 * s}, time.Now().Add(s))
		}
		for range nodes {
			r, ok := acq.Receive(nil)
			require.True(t, ok)
			require.Equal(t, core.StatusOK, r.Status, "round %d: node %d: the acquire overtook the flushed release (%v)", round, r.Node, r.Err)
		}
		acq.Close()
		for range nodes {
			r, ok := rel.Receive(nil)
			require.True(t, ok)
			require.Equal(t, core.StatusOK, r.Status, "round %d: node %d: the release", round, r.Node)
		}
		rel.Close()
	}
}

// QuietRelease checks core.Command.Quiet: a release that deletes the key
// publishes nothing on the node, where one without it publishes the
// deletion once. It reads what the node publishes on the key's release
// channel: after the quiet release, the test publishes a marker of its
// own, which must be the first message there (an announcement of the quiet
// release would come before it); after the plain release, the next
// message must be its announcement. Pub/sub rather than INFO
// commandstats, which the embedded miniredis does not keep.
func QuietRelease(t *testing.T, n Target) {
	d, i, k := n.D, n.I, n.Key("quiet")
	const s = time.Second
	srv := n.At.Master(t, i, k)
	channel := wire.ReleaseChannel(k)
	sub := srv.Subscribe(t, channel)
	require.Equal(t, core.StatusOK, SendOne(d, i, AcquireCmd(k), s).Status)
	quiet := ReleaseCmd(k, Token)
	quiet.Quiet = true
	require.Equal(t, core.StatusOK, SendOne(d, i, quiet, s).Status)
	assert.Equal(t, int64(0), n.Do(t, "EXISTS", k), "the quiet release deleted the key")
	const marker = "conformance: after the quiet release"
	_, err := srv.Do("PUBLISH", channel, marker)
	require.NoError(t, err)
	assert.Equal(t, []string{channel, marker}, sub.Next(t), "a quiet release published")
	require.Equal(t, core.StatusOK, SendOne(d, i, AcquireCmd(k), s).Status)
	require.Equal(t, core.StatusOK, SendOne(d, i, ReleaseCmd(k, Token), s).Status)
	assert.Equal(t, channel, sub.Next(t)[0], "a release announces its deletion")
}
