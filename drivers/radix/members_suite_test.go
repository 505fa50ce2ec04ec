package radix_test

import (
	"testing"

	"github.com/redlock-go/redlock/drivers/radix"
	"github.com/redlock-go/redlock/internal/systest"
)

// TestMembers runs the member suite (Sentinel groups, Clusters, WAIT,
// failovers, a mixed quorum, bad input) over DialMembers.
func TestMembers(t *testing.T) {
	systest.RunMembers(t, systest.Members{
		Dial:       systest.MembersOf(radix.DialMembers),
		Subscriber: radix.MembersSubscriber,
		Conn:       radix.MemberConn,
	})
}
