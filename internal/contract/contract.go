// Package contract holds the driver contract's case bodies and helpers
// that drivers/conformance, the public suite a third-party driver runs,
// shares with this module's own suites (internal/dialtest runs
// the same bodies against each member of a mixed quorum). It imports
// neither the root package nor the engine: a driver is checked through
// core's Driver and Batch alone.
package contract

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/internal/redistest"
	"github.com/redlock-go/redlock/internal/redistest/embedded"
)

// Closer is a driver that owns connections or goroutines. It is an
// unnamed interface, so that conformance.Closer and the suites' own
// driver types are assignable to it.
type Closer = interface {
	core.Driver
	Close() error
}

// StartServers starts n servers for a suite: redis-server processes, or
// embedded ones where redistest allows them.
func StartServers(t *testing.T, n int, opts redistest.Options) []*redistest.Server {
	t.Helper()
	return embedded.StartN(t, n, opts)
}

// Timeout bounds every wait, so that a hanging driver fails the test
// instead of stalling it.
const Timeout = 10 * time.Second

// Context returns a context that ends with the test or after Timeout.
func Context(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), Timeout)
	t.Cleanup(cancel)
	return ctx
}

// DeadAddr returns a loopback address nothing listens on.
func DeadAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	a := l.Addr().String()
	require.NoError(t, l.Close())
	return a
}

// AddrsOf returns the servers' addresses.
func AddrsOf(srvs []*redistest.Server) []string {
	out := make([]string, len(srvs))
	for i, s := range srvs {
		out[i] = s.Addr
	}
	return out
}

// Token is the token of the suites' commands.
var Token = core.TokenFromUint64s(0x0123456789abcdef, 0xfedcba9876543210)

// SendOne sends cmd to node i alone, in a batch of its own bounded by
// timeout, and returns the reply.
func SendOne(d core.Driver, i int, cmd core.Command, timeout time.Duration) core.Reply {
	b := d.Begin(context.Background())
	defer b.Close()
	b.Send(i, cmd, time.Now().Add(timeout))
	r, _ := b.Receive(nil)
	return r
}

// AcquireCmd acquires key with Token for ten seconds.
func AcquireCmd(key string) core.Command {
	return core.Command{Op: core.OpAcquire, Key: key, Token: Token, TTL: 10 * time.Second}
}

// ReleaseCmd releases key held with tok.
func ReleaseCmd(key string, tok core.Token) core.Command {
	return core.Command{Op: core.OpRelease, Key: key, Token: tok}
}

// ExtendCmd extends key held with tok to ttl.
func ExtendCmd(key string, tok core.Token, ttl time.Duration) core.Command {
	return core.Command{Op: core.OpExtend, Key: key, Token: tok, TTL: ttl}
}
