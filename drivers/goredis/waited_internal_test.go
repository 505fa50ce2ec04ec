package goredis

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock/drivers/engine"
)

// TestClusterWaitedKeylessCommand: a write and its WAIT whose write has
// no key the engine names (wire.KeyIndex -1) go to slot 0's master, as
// engine.ExchangeBySlot sends them, instead of indexing the words at -1.
func TestClusterWaitedKeylessCommand(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close()) // nothing listens: the master cannot be found
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{addr}, DialTimeout: time.Second, MaxRetries: -1, MaxRedirects: -1})
	t.Cleanup(func() { _ = c.Close() })
	conn := &clusterConn{c: c}
	replies := make([]engine.Reply, 2)
	for _, cmd := range [][]string{{"EVAL", "return 1", "0"}, {"PING"}} {
		err := conn.waited(context.Background(), [][]string{cmd, {"WAIT", "1", "50"}}, replies)
		assert.Error(t, err, "%v: no master reachable", cmd)
	}
}
