package redistest

import (
	"net"
	"strconv"
	"testing"
)

// InProcess is a server that runs in the test's own process in place of a
// redis-server process. Package internal/redistest/embedded provides one,
// miniredis; it lives there so that a package importing redistest alone
// links no miniredis.
type InProcess interface {
	// Addr returns the address it listens on, "127.0.0.1:port".
	Addr() string
	// Close stops it: connections are refused until Restart.
	Close()
	// Restart starts it again on the same address with empty data, like
	// a redis-server restarted without persistence.
	Restart() error
}

// StartOr starts a server as Start does, unless redis-server is not on
// PATH and REDLOCK_REQUIRE_REDIS is not 1: then it calls start for an
// in-process server with opts and returns it as Adopt does, and the test
// counts in Summary as one that ran on the embedded miniredis. Use it
// (through package embedded) where a test checks the Redis protocol and
// command semantics, not the server's internals.
func StartOr(t testing.TB, opts Options, start func(Options) (InProcess, error)) *Server {
	t.Helper()
	if !required() {
		if _, err := LookPath(); err != nil {
			ranEmbedded(t)
			ip, err := start(opts)
			if err != nil {
				t.Fatalf("redistest: in-process server: %v", err)
			}
			return Adopt(t, opts, ip)
		}
	}
	return Start(t, opts)
}

// Adopt returns the Server of ip, an in-process server started with
// opts. Kill and Close close it, Restart restarts it, and Stop skips the
// test, since only a real process can hang. With t not nil, t.Cleanup
// closes it; outside a test (t nil) Stop and Restart must not be called.
func Adopt(t testing.TB, opts Options, ip InProcess) *Server {
	s := &Server{Opts: opts, t: t, inproc: ip, Addr: ip.Addr()}
	if _, port, err := net.SplitHostPort(s.Addr); err == nil {
		s.Port, _ = strconv.Atoi(port)
	}
	if t != nil {
		t.Cleanup(ip.Close)
	}
	return s
}

// restartInProcess restarts an in-process server, empty, on its address.
func (s *Server) restartInProcess() {
	s.t.Helper()
	if err := s.inproc.Restart(); err != nil {
		s.t.Fatalf("redistest: restart of the in-process server on %s: %v", s.Addr, err)
	}
	if got := s.inproc.Addr(); got != s.Addr {
		s.t.Fatalf("redistest: the in-process server restarted on %s, not %s", got, s.Addr)
	}
}
