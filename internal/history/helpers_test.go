package history

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers"
	"github.com/redlock-go/redlock/drivers/redigo"
	"github.com/redlock-go/redlock/internal/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// eventTimeout bounds every wait for a server-side event (a key's expiry,
// a replication link coming up). The events are certain; the bound only
// turns a broken server into a failure rather than a hang.
const eventTimeout = 20 * time.Second

// schedule numbers and logs the steps of a named interleaving, so that a
// failure shows how far it got.
type schedule struct {
	t    *testing.T
	name string
	n    int
}

func newSchedule(t *testing.T, name string) *schedule {
	t.Helper()
	t.Logf("schedule %q", name)
	return &schedule{t: t, name: name}
}

func (s *schedule) step(format string, args ...any) {
	s.t.Helper()
	s.n++
	s.t.Logf("%s %d: %s", s.name, s.n, fmt.Sprintf(format, args...))
}

// waitFor polls cond until it holds: the wait for an event on a server
// (polling is how a client observes it), not a guess at how long it takes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(eventTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up after %v waiting for %s", eventTimeout, what)
		}
		time.Sleep(time.Millisecond)
	}
}

// pttl is PTTL key on s: -2 no key, -1 no expiry.
func pttl(t *testing.T, s *redistest.Server, key string) int64 {
	t.Helper()
	v, err := redis.Int64(s.Do("PTTL", key))
	require.NoError(t, err)
	return v
}

// waitExpired waits until key is gone from every server (PTTL -2).
func waitExpired(t *testing.T, key string, ss ...*redistest.Server) {
	t.Helper()
	for _, s := range ss {
		waitFor(t, key+" to expire on "+s.Addr, func() bool { return pttl(t, s, key) == -2 })
	}
}

// get is GET key on s, "" when missing.
func get(t *testing.T, s *redistest.Server, key string) string {
	t.Helper()
	v, err := redis.String(s.Do("GET", key))
	if errors.Is(err, redis.ErrNil) {
		return ""
	}
	require.NoError(t, err)
	return v
}

// dial opens a naive client's connection, closed at the test's end.
func dial(t *testing.T, s *redistest.Server) redis.Conn {
	t.Helper()
	c, err := Dial(s.Addr)
	require.NoError(t, err)
	// Close returns the connection's earlier error, if any, and a test
	// that kills its server gives it one: the Close here only frees it.
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// newDriver is one Redlock client's connections to servers, in that node
// order, closed at the test's end.
func newDriver(t *testing.T, servers ...*redistest.Server) *drivers.Driver {
	t.Helper()
	addrs := make([]string, len(servers))
	for i, s := range servers {
		addrs[i] = s.Addr
	}
	drv, err := redigo.Dial(addrs, redigo.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, drv.Close()) })
	return drv
}

// config is the Config of every Redlock client here: sequential rounds,
// so that every node has answered when an attempt returns and the servers'
// state can be checked at once. The tests take locks with TryLock, one
// attempt, so that a refusal is reported rather than retried.
func config(ttl time.Duration) core.Config {
	return core.Config{
		TTL: ttl,
		// Generous on a loaded machine, and three nodes in sequence still
		// leave a lock the loss margin, two round bounds (core.NewSpec).
		NodeTimeout: min(ttl/8, time.Second),
		FanOut:      core.Sequential,
	}
}

// newClient is one Redlock client over servers, in that node order.
func newClient(t *testing.T, ttl time.Duration, servers ...*redistest.Server) *redlock.Client {
	t.Helper()
	return clientOn(t, newDriver(t, servers...), ttl)
}

// clientOn is a Client over drv with config(ttl).
func clientOn(t *testing.T, drv core.Driver, ttl time.Duration) *redlock.Client {
	t.Helper()
	cfg := config(ttl)
	c, err := redlock.NewClient(drv, redlock.Options{TTL: cfg.TTL, NodeTimeout: cfg.NodeTimeout, FanOut: cfg.FanOut})
	require.NoError(t, err)
	return c
}

// remaining is what is left of l's validity now: zero once it has ended.
func remaining(l *redlock.Lock) time.Duration {
	return max(time.Until(l.Until()), 0)
}

// holders returns the indices of the servers where key holds token.
func holders(t *testing.T, key string, token core.Token, ss ...*redistest.Server) []int {
	t.Helper()
	var out []int
	for i, s := range ss {
		if get(t, s, key) == token.String() {
			out = append(out, i)
		}
	}
	return out
}

// all returns 0..n-1.
func all(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

var ctx = context.Background()

// replLink is a loopback TCP relay from a replica to its master whose
// master-to-replica direction can be cut: what the master sends after Cut
// is held in the relay and never delivered, as when a master acknowledges
// a write and crashes before its replica received it. The replica-to-master
// direction (REPLCONF ACK) always flows.
type replLink struct {
	ln     net.Listener
	master string

	mu    sync.Mutex
	cut   bool
	held  []byte
	conns []net.Conn

	wg sync.WaitGroup
}

func newReplLink(t *testing.T, master string) *replLink {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	r := &replLink{ln: ln, master: master}
	r.wg.Add(1)
	go r.accept()
	t.Cleanup(r.close)
	return r
}

func (r *replLink) port() int { return r.ln.Addr().(*net.TCPAddr).Port }

func (r *replLink) accept() {
	defer r.wg.Done()
	for {
		rc, err := r.ln.Accept()
		if err != nil {
			return
		}
		mc, err := net.DialTimeout("tcp", r.master, 5*time.Second)
		if err != nil { // the master is gone
			_ = rc.Close() // nothing was relayed on it
			continue
		}
		r.mu.Lock()
		r.conns = append(r.conns, rc, mc)
		r.mu.Unlock()
		r.wg.Add(2)
		go func() { // replica → master
			defer r.wg.Done()
			// A relay ends when either side closes; either way, both
			// sides close, and the second Close of each fails by design.
			_, _ = io.Copy(mc, rc)
			_ = mc.Close()
			_ = rc.Close()
		}()
		go func() { // master → replica, unless cut
			defer r.wg.Done()
			buf := make([]byte, 64<<10)
			for {
				n, err := mc.Read(buf)
				if n > 0 {
					r.mu.Lock()
					if r.cut {
						r.held = append(r.held, buf[:n]...)
					} else {
						// A failed write means the replica's side closed:
						// the other relay then closes mc, and Read fails.
						_, _ = rc.Write(buf[:n])
					}
					r.mu.Unlock()
				}
				if err != nil {
					_ = mc.Close() // as above: the other relay may have closed both
					_ = rc.Close()
					return
				}
			}
		}()
	}
}

// Cut stops delivering the master's stream from now on.
func (r *replLink) Cut() {
	r.mu.Lock()
	r.cut = true
	r.mu.Unlock()
}

// Holds reports whether the held (undelivered) stream contains s.
func (r *replLink) Holds(s string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return bytes.Contains(r.held, []byte(s))
}

func (r *replLink) close() {
	// Teardown: the relays may have closed any of these already.
	_ = r.ln.Close()
	r.mu.Lock()
	for _, c := range r.conns {
		_ = c.Close()
	}
	r.mu.Unlock()
	r.wg.Wait()
}

// replicate makes replica a replica of master through a new relay, waits
// until the replica has applied a write made on master after the link came
// up (so that it is in sync), and returns the relay.
func replicate(t *testing.T, master, replica *redistest.Server) *replLink {
	t.Helper()
	_, err := master.Do("CONFIG", "SET", "repl-diskless-sync-delay", "0")
	require.NoError(t, err)
	link := newReplLink(t, master.Addr)
	_, err = replica.Do("REPLICAOF", "127.0.0.1", strconv.Itoa(link.port()))
	require.NoError(t, err)
	waitFor(t, "the replication link to come up", func() bool {
		info, err := redis.String(replica.Do("INFO", "replication"))
		require.NoError(t, err)
		return strings.Contains(info, "master_link_status:up")
	})
	_, err = master.Do("SET", "history:sync-marker", "1")
	require.NoError(t, err)
	waitFor(t, "the replica to apply the marker", func() bool { return get(t, replica, "history:sync-marker") == "1" })
	return link
}

// failover is the crash of master and the promotion of its replica, which
// then serves as the master: REPLICAOF NO ONE.
func failover(t *testing.T, master, replica *redistest.Server) {
	t.Helper()
	master.Kill()
	_, err := replica.Do("REPLICAOF", "NO", "ONE")
	require.NoError(t, err)
}
