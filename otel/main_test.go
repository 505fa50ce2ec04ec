package otel_test

import (
	"testing"

	"github.com/redlock-go/redlock/internal/redistest"
)

// TestMain checks that no test leaves a goroutine behind (goleak) and
// says which tests redistest skipped for want of a redis-server.
func TestMain(m *testing.M) { redistest.Main(m) }
