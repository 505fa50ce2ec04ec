package redistest

import (
	"crypto/tls"
	"errors"
	"net"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) { Main(m) }

func TestStartSetGet(t *testing.T) {
	s := Start(t, Options{})
	assert.Equal(t, "127.0.0.1", s.Addr[:len("127.0.0.1")])
	assert.Equal(t, net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port)), s.Addr)
	assert.Nil(t, s.ClientTLS())

	r, err := s.Do("SET", "k", "v", "PX", 5000)
	require.NoError(t, err)
	assert.Equal(t, "OK", r)
	r, err = s.Do("GET", "k")
	require.NoError(t, err)
	assert.Equal(t, "v", r, "bulk strings come back as string")
	pttl, err := redis.Int64(s.Do("PTTL", "k"))
	require.NoError(t, err)
	assert.Greater(t, pttl, int64(0))
	assert.LessOrEqual(t, pttl, int64(5000))

	// No persistence: save is off.
	r, err = s.Do("CONFIG", "GET", "save")
	require.NoError(t, err)
	assert.Equal(t, []any{"save", ""}, r)

	_, err = s.Do("NOSUCHCOMMAND")
	var rerr redis.Error
	assert.ErrorAs(t, err, &rerr, "server errors are returned as errors")
}

func TestStartNDistinctPorts(t *testing.T) {
	ss := StartN(t, 3, Options{})
	require.Len(t, ss, 3)
	seen := map[int]bool{}
	for _, s := range ss {
		assert.False(t, seen[s.Port], "port %d reused", s.Port)
		seen[s.Port] = true
		_, err := s.Do("SET", "k", s.Addr)
		require.NoError(t, err)
	}
	// Independent data sets.
	for _, s := range ss {
		v, err := redis.String(s.Do("GET", "k"))
		require.NoError(t, err)
		assert.Equal(t, s.Addr, v)
	}
}

func TestKillRefusesConnections(t *testing.T) {
	s := Start(t, Options{})
	s.Kill()
	_, err := s.Do("PING")
	require.Error(t, err)
	assert.True(t, errors.Is(err, syscall.ECONNREFUSED), "want connection refused, got %v", err)
	s.Kill() // idempotent
}

func TestStopCont(t *testing.T) {
	s := Start(t, Options{})
	s.Stop()
	// A stopped server accepts connections (the kernel does) but never
	// answers.
	c, err := redis.Dial("tcp", s.Addr, redis.DialReadTimeout(200*time.Millisecond))
	require.NoError(t, err)
	defer func() { _ = c.Close() }() // redigo returns the PING's timeout again
	_, err = c.Do("PING")
	require.Error(t, err)
	var ne net.Error
	require.ErrorAs(t, err, &ne)
	assert.True(t, ne.Timeout(), "want a timeout, got %v", err)

	s.Cont()
	r, err := s.Do("PING")
	require.NoError(t, err)
	assert.Equal(t, "PONG", r)
}

func TestStoppedServerIsCleanedUp(t *testing.T) {
	// Cleanup must kill and reap a stopped server; goleak and the absence
	// of a hang show it did.
	s := Start(t, Options{})
	s.Stop()
}

func TestRestartSamePortEmpty(t *testing.T) {
	s := Start(t, Options{})
	port := s.Port
	_, err := s.Do("SET", "k", "v")
	require.NoError(t, err)
	// Hold a connection open so the old port has a live peer when the
	// server dies.
	c, err := redis.Dial("tcp", s.Addr)
	require.NoError(t, err)
	defer func() { assert.NoError(t, c.Close()) }()

	s.Restart()
	assert.Equal(t, port, s.Port)
	r, err := s.Do("GET", "k")
	require.NoError(t, err)
	assert.Nil(t, r, "data must not survive a restart")

	// Restart of a killed and of a stopped server.
	s.Kill()
	s.Restart()
	_, err = s.Do("PING")
	require.NoError(t, err)
	s.Stop()
	s.Restart()
	_, err = s.Do("PING")
	require.NoError(t, err)
	assert.Equal(t, port, s.Port)
}

func TestPassword(t *testing.T) {
	s := Start(t, Options{Password: "s3cret pass"})
	r, err := s.Do("PING")
	require.NoError(t, err)
	assert.Equal(t, "PONG", r)

	c, err := redis.Dial("tcp", s.Addr)
	require.NoError(t, err)
	defer func() { assert.NoError(t, c.Close()) }()
	_, err = c.Do("PING")
	assert.ErrorContains(t, err, "NOAUTH")
	_, err = c.Do("AUTH", "wrong")
	assert.Error(t, err)
}

func TestACLUser(t *testing.T) {
	s := Start(t, Options{User: "locker", UserPassword: "pw>x"})
	_, err := s.Do("SET", "k", "v")
	require.NoError(t, err)
	r, err := s.Do("ACL", "WHOAMI")
	require.NoError(t, err)
	assert.Equal(t, "locker", r)

	// The default user is disabled.
	c, err := redis.Dial("tcp", s.Addr)
	require.NoError(t, err)
	defer func() { assert.NoError(t, c.Close()) }()
	_, err = c.Do("GET", "k")
	assert.Error(t, err)
	_, err = c.Do("AUTH", "locker", "wrong")
	assert.Error(t, err)
}

func TestTLS(t *testing.T) {
	s := Start(t, Options{TLS: true, Password: "pw"})
	cfg := s.ClientTLS()
	require.NotNil(t, cfg)
	r, err := s.Do("PING")
	require.NoError(t, err)
	assert.Equal(t, "PONG", r)

	conn, err := tls.Dial("tcp", s.Addr, cfg)
	require.NoError(t, err, "the client config must verify the server")
	require.NoError(t, conn.Close())

	// Plain text gets no answer: the port speaks TLS only.
	c, err := redis.Dial("tcp", s.Addr, redis.DialPassword("pw"),
		redis.DialReadTimeout(time.Second))
	if err == nil {
		_, err = c.Do("PING")
		_ = c.Close() // redigo returns the PING's failure again
	}
	assert.Error(t, err)

	// Without the CA the certificate is refused.
	_, err = tls.Dial("tcp", s.Addr, &tls.Config{ServerName: "127.0.0.1"})
	assert.Error(t, err)

	s.Restart()
	_, err = s.Do("PING")
	require.NoError(t, err, "restart keeps TLS")
}

func TestTestPackage(t *testing.T) {
	assert.Equal(t, "github.com/redlock-go/redlock/internal/redistest", testPackage())
}

// TestDoAllOneConnection: DoAll's commands share a connection, Do's do
// not; DoAll stops at the first error reply.
func TestDoAllOneConnection(t *testing.T) {
	s := Start(t, Options{})
	ids, err := s.DoAll([]any{"CLIENT", "ID"}, []any{"CLIENT", "ID"})
	require.NoError(t, err)
	require.Len(t, ids, 2)
	assert.Equal(t, ids[0], ids[1])
	id1, err := s.Do("CLIENT", "ID")
	require.NoError(t, err)
	id2, err := s.Do("CLIENT", "ID")
	require.NoError(t, err)
	assert.NotEqual(t, id1, id2)

	r, err := s.DoAll([]any{"SET", "k", "v"}, []any{"INCR", "k"}, []any{"DEL", "k"})
	require.Error(t, err)
	assert.Equal(t, []any{"OK"}, r)
	v, err := s.Do("GET", "k")
	require.NoError(t, err)
	assert.Equal(t, "v", v, "the commands after the error did not run")
}
