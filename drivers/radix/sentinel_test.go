package radix_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers"
	"github.com/redlock-go/redlock/drivers/radix"
	"github.com/redlock-go/redlock/internal/redistest"
)

// sentinelClient is a Client whose one member is g, with or without WAIT.
func sentinelClient(t *testing.T, g *redistest.SentinelGroup, replicas int, ttl time.Duration) *redlock.Client {
	t.Helper()
	m := drivers.NewSentinel(g.Name, g.SentinelAddrs()...)
	if replicas > 0 {
		m = m.WithWait(replicas, time.Second)
	}
	d, err := radix.DialMembers([]drivers.Member{m}, radix.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, d.Close()) })
	c, err := redlock.NewClient(d, redlock.Options{TTL: ttl, NodeTimeout: 2 * time.Second})
	require.NoError(t, err)
	return c
}

// TestSentinelForcedFailoverFollowsTheMaster: after a failover that
// leaves the old master running, as a replica, the member's commands
// reach the promoted master: the lock taken with WAIT is still held there
// against another client, extends and unlocks there, and a new lock is
// written there. Each of the member's two connections (the WAIT lane's
// and the releases') loses at most its first command to the switch, with
// an error that says so.
func TestSentinelForcedFailoverFollowsTheMaster(t *testing.T) {
	g := redistest.StartSentinelGroup(t, redistest.SentinelOptions{})
	const ttl = 40 * time.Second
	d, err := radix.DialMembers([]drivers.Member{drivers.NewSentinel(g.Name, g.SentinelAddrs()...).WithWait(2, time.Second)}, radix.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, d.Close()) })
	holder, err := redlock.NewClient(d, redlock.Options{TTL: ttl, NodeTimeout: 2 * time.Second})
	require.NoError(t, err)
	ctx := context.Background()
	lock, err := holder.TryLock(ctx, "switched")
	require.NoError(t, err)

	old := g.Master()
	_, err = g.Sentinels[0].Do("SENTINEL", "FAILOVER", g.Name)
	require.NoError(t, err)
	promoted := g.WaitFailover(t, old.Addr)
	assert.Equal(t, lock.Token().String(), get(t, promoted, "switched"), "WAIT: the promoted replica holds the key")
	_, err = sentinelClient(t, g, 0, ttl).TryLock(ctx, "switched")
	require.ErrorIs(t, err, redlock.ErrTaken, "no second holder after the failover")

	// WAIT 2 refuses the promoted master until both other servers
	// replicate it: connected and done with their sync (state=online; a
	// replica still loading the master's snapshot acknowledges nothing).
	require.Eventually(t, func() bool {
		info, err := promoted.Do("INFO", "replication")
		return err == nil && strings.Contains(info.(string), "connected_slaves:2") &&
			strings.Count(info.(string), "state=online") == 2
	}, 30*time.Second, 20*time.Millisecond)
	if err := lock.Extend(ctx); err != nil { // on the WAIT lane
		require.ErrorContains(t, err, "the Sentinels switched the master")
		require.NoError(t, lock.Extend(ctx))
	}
	release := func() core.Reply { // on the other connection
		b := d.Begin(ctx)
		defer b.Close()
		b.Send(0, core.Command{Op: core.OpRelease, Key: "nothing", Token: core.TokenFromUint64s(1, 2)}, d.Clock().Now().Add(2*time.Second))
		r, ok := b.Receive(nil)
		require.True(t, ok)
		return r
	}
	if r := release(); r.Status == core.StatusError {
		require.ErrorContains(t, r.Err, "the Sentinels switched the master")
		r = release()
		require.Equal(t, core.StatusMissing, r.Status, "%v", r.Err)
	}
	require.NoError(t, lock.Unlock(ctx))
	assert.Nil(t, get(t, promoted, "switched"), "released on the promoted master")

	fresh, err := holder.TryLock(ctx, "fresh")
	require.NoError(t, err)
	assert.Equal(t, fresh.Token().String(), get(t, promoted, "fresh"))
	require.NoError(t, fresh.Unlock(ctx))
}
