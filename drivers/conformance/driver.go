package conformance

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers/internal/wire"
	"github.com/redlock-go/redlock/internal/latproxy"
	"github.com/redlock-go/redlock/internal/redistest"
)

// Closer is a driver that owns connections or goroutines.
type Closer interface {
	core.Driver
	Close() error
}

// Dialer opens a driver over plain-TCP, password-less addrs with its default
// options and a dial timeout of about a second. RunDriver closes it.
type Dialer func(addrs []string) (Closer, error)

// RunDriver runs the driver-level cases: single commands through a Batch and
// their replies, the scripts with and without the server's script cache,
// a stopped node's timeout (alone and among nodes that answer), a Batch
// closed early with its cleanup, dialling with nodes down, one server
// under two names, and Close. internal/systest covers a Client over the
// driver.
func RunDriver(t *testing.T, dial Dialer) {
	open := func(t *testing.T, addrs []string) Closer {
		t.Helper()
		d, err := dial(addrs)
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, d.Close()) })
		return d
	}
	t.Run("commands", func(t *testing.T) { testCommands(t, onServers(t, open, 1, 0)) })
	t.Run("script-flush", func(t *testing.T) { testScriptFlush(t, onServers(t, open, 1, 0)) })
	t.Run("stopped-node-times-out", func(t *testing.T) { testStoppedNodeTimesOut(t, onServers(t, open, 3, 1)) })
	t.Run("batch-close-early", func(t *testing.T) { testBatchCloseEarly(t, onServers(t, open, 3, 2)) })
	t.Run("dial-with-node-down", func(t *testing.T) { testDialWithNodeDown(t, open) })
	t.Run("dial-all-down", func(t *testing.T) {
		d := open(t, []string{deadAddr(t), deadAddr(t)})
		assert.Equal(t, core.StatusError, SendOne(d, 0, acquireCmd("x"), time.Second).Status)
	})
	t.Run("dial-copies-addrs", func(t *testing.T) {
		// A caller may reuse its slice of addresses: the driver must keep
		// dialling the ones it was given, here when the server restarts.
		srv := startServers(t, 1, redistest.Options{})[0]
		addrs := []string{srv.Addr}
		d := open(t, addrs)
		require.Equal(t, core.StatusOK, SendOne(d, 0, acquireCmd("before"), time.Second).Status)
		addrs[0] = deadAddr(t)
		srv.Restart() // the connection fails: the next command dials again
		SendOne(d, 0, acquireCmd("failing"), time.Second)
		r := SendOne(d, 0, acquireCmd("after"), time.Second)
		assert.Equal(t, core.StatusOK, r.Status, "the driver dialled the caller's reused slice: %v", r.Err)
		assert.Equal(t, srv.Addr, d.NodeName(0))
	})
	t.Run("same-server-two-names", func(t *testing.T) {
		srv := startServers(t, 1, redistest.Options{})[0]
		_, err := dial([]string{srv.Addr, net.JoinHostPort("localhost", strconv.Itoa(srv.Port))})
		require.ErrorIs(t, err, core.ErrInvalidConfig, "one server under two names would vote twice")
		assert.ErrorContains(t, err, "same server")
	})
	t.Run("same-server-through-a-proxy", func(t *testing.T) {
		// No lookup relates a proxy's address to its server: the run_id
		// each connection's server reports does, and the node that
		// connects second is refused.
		srvs := startServers(t, 2, redistest.Options{})
		p, err := latproxy.Start(srvs[0].Addr, 0)
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, p.Close()) })
		d := open(t, []string{srvs[0].Addr, srvs[1].Addr, p.Addr()})
		var refused []int
		for i := range 3 {
			r := SendOne(d, i, acquireCmd("k"+strconv.Itoa(i)), time.Second)
			if r.Status != core.StatusOK {
				assert.ErrorIs(t, r.Err, core.ErrInvalidConfig)
				assert.ErrorContains(t, r.Err, "is the same server as node")
				refused = append(refused, i)
			}
		}
		if srvs[0].Embedded() {
			assert.Empty(t, refused, "miniredis reports no run_id: nothing to compare")
			return
		}
		require.Len(t, refused, 1, "one of the two names of server 0")
		assert.Contains(t, []int{0, 2}, refused[0])
	})
	t.Run("close", func(t *testing.T) { testClose(t, onServers(t, open, 1, 0)) })
}

var driverToken = core.TokenFromUint64s(0x0123456789abcdef, 0xfedcba9876543210)

// SendOne sends cmd to node i alone, in a batch of its own bounded by
// timeout, and returns the reply: a driver's own tests use it to look at
// single commands.
func SendOne(d core.Driver, i int, cmd core.Command, timeout time.Duration) core.Reply {
	b := d.Begin(context.Background())
	defer b.Close()
	b.Send(i, cmd, time.Now().Add(timeout))
	r, _ := b.Receive(nil)
	return r
}

func acquireCmd(key string) core.Command {
	return core.Command{Op: core.OpAcquire, Key: key, Token: driverToken, TTL: 10 * time.Second}
}

func releaseCmd(key string, tok core.Token) core.Command {
	return core.Command{Op: core.OpRelease, Key: key, Token: tok}
}

func extendCmd(key string, tok core.Token, ttl time.Duration) core.Command {
	return core.Command{Op: core.OpExtend, Key: key, Token: tok, TTL: ttl}
}

// testCommands: each command's reply, and what it did to the key on the
// node's master.
func testCommands(t *testing.T, n target) {
	d, i, k := n.d, n.i, n.key("k")
	other := core.TokenFromUint64s(1, 1)
	const s = time.Second
	assert.Equal(t, n.names[i], d.NodeName(i))

	require.Equal(t, core.Reply{Node: i, Status: core.StatusOK}, SendOne(d, i, acquireCmd(k), s))
	assert.Equal(t, driverToken.String(), n.do(t, "GET", k), "tokens go over the wire in hex")
	assert.InDelta(t, 10000, n.pttl(t, k), 1000, "PX is the TTL in milliseconds")

	held := core.Command{Op: core.OpAcquire, Key: k, Token: other, TTL: 10 * s}
	assert.Equal(t, core.StatusHeld, SendOne(d, i, held, s).Status)
	assert.Equal(t, core.StatusHeld, SendOne(d, i, releaseCmd(k, other), s).Status)
	assert.Equal(t, core.StatusHeld, SendOne(d, i, extendCmd(k, other, 20*s), s).Status)
	assert.Equal(t, core.StatusOK, SendOne(d, i, extendCmd(k, driverToken, 20*s), s).Status)
	assert.Greater(t, n.pttl(t, k), int64(15000))
	assert.Equal(t, core.StatusOK, SendOne(d, i, releaseCmd(k, driverToken), s).Status)
	assert.Equal(t, core.StatusMissing, SendOne(d, i, releaseCmd(k, driverToken), s).Status)
	assert.Equal(t, core.StatusMissing, SendOne(d, i, extendCmd(k, driverToken, 20*s), s).Status)
	assert.Equal(t, int64(0), n.do(t, "EXISTS", k), "extend never creates the key")

	// A key holding something that is not a string: an error reply, after
	// which the connection is still in step.
	list := n.key("list")
	n.do(t, "LPUSH", list, "x")
	r := SendOne(d, i, releaseCmd(list, driverToken), s)
	assert.Equal(t, core.StatusError, r.Status)
	assert.ErrorContains(t, r.Err, "WRONGTYPE")
	assert.Equal(t, core.StatusOK, SendOne(d, i, acquireCmd(n.key("k2")), s).Status)
}

// testStoppedNodeTimesOut: a node whose servers are SIGSTOPped times out,
// alone and in a batch the other nodes answer, and answers again once
// they continue.
func testStoppedNodeTimesOut(t *testing.T, n target) {
	d, i := n.d, n.i
	require.Equal(t, core.StatusOK, SendOne(d, i, acquireCmd(n.key("before")), time.Second).Status)
	cont := n.pause(t, i)

	// One command at a time: StatusTimeout, naming the node.
	for k := 0; k < 3; k++ {
		r := SendOne(d, i, acquireCmd(n.key("direct")), 50*time.Millisecond)
		assert.Equal(t, core.StatusTimeout, r.Status)
		assert.True(t, wire.IsTimeout(r.Err), "a deadline error: %v", r.Err)
		if assert.Error(t, r.Err) {
			assert.Contains(t, r.Err.Error(), "node "+strconv.Itoa(i)+" ("+n.names[i]+")")
		}
	}
	// In one batch with the others, which answer.
	b := d.Begin(context.Background())
	now := time.Now()
	for j := range n.names {
		deadline := now.Add(2 * time.Second)
		if j == i {
			deadline = now.Add(100 * time.Millisecond)
		}
		b.Send(j, acquireCmd(n.key("batch")), deadline)
	}
	for range n.names {
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
		return SendOne(d, i, acquireCmd(n.key("after-"+strconv.Itoa(try))), time.Second).Status == core.StatusOK
	}, 10*time.Second, 50*time.Millisecond, "the node comes back")
}

// testClose: Close is idempotent, and a round after it fails on every node
// instead of hanging.
func testClose(t *testing.T, n target) {
	k := n.key("closed")
	for i := range n.names {
		require.Equal(t, core.StatusOK, SendOne(n.d, i, acquireCmd(k), time.Second).Status, "node %d", i)
	}
	require.NoError(t, n.d.Close())
	require.NoError(t, n.d.Close(), "Close is idempotent")
	for i := range n.names {
		assert.Equal(t, core.StatusError, SendOne(n.d, i, releaseCmd(k, driverToken), time.Second).Status,
			"node %d: a round after Close fails instead of hanging", i)
	}
}

func testDialWithNodeDown(t *testing.T, open func(*testing.T, []string) Closer) {
	srvs := startServers(t, 2, redistest.Options{})
	down := startServers(t, 1, redistest.Options{})[0]
	down.Kill()
	d := open(t, []string{srvs[0].Addr, down.Addr, srvs[1].Addr})

	// A second: the live nodes' first commands may wait for their
	// connections, dialled as the driver opened, on a busy machine; this
	// test is about the node that is down.
	for _, i := range []int{0, 2} {
		assert.Equal(t, core.StatusOK, SendOne(d, i, acquireCmd("k"), time.Second).Status, "node %d is up", i)
	}

	r := SendOne(d, 1, acquireCmd("x"), time.Second)
	assert.Equal(t, core.StatusError, r.Status)
	if assert.Error(t, r.Err) {
		assert.Contains(t, r.Err.Error(), down.Addr)
	}

	down.Restart()
	// A fresh key each try: a try that timed out may still have set its
	// key once the node answered, and the same key would then be held.
	try := 0
	require.Eventually(t, func() bool {
		try++
		return SendOne(d, 1, acquireCmd("y-"+strconv.Itoa(try)), time.Second).Status == core.StatusOK
	}, 10*time.Second, 50*time.Millisecond, "the node is dialled again on use")
}
