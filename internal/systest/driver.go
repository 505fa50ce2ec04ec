package systest

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers"
	"github.com/redlock-go/redlock/drivers/conformance"
	"github.com/redlock-go/redlock/internal/redistest"
)

// SendOne is conformance.SendOne: cmd to node i alone, in a batch of its
// own bounded by timeout.
func SendOne(d core.Driver, i int, cmd core.Command, timeout time.Duration) core.Reply {
	return conformance.SendOne(d, i, cmd, timeout)
}

// RunDial runs every system suite over a driver's Dial: Run and
// RunPrimitives (each cluster's credentials and TLS passed in Options),
// RunDriver, and the case of Options.Clock through a Client
// (redlock.NewClient adopting or refusing a clock). The contract suites are dialtest.RunDial's.
func RunDial(t *testing.T, dial DialFunc) {
	f := func(t *testing.T, eps []Endpoint) core.Driver {
		addrs := make([]string, len(eps))
		for i, ep := range eps {
			addrs[i] = ep.Addr
		}
		// Every endpoint of one cluster shares its credentials and TLS;
		// the driver logs where the process does.
		d, err := dial(addrs, drivers.Options{Username: eps[0].Username, Password: eps[0].Password, TLS: eps[0].TLS,
			Logger: slog.Default()})
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, d.Close()) })
		return d
	}
	t.Run("locker", func(t *testing.T) { Run(t, f) })
	t.Run("primitives", func(t *testing.T) { RunPrimitives(t, f) })
	t.Run("driver", func(t *testing.T) { RunDriver(t, dial.Defaults()) })
	t.Run("clock", func(t *testing.T) { testDialClock(t, dial) })
}

// RunDriver runs Clients over one driver dialled with dial: a stopped
// node under concurrent Clients, and a Client over a driver dialled with
// a node down. conformance.RunDriver covers the driver alone.
func RunDriver(t *testing.T, dial Dialer) {
	open := func(t *testing.T, addrs []string) Closer {
		t.Helper()
		d, err := dial(addrs)
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, d.Close()) })
		return d
	}
	t.Run("stopped-node-concurrent-clients", func(t *testing.T) { testStoppedNodeConcurrent(t, open) })
	t.Run("dial-with-node-down-locks", func(t *testing.T) { testDialWithNodeDownLocks(t, open) })
}

func acquireCmd(key string) core.Command {
	return core.Command{Op: core.OpAcquire, Key: key, Token: driverToken, TTL: 10 * time.Second}
}

var driverToken = core.TokenFromUint64s(0x0123456789abcdef, 0xfedcba9876543210)

// testStoppedNodeConcurrent: many concurrent lockers with a node stopped:
// every call returns, the stopped node never answers OK, and the two live
// nodes make a quorum.
func testStoppedNodeConcurrent(t *testing.T, open func(*testing.T, []string) Closer) {
	srvs := startServers(t, 3, redistest.Options{})
	d := open(t, addrsOf(srvs))
	require.Equal(t, core.StatusOK, SendOne(d, 1, acquireCmd("before"), time.Second).Status)
	srvs[1].Stop()
	defer srvs[1].Cont()

	for _, mode := range modes {
		client, err := redlock.NewClient(d, redlock.Options{TTL: 5 * time.Second,
			NodeTimeout: 100 * time.Millisecond, FanOut: mode})
		require.NoError(t, err)
		var wg sync.WaitGroup
		var won atomic.Int32
		for g := 0; g < 8; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for k := 0; k < 5; k++ {
					key := "stop-" + mode.String() + "-" + strconv.Itoa(g) + "-" + strconv.Itoa(k)
					lock, err := client.TryLock(context.Background(), key)
					var e *core.Error
					if errors.As(err, &e) {
						for _, n := range e.Nodes {
							if n.Node == 1 {
								assert.Contains(t, []core.Status{core.StatusTimeout, core.StatusError}, n.Status)
							}
						}
					}
					if err == nil {
						won.Add(1)
						_ = lock.Unlock(context.Background())
					}
				}
			}()
		}
		waitOrFail(t, &wg, 60*time.Second)
		assert.Positive(t, won.Load(), "the two live nodes make a quorum")
	}
	srvs[1].Cont()
	// A fresh key each try: a try that timed out may still have set its
	// key once the node answered, and the same key would then be held.
	try := 0
	require.Eventually(t, func() bool {
		try++
		return SendOne(d, 1, acquireCmd("after-"+strconv.Itoa(try)), time.Second).Status == core.StatusOK
	}, 10*time.Second, 50*time.Millisecond, "the node comes back")
}

// testDialWithNodeDownLocks: a Client over a driver dialled with a node
// down locks on the majority that is up.
func testDialWithNodeDownLocks(t *testing.T, open func(*testing.T, []string) Closer) {
	srvs := startServers(t, 2, redistest.Options{})
	down := startServers(t, 1, redistest.Options{})[0]
	down.Kill()
	d := open(t, []string{srvs[0].Addr, down.Addr, srvs[1].Addr})

	// A node timeout of a second: the live nodes' first commands may wait
	// for their connections, dialled as the driver opened, on a busy
	// machine; this test is about the node that is down.
	client, err := redlock.NewClient(d, redlock.Options{TTL: 3 * time.Second, NodeTimeout: time.Second})
	require.NoError(t, err)
	lock, err := client.TryLock(context.Background(), "k")
	require.NoError(t, err, "a majority is up")
	require.NoError(t, lock.Unlock(context.Background()))
}

func waitOrFail(t *testing.T, wg *sync.WaitGroup, d time.Duration) {
	t.Helper()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatal("calls did not return")
	}
}

func addrsOf(srvs []*redistest.Server) []string {
	out := make([]string, len(srvs))
	for i, s := range srvs {
		out[i] = s.Addr
	}
	return out
}
