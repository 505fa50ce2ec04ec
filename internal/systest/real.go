package systest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/internal/redistest"
)

// realCase is a case that only a real server can check: memnode has no
// script cache, no credentials and no transport.
type realCase struct {
	name string
	run  func(t *testing.T, f Factory, mode core.FanOut)
}

var realCases = []realCase{
	{"script-flush", testScriptFlush},
	{"auth-password", testPassword},
	{"auth-acl-user", testACLUser},
	{"tls", testTLS},
	{"partition-blackhole-majority", testPartitionBlackHole},
	{"partition-drop-minority", testPartitionDropMinority},
	{"restart-immediate-double-grant", testRestartDoubleGrant},
	{"restart-delayed", testRestartDelayed},
	{"multi-process", testMultiProcess},
	// Fencing (fencing_real.go).
	{"fencing-big-counters", testBigCounters},
	{"fencing-script-flush", testFencedScriptFlush},
	{"fencing-raise-hung-majority", testRaiseHungMajority},
	{"multi-process-fenced", testMultiProcessFenced},
}

// requireWorks takes, extends and releases a lock and checks every node.
func requireWorks(t *testing.T, c cluster, mode core.FanOut) {
	t.Helper()
	ctx, n, key := testContext(t), c.N(), testKey(t, "")
	client := newClient(t, c, mode, redlock.Options{})
	lock, err := client.TryLock(ctx, key)
	require.NoError(t, err)
	requireHolds(t, c, key, lock.Token(), defaultTTL/2, all(n)...)
	require.NoError(t, lock.Extend(ctx))
	require.NoError(t, lock.Unlock(ctx))
	requireAbsent(t, c, key, all(n)...)
}

// requireUnreachable checks that acquiring through c fails with
// ErrQuorumUnreachable, naming every node: those that failed and those
// whose reply was not awaited once the round was lost.
func requireUnreachable(t *testing.T, c cluster, mode core.FanOut) {
	t.Helper()
	ctx := testContext(t)
	client := newClient(t, c, mode, redlock.Options{})
	_, err := client.TryLock(ctx, testKey(t, ""))
	e := requireError(t, err, core.ErrQuorumUnreachable)
	failed := len(e.Failed(core.StatusError)) + len(e.Failed(core.StatusTimeout))
	assert.GreaterOrEqual(t, failed, lossThreshold(c.N()), "%v", err)
	assertNamed(t, c, err, all(c.N()))
}

// testScriptFlush: after SCRIPT FLUSH the driver's EVALSHA gets NOSCRIPT and
// must fall back to EVAL, for extend and for release.
func testScriptFlush(t *testing.T, f Factory, mode core.FanOut) {
	c := startReal(t, f, 3, redistest.Options{}, nil)
	ctx, n, key := testContext(t), c.N(), testKey(t, "")
	client := newClient(t, c, mode, redlock.Options{})
	lock, err := client.TryLock(ctx, key)
	require.NoError(t, err)
	// Warm the driver's script path first, so that the flush below
	// invalidates what it believes is loaded.
	require.NoError(t, lock.Extend(ctx))

	flush := func() {
		for i := range n {
			c.scriptFlush(i)
		}
	}
	flush()
	for i := range n {
		c.Set(i, key, lock.Token(), time.Second)
	}
	require.NoError(t, lock.Extend(ctx), "extend after SCRIPT FLUSH")
	requireHolds(t, c, key, lock.Token(), defaultTTL/2, all(n)...)

	flush()
	require.NoError(t, lock.Unlock(ctx), "release after SCRIPT FLUSH")
	requireAbsent(t, c, key, all(n)...)
}

// eachEndpoint returns an endpoint rewrite for startReal that applies set
// to every endpoint: the auth and TLS cases give all nodes the same bad
// credentials or transport.
func eachEndpoint(set func(*Endpoint)) func([]Endpoint) {
	return func(eps []Endpoint) {
		for i := range eps {
			set(&eps[i])
		}
	}
}

// testPassword: requirepass servers refuse a wrong password with an error
// naming each node, and accept the right one.
func testPassword(t *testing.T, f Factory, mode core.FanOut) {
	opts := redistest.Options{Password: "right horse battery"}
	t.Run("wrong", func(t *testing.T) {
		c := startReal(t, f, 3, opts, eachEndpoint(func(e *Endpoint) { e.Password = "wrong" }))
		requireUnreachable(t, c, mode)
	})
	t.Run("none", func(t *testing.T) {
		c := startReal(t, f, 3, opts, eachEndpoint(func(e *Endpoint) { e.Password = "" }))
		requireUnreachable(t, c, mode)
	})
	t.Run("right", func(t *testing.T) {
		requireWorks(t, startReal(t, f, 3, opts, nil), mode)
	})
}

// testACLUser: with the default user disabled, the driver must
// authenticate as the named user.
func testACLUser(t *testing.T, f Factory, mode core.FanOut) {
	opts := redistest.Options{User: "locker", UserPassword: "pw-of-locker"}
	t.Run("right", func(t *testing.T) {
		requireWorks(t, startReal(t, f, 3, opts, nil), mode)
	})
	t.Run("wrong password", func(t *testing.T) {
		c := startReal(t, f, 3, opts, eachEndpoint(func(e *Endpoint) { e.Password = "wrong" }))
		requireUnreachable(t, c, mode)
	})
	t.Run("no user", func(t *testing.T) {
		// The password alone authenticates as the disabled default user.
		c := startReal(t, f, 3, opts, eachEndpoint(func(e *Endpoint) { e.Username = "" }))
		requireUnreachable(t, c, mode)
	})
}

// testTLS: TLS-only servers work with the client configuration and fail,
// without hanging, with a plain-text driver.
func testTLS(t *testing.T, f Factory, mode core.FanOut) {
	opts := redistest.Options{TLS: true}
	t.Run("tls", func(t *testing.T) {
		requireWorks(t, startReal(t, f, 3, opts, nil), mode)
	})
	t.Run("tls with password", func(t *testing.T) {
		requireWorks(t, startReal(t, f, 3, redistest.Options{TLS: true, Password: "pw"}, nil), mode)
	})
	t.Run("plain text client", func(t *testing.T) {
		c := startReal(t, f, 3, opts, eachEndpoint(func(e *Endpoint) { e.TLS = nil }))
		requireUnreachable(t, c, mode)
	})
}
