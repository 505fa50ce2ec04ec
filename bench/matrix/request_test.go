package matrix

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/redlock-go/redlock/bench/measure"
	"github.com/redlock-go/redlock/internal/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// nop is a Subject whose pair does nothing.
type nop struct{}

func (nop) Worker(string) measure.Worker       { return nop{} }
func (nop) Pair(context.Context) (bool, error) { return true, nil }

// Measure reads the CPU of the cell's servers and repeats the cell as it
// says, keeping every repeat's p50.
func TestMeasureServersCPUAndRepeats(t *testing.T) {
	srv := redistest.StartN(t, 2, redistest.Options{})
	req := PeerRequest{
		Addrs:    map[string][]string{Loopback: {srv[0].Addr, srv[1].Addr}},
		RunID:    "t",
		Duration: 20 * time.Millisecond,
	}
	c := Cell{Library: Redsync, Driver: "redigo", Scenario: Loopback, Nodes: 2, FanOut: FanConcurrent, Clients: 1, Repeats: 3}
	r := req.Measure(context.Background(), nop{}, c)
	assert.Empty(t, r.ServersCPUError)
	assert.Len(t, r.RepeatP50Us, 3)
	assert.Contains(t, r.RepeatP50Us, r.P50Us, "an odd count's median is one of the repeats")
	assert.Positive(t, r.Ops)

	// A server that cannot be reached: the figures stay, the error says
	// which server.
	req.Addrs[Loopback] = []string{srv[0].Addr, "127.0.0.1:1"}
	c.Repeats = 0
	r = req.Measure(context.Background(), nop{}, c)
	assert.Positive(t, r.Ops)
	assert.Zero(t, r.ServersCPUUsPerOp)
	assert.Contains(t, r.ServersCPUError, "127.0.0.1:1")
	assert.Nil(t, r.RepeatP50Us)

	// The in-memory driver has no servers: none is read.
	mem := Cell{Library: Redlock, Driver: "mem", Scenario: Loopback, Nodes: 2, FanOut: "multiplexed", Clients: 1}
	r = req.Measure(context.Background(), nop{}, mem)
	assert.Empty(t, r.ServersCPUError)
	assert.Zero(t, r.ServersCPUUsPerOp)
}
