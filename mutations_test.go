//go:build redlock_mutations

package redlock

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// PlantRunnerDefect sets the switch its name names, and only that one,
// and its undo clears it; an unknown name panics.
func TestPlantRunnerDefect(t *testing.T) {
	for name, p := range runnerDefects {
		undo := PlantRunnerDefect(name)
		for other, q := range runnerDefects {
			assert.Equal(t, other == name, *q, "%s planted: %s", name, other)
		}
		undo()
		assert.False(t, *p, "%s undone", name)
	}
	assert.Panics(t, func() { PlantRunnerDefect("NoSuchDefect") })
}
