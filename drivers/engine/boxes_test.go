package engine

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBoxesOf: Boxes.Of passes any number of words, each as a []byte of
// its own, and allocates nothing once it has seen their lengths, up to
// twelve words as beyond.
func TestBoxesOf(t *testing.T) {
	var b Boxes
	for _, n := range []int{3, 12, 14, 5} {
		words := make([]string, n)
		for i := range words {
			words[i] = "w" + strconv.Itoa(i*7)
		}
		args := b.Of(words)
		require.Len(t, args, n)
		for i, a := range args {
			assert.Equal(t, words[i], string(a.([]byte)), "%d words: word %d", n, i)
		}
		assert.Zero(t, testing.AllocsPerRun(10, func() { b.Of(words) }), "%d words", n)
	}
}
