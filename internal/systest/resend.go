package systest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/internal/redistest"
)

func init() {
	realCases = append(realCases, realCase{"restart-majority-persistent", testRestartMajorityPersistent})
}

// testRestartMajorityPersistent: a majority of servers that persist every
// write (appendfsync always) restart under a held lock, the last time
// while its Unlock is under way. The holder's connections to them broke
// under it: the driver dials again and sends the release again within the
// node timeout (the engine's resend), so Unlock succeeds, no node keeps
// the holder's token, and a waiter of another Client, blocked in Lock,
// takes the key. The lock's TTL is an hour: a release lost on the broken
// connections would leave the key for that hour, and the waiter's Lock
// would end with its context, failing the test, not with the key.
func testRestartMajorityPersistent(t *testing.T, f Factory, mode core.FanOut) {
	c := startReal(t, f, 3, redistest.Options{Persist: true}, nil)
	if c.srv[0].Embedded() {
		t.Skip("a restart that keeps the data needs redis-server")
	}
	n, key := c.N(), testKey(t, "")
	majority := []int{0, 1}
	// A node timeout that a restart fits in, on a loaded machine.
	opts := redlock.Options{TTL: time.Hour, NodeTimeout: 10 * time.Second}
	holder := newClient(t, c, mode, opts)
	lock := tryLock(testContext(t), t, holder, key)
	requireHolds(t, c, key, lock.Token(), 50*time.Minute, all(n)...)

	// The waiter: another Client, over a driver of its own, blocked in
	// Lock once its first attempt found the key held. It hears the
	// release where its driver announces releases, and polls elsewhere
	// (and where its subscription broke): neither waits for the TTL.
	d := f(t, c.eps)
	attempts := make(chan struct{}, 1024)
	var wd core.Driver = &hookDriver{Driver: d, before: func(node int, cmd core.Command) {
		if node == 0 && (cmd.Op == core.OpAcquire || cmd.Op == core.OpAcquireFenced) { // every attempt sends it first
			attempts <- struct{}{}
		}
	}}
	if ann, ok := d.(core.Announcer); ok {
		wd = &attemptWatch{hookDriver: wd.(*hookDriver), ann: ann}
	}
	waiter := clientOver(t, wd, mode, redlock.Options{TTL: time.Hour, NodeTimeout: 10 * time.Second})
	got := lockAsync(t, waiter, key)
	select {
	case <-attempts:
	case <-time.After(wakeTimeout):
		t.Fatal("the waiter made no attempt")
	}

	// The key survives a restart: the servers persist it.
	for _, i := range majority {
		c.Restart(i)
	}
	requireHolds(t, c, key, lock.Token(), 50*time.Minute, all(n)...)

	// Down again, with every connection to them broken; they come back
	// while Unlock waits for them.
	for _, i := range majority {
		c.Kill(i)
	}
	ctx, cancel := context.WithTimeout(t.Context(), wakeTimeout)
	defer cancel()
	unlocked := make(chan error, 1)
	go func() { unlocked <- lock.Unlock(ctx) }()
	for _, i := range majority {
		c.Restart(i)
	}
	require.NoError(t, <-unlocked, "the release must reach the restarted servers on new connections")
	// A multiplexed Unlock returns at its quorum: the last release may
	// still be on its way. The waiter may hold the key by then.
	requireSettles(t, c, all(n), func(i int) string {
		if got, _, ok := c.Get(i, key); ok && got == lock.Token().String() {
			return "still holds the released token"
		}
		return ""
	})

	r := <-got
	require.NoError(t, r.err, "the waiter must take the key released, not wait for its hour-long TTL")
	assert.NotEqual(t, lock.Token(), r.l.Token())
	// A quorum of nodes holds it; an attempt on a connection that broke
	// under it is not sent again (it may have set the key), so a
	// restarted node may have missed it.
	eventually(t, settle, func() bool {
		held := 0
		for i := range n {
			if got, _, ok := c.Get(i, key); ok && got == r.l.Token().String() {
				held++
			}
		}
		return held >= core.Quorum(n)
	}, "the waiter's token must be on a quorum of nodes")
	require.NoError(t, r.l.Unlock(testContext(t)))
}
