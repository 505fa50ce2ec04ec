package conformance

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock/core"
)

// testScriptFlush: the scripted commands (extend, release, the fenced
// acquire and the raise) work whether the server has their scripts
// cached or not: after SCRIPT FLUSH the driver's EVALSHA gets NOSCRIPT
// and must fall back to EVAL, each time the cache is emptied.
func testScriptFlush(t *testing.T, n target) {
	d, i, k, f := n.d, n.i, n.key("k"), n.key("f")
	const s = time.Second
	flush := func(key string) {
		t.Helper()
		srv := n.at.master(t, i, key)
		_, err := srv.Do("SCRIPT", "FLUSH")
		require.NoError(t, err, "SCRIPT FLUSH on %s", srv.Addr)
	}
	var fence uint64
	for round := range 4 { // EVAL or EVALSHA, then after each flush
		if round >= 2 {
			flush(k)
		}
		require.Equal(t, core.StatusOK, SendOne(d, i, acquireCmd(k), s).Status, "round %d", round)
		n.do(t, "PEXPIRE", k, 1000)
		if round >= 2 {
			flush(k)
		}
		r := SendOne(d, i, extendCmd(k, driverToken, 20*s), s)
		require.Equal(t, core.StatusOK, r.Status, "round %d: extend: %v", round, r.Err)
		assert.Greater(t, n.pttl(t, k), int64(15000), "round %d: the extension reached the server", round)
		if round >= 2 {
			flush(k)
		}
		r = SendOne(d, i, releaseCmd(k, driverToken), s)
		require.Equal(t, core.StatusOK, r.Status, "round %d: release: %v", round, r.Err)
		assert.Equal(t, int64(-2), n.pttl(t, k), "round %d: the release deleted the key", round)

		if round >= 2 {
			flush(f)
		}
		fenced := core.Command{Op: core.OpAcquireFenced, Key: f, Token: driverToken, TTL: 10 * s}
		r = SendOne(d, i, fenced, s)
		require.Equal(t, core.StatusOK, r.Status, "round %d: fenced acquire: %v", round, r.Err)
		assert.Greater(t, r.Fence, fence, "round %d: the fence grows", round)
		fence = r.Fence
		if round >= 2 {
			flush(f)
		}
		raise := core.Command{Op: core.OpRaiseFence, Key: f, Token: driverToken, Fence: fence + 10}
		r = SendOne(d, i, raise, s)
		require.Equal(t, core.StatusOK, r.Status, "round %d: raise: %v", round, r.Err)
		fence += 10
		counter := n.at.auxName(t, i, core.FenceKeyPrefix, f)
		assert.Equal(t, strconv.FormatUint(fence, 10), n.do(t, "GET", counter), "round %d: the raise reached the counter %s", round, counter)
		r = SendOne(d, i, releaseCmd(f, driverToken), s)
		require.Equal(t, core.StatusOK, r.Status, "round %d: release of the fenced key: %v", round, r.Err)
	}
}
