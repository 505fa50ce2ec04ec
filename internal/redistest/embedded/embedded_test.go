package embedded

import (
	"net"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock/internal/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// The miniredis backend is tested directly, whether or not redis-server is
// installed: Start picks it only when redis-server is missing.

// startMini starts a miniredis for t whatever is on PATH.
func startMini(t *testing.T, opts redistest.Options) *redistest.Server {
	t.Helper()
	ip, err := listen(opts)
	require.NoError(t, err)
	return redistest.Adopt(t, opts, ip)
}

func TestExpiresOnTheWallClock(t *testing.T) {
	s := startMini(t, redistest.Options{})
	assert.True(t, s.Embedded())
	_, err := s.Do("SET", "k", "v", "PX", 30)
	require.NoError(t, err)
	pttl, err := redis.Int64(s.Do("PTTL", "k"))
	require.NoError(t, err)
	assert.LessOrEqual(t, pttl, int64(30))
	// No FastForward anywhere: the key must go by itself.
	require.Eventually(t, func() bool {
		n, err := redis.Int64(s.Do("EXISTS", "k"))
		return err == nil && n == 0
	}, 10*time.Second, time.Millisecond, "a PX key never expired")
}

func TestKillAndRestart(t *testing.T) {
	s := startMini(t, redistest.Options{})
	addr := s.Addr
	_, err := s.Do("SET", "k", "v")
	require.NoError(t, err)
	s.Kill()
	_, err = s.Do("PING")
	require.Error(t, err, "a killed server refuses connections")
	s.Restart()
	assert.Equal(t, addr, s.Addr, "restart keeps the address")
	n, err := redis.Int64(s.Do("EXISTS", "k"))
	require.NoError(t, err)
	assert.Zero(t, n, "restart empties the data, as without persistence")
}

func TestCredentials(t *testing.T) {
	t.Run("password", func(t *testing.T) {
		s := startMini(t, redistest.Options{Password: "pw"})
		_, err := s.Do("PING")
		require.NoError(t, err)
		_, err = redis.Dial("tcp", s.Addr, redis.DialPassword("wrong"))
		require.Error(t, err)
		c, err := redis.Dial("tcp", s.Addr)
		require.NoError(t, err)
		defer func() { assert.NoError(t, c.Close()) }()
		_, err = c.Do("GET", "k")
		require.ErrorContains(t, err, "NOAUTH")
	})
	t.Run("acl user", func(t *testing.T) {
		s := startMini(t, redistest.Options{User: "u", UserPassword: "upw"})
		_, err := s.Do("PING")
		require.NoError(t, err)
		_, err = redis.Dial("tcp", s.Addr, redis.DialPassword("upw"))
		require.Error(t, err, "the password alone is the disabled default user's")
	})
	t.Run("tls", func(t *testing.T) {
		s := startMini(t, redistest.Options{TLS: true})
		_, err := s.Do("PING")
		require.NoError(t, err)
		c, err := redis.Dial("tcp", s.Addr, redis.DialReadTimeout(time.Second))
		if err == nil {
			_, err = c.Do("PING")
			_ = c.Close() // redigo returns the PING's failure again
		}
		require.Error(t, err, "plain text is refused")
		s.Restart()
		_, err = s.Do("PING")
		require.NoError(t, err, "restart keeps TLS")
	})
}

// TestStartN: Start's servers answer on distinct addresses, whichever
// kind this machine runs.
func TestStartN(t *testing.T) {
	ss := StartN(t, 2, redistest.Options{})
	require.Len(t, ss, 2)
	assert.NotEqual(t, ss[0].Addr, ss[1].Addr)
	_, lookErr := redistest.LookPath()
	for _, s := range ss {
		assert.Equal(t, lookErr != nil, s.Embedded(), "miniredis exactly when redis-server is missing")
		_, err := s.Do("SET", "k", s.Addr)
		require.NoError(t, err)
	}
	v, err := ss[1].Do("GET", "k")
	require.NoError(t, err)
	assert.Equal(t, ss[1].Addr, v, "each server has its own data")
}

// TestStartWithoutRedisServer: without redis-server on PATH Start runs
// miniredis; under REDLOCK_REQUIRE_REDIS=1 it would fail instead (see
// redistest's TestStartOrWithoutRedisServer).
func TestStartWithoutRedisServer(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv(redistest.RequireEnv, "")
	s := Start(t, redistest.Options{Password: "pw"})
	assert.True(t, s.Embedded())
	pong, err := s.Do("PING")
	require.NoError(t, err)
	assert.Equal(t, "PONG", pong)
}

// TestLaunch: a launched miniredis answers outside a test and Close stops
// it; TLS is refused.
func TestLaunch(t *testing.T) {
	m, err := Launch(redistest.Options{})
	require.NoError(t, err)
	assert.True(t, m.Embedded())
	pong, err := m.Do("PING")
	require.NoError(t, err)
	assert.Equal(t, "PONG", pong)
	require.NoError(t, m.Close())
	_, err = m.Do("PING")
	assert.Error(t, err, "the server answers after Close")

	_, err = Launch(redistest.Options{TLS: true})
	assert.ErrorContains(t, err, "plain TCP only")
}

// TestRestartOnATakenAddress: a restart whose address another listener
// took reports the failure instead of serving elsewhere.
func TestRestartOnATakenAddress(t *testing.T) {
	ip, err := listen(redistest.Options{})
	require.NoError(t, err)
	t.Cleanup(ip.Close)
	ip.Close()
	l, err := net.Listen("tcp", ip.Addr())
	require.NoError(t, err, "the closed server's address is free")
	t.Cleanup(func() { assert.NoError(t, l.Close()) })
	assert.Error(t, ip.Restart())
}
