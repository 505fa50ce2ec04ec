package wire

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/internal/redistest"
)

func TestScriptStatus(t *testing.T) {
	for n, want := range map[int64]core.Status{1: core.StatusOK, 0: core.StatusMissing, -1: core.StatusHeld} {
		got, err := ScriptStatus(n)
		require.NoError(t, err)
		assert.Equal(t, want, got, "reply %d", n)
	}
	s, err := ScriptStatus(2)
	assert.Equal(t, core.StatusError, s)
	assert.ErrorContains(t, err, "unexpected script reply 2")
}

func TestEncodings(t *testing.T) {
	assert.Equal(t, int64(1500), Millis(1500*time.Millisecond))
	assert.Equal(t, Extend, ScriptFor(core.OpExtend))
	assert.Equal(t, Release, ScriptFor(core.OpRelease))
}

func TestErrorClassification(t *testing.T) {
	assert.True(t, IsNoScript(errors.New("NOSCRIPT No matching script. Please use EVAL."))) //nolint:revive // error-strings: the server's reply, verbatim
	assert.False(t, IsNoScript(errors.New("ERR something NOSCRIPT")))
	assert.False(t, IsNoScript(nil))

	assert.True(t, IsTimeout(context.DeadlineExceeded))
	assert.True(t, IsTimeout(fmt.Errorf("read: %w", os.ErrDeadlineExceeded)))
	assert.True(t, IsTimeout(&net.OpError{Op: "read", Err: os.ErrDeadlineExceeded}))
	assert.False(t, IsTimeout(errors.New("connection refused")))

	r := Fail(2, "127.0.0.1:7002", core.OpRelease, context.DeadlineExceeded)
	assert.Equal(t, core.StatusTimeout, r.Status)
	assert.Equal(t, 2, r.Node)
	assert.ErrorIs(t, r.Err, context.DeadlineExceeded)
	assert.EqualError(t, r.Err, "node 2 (127.0.0.1:7002): release: context deadline exceeded")
	var ne *NodeError
	require.ErrorAs(t, Fail(0, "a:1", core.OpAcquire, errors.New("refused")).Err, &ne)
	assert.Equal(t, "a:1", ne.Addr)
}

// TestScriptsOnRedis checks the in-process SHA1 against the server's own
// (SCRIPT LOAD) and the scripts' semantics, which every driver relies on.
func TestScriptsOnRedis(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{})
	for _, s := range []Script{Release, Extend} {
		sha, err := srv.Do("SCRIPT", "LOAD", s.Src)
		require.NoError(t, err)
		assert.Equal(t, s.SHA1, sha)
	}
	eval := func(s Script, args ...any) int64 {
		r, err := srv.Do(append([]any{"EVALSHA", s.SHA1, 1}, args...)...)
		require.NoError(t, err)
		return r.(int64)
	}
	pttl := func(key string) int64 {
		r, err := srv.Do("PTTL", key)
		require.NoError(t, err)
		return r.(int64)
	}
	_, err := srv.Do("SET", "k", "mine", "PX", 5000)
	require.NoError(t, err)

	assert.EqualValues(t, -1, eval(Release, "k", "theirs"), "release with a foreign token")
	assert.EqualValues(t, -1, eval(Extend, "k", "theirs", 60000), "extend with a foreign token")
	assert.LessOrEqual(t, pttl("k"), int64(5000), "a foreign extend must not touch the TTL")
	assert.EqualValues(t, 1, eval(Extend, "k", "mine", 60000))
	assert.Greater(t, pttl("k"), int64(50000))
	assert.EqualValues(t, 1, eval(Release, "k", "mine"))
	assert.EqualValues(t, -2, pttl("k"), "released key must be gone")
	assert.EqualValues(t, 0, eval(Release, "k", "mine"), "release of a missing key")
	assert.EqualValues(t, 0, eval(Extend, "k", "mine", 60000), "extend of a missing key")
	assert.EqualValues(t, -2, pttl("k"), "extend must never create the key")
}

func TestFenceReplies(t *testing.T) {
	for s, want := range map[string]uint64{"1": 1, "42": 42, "9007199254740993": 1<<53 + 1, "9223372036854775807": 1<<63 - 1} {
		got, err := FenceString(s)
		require.NoError(t, err, s)
		assert.Equal(t, want, got, s)
	}
	for _, s := range []string{"", "0", "01", "-1", "+1", "1.5", "9e15", "9223372036854775808", "18446744073709551615", "99999999999999999999"} {
		_, err := FenceString(s)
		assert.ErrorContains(t, err, "unexpected fence", "%q", s)
	}
	f, err := FenceInt(7)
	require.NoError(t, err)
	assert.Equal(t, uint64(7), f)
	for _, n := range []int64{0, -1} {
		_, err := FenceInt(n)
		assert.ErrorContains(t, err, "unexpected fence", "%d", n)
	}
	assert.Zero(t, testing.AllocsPerRun(100, func() { _, _ = FenceString("9223372036854775807") }))
	assert.Equal(t, AcquireFenced, ScriptFor(core.OpAcquireFenced))
	assert.Equal(t, RaiseFence, ScriptFor(core.OpRaiseFence))
	assert.Equal(t, 2, Keys(core.OpAcquireFenced))
	assert.Equal(t, 2, Keys(core.OpRaiseFence))
	assert.Equal(t, 1, Keys(core.OpRelease))
}

// TestFencedScriptsOnRedis checks the fenced scripts on redis-server: the
// counter is returned exactly on both sides of 2^53, where Lua's numbers
// (doubles) stop being exact, and up to the 64-bit maximum; nil when the
// key is held, changing nothing, minus the holder's PTTL; the raise is conditional on the token,
// never lowers the counter and never creates the key.
func TestFencedScriptsOnRedis(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{})
	for _, s := range []Script{AcquireFenced, RaiseFence} {
		sha, err := srv.Do("SCRIPT", "LOAD", s.Src)
		require.NoError(t, err)
		assert.Equal(t, s.SHA1, sha)
	}
	const key, fk = "k", core.FenceKeyPrefix + "k"
	do := func(args ...any) any {
		t.Helper()
		r, err := srv.Do(args...)
		require.NoError(t, err, "%v", args)
		return r
	}
	// acquire returns the script's reply: an int64, a string or nil.
	acquire := func(tok string) any {
		t.Helper()
		return do("EVALSHA", AcquireFenced.SHA1, 2, key, fk, tok, 60000)
	}
	raise := func(tok string, fence uint64) int64 {
		t.Helper()
		return do("EVALSHA", RaiseFence.SHA1, 2, key, fk, tok, strconv.FormatUint(fence, 10)).(int64)
	}
	counter := func() string {
		t.Helper()
		v, _ := do("GET", fk).(string)
		return v
	}
	fence := func(r any) uint64 {
		t.Helper()
		switch v := r.(type) {
		case int64:
			f, err := FenceInt(v)
			require.NoError(t, err)
			return f
		case string:
			f, err := FenceString(v)
			require.NoError(t, err)
			return f
		}
		require.Failf(t, "not a fence", "%T %v", r, r)
		return 0
	}

	// A fresh counter starts at 1; the key gets the token and the TTL.
	assert.Equal(t, int64(1), acquire("a"))
	assert.Equal(t, "a", do("GET", key))
	assert.InDelta(t, 60000, do("PTTL", key), 5000)
	assert.Equal(t, "1", counter())
	assert.Equal(t, int64(-1), do("PTTL", fk), "counters never expire")

	// Held: minus the key's PTTL, and neither the key nor the counter
	// changes.
	assert.InDelta(t, -60000, acquire("b"), 5000)
	assert.Equal(t, "a", do("GET", key))
	assert.Equal(t, "1", counter())

	// Raise: only for the holder's token, only upwards, never creating.
	assert.Equal(t, int64(-1), raise("b", 10), "another token")
	assert.Equal(t, "1", counter())
	assert.Equal(t, int64(1), raise("a", 10))
	assert.Equal(t, "10", counter())
	assert.Equal(t, int64(1), raise("a", 9), "a lower fence is not an error")
	assert.Equal(t, "10", counter(), "never lowered")
	assert.Equal(t, int64(1), raise("a", 100), "3 digits against 2: length first")
	assert.Equal(t, "100", counter())
	assert.Equal(t, int64(1), raise("a", 99))
	assert.Equal(t, "100", counter(), "99 < 100 although \"99\" > \"100\" as strings")
	do("DEL", key)
	assert.Equal(t, int64(0), raise("a", 1000), "no key")
	assert.Equal(t, "100", counter())
	assert.Equal(t, int64(0), do("EXISTS", key), "raise never creates the key")

	// Big counters, preset as another holder's increments would leave
	// them: exact on either side of 2^31 and 2^53, up to 2^63-1.
	for _, preset := range []uint64{1<<31 - 1, 1<<53 - 2, 1<<53 - 1, 1 << 53, 1<<53 + 1, 1<<62 + 1, 1<<63 - 2} {
		do("DEL", key)
		do("SET", fk, strconv.FormatUint(preset, 10))
		r := acquire("a")
		want := preset + 1
		assert.Equal(t, want, fence(r), "preset %d", preset)
		if want < 1<<53 {
			assert.IsType(t, int64(0), r, "preset %d: an integer below 2^53", preset)
		} else {
			assert.IsType(t, "", r, "preset %d: a string from 2^53 up", preset)
		}
		assert.Equal(t, strconv.FormatUint(want, 10), counter())
		// Raising by one from the preset's neighbourhood: exact too.
		assert.Equal(t, int64(1), raise("a", want-1))
		assert.Equal(t, strconv.FormatUint(want, 10), counter(), "preset %d: never lowered", preset)
		if want < 1<<63-1 {
			assert.Equal(t, int64(1), raise("a", want+1))
			assert.Equal(t, strconv.FormatUint(want+1, 10), counter(), "preset %d: raised by one", preset)
		}
	}
	// At the maximum the increment fails, and the script changes nothing.
	do("DEL", key)
	_, err := srv.Do("EVALSHA", AcquireFenced.SHA1, 2, key, fk, "a", 60000)
	assert.ErrorContains(t, err, "overflow")
	assert.Equal(t, int64(0), do("EXISTS", key), "a failed increment leaves no key")
	assert.Equal(t, "9223372036854775807", counter())

	// A counter raised on a node where none existed (its acquire's
	// increment lost, say) is created at the fence.
	do("DEL", fk)
	do("SET", key, "a", "PX", 60000)
	assert.Equal(t, int64(1), raise("a", 1<<53+1))
	assert.Equal(t, "9007199254740993", counter())
	do("DEL", key)
	assert.Equal(t, uint64(1<<53+2), fence(acquire("a")))
}

// TestProbeAndReleaseOnRedis checks the probe acquire and the release's
// announcement on redis-server: the probe sets like SET NX PX, and on a
// held key returns minus its PTTL (0 without expiry); the release
// publishes the token on the key's release channel only when it deletes.
func TestProbeAndReleaseOnRedis(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{})
	do := func(args ...any) any {
		t.Helper()
		r, err := srv.Do(args...)
		require.NoError(t, err, "%v", args)
		return r
	}
	assert.Equal(t, "OK", do("EVAL", AcquireProbe.Src, 1, "k", "a", 60000))
	assert.InDelta(t, 60000, do("PTTL", "k"), 5000)
	assert.Equal(t, "a", do("GET", "k"))
	assert.InDelta(t, -60000, do("EVAL", AcquireProbe.Src, 1, "k", "b", 60000), 5000)
	assert.Equal(t, "a", do("GET", "k"), "a held key is left alone")
	do("SET", "forever", "x")
	assert.Equal(t, int64(0), do("EVAL", AcquireProbe.Src, 1, "forever", "b", 60000))

	sub := srv.Subscribe(t, ReleaseChannel("k"))
	assert.Equal(t, int64(-1), do("EVAL", Release.Src, 1, "k", "b"), "another token")
	assert.Equal(t, int64(1), do("EVAL", Release.Src, 1, "k", "a"))
	assert.Equal(t, int64(0), do("EVAL", Release.Src, 1, "k", "a"), "already gone")
	assert.Equal(t, []string{ReleaseChannel("k"), "a"}, sub.Next(t), "the one deletion is announced, with its token")
	assert.Equal(t, int64(1), do("PUBLISH", ReleaseChannel("k"), "end"))
	assert.Equal(t, []string{ReleaseChannel("k"), "end"}, sub.Next(t), "and nothing else was")
}
