package goredis_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers"
	"github.com/redlock-go/redlock/drivers/goredis"
	"github.com/redlock-go/redlock/internal/redistest"
	"github.com/redlock-go/redlock/internal/redistest/embedded"
)

// TestUntaggableKeyIsFineOffCluster: the Cluster naming does not touch
// standalone members: a key with '}' locks, fenced.
func TestUntaggableKeyIsFineOffCluster(t *testing.T) {
	ss := embedded.StartN(t, 1, redistest.Options{})
	d, err := goredis.DialMembers(drivers.Members(ss[0].Addr), goredis.Options{})
	require.NoError(t, err)
	c, err := redlock.NewClient(d, redlock.Options{TTL: 5 * time.Second, NodeTimeout: 2 * time.Second, Fencing: true})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, d.Close()) })
	lock, err := c.TryLock(context.Background(), "a}b")
	require.NoError(t, err)
	n, err := ss[0].Do("GET", core.FenceKeyPrefix+"a}b")
	require.NoError(t, err)
	assert.Equal(t, "1", n)
	require.NoError(t, lock.Unlock(context.Background()))
}
