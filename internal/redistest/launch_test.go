package redistest

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLaunchOutsideATest: a launched server answers, and Close stops it
// and removes its directory.
func TestLaunchOutsideATest(t *testing.T) {
	path := RedisServerPath(t)
	s, err := Launch(path, Options{})
	require.NoError(t, err)
	_, err = s.Do("SET", "k", "v")
	require.NoError(t, err)
	v, err := s.Do("GET", "k")
	require.NoError(t, err)
	assert.Equal(t, "v", v)
	_, err = os.Stat(s.dir)
	require.NoError(t, err)

	require.NoError(t, s.Close())
	_, err = s.Do("PING")
	assert.Error(t, err, "the server answers after Close")
	_, err = os.Stat(s.dir)
	assert.True(t, os.IsNotExist(err), "Close left %s: %v", s.dir, err)

	_, err = Launch(t.TempDir()+"/no-redis-server", Options{})
	assert.ErrorContains(t, err, "no-redis-server")
}
