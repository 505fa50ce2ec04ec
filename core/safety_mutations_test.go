//go:build redlock_mutations

package core_test

import (
	"context"
	"testing"

	"github.com/redlock-go/redlock/core"
)

// TestExtendWithTheSpecsDriftIsSeen: with the bug of Bug 3 (an extension's
// validity taking the drift of the extending Spec's TTL), the extension
// of TestExtendUsesTheLocksDrift is valid too long (1 ms + 2 ms of drift
// instead of 100 ms + 2 ms), which that test's check of the validity sees.
func TestExtendWithTheSpecsDriftIsSeen(t *testing.T) {
	forModes(t, func(t *testing.T, mode core.FanOut) {
		short, lock := shortExtender(t, mode)
		restore := core.ExtendWithSpecDrift()
		defer restore()
		ext, err := short.extend(context.Background(), lock)
		if err != nil || core.GrantValidity(ext) != 9997*ms {
			t.Fatalf("with the bug: validity %v, err %v; want 9.997s", core.GrantValidity(ext), err)
		}
	})
}
