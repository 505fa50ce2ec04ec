package sim

import (
	"testing"

	"github.com/redlock-go/redlock/core"
)

// BenchmarkSchedule measures one schedule of Assumed(5, Multiplexed).
func BenchmarkSchedule(b *testing.B) {
	cfg := Assumed(5, core.Multiplexed)
	b.ReportAllocs()
	for i := range b.N {
		Run(cfg, uint64(i))
	}
}
