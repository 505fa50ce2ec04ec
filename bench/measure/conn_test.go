package measure

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock/internal/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// The servers' CPU is read with the benchmark's credentials, from real
// servers; a refused AUTH is an error that names the server.
func TestServersCPUFromRedis(t *testing.T) {
	a := redistest.Start(t, redistest.Options{User: "bench", UserPassword: "s3cret"})
	b := redistest.Start(t, redistest.Options{Password: "pw"})
	sa, err := DialServers([]string{a.Addr}, ServerOptions{Username: "bench", Password: "s3cret"})
	require.NoError(t, err)
	defer sa.Close()
	sb, err := DialServers([]string{b.Addr}, ServerOptions{Password: "pw"})
	require.NoError(t, err)
	defer sb.Close()
	both := Servers{sa[0], sb[0]}
	ca, err := sa.CPU()
	require.NoError(t, err)
	cb, err := sb.CPU()
	require.NoError(t, err)
	sum, err := both.CPU()
	require.NoError(t, err)
	assert.Positive(t, ca)
	assert.Positive(t, cb)
	assert.GreaterOrEqual(t, sum, ca+cb, "the sum of both, read later")

	_, err = DialServers([]string{b.Addr, a.Addr}, ServerOptions{Password: "wrong"})
	var re RedisError
	require.ErrorAs(t, err, &re)
	assert.ErrorContains(t, err, b.Addr)
}
