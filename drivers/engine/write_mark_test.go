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

// TestWriteReleaseDeletesItsOwnMark: a writer's release deletes the mark
// its refused attempts left, and announces it, so that readers are not
// kept out by a writer that waits no more; the cleanup of an attempt
// whose writer waits on (a positive Ticket) keeps it, and another
// writer's release leaves it.
func TestWriteReleaseDeletesItsOwnMark(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	env := startKinds(t, nil, s.Addr)
	next := env.subscribe(s.Addr, "rw")
	const ttl = 10 * time.Second
	marked := func() bool {
		n, err := redis.Int(env.c.Do("EXISTS", core.WriterWaitPrefix+"rw"))
		require.NoError(t, err)
		return n == 1
	}

	env.expect(kcmd(core.KindRead, core.OpAcquire, "rw", 1, ttl), core.StatusOK, "a reader")
	w := kcmd(core.KindWrite, core.OpAcquire, "rw", 0, ttl)
	w.Token = tok(9)
	env.expect(w, core.StatusHeld, "the writer's refused attempt marks the key")
	require.True(t, marked())

	cleanup := kcmd(core.KindWrite, core.OpRelease, "rw", 0, 0)
	cleanup.Token, cleanup.Ticket = w.Token, 1
	env.expect(cleanup, core.StatusMissing, "the cleanup of an attempt whose writer waits on")
	assert.True(t, marked(), "the waiting writer's mark went with its cleanup")
	other := kcmd(core.KindWrite, core.OpRelease, "rw", 0, 0)
	other.Token = core.TokenFromUint64s(0xbeef, 9) // tok's differ in their last bytes only
	env.expect(other, core.StatusMissing, "another writer's release")
	assert.True(t, marked(), "another writer's release deleted the mark")
	env.expect(kcmd(core.KindRead, core.OpAcquire, "rw", 2, ttl), core.StatusHeld, "a new reader, the writer waiting")

	giveUp := cleanup
	giveUp.Token[15] ^= 3 // its last attempt's token
	giveUp.Ticket = 0
	env.expect(giveUp, core.StatusMissing, "the writer gives up")
	assert.False(t, marked(), "the mark of a writer that gave up")
	assert.Equal(t, "rw", next(), "the mark's deletion announced")
	env.expect(kcmd(core.KindRead, core.OpAcquire, "rw", 2, ttl), core.StatusOK, "a new reader, no writer waiting")
}
