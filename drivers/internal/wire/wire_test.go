package wire

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
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
	assert.True(t, IsNoScript(errors.New("NOSCRIPT No matching script. Please use EVAL.")))
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
