package contract

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock/core"
)

// ScriptFlush checks that the scripted commands (extend, release, the
// fenced acquire and the raise) work whether the server has their
// scripts cached or not: after SCRIPT FLUSH the driver's EVALSHA gets NOSCRIPT
// and must fall back to EVAL, each time the cache is emptied.
func ScriptFlush(t *testing.T, n Target) {
	d, i, k, f := n.D, n.I, n.Key("k"), n.Key("f")
	const s = time.Second
	flush := func(key string) {
		t.Helper()
		srv := n.At.Master(t, i, key)
		_, err := srv.Do("SCRIPT", "FLUSH")
		require.NoError(t, err, "SCRIPT FLUSH on %s", srv.Addr)
	}
	var fence uint64
	for round := range 4 { // EVAL or EVALSHA, then after each flush
		if round >= 2 {
			flush(k)
		}
		require.Equal(t, core.StatusOK, SendOne(d, i, AcquireCmd(k), s).Status, "round %d", round)
		n.Do(t, "PEXPIRE", k, 1000)
		if round >= 2 {
			flush(k)
		}
		r := SendOne(d, i, ExtendCmd(k, Token, 20*s), s)
		require.Equal(t, core.StatusOK, r.Status, "round %d: extend: %v", round, r.Err)
		assert.Greater(t, n.PTTL(t, k), int64(15000), "round %d: the extension reached the server", round)
		if round >= 2 {
			flush(k)
		}
		r = SendOne(d, i, ReleaseCmd(k, Token), s)
		require.Equal(t, core.StatusOK, r.Status, "round %d: release: %v", round, r.Err)
		assert.Equal(t, int64(-2), n.PTTL(t, k), "round %d: the release deleted the key", round)

		if round >= 2 {
			flush(f)
		}
		fenced := core.Command{Op: core.OpAcquireFenced, Key: f, Token: Token, TTL: 10 * s}
		r = SendOne(d, i, fenced, s)
		require.Equal(t, core.StatusOK, r.Status, "round %d: fenced acquire: %v", round, r.Err)
		assert.Greater(t, r.Fence, fence, "round %d: the fence grows", round)
		fence = r.Fence
		if round >= 2 {
			flush(f)
		}
		raise := core.Command{Op: core.OpRaiseFence, Key: f, Token: Token, Fence: fence + 10}
		r = SendOne(d, i, raise, s)
		require.Equal(t, core.StatusOK, r.Status, "round %d: raise: %v", round, r.Err)
		fence += 10
		counter := n.At.AuxName(t, i, core.FenceKeyPrefix, f)
		assert.Equal(t, strconv.FormatUint(fence, 10), n.Do(t, "GET", counter), "round %d: the raise reached the counter %s", round, counter)
		r = SendOne(d, i, ReleaseCmd(f, Token), s)
		require.Equal(t, core.StatusOK, r.Status, "round %d: release of the fenced key: %v", round, r.Err)
	}
}
