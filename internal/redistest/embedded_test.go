package redistest

import (
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The embedded backend is tested directly, whether or not redis-server is
// installed: Start picks it only when redis-server is missing.

func TestEmbeddedExpiresOnTheWallClock(t *testing.T) {
	s := startEmbedded(t, Options{})
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

func TestEmbeddedKillAndRestart(t *testing.T) {
	s := startEmbedded(t, Options{})
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

func TestEmbeddedCredentials(t *testing.T) {
	t.Run("password", func(t *testing.T) {
		s := startEmbedded(t, Options{Password: "pw"})
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
		s := startEmbedded(t, Options{User: "u", UserPassword: "upw"})
		_, err := s.Do("PING")
		require.NoError(t, err)
		_, err = redis.Dial("tcp", s.Addr, redis.DialPassword("upw"))
		require.Error(t, err, "the password alone is the disabled default user's")
	})
	t.Run("tls", func(t *testing.T) {
		s := startEmbedded(t, Options{TLS: true})
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

// TestEmbeddedStopSkips: SIGSTOP cannot be emulated in process, so Stop
// skips the test and counts it; the test below checks both.
func TestEmbeddedStopSkips(t *testing.T) {
	defer withTally(t)()
	var ran bool
	t.Run("inner", func(t *testing.T) {
		s := startEmbedded(t, Options{})
		s.Stop()
		ran = true
	})
	assert.False(t, ran, "Stop returned on an embedded server")
	tally.mu.Lock()
	defer tally.mu.Unlock()
	assert.True(t, tally.skipped[reasonSIGSTOP][t.Name()+"/inner"], "skip not counted: %v", tally.skipped)
}

func TestSummary(t *testing.T) {
	defer withTally(t)()
	assert.Empty(t, Summary(), "nothing skipped, nothing embedded")
	ranEmbedded(t)
	tally.mu.Lock()
	tally.skipped = map[string]map[string]bool{
		reasonSIGSTOP:  {"a": true, "b": true},
		reasonNoServer: {"c": true},
	}
	tally.mu.Unlock()
	assert.Equal(t, "github.com/redlock-go/redlock/internal/redistest: redis-server not found on PATH; "+
		"1 test ran on the embedded miniredis; "+
		"3 tests skipped (needs SIGSTOP of a real redis-server process: 2, needs redis-server: 1); "+
		"apt-get install redis-server runs them all", Summary())
}

// withTally empties the package tally for a test and returns the function
// that puts it back, so that the package's own summary stays true.
func withTally(t *testing.T) (restore func()) {
	tally.mu.Lock()
	saved := tally.skipped
	savedEmbedded := tally.embedded
	tally.skipped, tally.embedded = nil, nil
	tally.mu.Unlock()
	return func() {
		tally.mu.Lock()
		tally.skipped, tally.embedded = saved, savedEmbedded
		tally.mu.Unlock()
	}
}
