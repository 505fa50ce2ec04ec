package valkeygo_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/redlock-go/redlock/drivers"
	valkeygo "github.com/redlock-go/redlock/drivers/valkeygo"
	"github.com/redlock-go/redlock/internal/systest"
)

// TestMembers runs the member suite (Sentinel groups, Clusters, WAIT,
// failovers, a mixed quorum, bad input) over DialMembers.
func TestMembers(t *testing.T) {
	systest.RunMembers(t, systest.Members{
		Dial:       systest.MembersOf(valkeygo.DialMembers),
		Subscriber: valkeygo.MembersSubscriber,
		Conn:       valkeygo.MemberConn,
	})
}

func TestMemberOption(t *testing.T) {
	opts := valkeygo.Options{Password: "p", DB: 3, DialTimeout: time.Second}
	s := valkeygo.MemberOption(drivers.NewSentinel("mymaster", "a:1", "b:2"), opts)
	assert.Equal(t, []string{"a:1", "b:2"}, s.InitAddress)
	assert.Equal(t, "mymaster", s.Sentinel.MasterSet)
	assert.Empty(t, s.Sentinel.Password, "the Sentinels are asked without credentials")
	assert.Equal(t, time.Second, s.Sentinel.Dialer.Timeout)
	assert.Equal(t, 3, s.SelectDB)
	assert.True(t, s.DisableRetry)
	c := valkeygo.MemberOption(drivers.NewCluster("a:1", "b:2"), valkeygo.Options{})
	assert.False(t, c.ForceSingleClient, "a cluster client")
	assert.True(t, c.DisableRetry)
	assert.True(t, c.ShuffleInit)
	assert.Empty(t, c.Sentinel.MasterSet)
}
