package radix_test

import (
	"context"
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

// membersClient is a fencing Client over members, closed with the test.
func membersClient(t *testing.T, members []drivers.Member) *redlock.Client {
	t.Helper()
	d, err := radix.DialMembers(members, radix.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, d.Close()) })
	c, err := redlock.NewClient(d, redlock.Options{TTL: 5 * time.Second, NodeTimeout: time.Second, Fencing: true})
	require.NoError(t, err)
	return c
}

func get(t *testing.T, s *redistest.Server, key string) any {
	t.Helper()
	v, err := s.Do("GET", key)
	require.NoError(t, err)
	return v
}

// TestMembersStandaloneWait: standalone members lock, extend and unlock
// through the root package; WAIT asked of a master without replicas is a
// typed error naming the member, and no lock command reaches any server.
func TestMembersStandaloneWait(t *testing.T) {
	ss := redistest.StartN(t, 3, redistest.Options{})
	members := drivers.Members(addrs(ss)...)
	c := membersClient(t, members)
	ctx := context.Background()
	lock, err := c.TryLock(ctx, "members")
	require.NoError(t, err)
	held := 0
	for _, s := range ss {
		if get(t, s, "members") == lock.Token().String() {
			held++
		}
	}
	assert.GreaterOrEqual(t, held, 2, "a quorum holds the key")
	require.NoError(t, lock.Extend(ctx))
	require.NoError(t, lock.Unlock(ctx))
	for _, s := range ss {
		assert.Nil(t, get(t, s, "members"))
	}

	members[1] = members[1].WithWait(1, 100*time.Millisecond)
	members[2] = members[2].WithWait(2, 100*time.Millisecond)
	_, err = membersClient(t, members).TryLock(ctx, "refused")
	require.ErrorIs(t, err, core.ErrQuorumUnreachable)
	require.ErrorIs(t, err, drivers.ErrNotReplicated)
	assert.NotErrorIs(t, err, core.ErrInvalidConfig, "one kind: a failed vote")
	assert.ErrorContains(t, err, "WAIT for 1 replicas, but the master has 0 connected")
	assert.ErrorContains(t, err, ss[1].Addr)
	for _, s := range ss {
		assert.Nil(t, get(t, s, "refused"), "nothing left on %s", s.Addr)
	}
}
