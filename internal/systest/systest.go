// Package systest is the system test suite of the root package over each
// of this module's drivers: a redlock.Client locking, extending and
// releasing through the driver on real servers (and on core/memnode, the
// reference driver), with its leases and handles, wake on release,
// fencing, network faults through internal/latproxy, hung nodes,
// several processes, known defects, allocation counts and benchmarks.
// The driver contract itself, which a third-party driver's author runs,
// is drivers/conformance, and this module's own conventions are
// internal/dialtest's; a driver of this module runs them all:
//
//	var dial = dialtest.Of(mydriver.Dial)
//
//	func TestConformance(t *testing.T) { dialtest.RunDial(t, dial) }
//	func TestSystem(t *testing.T)      { systest.RunDial(t, dial) }
//
// Every case runs in both fan-out modes, as subtests named
// "mode=multiplexed/..." and "mode=sequential/...". Each case starts its
// own servers, so cases never share state.
//
// The "fencing-..." cases check core.Config.Fencing through the driver:
// the fenced acquire and the raise on one node, fences growing across
// holders and processes, counters that differ across nodes, a raise that
// fails, big counters, and Kleppmann's pause scenario against the fenced
// store of internal/fencedstore, with and without fences.
package systest

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/core/memnode"
	"github.com/redlock-go/redlock/drivers/conformance"
	"github.com/redlock-go/redlock/internal/dialtest"
	"github.com/redlock-go/redlock/internal/redistest"
	"github.com/redlock-go/redlock/internal/redistest/embedded"
)

// The driver suites' types, under the names the suite has always used.
type (
	// Endpoint is how a driver reaches one Redis master.
	Endpoint = dialtest.Endpoint
	// Closer is a driver that owns connections or goroutines.
	Closer = conformance.Closer
	// Dialer opens a driver over plain-TCP, password-less addrs.
	Dialer = conformance.Dialer
	// DialFunc is a driver's Dial.
	DialFunc = dialtest.DialFunc
)

// Factory builds a driver over eps, node i being eps[i]. It must register
// t.Cleanup to close the driver. The fan-out mode is a core.Config setting,
// so drivers do not see it.
type Factory func(t *testing.T, eps []Endpoint) core.Driver

var modes = []core.FanOut{core.Multiplexed, core.Sequential}

// Run runs the whole suite against redis-server processes, through
// drivers that f builds. Without
// redis-server on PATH it runs against the embedded miniredis instead, and
// the cases that need a real process (SIGSTOP) skip, counted in the
// package's summary (redistest.Main); with REDLOCK_REQUIRE_REDIS=1 a
// missing redis-server fails the test.
func Run(t *testing.T, f Factory) {
	newCluster := func(t *testing.T, n int) cluster {
		return startReal(t, f, n, redistest.Options{}, nil)
	}
	for _, mode := range modes {
		t.Run("mode="+mode.String(), func(t *testing.T) {
			runCases(t, newCluster, mode)
			for _, rc := range append(realCases, lifecycleCases...) {
				t.Run(rc.name, func(t *testing.T) { rc.run(t, f, mode) })
			}
		})
	}
}

// RunMemnode runs the behavioural cases against core/memnode on the system
// clock. The cases that exist only on a real server (SCRIPT FLUSH,
// authentication, TLS) are not registered: memnode has no script cache,
// no credentials and no transport, so they would pass without testing
// anything.
func RunMemnode(t *testing.T) {
	newCluster := func(t *testing.T, n int) cluster {
		return &memCluster{c: memnode.New(n, core.SystemClock{})}
	}
	for _, mode := range modes {
		t.Run("mode="+mode.String(), func(t *testing.T) {
			runCases(t, newCluster, mode)
		})
	}
}

// cluster is N nodes behind one driver, with the fault switches and the
// direct key access the cases need. Its methods fail t on admin errors.
type cluster interface {
	Driver() core.Driver
	N() int
	// Name returns what the driver's errors must contain for node i: its
	// address on a real server.
	Name(i int) string
	// Kill makes node i refuse connections. Stop makes it hang without
	// answering; Cont resumes it. Restart brings a killed or stopped node
	// back, empty.
	Kill(i int)
	Stop(i int)
	Cont(i int)
	Restart(i int)
	// Get returns key's value and remaining time to live on node i.
	Get(i int, key string) (token string, pttl time.Duration, ok bool)
	// Set stores key = tok on node i for ttl, as another client would.
	Set(i int, key string, tok core.Token, ttl time.Duration)
	// Del deletes key on node i.
	Del(i int, key string)
	// Fence returns key's fence counter (core.FenceKeyPrefix + key) on
	// node i: 0 if it has none.
	Fence(i int, key string) uint64
	// SetFence makes key's fence counter on node i v, as earlier holders
	// would have left it. memnode can only raise a counter, by taking and
	// releasing key on node i alone: key must be free there.
	SetFence(i int, key string, v uint64)
}

// realCluster is redis-server processes and a driver from a Factory.
type realCluster struct {
	t   *testing.T
	srv []*redistest.Server
	eps []Endpoint
	drv core.Driver

	mu      sync.Mutex
	stopped map[int]bool
}

// startReal starts n servers with opts and a driver over their endpoints,
// edited by edit when it is not nil (to give wrong credentials, say).
func startReal(t *testing.T, f Factory, n int, opts redistest.Options, edit func(eps []Endpoint)) *realCluster {
	t.Helper()
	c := &realCluster{t: t, srv: startServers(t, n, opts), stopped: map[int]bool{}}
	c.eps = dialtest.Endpoints(c.srv, opts)
	if edit != nil {
		edit(c.eps)
	}
	c.drv = f(t, c.eps)
	require.NotNil(t, c.drv, "factory returned a nil driver")
	// Registered after the factory's cleanup, so it runs first: a driver's
	// Close never waits on a server that cannot answer.
	t.Cleanup(c.contAll)
	return c
}

// startServers starts n servers for the suite: redis-server processes, or
// embedded ones where redistest allows them (see Run).
func startServers(t *testing.T, n int, opts redistest.Options) []*redistest.Server {
	t.Helper()
	return embedded.StartN(t, n, opts)
}

func (c *realCluster) Driver() core.Driver { return c.drv }
func (c *realCluster) N() int              { return len(c.srv) }
func (c *realCluster) Name(i int) string   { return c.srv[i].Addr }
func (c *realCluster) Kill(i int)          { c.setStopped(i, false); c.srv[i].Kill() }
func (c *realCluster) Restart(i int)       { c.setStopped(i, false); c.srv[i].Restart() }

func (c *realCluster) Stop(i int) {
	c.setStopped(i, true)
	c.srv[i].Stop()
}

func (c *realCluster) Cont(i int) {
	c.setStopped(i, false)
	c.srv[i].Cont()
}

func (c *realCluster) setStopped(i int, v bool) {
	c.mu.Lock()
	c.stopped[i] = v
	c.mu.Unlock()
}

func (c *realCluster) contAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, s := range c.stopped {
		if s {
			c.srv[i].Cont()
			c.stopped[i] = false
		}
	}
}

func (c *realCluster) Get(i int, key string) (string, time.Duration, bool) {
	c.t.Helper()
	v, err := redis.String(c.srv[i].Do("GET", key))
	if errors.Is(err, redis.ErrNil) {
		return "", 0, false
	}
	require.NoError(c.t, err, "GET %q on node %d (%s)", key, i, c.srv[i].Addr)
	ms, err := redis.Int64(c.srv[i].Do("PTTL", key))
	require.NoError(c.t, err, "PTTL %q on node %d (%s)", key, i, c.srv[i].Addr)
	if ms < 0 { // expired between GET and PTTL (-2), or no expiry (-1)
		return v, 0, ms == -1
	}
	return v, time.Duration(ms) * time.Millisecond, true
}

func (c *realCluster) Set(i int, key string, tok core.Token, ttl time.Duration) {
	c.t.Helper()
	_, err := c.srv[i].Do("SET", key, tok.String(), "PX", ttl.Milliseconds())
	require.NoError(c.t, err, "SET %q on node %d (%s)", key, i, c.srv[i].Addr)
}

func (c *realCluster) Del(i int, key string) {
	c.t.Helper()
	_, err := c.srv[i].Do("DEL", key)
	require.NoError(c.t, err, "DEL %q on node %d (%s)", key, i, c.srv[i].Addr)
}

// scriptFlush empties node i's script cache, so the driver's next
// EVALSHA gets NOSCRIPT.
func (c *realCluster) scriptFlush(i int) {
	c.t.Helper()
	_, err := c.srv[i].Do("SCRIPT", "FLUSH")
	require.NoError(c.t, err, "SCRIPT FLUSH on node %d (%s)", i, c.srv[i].Addr)
}

// memCluster is a memnode.Cluster on the system clock: it is its own
// driver.
type memCluster struct{ c *memnode.Cluster }

func (m *memCluster) Driver() core.Driver { return m.c }
func (m *memCluster) N() int              { return m.c.Nodes() }
func (m *memCluster) Name(i int) string   { return m.c.NodeName(i) }
func (m *memCluster) Kill(i int)          { m.c.SetDown(i, true) }
func (m *memCluster) Stop(i int)          { m.c.SetHung(i, true) }
func (m *memCluster) Cont(i int)          { m.c.SetHung(i, false) }

func (m *memCluster) Restart(i int) {
	m.c.SetDown(i, false)
	m.c.SetHung(i, false)
	m.c.Restart(i)
}

func (m *memCluster) Get(i int, key string) (string, time.Duration, bool) {
	tok, ttl, ok := m.c.Get(i, key)
	if !ok {
		return "", 0, false
	}
	return tok.String(), ttl, true
}

func (m *memCluster) Set(i int, key string, tok core.Token, ttl time.Duration) {
	m.c.Set(i, key, tok, ttl)
}

// Del stores an already expired entry: memnode has no delete, and treats an
// expired key exactly as a missing one.
func (m *memCluster) Del(i int, key string) { m.c.Set(i, key, core.Token{}, -time.Millisecond) }
