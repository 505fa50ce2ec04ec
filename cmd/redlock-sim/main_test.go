package main

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMatchSelectsANameWithCommas: -only splits its list at commas, so a
// name that holds one ("rw: failover, WAIT N=3 multiplexed") cannot be
// picked alone by it; -match picks exactly it, and nothing else.
func TestMatchSelectsANameWithCommas(t *testing.T) {
	all := configs()
	const name = "rw: failover, WAIT N=3 multiplexed"
	got := matching(all, regexp.MustCompile("^"+regexp.QuoteMeta(name)+"$"))
	require.Len(t, got, 1)
	assert.Equal(t, name, got[0].Name)

	byPrefix := selected(all, name)
	assert.Greater(t, len(byPrefix), 1, "-only splits the name at its comma and matches more")

	assert.Len(t, matching(all, regexp.MustCompile("")), len(all), "an empty -match keeps every configuration")
	assert.Empty(t, matching(all, regexp.MustCompile("^no such configuration$")))
}
