package systest

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/internal/contract"
)

// newClusterFunc starts n fresh nodes behind one driver for one test.
type newClusterFunc func(t *testing.T, n int) cluster

// behaviouralCase is a case that runs on real servers and on memnode.
type behaviouralCase struct {
	name string
	// sizes are the node counts it runs with, as subtests "N=3" etc.
	sizes []int
	run   func(t *testing.T, c cluster, mode core.FanOut)
}

var behavioural = []behaviouralCase{
	{"driver-shape", []int{1, 3}, testDriverShape},
	{"acquire-release-extend", []int{3, 5}, testAcquireReleaseExtend},
	{"expiry", []int{3}, testExpiry},
	{"missing-key", []int{3}, testMissingKey},
	{"foreign-token", []int{3}, testForeignToken},
	{"stopped-node", []int{3, 5}, testStoppedNode},
	{"killed-node", []int{3, 5}, testKilledNode},
	{"restart", []int{3}, testRestart},
	{"cancellation", []int{3}, testCancellation},
	{"batch-close-early", []int{3}, testBatchCloseEarly},
	{"mutual-exclusion", []int{3, 5}, testMutualExclusion},
	{"release-leaves-nothing", []int{3, 5}, testReleaseLeavesNothing},
	{"kill-minority-while-held", []int{3, 5}, testKillMinorityWhileHeld},
	// Fencing (fencing.go).
	{"fencing-fences-grow", []int{3, 5}, testFencesGrow},
	{"fencing-raise-conditional", []int{3}, testRaiseConditional},
	{"fencing-counters-differ", []int{3, 5}, testCountersDiffer},
	{"fencing-raise-fails", []int{3, 5}, testRaiseFails},
	{"fencing-one-more-round", []int{3}, testFencingRounds},
	{"fencing-mutual-exclusion", []int{3, 5}, testFencedMutualExclusion},
	{"fencing-pause", []int{3}, testPause},
}

func runCases(t *testing.T, newCluster newClusterFunc, mode core.FanOut) {
	for _, bc := range behavioural {
		t.Run(bc.name, func(t *testing.T) {
			for _, n := range bc.sizes {
				t.Run("N="+strconv.Itoa(n), func(t *testing.T) {
					bc.run(t, newCluster(t, n), mode)
				})
			}
		})
	}
}

// Test defaults. The node timeout is generous because the suite runs under
// the race detector on loaded machines; cases that need a short one say so.
const (
	defaultTTL         = 10 * time.Second
	defaultNodeTimeout = 500 * time.Millisecond
	// testTimeout bounds every call, so that a hanging driver fails the
	// test instead of stalling it.
	testTimeout = 10 * time.Second
)

// newClient returns a Client over c's driver in mode, its zero TTL and
// NodeTimeout set to the test defaults: 10 s, 500 ms.
func newClient(t *testing.T, c cluster, mode core.FanOut, opts redlock.Options) *redlock.Client {
	t.Helper()
	return clientOver(t, c.Driver(), mode, opts)
}

// clientOver returns a Client over d in mode, with opts completed by
// clientOptions. Over a driver that does not announce releases (the
// suite's wrappers, a test double) the Client polls, as it would anyway,
// without saying so in the log.
func clientOver(t *testing.T, d core.Driver, mode core.FanOut, opts redlock.Options) *redlock.Client {
	t.Helper()
	opts = keepable(clientOptions(mode, opts), d.Nodes())
	if _, ok := d.(core.Announcer); !ok {
		opts.Poll = true
	}
	c, err := redlock.NewClient(d, opts)
	require.NoError(t, err)
	return c
}

// clientOptions sets opts' fan-out and fills its zero TTL and
// NodeTimeout with the test defaults.
func clientOptions(mode core.FanOut, opts redlock.Options) redlock.Options {
	opts.FanOut = mode
	if opts.TTL == 0 {
		opts.TTL = defaultTTL
	}
	if opts.NodeTimeout == 0 {
		opts.NodeTimeout = defaultNodeTimeout
	}
	return opts
}

// keepable returns opts, for n nodes, with its node timeout shortened if
// the loss margin, two round bounds, would exceed a lock's validity (TTL
// less the default drift allowance), which core.NewSpec refuses: then to
// half of that, so that an acquisition has the other half to take. A
// case's node timeout is the round bound it means, and a sequential
// round gives each of its n nodes a share of it.
func keepable(opts redlock.Options, n int) redlock.Options {
	bounds := 2 * time.Duration(n)
	if opts.FanOut != core.Sequential {
		bounds = 2
	}
	best := opts.TTL - (opts.TTL+99)/100 - 2*time.Millisecond
	if opts.NodeTimeout*bounds > best {
		opts.NodeTimeout = best / 2 / bounds / time.Millisecond * time.Millisecond
	}
	return opts
}

// tryLock takes key through client in one attempt, failing t otherwise,
// and returns the handle.
func tryLock(ctx context.Context, t *testing.T, client *redlock.Client, key string) *redlock.Lock {
	t.Helper()
	l, err := client.TryLock(ctx, key)
	require.NoError(t, err)
	return l
}

// fenceOf returns l's fence, failing t without one.
func fenceOf(t *testing.T, l *redlock.Lock) uint64 {
	t.Helper()
	f, err := l.Fence()
	require.NoError(t, err)
	return f
}

// valid reports whether l is valid at now: before its Until.
func valid(l *redlock.Lock, now time.Time) bool { return now.Before(l.Until()) }

// testContext returns a context that ends with the test or after
// testTimeout.
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// testKey returns a key unique to the test.
func testKey(t *testing.T, suffix string) string { return "conformance:" + t.Name() + suffix }

// foreignToken is a token no Client in the suite issues (crypto/rand ones
// would need 2^128 luck), standing for another client.
var foreignToken = core.TokenFromUint64s(0xf0f0f0f0f0f0f0f0, 0x0f0f0f0f0f0f0f0f)

// requireError checks that err matches kind and is, or wraps (a
// *redlock.LostError's cause), a *core.Error.
func requireError(t *testing.T, err, kind error) *core.Error {
	t.Helper()
	requireKind(t, err, kind)
	var e *core.Error
	errors.As(err, &e) // requireKind made sure
	return e
}

// requireKind is requireError for callers that need only the check.
func requireKind(t *testing.T, err, kind error) {
	t.Helper()
	require.ErrorIs(t, err, kind)
	var e *core.Error
	require.ErrorAs(t, err, &e)
}

// assertNamed checks that err's message names each node.
func assertNamed(t *testing.T, c cluster, err error, nodes []int) {
	t.Helper()
	for _, i := range nodes {
		assert.Contains(t, err.Error(), c.Name(i), "error must name node %d", i)
	}
}

// lossThreshold is how many nodes must fail to deny a quorum: N - quorum + 1.
func lossThreshold(n int) int { return n - core.Quorum(n) + 1 }

// settle bounds how long the suite waits for commands whose replies a
// round did not await: a multiplexed round returns once its vote is
// decided, while the other nodes' commands may still be in flight.
const settle = 2 * time.Second

// requireHolds checks that each node holds key with tok and a PTTL above
// minTTL, waiting up to settle for commands still in flight.
func requireHolds(t *testing.T, c cluster, key string, tok core.Token, minTTL time.Duration, nodes ...int) {
	t.Helper()
	requireSettles(t, c, nodes, func(i int) string {
		got, pttl, ok := c.Get(i, key)
		switch {
		case !ok:
			return "must hold " + strconv.Quote(key) + ", has no such key"
		case got != tok.String():
			return "must hold " + strconv.Quote(key) + " with token " + tok.String() + ", holds " + got
		case pttl <= minTTL:
			return "PTTL of " + strconv.Quote(key) + " is " + pttl.String() + ", want above " + minTTL.String()
		}
		return ""
	})
}

// acquireSettled acquires key and waits until every node holds it: a
// multiplexed round returns at its quorum, and a case that then changes
// the keys behind the driver's back must not race the SETs in flight.
func acquireSettled(ctx context.Context, t *testing.T, c cluster, client *redlock.Client, key string) *redlock.Lock {
	t.Helper()
	l := tryLock(ctx, t, client, key)
	requireHolds(t, c, key, l.Token(), 0, all(c.N())...)
	return l
}

// requireAbsent checks that key does not exist on each node, waiting up to
// settle for commands still in flight.
func requireAbsent(t *testing.T, c cluster, key string, nodes ...int) {
	t.Helper()
	requireSettles(t, c, nodes, func(i int) string {
		if got, _, ok := c.Get(i, key); ok {
			return "must not hold " + strconv.Quote(key) + ", holds " + got
		}
		return ""
	})
}

// requireSettles polls check on every node until it returns "" for all of
// them, or fails with the last complaint after settle.
func requireSettles(t *testing.T, c cluster, nodes []int, check func(i int) string) {
	t.Helper()
	deadline := time.Now().Add(settle)
	for {
		bad, msg := -1, ""
		for _, i := range nodes {
			if msg = check(i); msg != "" {
				bad = i
				break
			}
		}
		if bad < 0 {
			return
		}
		if time.Now().After(deadline) {
			require.FailNow(t, "node "+strconv.Itoa(bad)+" ("+c.Name(bad)+"): "+msg)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// requireNotHolding checks that no node in nodes holds key with tok.
func requireNotHolding(t *testing.T, c cluster, key string, tok core.Token, nodes ...int) {
	t.Helper()
	for _, i := range nodes {
		got, _, ok := c.Get(i, key)
		require.False(t, ok && got == tok.String(), "node %d (%s) still holds %q with the token", i, c.Name(i), key)
	}
}

// eventually polls cond, on the test goroutine, until it holds or timeout
// passes.
func eventually(t *testing.T, timeout time.Duration, cond func() bool, msg string) {
	t.Helper()
	for deadline := time.Now().Add(timeout); !cond(); {
		if time.Now().After(deadline) {
			require.FailNow(t, "condition not met within "+timeout.String(), msg)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func all(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

func without(nodes []int, drop ...int) []int {
	var out []int
outer:
	for _, i := range nodes {
		for _, d := range drop {
			if i == d {
				continue outer
			}
		}
		out = append(out, i)
	}
	return out
}

// testDriverShape: Nodes is N and each node's name contains its address.
func testDriverShape(t *testing.T, c cluster, _ core.FanOut) {
	d := c.Driver()
	require.Equal(t, c.N(), d.Nodes())
	for i := range c.N() {
		assert.Contains(t, d.NodeName(i), c.Name(i), "NodeName(%d)", i)
	}
}

// testAcquireReleaseExtend: the basic semantics, checked on every node.
func testAcquireReleaseExtend(t *testing.T, c cluster, mode core.FanOut) {
	ctx, n, key := testContext(t), c.N(), testKey(t, "")
	client := newClient(t, c, mode, redlock.Options{MaxExtensions: 2})

	lock, err := client.TryLock(ctx, key)
	require.NoError(t, err)
	assert.Equal(t, key, lock.Key())
	until := lock.Until()
	assert.True(t, valid(lock, time.Now()), "the lock is valid once TryLock returns")
	assert.LessOrEqual(t, time.Until(until), defaultTTL)
	requireHolds(t, c, key, lock.Token(), defaultTTL/2, all(n)...)

	// A second acquirer is refused by the holder's nodes, and its cleanup
	// leaves the holder's keys alone.
	_, err = client.TryLock(ctx, key)
	e := requireError(t, err, core.ErrTaken)
	held := e.Failed(core.StatusHeld)
	assert.GreaterOrEqual(t, len(held), lossThreshold(n), "nodes reporting held: %v", err)
	assertNamed(t, c, err, held)
	requireHolds(t, c, key, lock.Token(), defaultTTL/2, all(n)...)

	// Extend resets the expiry: shorten it first so the reset shows.
	for i := range n {
		c.Set(i, key, lock.Token(), time.Second)
	}
	require.NoError(t, lock.Extend(ctx))
	assert.True(t, lock.Until().After(until), "the validity counts from the extension round")
	requireHolds(t, c, key, lock.Token(), defaultTTL/2, all(n)...)

	require.NoError(t, lock.Extend(ctx))
	requireKind(t, lock.Extend(ctx), core.ErrExtensionLimit)
	assert.True(t, valid(lock, time.Now()), "the limit does not end the lock")

	require.NoError(t, lock.Unlock(ctx))
	requireAbsent(t, c, key, all(n)...)
}

// testExpiry: a lock whose keys expired in Redis is gone: it cannot be
// extended (nor re-created), its release says not held rather than taken,
// another client may take the key, and the stale holder's release then
// leaves the new holder's keys alone. Three locks, on three keys, show
// the three: a lock's first Extend or Unlock decides what the next says.
func testExpiry(t *testing.T, c cluster, mode core.FanOut) {
	ctx, n := testContext(t), c.N()
	const ttl = 400 * time.Millisecond
	cfg := redlock.Options{TTL: ttl, NodeTimeout: 150 * time.Millisecond}
	client := newClient(t, c, mode, cfg)

	keys := []string{testKey(t, "-extend"), testKey(t, "-release"), testKey(t, "")}
	locks := make([]*redlock.Lock, len(keys))
	for k, key := range keys {
		locks[k] = tryLock(ctx, t, client, key)
		requireHolds(t, c, key, locks[k].Token(), 0, all(n)...)
	}
	ext, rel, stale := locks[0], locks[1], locks[2]
	eventually(t, 5*time.Second, func() bool {
		for i := range n {
			for _, key := range keys {
				if _, _, ok := c.Get(i, key); ok {
					return false
				}
			}
		}
		return true
	}, "keys must expire on every node")
	// Validity is counted from before the keys were set, so it ended first.
	for _, l := range locks {
		assert.False(t, valid(l, time.Now()), "%s is valid after its keys expired", l.Key())
	}

	err := ext.Extend(ctx)
	requireKind(t, err, core.ErrNotHeld)
	assert.ErrorIs(t, err, redlock.ErrLost)
	requireAbsent(t, c, keys[0], all(n)...)

	err = rel.Unlock(ctx)
	e := requireError(t, err, core.ErrNotHeld)
	assert.NotErrorIs(t, err, core.ErrTaken)
	assert.GreaterOrEqual(t, len(e.Failed(core.StatusMissing)), lossThreshold(n), "%v", err)

	other := newClient(t, c, mode, cfg)
	lock2, err := other.TryLock(ctx, keys[2])
	require.NoError(t, err)
	require.NotEqual(t, stale.Token(), lock2.Token())

	// The stale holder cannot release the new holder's lock.
	err = stale.Unlock(ctx)
	requireKind(t, err, core.ErrTaken)
	requireHolds(t, c, keys[2], lock2.Token(), 0, all(n)...)
	require.NoError(t, lock2.Unlock(ctx))
}

// testMissingKey: extend of a lock whose keys were deleted (or expired in
// Redis while the lock was still valid locally) proves it lost, reaches
// the nodes, and never re-creates a key; its Unlock still releases.
func testMissingKey(t *testing.T, c cluster, mode core.FanOut) {
	ctx, n := testContext(t), c.N()
	client := newClient(t, c, mode, redlock.Options{})

	t.Run("deleted everywhere", func(t *testing.T) {
		key := testKey(t, "")
		lock := acquireSettled(ctx, t, c, client, key)
		for i := range n {
			c.Del(i, key)
		}
		err := lock.Extend(ctx)
		e := requireError(t, err, core.ErrNotHeld)
		assert.ErrorIs(t, err, redlock.ErrLost)
		assert.GreaterOrEqual(t, len(e.Failed(core.StatusMissing)), lossThreshold(n), "%v", err)
		requireAbsent(t, c, key, all(n)...)
		assert.True(t, lock.Until().IsZero(), "a lost lock has no validity")

		assert.ErrorIs(t, lock.Unlock(ctx), redlock.ErrLost)
		requireAbsent(t, c, key, all(n)...)
	})

	t.Run("expired in redis", func(t *testing.T) {
		// The lock is valid locally for seconds more, so Extend must ask
		// the nodes; their keys are gone.
		key := testKey(t, "")
		lock := acquireSettled(ctx, t, c, client, key)
		for i := range n {
			c.Set(i, key, lock.Token(), 30*time.Millisecond)
		}
		eventually(t, 5*time.Second, func() bool {
			for i := range n {
				if _, _, ok := c.Get(i, key); ok {
					return false
				}
			}
			return true
		}, "keys must expire on every node")
		require.True(t, valid(lock, time.Now()))
		requireKind(t, lock.Extend(ctx), core.ErrNotHeld)
		requireAbsent(t, c, key, all(n)...)
		assert.ErrorIs(t, lock.Unlock(ctx), redlock.ErrLost)
	})

	t.Run("deleted on a minority", func(t *testing.T) {
		key := testKey(t, "")
		lock := acquireSettled(ctx, t, c, client, key)
		c.Del(0, key)
		for i := 1; i < n; i++ {
			c.Set(i, key, lock.Token(), time.Second)
		}
		require.NoError(t, lock.Extend(ctx))
		requireAbsent(t, c, key, 0) // extend never re-creates a key
		requireHolds(t, c, key, lock.Token(), defaultTTL/2, without(all(n), 0)...)
		require.NoError(t, lock.Unlock(ctx))
		requireAbsent(t, c, key, all(n)...)
	})
}

// testForeignToken: keys held by another token on a majority are neither
// deleted nor extended. An extension proves the lock lost; a release of a
// lock never extended says taken; both delete the lock's own keys on the
// other nodes.
func testForeignToken(t *testing.T, c cluster, mode core.FanOut) {
	ctx, n := testContext(t), c.N()
	client := newClient(t, c, mode, redlock.Options{})
	key, relKey := testKey(t, ""), testKey(t, "-release")
	lock := acquireSettled(ctx, t, c, client, key)
	rel := acquireSettled(ctx, t, c, client, relKey)

	const foreignTTL = 5 * time.Second
	foreign := []int{0, 1}
	for _, i := range foreign {
		c.Set(i, key, foreignToken, foreignTTL)
		c.Set(i, relKey, foreignToken, foreignTTL)
	}

	err := lock.Extend(ctx)
	e := requireError(t, err, core.ErrTaken)
	assert.ErrorIs(t, err, redlock.ErrLost)
	assert.ElementsMatch(t, foreign, e.Failed(core.StatusHeld), "%v", err)
	assertNamed(t, c, err, foreign)
	for _, i := range foreign {
		got, pttl, ok := c.Get(i, key)
		require.True(t, ok)
		require.Equal(t, foreignToken.String(), got)
		require.LessOrEqual(t, pttl, foreignTTL, "extend must not touch the foreign key's expiry on node %d", i)
	}
	assert.ErrorIs(t, lock.Unlock(ctx), redlock.ErrLost)
	requireHolds(t, c, key, foreignToken, 0, foreign...)
	requireAbsent(t, c, key, without(all(n), foreign...)...)

	err = rel.Unlock(ctx)
	e = requireError(t, err, core.ErrTaken)
	assert.ElementsMatch(t, foreign, e.Failed(core.StatusHeld), "%v", err)
	requireHolds(t, c, relKey, foreignToken, 0, foreign...)
	// Release is sent to every node, and deletes the lock's own key on the
	// rest even though the round failed.
	requireAbsent(t, c, relKey, without(all(n), foreign...)...)
}

// testStoppedNode: a hung (SIGSTOPped) minority costs a node timeout, not
// the lock; a hung majority makes the round fail with timeouts, within the
// caller's deadline.
func testStoppedNode(t *testing.T, c cluster, mode core.FanOut) {
	n := c.N()
	// Generous against a hang, and never reached by a driver that honours
	// the node timeout.
	ctx, cancel := context.WithTimeout(testContext(t), 5*time.Second)
	defer cancel()
	client := newClient(t, c, mode, redlock.Options{TTL: 5 * time.Second, NodeTimeout: 250 * time.Millisecond})

	// Stop node 1, so that a sequential round must get past it.
	stopped := []int{1}
	c.Stop(1)
	key := testKey(t, "")
	lock, err := client.TryLock(ctx, key)
	require.NoError(t, err)
	assert.True(t, valid(lock, time.Now()))
	requireHolds(t, c, key, lock.Token(), 0, without(all(n), stopped...)...)
	require.NoError(t, lock.Unlock(ctx))
	requireAbsent(t, c, key, without(all(n), stopped...)...)

	// Stop a majority: every stopped node must report a timeout.
	for i := 2; len(stopped) < lossThreshold(n); i++ {
		c.Stop(i)
		stopped = append(stopped, i)
	}
	_, err = client.TryLock(ctx, testKey(t, "-2"))
	e := requireError(t, err, core.ErrQuorumUnreachable)
	assert.ElementsMatch(t, stopped, e.Failed(core.StatusTimeout), "%v", err)
	assertNamed(t, c, err, stopped)
	require.NoError(t, ctx.Err(), "the round must end at the node timeout, not the caller's deadline")

	for _, i := range stopped {
		c.Cont(i)
	}
}

// testKilledNode: refused connections on a minority cost nothing; on a
// majority the error names the nodes; restarted nodes are used again.
func testKilledNode(t *testing.T, c cluster, mode core.FanOut) {
	ctx, n := testContext(t), c.N()
	client := newClient(t, c, mode, redlock.Options{})

	// The largest minority, spread out so a sequential round meets live
	// and dead nodes alternately.
	var killed []int
	for i := 0; len(killed) < n-core.Quorum(n); i += 2 {
		c.Kill(i)
		killed = append(killed, i)
	}
	key := testKey(t, "")
	lock, err := client.TryLock(ctx, key)
	require.NoError(t, err)
	requireHolds(t, c, key, lock.Token(), defaultTTL/2, without(all(n), killed...)...)
	require.NoError(t, lock.Unlock(ctx))

	// One more makes a majority.
	last := 1
	c.Kill(last)
	killed = append(killed, last)
	_, err = client.TryLock(ctx, testKey(t, "-2"))
	e := requireError(t, err, core.ErrQuorumUnreachable)
	assert.ElementsMatch(t, killed, e.Failed(core.StatusError), "%v", err)
	assertNamed(t, c, err, killed)

	// Restarted nodes come back into use: the driver reconnects.
	for _, i := range killed {
		c.Restart(i)
	}
	// The first commands may meet connections the kill broke; a few rounds
	// later every node must take the key.
	requireEveryNodeTakes(ctx, t, c, client, testKey(t, "-3"), "after restart, an acquire must set the key on every node")
}

// requireEveryNodeTakes locks key until a lock sets it on every node of
// c, waiting up to settle for each round's stragglers to land, and fails
// with msg if none does within 10 s: nodes back from a fault (a restart, a
// healed partition) are used again once the driver has reconnected.
func requireEveryNodeTakes(ctx context.Context, t *testing.T, c cluster, client *redlock.Client, key, msg string) {
	t.Helper()
	eventually(t, 10*time.Second, func() bool {
		lock, err := client.TryLock(ctx, key)
		if err != nil {
			return false
		}
		defer func() { _ = lock.Unlock(ctx) }() // a failed release only delays the next try: the keys expire
		for deadline := time.Now().Add(settle); ; time.Sleep(10 * time.Millisecond) {
			holders := 0
			for i := range c.N() {
				if got, _, ok := c.Get(i, key); ok && got == lock.Token().String() {
					holders++
				}
			}
			if holders == c.N() {
				return true
			}
			if time.Now().After(deadline) {
				return false
			}
		}
	}, msg)
}

// testRestart: a node that restarts empty does not hand the lock to
// another client, and extend does not re-create its key.
func testRestart(t *testing.T, c cluster, mode core.FanOut) {
	ctx, n, key := testContext(t), c.N(), testKey(t, "")
	client := newClient(t, c, mode, redlock.Options{})
	lock, err := client.TryLock(ctx, key)
	require.NoError(t, err)
	// TryLock returns at a quorum: node 0's SET may still be on its way,
	// and applied after the restart it would put the key back (on the
	// embedded miniredis, whose restart can race a connection's last
	// command). Every node holds the key before node 0 restarts.
	requireHolds(t, c, key, lock.Token(), defaultTTL/2, all(n)...)

	c.Restart(0)
	requireAbsent(t, c, key, 0)

	// The other client is refused. Taken, or unreachable if the driver
	// found its old connection to node 0 broken: either way not won.
	other := newClient(t, c, mode, redlock.Options{})
	_, err = other.TryLock(ctx, key)
	require.Error(t, err)
	if !errors.Is(err, core.ErrTaken) {
		e := requireError(t, err, core.ErrQuorumUnreachable)
		held := e.Failed(core.StatusHeld)
		assert.NotEmpty(t, held, "%v", err)
		assert.Subset(t, without(all(n), 0), held, "%v", err)
	}
	requireHolds(t, c, key, lock.Token(), defaultTTL/2, without(all(n), 0)...)

	for i := 1; i < n; i++ {
		c.Set(i, key, lock.Token(), time.Second)
	}
	require.NoError(t, lock.Extend(ctx))
	requireHolds(t, c, key, lock.Token(), defaultTTL/2, without(all(n), 0)...)
	// Extend never re-creates the lock's key on node 0. (The refused
	// acquirer's key may be there: in a multiplexed round its cleanup can
	// overtake its SET on another connection, so that is not checked.)
	requireNotHolding(t, c, key, lock.Token(), 0)

	require.NoError(t, lock.Unlock(ctx))
	requireAbsent(t, c, key, all(n)...)
}

// testCancellation: a caller cancelled mid-acquire gets ErrCancelled
// wrapping context.Canceled, and the attempt's keys are removed anyway;
// release works with a cancelled context.
func testCancellation(t *testing.T, c cluster, mode core.FanOut) {
	base, n, key := testContext(t), c.N(), testKey(t, "")
	// Every attempt's token is kept, so that the checks below cover them
	// all. Lock keeps trying (it polls: h announces nothing), so that
	// however late the cancel lands it lands during an attempt or a delay.
	var mu sync.Mutex
	var toks []core.Token
	h := &hookDriver{Driver: c.Driver(), before: func(_ int, cmd core.Command) {
		mu.Lock()
		defer mu.Unlock()
		if cmd.Op == core.OpAcquire && (len(toks) == 0 || toks[len(toks)-1] != cmd.Token) {
			toks = append(toks, cmd.Token)
		}
	}}
	client := clientOver(t, h, mode, redlock.Options{Backoff: redlock.RandomDelay(10*time.Millisecond, 20*time.Millisecond)})
	notHolding := func(nodes ...int) {
		t.Helper()
		mu.Lock()
		defer mu.Unlock()
		require.NotEmpty(t, toks, "no attempt was sent")
		for _, tok := range toks {
			requireNotHolding(t, c, key, tok, nodes...)
		}
	}

	// A stopped majority holds the round open until the node timeout. Its
	// nodes already hold the key for another client, so whatever of ours
	// they run once continued (queued SET NX and release) changes nothing,
	// and the check below is exact.
	stopped := []int{1, 2}
	for _, i := range stopped {
		c.Set(i, key, foreignToken, time.Minute)
		c.Stop(i)
	}
	ctx, cancel := context.WithCancel(base)
	timer := time.AfterFunc(20*time.Millisecond, cancel)
	defer timer.Stop()
	_, err := client.Lock(ctx, key)
	requireKind(t, err, core.ErrCancelled)
	require.ErrorIs(t, err, context.Canceled)
	require.NoError(t, base.Err(), "cancellation must not wait for the test deadline")
	// The cleanup ran detached from the cancelled caller.
	notHolding(without(all(n), stopped...)...)

	for _, i := range stopped {
		c.Cont(i)
	}
	notHolding(all(n)...)

	// Release and extend with a context that is already cancelled.
	key2 := testKey(t, "-2")
	lock, err := client.TryLock(base, key2)
	require.NoError(t, err)
	done, cancelDone := context.WithCancel(base)
	cancelDone()
	err = lock.Extend(done)
	requireKind(t, err, core.ErrCancelled)
	assert.NotErrorIs(t, err, redlock.ErrLost, "a cancelled extension proves nothing")
	require.NoError(t, lock.Unlock(done), "release must outlive the caller's cancellation")
	requireAbsent(t, c, key2, all(n)...)
}

// testBatchCloseEarly drives the Batch directly: Close before all replies,
// with a node that never answers, must not block, and the driver stays
// usable. Receive with a closed cancel channel returns false.
func testBatchCloseEarly(t *testing.T, c cluster, mode core.FanOut) {
	ctx, n, key := testContext(t), c.N(), testKey(t, "")
	d := c.Driver()
	c.Stop(n - 1)

	tok := core.TokenFromUint64s(1, uint64(time.Now().UnixNano()))
	contract.CloseEarly(t, d, n, n-1, key, tok, 2*time.Second)
	c.Cont(n - 1)

	client := newClient(t, c, mode, redlock.Options{})
	key2 := testKey(t, "-2")
	lock, err := client.TryLock(ctx, key2)
	require.NoError(t, err)
	requireHolds(t, c, key2, lock.Token(), defaultTTL/2, all(n)...)
	require.NoError(t, lock.Unlock(ctx))
}

// testMutualExclusion: many goroutines contend for one key; at most one
// holds it at any time, and no increment of a counter they update under
// the lock is lost.
func testMutualExclusion(t *testing.T, c cluster, mode core.FanOut) {
	key := testKey(t, "")
	workers, rounds := 16, 5
	if mode == core.Sequential {
		workers = 8 // a sequential round costs N round trips
	}
	client := newClient(t, c, mode, redlock.Options{
		TTL:     2 * time.Second,
		Backoff: redlock.RandomDelay(time.Millisecond, 5*time.Millisecond),
	})
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()

	// The race detector cannot see the happens-before edge Redis provides,
	// so the shared state is atomic; the lock is what keeps the Load and
	// Store of an increment together.
	var holders, maxHolders atomic.Int32
	var counter atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Go(func() {
			for range rounds {
				lock, err := client.Lock(ctx, key)
				if err != nil {
					errs <- err
					return
				}
				h := holders.Add(1)
				for m := maxHolders.Load(); h > m && !maxHolders.CompareAndSwap(m, h); m = maxHolders.Load() {
				}
				v := counter.Load()
				time.Sleep(time.Millisecond)
				counter.Store(v + 1)
				holders.Add(-1)
				if err := lock.Unlock(context.Background()); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	assert.Equal(t, int64(workers*rounds), counter.Load(), "increments lost")
	assert.LessOrEqual(t, maxHolders.Load(), int32(1), "more than one holder at once")
	requireAbsent(t, c, key, all(c.N())...)
}

// testReleaseLeavesNothing: once Unlock returns nil, no node holds the
// key, checked at once, without waiting for commands in flight; and the
// same after Unlock and the driver's Close, which would drop a delete
// still in flight, as a process's exit would.
func testReleaseLeavesNothing(t *testing.T, c cluster, mode core.FanOut) {
	ctx, n := testContext(t), c.N()
	client := newClient(t, c, mode, redlock.Options{})
	scan := func(key, after string) {
		t.Helper()
		for i := range n {
			if tok, pttl, ok := c.Get(i, key); ok {
				require.FailNowf(t, "key left behind", "after %s, node %d (%s) still holds %q with %s for %v",
					after, i, c.Name(i), key, tok, pttl)
			}
		}
	}
	for round := range 20 {
		key := testKey(t, ":"+strconv.Itoa(round))
		lock, err := client.TryLock(ctx, key)
		require.NoError(t, err)
		require.NoError(t, lock.Unlock(ctx))
		scan(key, "Unlock")
	}
	closer, ok := c.Driver().(interface{ Close() error })
	if !ok {
		return // memnode: nothing is ever in flight
	}
	key := testKey(t, ":close")
	lock, err := client.TryLock(ctx, key)
	require.NoError(t, err)
	require.NoError(t, lock.Unlock(ctx))
	require.NoError(t, closer.Close())
	scan(key, "Unlock and Close")
}
