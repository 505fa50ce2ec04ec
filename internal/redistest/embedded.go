package redistest

import (
	"crypto/tls"
	"strconv"
	"testing"

	"github.com/alicebob/miniredis/v2"
)

// startEmbedded starts an in-process miniredis with opts on a free
// loopback port, keys expiring on the wall clock, closed by t.Cleanup.
func startEmbedded(t testing.TB, opts Options) *Server {
	t.Helper()
	m := miniredisFor(opts)
	s := &Server{Opts: opts, t: t, mini: m}
	var err error
	if opts.TLS {
		var cfg *tls.Config
		if cfg, err = serverTLS(); err == nil {
			err = m.StartAddrTLS("127.0.0.1:0", cfg)
		}
	} else {
		err = m.StartAddr("127.0.0.1:0")
	}
	if err != nil {
		t.Fatalf("redistest: embedded miniredis: %v", err)
	}
	t.Cleanup(m.Close)
	s.Addr = m.Addr()
	s.Port = atoiPort(m.Port())
	return s
}

// restartEmbedded closes the server and reopens it on the same address,
// empty, like a restart without persistence.
func (s *Server) restartEmbedded() {
	s.mini.Close()
	var err error
	if s.Opts.TLS {
		var cfg *tls.Config
		if cfg, err = serverTLS(); err == nil {
			err = s.mini.StartAddrTLS(s.Addr, cfg)
		}
	} else {
		err = s.mini.StartAddr(s.Addr)
	}
	if err != nil {
		s.t.Fatalf("redistest: restart of embedded miniredis on %s: %v", s.Addr, err)
	}
	s.mini.FlushAll()
}

// miniredisFor returns an unstarted miniredis with opts' credentials and
// wall-clock expiry.
func miniredisFor(opts Options) *miniredis.Miniredis {
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
	return m
}

func atoiPort(p string) int {
	n, _ := strconv.Atoi(p)
	return n
}
