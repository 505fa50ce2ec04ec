package rueidis_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	rd "github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers/conformance"
	rueidis "github.com/redlock-go/redlock/drivers/rueidis"
	"github.com/redlock-go/redlock/internal/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

func TestDialValidation(t *testing.T) {
	for _, tc := range []struct {
		name  string
		addrs []string
		want  string
	}{
		{"empty", nil, "no node addresses"},
		{"no port", []string{"127.0.0.1:1", "127.0.0.1"}, `address 1 "127.0.0.1"`},
		{"no host", []string{":6379"}, `address 0 ":6379" has no host`},
		{"bad port", []string{"127.0.0.1:http"}, "invalid port"},
		{"port zero", []string{"127.0.0.1:0"}, "invalid port"},
		{"port too big", []string{"127.0.0.1:65536"}, "invalid port"},
		{"duplicate", []string{"127.0.0.1:7001", "127.0.0.1:7002", "127.0.0.1:7001"}, `address 2 "127.0.0.1:7001" repeats address 0`},
		{"duplicate host case", []string{"LocalHost:7001", "localhost:7001"}, "repeats"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := rueidis.Dial(tc.addrs, rueidis.Options{})
			require.Error(t, err)
			assert.Nil(t, d)
			assert.ErrorIs(t, err, core.ErrInvalidConfig)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	for _, size := range []int{-1, 64} {
		_, err := rueidis.Dial([]string{"127.0.0.1:1"}, rueidis.Options{PoolSize: size})
		assert.ErrorIs(t, err, core.ErrInvalidConfig)
		assert.ErrorContains(t, err, "one pipelined connection per node")
	}
}

func TestNewValidation(t *testing.T) {
	_, err := rueidis.New(nil, nil)
	assert.ErrorIs(t, err, core.ErrInvalidConfig)
	_, err = rueidis.New([]rd.Client{nil}, []string{"a"})
	assert.ErrorIs(t, err, core.ErrInvalidConfig)

	srv := redistest.Start(t, redistest.Options{})
	ctx := context.Background()
	c, err := rd.NewClient(rueidis.ClientOption(srv.Addr, rueidis.Options{}))
	require.NoError(t, err)
	defer c.Close()
	_, err = rueidis.New([]rd.Client{c, c}, nil)
	assert.ErrorIs(t, err, core.ErrInvalidConfig, "the same node twice")
	_, err = rueidis.New([]rd.Client{c}, []string{"a", "b"})
	assert.ErrorIs(t, err, core.ErrInvalidConfig)

	d, err := rueidis.New([]rd.Client{c}, nil)
	require.NoError(t, err)
	assert.Equal(t, 1, d.Nodes())
	assert.Equal(t, srv.Addr, d.NodeName(0))
	assert.Equal(t, core.StatusOK, conformance.SendOne(d, 0, acquire("k", tok), time.Second).Status)
	require.NoError(t, d.Close())
	// The client is still the caller's.
	require.NoError(t, c.Do(ctx, c.B().Ping().Build()).Error())
}

func TestOneConnectionPerNode(t *testing.T) {
	assert.Equal(t, -1, rueidis.ClientOption("h:1", rueidis.Options{}).PipelineMultiplex)
}

var tok = core.TokenFromUint64s(0x0123456789abcdef, 0xfedcba9876543210)

func acquire(key string, t core.Token) core.Command {
	return core.Command{Op: core.OpAcquire, Key: key, Token: t, TTL: 10 * time.Second}
}

// evalCalls returns how many EVAL and EVALSHA commands srv has run (INFO
// commandstats), or skips the test on a server without command stats.
func evalCalls(t *testing.T, srv *redistest.Server) (eval, evalsha int) {
	t.Helper()
	v, err := srv.Do("INFO", "commandstats")
	require.NoError(t, err)
	info, _ := v.(string)
	if !strings.Contains(info, "cmdstat_") {
		t.Skip("the server keeps no command stats")
	}
	count := func(cmd string) int {
		_, rest, ok := strings.Cut(info, "cmdstat_"+cmd+":calls=")
		if !ok {
			return 0
		}
		n, _ := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
		return n
	}
	return count("eval"), count("evalsha")
}

// TestScriptSourceUntilCached: until a node has run a script, its commands
// carry the script's source (EVAL), so that a release whose reply nobody
// reads (a cleanup abandoned at its deadline on a hung node, which the node
// runs when it wakes) cannot meet NOSCRIPT with nobody left to send it
// again. Once the script ran there, its hash is sent (EVALSHA); after
// NOSCRIPT, the source again. Both paths: a node's pipeline (multiplexed)
// and an inline command (sequential).
func TestScriptSourceUntilCached(t *testing.T) {
	srvs := redistest.StartN(t, 2, redistest.Options{})
	a := []string{srvs[0].Addr, srvs[1].Addr}
	d, err := rueidis.Dial(a, rueidis.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	s0 := srvs[0]
	multiplexed := func(c core.Command) {
		t.Helper()
		b := d.Begin(context.Background())
		defer b.Close()
		dl := time.Now().Add(5 * time.Second)
		b.Send(0, c, dl)
		b.Send(1, c, dl)
		for range 2 {
			r, ok := b.Receive(nil)
			require.True(t, ok)
			require.Equal(t, core.StatusMissing, r.Status, "%v", r.Err)
		}
	}
	sequential := func(c core.Command) {
		t.Helper()
		r := conformance.SendOne(d, 0, c, 5*time.Second)
		require.Equal(t, core.StatusMissing, r.Status, "%v", r.Err)
	}
	want := func(eval, evalsha int) {
		t.Helper()
		e, es := evalCalls(t, s0)
		assert.Equal(t, eval, e, "EVAL calls")
		assert.Equal(t, evalsha, es, "EVALSHA calls")
	}
	want(0, 0)
	multiplexed(release("k", tok)) // fresh server: the source
	want(1, 0)
	multiplexed(release("k", tok))
	want(1, 1)
	sequential(extend("k", tok, time.Second)) // another script: its source
	want(2, 1)
	sequential(extend("k", tok, time.Second))
	want(2, 2)
	_, err = s0.Do("SCRIPT", "FLUSH")
	require.NoError(t, err)
	multiplexed(release("k", tok)) // NOSCRIPT, then EVAL
	want(3, 3)
	multiplexed(release("k", tok)) // cached again: the hash
	want(3, 4)
}

func release(key string, t core.Token) core.Command {
	return core.Command{Op: core.OpRelease, Key: key, Token: t}
}

func extend(key string, t core.Token, ttl time.Duration) core.Command {
	return core.Command{Op: core.OpExtend, Key: key, Token: t, TTL: ttl}
}
