package systest

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/internal/redistest"
)

// testBigCounters: counters preset beyond 2^31, on either side of 2^53
// (where a Lua number, a double, stops being exact) and up to the 64-bit
// maximum come back as exact fences, and are raised exactly. Two nodes of
// three are preset high, so every quorum returns the high value. At the
// maximum the increment overflows: every node refuses with an error, and
// the acquisition leaves no key.
func testBigCounters(t *testing.T, f Factory, mode core.FanOut) {
	c := startReal(t, f, 3, redistest.Options{}, nil)
	ctx, key := testContext(t), testKey(t, "")
	client := fencedClient(t, c, mode, redlock.Options{})
	for _, tc := range []struct {
		presets [3]uint64
		want    uint64
	}{
		{[3]uint64{1<<31 - 1, 1<<31 - 1, 5}, 1 << 31},
		{[3]uint64{1<<53 - 2, 1<<53 - 2, 1}, 1<<53 - 1},
		{[3]uint64{1<<53 - 1, 1<<53 - 1, 1}, 1 << 53},
		{[3]uint64{1 << 53, 1 << 53, 1<<53 - 9}, 1<<53 + 1}, // a double would say 2^53
		{[3]uint64{1<<53 + 2, 1<<53 + 2, 1<<53 + 1}, 1<<53 + 3},
		{[3]uint64{1<<62 + 1, 1<<62 + 1, 1 << 61}, 1<<62 + 2},
		{[3]uint64{1<<63 - 2, 1<<63 - 2, 7}, 1<<63 - 1},
	} {
		for i, v := range tc.presets {
			c.SetFence(i, key, v)
		}
		lock, err := client.TryLock(ctx, key)
		require.NoError(t, err, "presets %v", tc.presets)
		assert.Equal(t, tc.want, fenceOf(t, lock), "presets %v", tc.presets)
		var exact []int
		for i := range c.N() {
			if c.Fence(i, key) == tc.want {
				exact = append(exact, i)
			}
		}
		assert.GreaterOrEqual(t, len(exact), core.Quorum(c.N()), "presets %v: counters at the fence on %v", tc.presets, exact)
		require.NoError(t, lock.Unlock(ctx))
	}

	for i := range c.N() {
		c.SetFence(i, key, 1<<63-1)
	}
	_, err := client.TryLock(ctx, key)
	e := requireError(t, err, core.ErrQuorumUnreachable)
	assert.GreaterOrEqual(t, len(e.Failed(core.StatusError)), lossThreshold(c.N()), "%v", err)
	assert.ErrorContains(t, err, "overflow")
	requireAbsent(t, c, key, all(c.N())...)
}

// testFencedScriptFlush: after SCRIPT FLUSH both fenced scripts meet
// NOSCRIPT and fall back to EVAL; fences keep growing.
func testFencedScriptFlush(t *testing.T, f Factory, mode core.FanOut) {
	c := startReal(t, f, 3, redistest.Options{}, nil)
	ctx, key := testContext(t), testKey(t, "")
	client := fencedClient(t, c, mode, redlock.Options{})
	var prev uint64
	for round := range 4 { // EVAL, EVALSHA, then after each flush
		if round >= 2 {
			for i := range c.N() {
				c.scriptFlush(i)
			}
		}
		lock, err := client.TryLock(ctx, key)
		require.NoError(t, err, "round %d", round)
		fence := fenceOf(t, lock)
		assert.Greater(t, fence, prev, "round %d", round)
		requireRaised(t, c, key, fence)
		prev = fence
		require.NoError(t, lock.Unlock(ctx))
		requireAbsent(t, c, key, all(c.N())...)
	}
}

// testRaiseHungMajority: a majority hangs (SIGSTOP) between a won fenced
// attempt's acquire round and its raise. The raise times out there, so
// the acquisition fails (ErrQuorumUnreachable, the raise named as the
// cause) within the node timeout; the cleanup's releases, sent behind
// the raises, leave no key.
//
// A hung node continues as its cleanup release is handed to the driver:
// the release then has its whole time on the wire to reach it. Continued
// only after TryLock returned, a node could stay hung past that time on
// a loaded machine (CI saw it), and a release that cannot reach its node
// in time is given up, its key left to expire.
func testRaiseHungMajority(t *testing.T, f Factory, mode core.FanOut) {
	c := startReal(t, f, 3, redistest.Options{}, nil)
	ctx, key := testContext(t), testKey(t, "")
	var set, continued [core.MaxNodes]bool
	var stopped []int
	h := &hookDriver{Driver: c.Driver()}
	h.before = func(node int, cmd core.Command) {
		switch {
		case cmd.Op == core.OpAcquireFenced:
			set[node] = true
		case cmd.Op == core.OpRaiseFence && set[node] && len(stopped) < lossThreshold(c.N()):
			requireHolds(t, c, key, cmd.Token, 0, node) // the SET landed first
			c.Stop(node)
			stopped = append(stopped, node)
		case cmd.Op == core.OpRelease && slices.Contains(stopped, node) && !continued[node]:
			c.Cont(node)
			continued[node] = true
		}
	}
	const timeout = time.Second
	client := clientOver(t, h, mode, redlock.Options{Fencing: true, NodeTimeout: timeout})
	start := time.Now()
	_, err := client.TryLock(ctx, key)
	elapsed := time.Since(start)
	for _, i := range stopped {
		if !continued[i] {
			c.Cont(i)
		}
	}
	assert.Len(t, stopped, lossThreshold(c.N()))
	for _, i := range stopped {
		assert.True(t, continued[i], "node %d: no cleanup release was sent to it", i)
	}
	e := requireError(t, err, core.ErrQuorumUnreachable)
	assert.ErrorContains(t, err, "fence counters could not be raised")
	assert.ElementsMatch(t, stopped, e.Failed(core.StatusTimeout), "%v", err)
	assertNamed(t, c, err, stopped)
	// Sequential: one node timeout per stopped node; slack for the load.
	assert.Less(t, elapsed, time.Duration(len(stopped)+1)*timeout+2*time.Second)
	requireAbsent(t, c, key, all(c.N())...)
}

// testMultiProcessFenced is testMultiProcess with Fencing: every critical
// section also writes its fence to a fenced store the parent serves on
// loopback; the store must refuse no write, and see the fences strictly
// increase.
func testMultiProcessFenced(t *testing.T, f Factory, mode core.FanOut) {
	multiProcess(t, f, mode, true, false)
}

// Fence reads key's counter on node i: 0 if there is none.
func (c *realCluster) Fence(i int, key string) uint64 {
	c.t.Helper()
	v, err := c.srv[i].Do("GET", core.FenceKeyPrefix+key)
	require.NoError(c.t, err, "GET the counter of %q on node %d (%s)", key, i, c.srv[i].Addr)
	if v == nil {
		return 0
	}
	s, _ := v.(string)
	n, err := strconv.ParseUint(s, 10, 64)
	require.NoError(c.t, err, "the counter of %q on node %d (%s) is %q", key, i, c.srv[i].Addr, v)
	return n
}

// SetFence writes key's counter on node i.
func (c *realCluster) SetFence(i int, key string, v uint64) {
	c.t.Helper()
	_, err := c.srv[i].Do("SET", core.FenceKeyPrefix+key, strconv.FormatUint(v, 10))
	require.NoError(c.t, err, "SET the counter of %q on node %d (%s)", key, i, c.srv[i].Addr)
}

// Fence reads key's counter on node i.
func (m *memCluster) Fence(i int, key string) uint64 { return m.c.Fence(i, key) }

// SetFence raises key's counter on node i to v, the only way memnode
// offers: fenced acquires and releases of key on node i alone, which must
// not hold key. It panics if the counter is above v already.
func (m *memCluster) SetFence(i int, key string, v uint64) {
	tok := core.TokenFromUint64s(0x5e7fe4ce, uint64(i)) //nolint:gosec // G115: a node index, never negative
	for f := m.c.Fence(i, key); f < v; f = m.c.Fence(i, key) {
		r := SendOne(m.c, i, core.Command{Op: core.OpAcquireFenced, Key: key, Token: tok, TTL: time.Minute}, time.Second)
		if r.Status != core.StatusOK {
			panic("conformance: memnode SetFence: acquire: " + r.Status.String())
		}
		SendOne(m.c, i, core.Command{Op: core.OpRelease, Key: key, Token: tok}, time.Second)
	}
	if f := m.c.Fence(i, key); f != v {
		panic("conformance: memnode SetFence cannot lower a counter from " + strconv.FormatUint(f, 10))
	}
}
