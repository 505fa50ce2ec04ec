package engine

import (
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/internal/redistest"
)

// TestWriteAcquireKnowsItsOwnMarkPastAttempt65536: a writer's attempts
// differ in their last four bytes (core.SameAcquisition, which
// core/memnode applies), and the engine sends tokens as 32 hex digits:
// write_acquire.lua must compare all but the last eight digits. A script
// that compared all but the last four digits (two bytes) would, from a
// writer's 65537th attempt on (deriveToken XORs k-1 into bytes 12..15),
// no longer know the mark its refused attempts left as its own once it
// wins, and readers would stay out for another TTL.
func TestWriteAcquireKnowsItsOwnMarkPastAttempt65536(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	env := startKinds(t, nil, s.Addr)
	const ttl = 10 * time.Second
	first := tok(9)
	later := first
	later[13] ^= 1 // attempt 65538's token: k-1 = 65537 = 0x00010001
	later[15] ^= 1
	require.True(t, core.SameAcquisition(first, later), "the contract: two attempts of one acquisition")

	env.expect(kcmd(core.KindRead, core.OpAcquire, "rw", 1, ttl), core.StatusOK, "a reader")
	w := kcmd(core.KindWrite, core.OpAcquire, "rw", 0, ttl)
	w.Token = first
	env.expect(w, core.StatusHeld, "the writer's refused attempt marks the key")
	env.expect(kcmd(core.KindRead, core.OpRelease, "rw", 1, 0), core.StatusOK, "the reader leaves")
	w.Token = later
	env.expect(w, core.StatusOK, "a later attempt of the same writer wins")
	n, err := redis.Int(env.c.Do("EXISTS", core.WriterWaitPrefix+"rw"))
	require.NoError(t, err)
	assert.Zero(t, n, "the winning writer's own mark is left (memnode deletes it)")
}
