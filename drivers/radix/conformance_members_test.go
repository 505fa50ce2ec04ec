package radix_test

import (
	"testing"

	"github.com/redlock-go/redlock/drivers/radix"
	"github.com/redlock-go/redlock/internal/dialtest"
)

// TestConformanceMembers runs the driver contract over a mixed quorum of
// standalone, Sentinel and Cluster members.
func TestConformanceMembers(t *testing.T) {
	dialtest.RunMembers(t, dialtest.MembersOf(radix.DialMembers))
}
