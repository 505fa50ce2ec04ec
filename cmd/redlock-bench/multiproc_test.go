package main

import (
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock/bench/multiproc"
)

func TestMultiProcFlags(t *testing.T) {
	c, err := parseFlags(nil, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, multiproc.Supported, c.mp.on, "on by default where it runs")
	assert.Equal(t, 4, c.mp.procs)
	assert.Equal(t, 8, c.mp.goroutines)
	assert.Equal(t, time.Millisecond, c.mp.hold)
	assert.Equal(t, 5*time.Second, c.mp.duration)
	assert.Equal(t, "redigo", c.mp.driver)
	assert.NotEmpty(t, c.plan.Cells(), "the other cells run too")

	c, err = parseFlags([]string{"--multiproc=false"}, io.Discard)
	require.NoError(t, err)
	assert.False(t, c.mp.on)

	if multiproc.Supported {
		c, err = parseFlags([]string{"--multiproc-only", "--multiproc-duration", "10s", "--multiproc-modes", "wake"}, io.Discard)
		require.NoError(t, err)
		assert.True(t, c.mp.on)
		assert.Empty(t, c.plan.Cells(), "no other cell")
		assert.True(t, c.mp.alone)
		assert.False(t, c.plan.Proxy)
		assert.Equal(t, []string{multiproc.Wake}, c.mp.modes)
		assert.Equal(t, 10*time.Second, c.mp.duration)
	}

	c, err = parseFlags([]string{"--handoff-only"}, io.Discard)
	require.NoError(t, err)
	assert.False(t, c.mp.on, "another -only leaves it out")
	if multiproc.Supported {
		c, err = parseFlags([]string{"--handoff-only", "--multiproc-only"}, io.Discard)
		require.NoError(t, err)
		assert.True(t, c.mp.on)
		assert.NotEmpty(t, c.plan.Cells(), "both -only flags: both scenarios")
		assert.False(t, c.mp.alone)
	}

	for _, bad := range [][]string{
		{"--multiproc-driver", "mem"},
		{"--multiproc-driver", "nope"},
		{"--multiproc-modes", "spin"},
		{"--multiproc-modes", "none"},
		{"--multiproc-procs", "0"},
		{"--multiproc-duration", "0s"},
	} {
		_, err := parseFlags(bad, io.Discard)
		assert.Error(t, err, "%v", bad)
	}
}
