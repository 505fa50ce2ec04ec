package conformance

import (
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/internal/contract"
	"github.com/redlock-go/redlock/internal/redistest"
)

// Closer is a driver that owns connections or goroutines.
type Closer interface {
	core.Driver
	Close() error
}

// Dialer opens a driver over plain-TCP, password-less addrs (node i at
// addrs[i], named by its address) with its default options and a dial
// timeout of about a second. The suites close it.
type Dialer func(addrs []string) (Closer, error)

// open returns the function by which a case opens a driver with dial,
// failing the test on an error and closing the driver after it.
func (dial Dialer) open() func(*testing.T, []string) contract.Closer {
	return func(t *testing.T, addrs []string) contract.Closer {
		t.Helper()
		d, err := dial(addrs)
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, d.Close()) })
		return d
	}
}

// RunDriver runs the driver-level cases: single commands through a Batch
// and their replies (and what they did to the key on the server), the
// scripts with and without the server's script cache (SCRIPT FLUSH), a
// stopped node's timeout (alone and among nodes that answer), a Batch
// closed early with its cleanup, a quiet release (core.Command.Quiet), a
// flushed release's order before a later batch's acquire (core.Flusher,
// if the Batch implements it), dialling with nodes down, a caller's slice
// of addresses reused after the dial, one server under two names refused,
// and Close.
func RunDriver(t *testing.T, dial Dialer) {
	open := dial.open()
	t.Run("commands", func(t *testing.T) { contract.Commands(t, contract.OnServers(t, open, 1, 0)) })
	t.Run("script-flush", func(t *testing.T) { contract.ScriptFlush(t, contract.OnServers(t, open, 1, 0)) })
	t.Run("stopped-node-times-out", func(t *testing.T) {
		contract.StoppedNodeTimesOut(t, contract.OnServers(t, open, 3, 1))
	})
	t.Run("batch-close-early", func(t *testing.T) { contract.BatchCloseEarly(t, contract.OnServers(t, open, 3, 2)) })
	t.Run("quiet-release", func(t *testing.T) { contract.QuietRelease(t, contract.OnServers(t, open, 1, 0)) })
	t.Run("flush-orders", func(t *testing.T) { contract.FlushOrders(t, contract.OnServers(t, open, 3, 0), 3) })
	t.Run("dial-with-node-down", func(t *testing.T) { testDialWithNodeDown(t, open) })
	t.Run("dial-all-down", func(t *testing.T) {
		d := open(t, []string{contract.DeadAddr(t), contract.DeadAddr(t)})
		assert.Equal(t, core.StatusError, SendOne(d, 0, contract.AcquireCmd("x"), time.Second).Status)
	})
	t.Run("dial-copies-addrs", func(t *testing.T) {
		// A caller may reuse its slice of addresses: the driver must keep
		// dialling the ones it was given, here when the server restarts.
		srv := contract.StartServers(t, 1, redistest.Options{})[0]
		addrs := []string{srv.Addr}
		d := open(t, addrs)
		require.Equal(t, core.StatusOK, SendOne(d, 0, contract.AcquireCmd("before"), time.Second).Status)
		addrs[0] = contract.DeadAddr(t)
		srv.Restart() // the connection fails: the next command dials again
		SendOne(d, 0, contract.AcquireCmd("failing"), time.Second)
		r := SendOne(d, 0, contract.AcquireCmd("after"), time.Second)
		assert.Equal(t, core.StatusOK, r.Status, "the driver dialled the caller's reused slice: %v", r.Err)
		assert.Equal(t, srv.Addr, d.NodeName(0))
	})
	t.Run("same-server-two-names", func(t *testing.T) { testSameServerTwoNames(t, dial) })
	t.Run("close", func(t *testing.T) { contract.Close(t, contract.OnServers(t, open, 1, 0)) })
}

// SendOne sends cmd to node i alone, in a batch of its own bounded by
// timeout, and returns the reply: a driver's own tests use it to look at
// single commands.
func SendOne(d core.Driver, i int, cmd core.Command, timeout time.Duration) core.Reply {
	return contract.SendOne(d, i, cmd, timeout)
}

// testDialWithNodeDown: a driver dialled with a node down serves the
// others, fails the one down naming it, and dials it again on use once
// it is back.
func testDialWithNodeDown(t *testing.T, open func(*testing.T, []string) contract.Closer) {
	srvs := contract.StartServers(t, 2, redistest.Options{})
	down := contract.StartServers(t, 1, redistest.Options{})[0]
	down.Kill()
	d := open(t, []string{srvs[0].Addr, down.Addr, srvs[1].Addr})

	// A second: the live nodes' first commands may wait for their
	// connections, dialled as the driver opened, on a busy machine; this
	// test is about the node that is down.
	for _, i := range []int{0, 2} {
		assert.Equal(t, core.StatusOK, SendOne(d, i, contract.AcquireCmd("k"), time.Second).Status, "node %d is up", i)
	}

	r := SendOne(d, 1, contract.AcquireCmd("x"), time.Second)
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
		return SendOne(d, 1, contract.AcquireCmd("y-"+strconv.Itoa(try)), time.Second).Status == core.StatusOK
	}, 10*time.Second, 50*time.Millisecond, "the node is dialled again on use")
}

// testSameServerTwoNames: a dial given one server under two names (its
// address, and localhost with its port) is refused with
// core.ErrInvalidConfig: that server would vote twice in every quorum.
func testSameServerTwoNames(t *testing.T, dial Dialer) {
	srv := contract.StartServers(t, 1, redistest.Options{})[0]
	d, err := dial([]string{srv.Addr, net.JoinHostPort("localhost", strconv.Itoa(srv.Port))})
	if d != nil {
		assert.NoError(t, d.Close())
	}
	require.ErrorIs(t, err, core.ErrInvalidConfig, "one server under two names would vote twice")
}
