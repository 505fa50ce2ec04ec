package wire

import (
	"testing"

	"github.com/redlock-go/redlock/internal/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }
