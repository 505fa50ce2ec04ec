package systest_test

import (
	"testing"

	"github.com/redlock-go/redlock/internal/redistest"
	"github.com/redlock-go/redlock/internal/systest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// TestMemnode checks the suite against the reference driver.
func TestMemnode(t *testing.T) { systest.RunMemnode(t) }
