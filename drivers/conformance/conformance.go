// Package conformance is the contract a core.Driver must keep, as a test
// suite a driver's author runs, the authors of this module's drivers
// included: the commands a Batch sends and the replies it returns, a
// node's timeout, dialling nodes that are down, one server under two
// names, Close, validation of Dial's and New's arguments, and the
// subscriptions a driver gives the engine. It checks the driver alone,
// through core's Driver and Batch and the engine's Subscription: it
// imports neither the root package nor the benchmarks.
//
// A driver's test calls it as
//
//	var dial = conformance.Of(mydriver.Dial)
//
//	func TestConformance(t *testing.T)  { conformance.RunDial(t, dial) }
//	func TestSubscription(t *testing.T) { conformance.RunSubscription(t, mydriver.Subscriber) }
//
// and, if it dials Sentinel groups and Clusters (drivers.Member),
//
//	func TestConformanceMembers(t *testing.T) {
//		conformance.RunMembers(t, conformance.MembersOf(mydriver.DialMembers))
//	}
//
// The suites start their own redis-server processes with
// internal/redistest; without redis-server on PATH they run against the
// embedded miniredis, and the cases that need a real process skip (with
// REDLOCK_REQUIRE_REDIS=1 a missing redis-server fails the test instead).
//
// This module's drivers also run the system tests of
// drivers/internal/systest: the root package's Client over the driver,
// with its leases, wake on release, fencing, faults and processes.
package conformance

import (
	"context"
	"crypto/tls"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock/internal/redistest"
	"github.com/redlock-go/redlock/internal/redistest/embedded"
)

// Endpoint is how a driver reaches one Redis master.
type Endpoint struct {
	// Addr is "127.0.0.1:port". Drivers should use it as the node's name,
	// so that errors name the failed nodes' addresses; the suite checks.
	Addr string
	// Username is empty unless the server uses an ACL user; Password is
	// empty when the server requires none.
	Username, Password string
	// TLS is non-nil when the server speaks TLS only.
	TLS *tls.Config
}

// startServers starts n servers for the suite: redis-server processes, or
// embedded ones where redistest allows them.
func startServers(t *testing.T, n int, opts redistest.Options) []*redistest.Server {
	t.Helper()
	return embedded.StartN(t, n, opts)
}

// testTimeout bounds every wait, so that a hanging driver fails the test
// instead of stalling it.
const testTimeout = 10 * time.Second

// testContext returns a context that ends with the test or after
// testTimeout.
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// deadAddr is a loopback address nothing listens on.
func deadAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	a := l.Addr().String()
	require.NoError(t, l.Close())
	return a
}

func addrsOf(srvs []*redistest.Server) []string {
	out := make([]string, len(srvs))
	for i, s := range srvs {
		out[i] = s.Addr
	}
	return out
}
