package conformance

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/internal/redistest"
)

// testScriptFlush: the scripted commands (extend, release, the fenced
// acquire and the raise) work whether the server has their scripts
// cached or not: after SCRIPT FLUSH the driver's EVALSHA gets NOSCRIPT
// and must fall back to EVAL, each time the cache is emptied.
func testScriptFlush(t *testing.T, open func(*testing.T, []string) Closer) {
	srv := startServers(t, 1, redistest.Options{})[0]
	d := open(t, []string{srv.Addr})
	const s = time.Second
	flush := func() {
		t.Helper()
		_, err := srv.Do("SCRIPT", "FLUSH")
		require.NoError(t, err)
	}
	pttl := func(key string) int64 {
		t.Helper()
		v, err := srv.Do("PTTL", key)
		require.NoError(t, err)
		ms, ok := v.(int64)
		require.True(t, ok, "PTTL replied %v", v)
		return ms
	}
	var fence uint64
	for round := range 4 { // EVAL or EVALSHA, then after each flush
		if round >= 2 {
			flush()
		}
		require.Equal(t, core.StatusOK, SendOne(d, 0, acquireCmd("k"), s).Status, "round %d", round)
		_, err := srv.Do("PEXPIRE", "k", 1000)
		require.NoError(t, err)
		if round >= 2 {
			flush()
		}
		r := SendOne(d, 0, extendCmd("k", driverToken, 20*s), s)
		require.Equal(t, core.StatusOK, r.Status, "round %d: extend: %v", round, r.Err)
		assert.Greater(t, pttl("k"), int64(15000), "round %d: the extension reached the server", round)
		if round >= 2 {
			flush()
		}
		r = SendOne(d, 0, releaseCmd("k", driverToken), s)
		require.Equal(t, core.StatusOK, r.Status, "round %d: release: %v", round, r.Err)
		assert.Equal(t, int64(-2), pttl("k"), "round %d: the release deleted the key", round)

		if round >= 2 {
			flush()
		}
		fenced := core.Command{Op: core.OpAcquireFenced, Key: "f", Token: driverToken, TTL: 10 * s}
		r = SendOne(d, 0, fenced, s)
		require.Equal(t, core.StatusOK, r.Status, "round %d: fenced acquire: %v", round, r.Err)
		assert.Greater(t, r.Fence, fence, "round %d: the fence grows", round)
		fence = r.Fence
		if round >= 2 {
			flush()
		}
		raise := core.Command{Op: core.OpRaiseFence, Key: "f", Token: driverToken, Fence: fence + 10}
		r = SendOne(d, 0, raise, s)
		require.Equal(t, core.StatusOK, r.Status, "round %d: raise: %v", round, r.Err)
		fence += 10
		v, err := srv.Do("GET", core.FenceKeyPrefix+"f")
		require.NoError(t, err)
		assert.Equal(t, strconv.FormatUint(fence, 10), v, "round %d: the raise reached the counter", round)
		r = SendOne(d, 0, releaseCmd("f", driverToken), s)
		require.Equal(t, core.StatusOK, r.Status, "round %d: release of the fenced key: %v", round, r.Err)
	}
}
