package goredis_test

import (
	"testing"

	"github.com/redlock-go/redlock/drivers/goredis"
	"github.com/redlock-go/redlock/internal/dialtest"
)

// TestConformanceMembers runs the driver contract over a mixed quorum of
// standalone, Sentinel and Cluster members.
func TestConformanceMembers(t *testing.T) {
	dialtest.RunMembers(t, dialtest.MembersOf(goredis.DialMembers))
}
