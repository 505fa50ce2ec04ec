package systest_test

import (
	"testing"

	"github.com/redlock-go/redlock/drivers/internal/systest"
	"github.com/redlock-go/redlock/internal/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// TestMemnode checks the suite against the reference driver.
func TestMemnode(t *testing.T) { systest.RunMemnode(t) }
