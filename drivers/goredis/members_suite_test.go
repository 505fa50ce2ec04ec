package goredis_test

import (
	"testing"

	"github.com/redlock-go/redlock/drivers/goredis"
	"github.com/redlock-go/redlock/internal/systest"
)

// TestMembers runs the member suite (Sentinel groups, Clusters, WAIT,
// failovers, a mixed quorum, bad input) over DialMembers.
func TestMembers(t *testing.T) {
	systest.RunMembers(t, systest.Members{
		Dial:       systest.MembersOf(goredis.DialMembers),
		Subscriber: goredis.MembersSubscriber,
		Conn:       goredis.MemberConn,
	})
}
