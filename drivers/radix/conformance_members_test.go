package radix_test

import (
	"testing"

	"github.com/redlock-go/redlock/drivers/conformance"
	"github.com/redlock-go/redlock/drivers/radix"
)

// TestConformanceMembers runs the driver contract over a mixed quorum of
// standalone, Sentinel and Cluster members.
func TestConformanceMembers(t *testing.T) {
	conformance.RunMembers(t, conformance.MembersOf(radix.DialMembers))
}
