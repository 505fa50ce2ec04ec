// Package embedded starts in-process miniredis servers in place of
// redis-server processes, for the tests and tools that may run without
// redis-server: Start and StartN run redis-server as redistest.Start
// does, and miniredis only when redis-server is not on PATH and
// REDLOCK_REQUIRE_REDIS is not 1. It is apart from package redistest so
// that a package importing redistest alone links no miniredis.
//
// A miniredis server listens on 127.0.0.1, honours Options' password, ACL
// user and TLS, and expires keys on the wall clock. Kill closes it and
// Restart reopens it empty on the same port; Stop (SIGSTOP) skips the
// test, since only a real process can hang. Use it where a test checks
// the Redis protocol and command semantics, not the server's internals.
package embedded

import (
	"errors"
	"testing"

	"github.com/alicebob/miniredis/v2"

	"github.com/redlock-go/redlock/internal/redistest"
)

// Start starts a redis-server process as redistest.Start does, or a
// miniredis in its place when redis-server is not on PATH (and
// REDLOCK_REQUIRE_REDIS is not 1); the test then counts in
// redistest.Summary as one that ran on the embedded miniredis.
func Start(t testing.TB, opts redistest.Options) *redistest.Server {
	t.Helper()
	return redistest.StartOr(t, opts, listen)
}

// StartN starts n servers with the same options, as Start does.
func StartN(t testing.TB, n int, opts redistest.Options) []*redistest.Server {
	t.Helper()
	out := make([]*redistest.Server, n)
	for i := range out {
		out[i] = Start(t, opts)
	}
	return out
}

// Launch starts a miniredis outside a test, for a tool such as
// cmd/redlock-bench when redis-server is missing. It serves plain TCP
// only. Close stops it.
func Launch(opts redistest.Options) (*redistest.Server, error) {
	if opts.TLS {
		return nil, errors.New("embedded: Launch serves plain TCP only")
	}
	ip, err := listen(opts)
	if err != nil {
		return nil, err
	}
	return redistest.Adopt(nil, opts, ip), nil
}

// server is a miniredis as a redistest.InProcess.
type server struct {
	m    *miniredis.Miniredis
	tls  bool
	addr string // set once started; kept across Close, where miniredis forgets it
}

// listen starts a miniredis with opts on a free loopback port.
func listen(opts redistest.Options) (redistest.InProcess, error) {
	m := miniredis.NewMiniRedis()
	m.ClockTTL(true)
	if opts.Password != "" {
		m.RequireAuth(opts.Password)
	}
	if opts.User != "" {
		// The default user has no password, so it cannot authenticate:
		// as with redis-server's "user default off".
		m.RequireUserAuth(opts.User, opts.UserPassword)
	}
	s := &server{m: m, tls: opts.TLS}
	if err := s.start("127.0.0.1:0"); err != nil {
		return nil, err
	}
	s.addr = m.Addr()
	return s, nil
}

func (s *server) start(addr string) error {
	if !s.tls {
		return s.m.StartAddr(addr)
	}
	cfg, err := redistest.ServerTLS()
	if err != nil {
		return err
	}
	return s.m.StartAddrTLS(addr, cfg.Clone())
}

func (s *server) Addr() string { return s.addr }

func (s *server) Close() { s.m.Close() }

// Restart closes the server and reopens it on the same address, empty,
// like a restart without persistence.
func (s *server) Restart() error {
	s.m.Close()
	s.m.FlushAll() // before it listens: a client that reconnects at once must not lose its first writes
	return s.start(s.addr)
}
