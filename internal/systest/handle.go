package systest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/core"
)

// The redlock.Client handle over the driver: the lease extends across
// TTLs, its Context ends with the right cause when the lock is lost, and
// Unlock stops it.
var handleCases = []behaviouralCase{
	{"handle-lease", []int{3}, testHandleLease},
	{"handle-lost", []int{3, 5}, testHandleLost},
	{"handle-unreachable", []int{3}, testHandleUnreachable},
	{"handle-fence", []int{3}, testHandleFence},
}

// leaseTTL is short, so that a lease extends several times in a test.
// leaseNodeTimeout is short against it: a lease declares its lock lost a
// round's bound (the node timeout, once per node when sequential) before
// the validity ends, and starts no extension that could end after that,
// so that with five sequential nodes the bound must leave room for an
// extension and its retries.
const (
	leaseTTL         = 1500 * time.Millisecond
	leaseNodeTimeout = 100 * time.Millisecond
)

// extendWatch wraps a Driver in a hookDriver that announces each extend
// command it sends to node 0 on extCh, and counts them.
type extendWatch struct {
	*hookDriver
	mu    sync.Mutex
	sent  int
	extCh chan struct{}
}

func watchExtends(d core.Driver) *extendWatch {
	w := &extendWatch{extCh: make(chan struct{}, 64)}
	w.hookDriver = &hookDriver{Driver: d, before: func(node int, cmd core.Command) {
		if cmd.Op != core.OpExtend || node != 0 {
			return
		}
		w.mu.Lock()
		w.sent++
		w.mu.Unlock()
		select {
		case w.extCh <- struct{}{}:
		default:
		}
	}}
	return w
}

func (w *extendWatch) extends() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.sent
}

// awaitDone waits for the lock's Context to end and returns its cause.
func awaitDone(t *testing.T, l *redlock.Lock) error {
	t.Helper()
	select {
	case <-l.Context().Done():
		return context.Cause(l.Context())
	case <-time.After(testTimeout):
		require.FailNow(t, "the lock's Context did not end")
		return nil
	}
}

// testHandleLease: a leased lock outlives several TTLs, keeps its token on
// every node, and Unlock ends the lease: the keys are gone and no extension
// follows.
func testHandleLease(t *testing.T, c cluster, mode core.FanOut) {
	w := watchExtends(c.Driver())
	client := clientOver(t, w, mode, redlock.Options{
		TTL: leaseTTL, NodeTimeout: leaseNodeTimeout,
		Lease: &redlock.Lease{Fraction: 0.25}})
	key := testKey(t, "")
	l, err := client.TryLock(testContext(t), key)
	require.NoError(t, err)
	// Eight extensions, one every quarter of the validity: twice the TTL.
	for i := 0; i < 8; i++ {
		select {
		case <-w.extCh:
		case <-l.Context().Done():
			require.FailNow(t, "the lease lost the lock", "%v", context.Cause(l.Context()))
		case <-time.After(testTimeout):
			require.FailNow(t, "no extension")
		}
	}
	requireHolds(t, c, key, l.Token(), 0, all(c.N())...)
	require.NoError(t, l.Unlock(testContext(t)))
	after := w.extends()
	requireAbsent(t, c, key, all(c.N())...)
	assert.ErrorIs(t, context.Cause(l.Context()), redlock.ErrUnlocked)
	assert.ErrorIs(t, l.Unlock(testContext(t)), redlock.ErrUnlocked)
	assert.Equal(t, after, w.extends(), "an extension was sent after Unlock returned")
}

// testHandleLost: another holder takes a majority of the keys (they
// expired unseen), or they vanish: the lease's next extension ends the
// Context with ErrTaken, or ErrNotHeld, and Unlock leaves the other
// holder's keys alone.
func testHandleLost(t *testing.T, c cluster, mode core.FanOut) {
	for _, tc := range []struct {
		name  string
		steal func(i int, key string)
		want  error
	}{
		{"taken", func(i int, key string) { c.Set(i, key, foreignToken, time.Minute) }, redlock.ErrTaken},
		{"missing", func(i int, key string) { c.Del(i, key) }, redlock.ErrNotHeld},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := clientOver(t, c.Driver(), mode, redlock.Options{
				TTL: leaseTTL, NodeTimeout: leaseNodeTimeout,
				Lease: &redlock.Lease{Fraction: 0.25}})
			key := testKey(t, "")
			l, err := client.TryLock(testContext(t), key)
			require.NoError(t, err)
			requireHolds(t, c, key, l.Token(), 0, all(c.N())...)
			lost := all(c.N())[:lossThreshold(c.N())]
			for _, i := range lost {
				tc.steal(i, key)
			}
			cause := awaitDone(t, l)
			assert.ErrorIs(t, cause, redlock.ErrLost)
			assert.ErrorIs(t, cause, tc.want)
			var le *redlock.LostError
			require.ErrorAs(t, cause, &le)
			assert.Equal(t, key, le.Key)
			assert.ErrorIs(t, l.Extend(testContext(t)), redlock.ErrLost)
			assert.ErrorIs(t, l.Unlock(testContext(t)), redlock.ErrLost)
			requireAbsent(t, c, key, without(all(c.N()), lost...)...)
			if errors.Is(tc.want, redlock.ErrTaken) {
				requireHolds(t, c, key, foreignToken, 0, lost...)
			}
		})
	}
}

// testHandleUnreachable: a majority hangs (SIGSTOP) while a leased lock is
// held. The extensions time out and are retried while a round still fits
// in the validity; then the Context ends with ErrQuorumUnreachable, before
// the validity does. Unlock afterwards releases what it can.
func testHandleUnreachable(t *testing.T, c cluster, mode core.FanOut) {
	w := watchExtends(c.Driver())
	// Twice the usual TTL: a sequential round over two hung nodes takes
	// most of the usual TTL's slack, and on a loaded machine the retry
	// then no longer fits before the loss is due (seen once in a few
	// dozen runs at load 10+), which is the lease doing its job.
	client := clientOver(t, w, mode, redlock.Options{
		TTL: 2 * leaseTTL, NodeTimeout: leaseNodeTimeout,
		Lease: &redlock.Lease{Fraction: 1.0 / 3}})
	key := testKey(t, "")
	l, err := client.TryLock(testContext(t), key)
	require.NoError(t, err)
	until := l.Until()
	hung := all(c.N())[:lossThreshold(c.N())]
	for _, i := range hung {
		c.Stop(i)
	}
	cause := awaitDone(t, l)
	assert.ErrorIs(t, cause, redlock.ErrQuorumUnreachable)
	assert.ErrorIs(t, cause, redlock.ErrLost)
	assert.True(t, time.Now().Before(until), "the lease waited for the validity to end instead of giving up when no round fitted")
	assert.GreaterOrEqual(t, w.extends(), 2, "the lease did not retry the extension")
	for _, i := range hung {
		c.Cont(i)
	}
	assert.ErrorIs(t, l.Unlock(testContext(t)), redlock.ErrLost)
	requireAbsent(t, c, key, all(c.N())...)
}

// testHandleFence: a fencing Client's handles carry growing fences; a
// plain Client's refuse Fence with ErrNoFencing, sending nothing.
func testHandleFence(t *testing.T, c cluster, mode core.FanOut) {
	fenced := clientOver(t, c.Driver(), mode, redlock.Options{Fencing: true})
	key := testKey(t, "")
	var last uint64
	for i := 0; i < 3; i++ {
		l, err := fenced.Lock(testContext(t), key)
		require.NoError(t, err)
		f, err := l.Fence()
		require.NoError(t, err)
		assert.Greater(t, f, last)
		last = f
		require.NoError(t, l.Unlock(testContext(t)))
	}
	plain := clientOver(t, c.Driver(), mode, redlock.Options{})
	l, err := plain.TryLock(testContext(t), key+":plain")
	require.NoError(t, err)
	_, err = l.Fence()
	assert.ErrorIs(t, err, redlock.ErrNoFencing)
	require.NoError(t, l.Unlock(testContext(t)))
}

func init() { behavioural = append(behavioural, handleCases...) }
