package conformance_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/redlock-go/redlock/drivers/conformance"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestMemnode checks the suite against the reference driver.
func TestMemnode(t *testing.T) { conformance.RunMemnode(t) }
