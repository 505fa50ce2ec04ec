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
	ua, err := sa.Usage()
	require.NoError(t, err)
	ub, err := sb.Usage()
	require.NoError(t, err)
	us, err := both.Usage()
	require.NoError(t, err)
	ca, cb, sum := ua.CPU, ub.CPU, us.CPU
	assert.Positive(t, ca)
	assert.Positive(t, cb)
	assert.GreaterOrEqual(t, sum, ca+cb, "the sum of both, read later")

	_, err = DialServers([]string{b.Addr, a.Addr}, ServerOptions{Password: "wrong"})
	var re RedisError
	require.ErrorAs(t, err, &re)
	assert.ErrorContains(t, err, b.Addr)
}

// Usage reads a server's CPU and its reads of its clients' input in one
// INFO: a batch written at once is one read, commands sent one at a
// time one read each, and each Usage's INFO one more.
func TestServersUsageCountsReads(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	srv, err := DialServers([]string{s.Addr}, ServerOptions{})
	require.NoError(t, err)
	defer srv.Close()
	c, err := Dial(s.Addr, ServerOptions{})
	require.NoError(t, err)
	defer func() { assert.NoError(t, c.Close()) }()

	u0, err := srv.Usage()
	require.NoError(t, err)
	assert.Positive(t, u0.CPU)
	assert.Positive(t, u0.Reads, "the INFO that reads it, at least")
	var batch []byte
	for range 10 {
		batch = AppendCommand(batch, "PING")
	}
	require.NoError(t, c.Pipeline(batch, 10, "+PONG", "+PONG"))
	u1, err := srv.Usage()
	require.NoError(t, err)
	assert.Equal(t, int64(2), u1.Reads-u0.Reads, "the batch and the INFO")
	for range 10 {
		_, err := c.Do("PING")
		require.NoError(t, err)
	}
	u2, err := srv.Usage()
	require.NoError(t, err)
	assert.Equal(t, int64(11), u2.Reads-u1.Reads, "ten commands one at a time, and the INFO")
	assert.GreaterOrEqual(t, u2.CPU, u0.CPU)

	both := Servers{srv[0], srv[0]}
	u, err := both.Usage()
	require.NoError(t, err)
	assert.Equal(t, (u2.Reads+1)+(u2.Reads+2), u.Reads, "summed: each INFO counts itself")
}

// Pipeline writes a batch encoded once and checks its one-line replies
// without allocating; a reply that is not the expected one is an error
// naming the server and the reply.
func TestPipelineRaw(t *testing.T) {
	assert.Equal(t, "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2\r\nv1\r\n", string(AppendCommand(nil, "SET", "k", "v1")))

	s := redistest.Start(t, redistest.Options{})
	c, err := Dial(s.Addr, ServerOptions{})
	require.NoError(t, err)
	defer func() { assert.NoError(t, c.Close()) }()
	var batch []byte
	batch = AppendCommand(batch, "SET", "a", "1")
	batch = AppendCommand(batch, "INCR", "n")
	require.NoError(t, c.Pipeline(batch, 2, "+OK", ":1"))
	err = c.Pipeline(batch, 2, "+OK", ":1") // INCR now answers 2
	require.Error(t, err)
	assert.ErrorContains(t, err, s.Addr)
	assert.ErrorContains(t, err, `":2"`)

	assert.ErrorContains(t, c.Pipeline(batch, 2), "none expected", "no reply expected: an error, not a panic")

	set := AppendCommand(nil, "SET", "a", "1")
	allocs := testing.AllocsPerRun(100, func() {
		if err := c.Pipeline(set, 1, "+OK"); err != nil {
			t.Fatal(err)
		}
	})
	assert.Zero(t, allocs)
}
