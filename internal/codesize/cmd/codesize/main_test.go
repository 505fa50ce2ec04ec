package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock/internal/codesize"
)

// TestRunCountsPlantedBlocks: the report names the packages' lines and
// each shared block, and the count that decides the exit status is the
// number of blocks at least -min lines long.
func TestRunCountsPlantedBlocks(t *testing.T) {
	const root = "../../testdata/planted"
	var out bytes.Buffer
	n, err := run(&out, root, codesize.Options{MinLines: 15})
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.Contains(t, out.String(), "valkeygo (generated)")
	assert.Contains(t, out.String(), "21 lines: drivers/alpha/alpha.go:")

	out.Reset()
	n, err = run(&out, root, codesize.Options{MinLines: 22})
	require.NoError(t, err)
	assert.Zero(t, n)
	assert.Contains(t, out.String(), "shared blocks of 22 lines or more (generated files excepted): 0")
}
