package servers

import (
	"context"
	"net"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock/bench/measure"
	"github.com/redlock-go/redlock/internal/redistest"
)

// The embedded copy of the release script is the drivers' script, byte
// for byte: the pipelined limit measures the library's own work.
func TestPipelinedLimitMeasuresServersCPU(t *testing.T) {
	r, err := StartRedis(redistest.RedisServerPath(t), 2)
	require.NoError(t, err)
	defer func() { assert.NoError(t, r.Close()) }()
	p, err := PipelinedLimit(context.Background(), PipelineSpec{
		Addrs: r.Addrs(), Depth: 10, Duration: 50 * time.Millisecond, TTL: 10 * time.Second, KeyPrefix: "t:",
	})
	require.NoError(t, err)
	assert.Equal(t, 10, p.Depth)
	assert.Equal(t, 2, p.Servers)
	assert.Positive(t, p.Pairs)
	assert.Zero(t, p.Pairs%10, "whole batches")
	assert.Positive(t, p.ServersCPUUsPerOp)
	// A batch of 10 pairs, 20 commands written at once, is one read of
	// each server, or a few: about 2 servers / 10 deep per pair.
	assert.GreaterOrEqual(t, p.ServersReadsPerOp, 0.2*0.99, "at least a read per batch")
	assert.Less(t, p.ServersReadsPerOp, 0.6, "a batch in a few reads at most, not one per command")
	if runtime.GOOS == "linux" { // getrusage is read where the loop runs
		assert.Positive(t, p.ClientCPUUsPerOp)
	}

	// Every pair released its key: nothing is left behind.
	for _, a := range r.Addrs() {
		c, err := measure.Dial(a, measure.ServerOptions{})
		require.NoError(t, err)
		n, err := c.Do("DBSIZE")
		assert.NoError(t, c.Close())
		require.NoError(t, err)
		assert.Equal(t, "0", n, a)
	}
}

func TestPipelinedLimitRefusesBadSpecs(t *testing.T) {
	for name, spec := range map[string]PipelineSpec{
		"no servers":  {Depth: 1, Duration: time.Millisecond, TTL: time.Second},
		"no depth":    {Addrs: []string{"127.0.0.1:1"}, Duration: time.Millisecond, TTL: time.Second},
		"no duration": {Addrs: []string{"127.0.0.1:1"}, Depth: 1, TTL: time.Second},
		"no TTL":      {Addrs: []string{"127.0.0.1:1"}, Depth: 1, Duration: time.Millisecond},
	} {
		_, err := PipelinedLimit(context.Background(), spec)
		assert.Error(t, err, name)
	}
}

// miniredis does not report INFO cpu: the limit says so, it does not
// report zero.
func TestPipelinedLimitWithoutCPUInfo(t *testing.T) {
	m, err := StartMini(1)
	require.NoError(t, err)
	defer func() { assert.NoError(t, m.Close()) }()
	_, err = PipelinedLimit(context.Background(), PipelineSpec{
		Addrs: m.Addrs(), Depth: 2, Duration: 10 * time.Millisecond, TTL: time.Second,
	})
	var re measure.RedisError
	require.ErrorAs(t, err, &re, "the server's refusal")
	assert.ErrorContains(t, err, m.Addrs()[0], "names the server")
}

// A server that cannot be reached fails the measurement with its own
// error, not with the cancellation it causes in the other servers' loops.
func TestPipelinedLimitFirstFailureWins(t *testing.T) {
	r, err := StartRedis(redistest.RedisServerPath(t), 1)
	require.NoError(t, err)
	defer func() { assert.NoError(t, r.Close()) }()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := l.Addr().String()
	require.NoError(t, l.Close())
	_, err = PipelinedLimit(context.Background(), PipelineSpec{
		Addrs: []string{r.Addrs()[0], closed}, Depth: 2, Warmup: time.Minute, Duration: time.Minute, TTL: time.Second,
	})
	require.Error(t, err)
	assert.ErrorContains(t, err, closed, "names the server that failed")
	assert.NotErrorIs(t, err, context.Canceled)
}

func TestLowestOfRounds(t *testing.T) {
	ps := []Pipelined{{Depth: 100, ServersCPUUsPerOp: 27.3, Pairs: 1}, {Depth: 100, ServersCPUUsPerOp: 19.4, Pairs: 2}, {Depth: 100, ServersCPUUsPerOp: 20.1, Pairs: 3}}
	low := Lowest(ps)
	if low.ServersCPUUsPerOp != 19.4 || low.Pairs != 2 {
		t.Errorf("lowest = %+v, want the second measurement", low)
	}
	if !slices.Equal(low.Rounds, []float64{27.3, 19.4, 20.1}) {
		t.Errorf("rounds = %v", low.Rounds)
	}
	if one := Lowest(ps[:1]); one.Rounds != nil || one.ServersCPUUsPerOp != 27.3 {
		t.Errorf("one measurement: %+v", one)
	}
}
