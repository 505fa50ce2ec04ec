package redigo_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers"
	"github.com/redlock-go/redlock/drivers/redigo"
	"github.com/redlock-go/redlock/internal/redistest"
)

// TestDialMembersRefusesGroups: redigo has no Sentinel or Cluster client:
// such a member is refused before anything connects, with a typed error
// naming it; so is the rest of the bad input.
func TestDialMembersRefusesGroups(t *testing.T) {
	for _, tc := range []struct {
		name    string
		members []drivers.Member
		opts    redigo.Options
		msg     string
	}{
		{"sentinel", []drivers.Member{drivers.NewStandalone("a:1"), drivers.NewSentinel("mymaster", "s:1", "s:2")},
			redigo.Options{}, "member 1 sentinel:mymaster@s:1,s:2: this driver's client has no Sentinel client"},
		{"cluster", []drivers.Member{drivers.NewCluster("c:1", "c:2")}, redigo.Options{}, "member 0 cluster:c:1,c:2: this driver's client has no Cluster client"},
		{"none", nil, redigo.Options{}, "no members"},
		{"no topology", []drivers.Member{{Addrs: []string{"a:1"}}}, redigo.Options{}, "no topology"},
		{"twice", []drivers.Member{drivers.NewStandalone("a:1"), drivers.NewStandalone("a:1")}, redigo.Options{}, "a:1"},
		{"wait without timeout", []drivers.Member{drivers.NewStandalone("a:1").WithWait(1, 0)}, redigo.Options{}, "positive WaitTimeout"},
		{"negative timeout", []drivers.Member{drivers.NewStandalone("a:1")}, redigo.Options{DialTimeout: -1}, "DialTimeout"},
	} {
		d, err := redigo.DialMembers(tc.members, tc.opts)
		require.ErrorIs(t, err, core.ErrInvalidConfig, tc.name)
		assert.ErrorContains(t, err, "redigo", tc.name)
		assert.ErrorContains(t, err, tc.msg, tc.name)
		assert.Nil(t, d, tc.name)
	}
}

// TestDialMembersStandalone: standalone members lock as Dial's nodes do;
// a member with WAIT and no replica is refused, naming it, and nothing is
// written anywhere.
func TestDialMembersStandalone(t *testing.T) {
	ss := redistest.StartN(t, 3, redistest.Options{}) // the WAIT refusal reads INFO replication, which miniredis lacks
	members := drivers.Members(ss[0].Addr, ss[1].Addr, ss[2].Addr)
	d, err := redigo.DialMembers(members, redigo.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, d.Close()) })
	assert.Equal(t, ss[2].Addr, d.NodeName(2))
	c, err := redlock.NewClient(d, redlock.Options{TTL: 5 * time.Second, NodeTimeout: 2 * time.Second})
	require.NoError(t, err)
	ctx := context.Background()
	lock, err := c.TryLock(ctx, "members")
	require.NoError(t, err)
	held := 0
	for _, s := range ss {
		if v, err := s.Do("GET", "members"); assert.NoError(t, err) && v == lock.Token().String() {
			held++
		}
	}
	assert.GreaterOrEqual(t, held, 2, "a quorum holds the key")
	require.NoError(t, lock.Unlock(ctx))

	members[1] = members[1].WithWait(1, 100*time.Millisecond)
	members[2] = members[2].WithWait(1, 100*time.Millisecond)
	w, err := redigo.DialMembers(members, redigo.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, w.Close()) })
	c, err = redlock.NewClient(w, redlock.Options{TTL: 5 * time.Second, NodeTimeout: 2 * time.Second})
	require.NoError(t, err)
	_, err = c.TryLock(ctx, "refused")
	require.ErrorIs(t, err, core.ErrQuorumUnreachable)
	require.ErrorIs(t, err, drivers.ErrNotReplicated)
	assert.NotErrorIs(t, err, core.ErrInvalidConfig, "one kind: a failed vote")
	assert.ErrorContains(t, err, "WAIT for 1 replicas, but the master has 0 connected")
	for _, s := range ss {
		v, err := s.Do("EXISTS", "refused")
		require.NoError(t, err)
		assert.Equal(t, int64(0), v, "nothing on %s", s.Addr)
	}
}
