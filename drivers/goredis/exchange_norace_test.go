//go:build !race

package goredis_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock/drivers/engine"
	"github.com/redlock-go/redlock/internal/redistest"
)

// One command makes no allocation; a pipeline of several makes go-redis's
// three, however many commands: Pipeline.Exec drops the slice of its
// commands, and the error check that ends every pipeline (isRedisError)
// boxes two errors.As targets. The replies are of the Redlock commands'
// kinds: OK, an integer, a nil. Without -race, which makes sync.Pool drop
// objects.
func TestExchangeAllocations(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{})
	ctx, c := dialConn(t, srv)
	for _, tc := range []struct {
		cmds   [][]string
		allocs float64
	}{
		{[][]string{{"SET", "k", "v", "PX", "10000"}}, 0},
		{[][]string{{"SET", "k", "v", "PX", "10000"}, {"PEXPIRE", "k", "10000"}}, 3},
		{[][]string{{"PEXPIRE", "k", "10000"}, {"INCR", "n"}, {"GET", "missing"}, {"SET", "k", "w"}}, 3},
	} {
		replies := make([]engine.Reply, len(tc.cmds))
		exchange := func() { require.NoError(t, c.Exchange(ctx, tc.cmds, replies)) }
		exchange() // the commands made, the reply buffers grown
		assert.Equal(t, tc.allocs, testing.AllocsPerRun(200, exchange), "%q", tc.cmds)
	}
}
