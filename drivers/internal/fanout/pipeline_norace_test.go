//go:build !race

// The race detector's sync.Pool drops items at random: allocation counts
// are checked without it.

package fanout

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/redlock-go/redlock/core"
)

func TestPipelineAllocs(t *testing.T) {
	if testing.Short() {
		t.Skip()
	}
	f := newPipelined(t, 3, nil, func(ctx context.Context, node int, cs []Call, res []Result) {
		for i := range res {
			res[i] = Result{Status: core.StatusOK}
		}
	})
	ctx := context.Background()
	c := cmd("k")
	a := testing.AllocsPerRun(200, func() { roundOf(f, ctx, c, soon()) })
	// roundOf's own reply slice, the token and the TTL strings.
	assert.LessOrEqual(t, a, 3.0)
}
