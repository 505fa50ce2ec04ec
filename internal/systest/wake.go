package systest

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/internal/redistest"
)

// Wake on release: a Client's Lock over the driver waits for the
// holder's release to be announced, or for its keys to expire, and not
// for a retry delay. Every case sets the delay to an hour, so that a
// waiter that falls back to polling times the case out: acquiring at all
// proves the wake.
var wakeCases = []behaviouralCase{
	{"wake-handoff", []int{3, 5}, testWakeHandoff},
	{"wake-crashed-holder", []int{3}, testWakeCrashedHolder},
	{"wake-stopped-node", []int{5}, testWakeStoppedNode},
}

func init() { behavioural = append(behavioural, wakeCases...) }

// wakeTimeout bounds a waiter: far below the hour of a retry delay.
const wakeTimeout = 30 * time.Second

// attemptWatch counts acquire attempts (the acquire commands to node 0,
// which every attempt sends first) and announces each on sent; it relays
// the driver's announcements.
type attemptWatch struct {
	*hookDriver
	ann  core.Announcer
	sent chan struct{}
}

func (w *attemptWatch) Watch(key string, notify func(int)) core.Watch {
	return w.ann.Watch(key, notify)
}

// requireAnnouncer skips the wake cases for a driver that does not
// announce releases: the suite's own reference driver, a test double.
func requireAnnouncer(t *testing.T, d core.Driver) core.Announcer {
	t.Helper()
	ann, ok := d.(core.Announcer)
	if !ok {
		t.Skipf("%T does not announce releases (core.Announcer): its Lock polls, which the handle cases cover", d)
	}
	return ann
}

// watchAttempts wraps c's driver, which must announce releases.
func watchAttempts(t *testing.T, c cluster) *attemptWatch { return watchAttemptsOn(t, c.Driver()) }

// watchAttemptsOn wraps d, which must announce releases.
func watchAttemptsOn(t *testing.T, d core.Driver) *attemptWatch {
	ann := requireAnnouncer(t, d)
	w := &attemptWatch{ann: ann, sent: make(chan struct{}, 1024)}
	w.hookDriver = &hookDriver{Driver: ann, before: func(node int, cmd core.Command) {
		if node == 0 && (cmd.Op == core.OpAcquire || cmd.Op == core.OpAcquireFenced) {
			w.sent <- struct{}{}
		}
	}}
	return w
}

// attempts waits for k more attempts.
func (w *attemptWatch) attempts(t *testing.T, k int) {
	t.Helper()
	for range k {
		select {
		case <-w.sent:
		case <-time.After(wakeTimeout):
			t.Fatalf("no acquire attempt within %v", wakeTimeout)
		}
	}
}

// count drains and counts the attempts made since the last call.
func (w *attemptWatch) count() int {
	n := 0
	for {
		select {
		case <-w.sent:
			n++
		default:
			return n
		}
	}
}

func wakeClient(t *testing.T, w *attemptWatch, mode core.FanOut) *redlock.Client {
	return clientOver(t, w, mode, redlock.Options{
		Backoff: redlock.RandomDelay(time.Hour, time.Hour)})
}

type lockResult struct {
	l   *redlock.Lock
	err error
}

// lockAsync starts Lock on key, bounded by wakeTimeout.
func lockAsync(t *testing.T, c *redlock.Client, key string) <-chan lockResult {
	got := make(chan lockResult, 1)
	ctx, cancel := context.WithTimeout(testContext(t), wakeTimeout)
	go func() {
		defer cancel()
		l, err := c.Lock(ctx, key)
		got <- lockResult{l, err}
	}()
	return got
}

// requireLocked waits for the result of lockAsync and unlocks it.
func requireLocked(t *testing.T, got <-chan lockResult) {
	t.Helper()
	r := <-got
	require.NoError(t, r.err, "the waiter was not woken: it would have polled an hour later")
	require.NoError(t, r.l.Unlock(testContext(t)))
}

// testWakeHandoff: a waiter tries once, once more as its subscriptions
// start (a release may have gone unheard), then sleeps until the holder's
// release is announced and takes the lock at once.
func testWakeHandoff(t *testing.T, c cluster, mode core.FanOut) {
	w, holder, got := waiting(t, c, mode)
	require.NoError(t, holder.Unlock(testContext(t)))
	requireLocked(t, got)
	assert.LessOrEqual(t, w.count(), 2, "attempts after the release")
}

// testWakeCrashedHolder: a holder that never releases (another client's
// keys, with a short TTL): the waiter learns their remaining TTL from its
// refused attempt and acquires once they expire.
func testWakeCrashedHolder(t *testing.T, c cluster, mode core.FanOut) {
	w := watchAttempts(t, c)
	client := wakeClient(t, w, mode)
	key := testKey(t, "")
	for i := range c.N() {
		c.Set(i, key, foreignToken, 700*time.Millisecond)
	}
	requireLocked(t, lockAsync(t, client, key))
	assert.LessOrEqual(t, w.count(), 4, "attempts: the first, the one as its watch starts, "+
		"the probing one that learnt the expiry, the one at the expiry")
	// The waiter wakes once a quorum of the foreign keys has expired; the
	// others (set a little later) may outlive its Lock and Unlock, but
	// must still be the foreign ones: neither overwritten nor deleted.
	for i := range c.N() {
		if tok, _, ok := c.Get(i, key); ok {
			assert.Equal(t, foreignToken.String(), tok, "node %d: the foreign key was replaced", i)
		}
	}
}

// testWakeStoppedNode: with a node SIGSTOPped, the holder and the waiter
// win on the others; the waiter is woken by their announcements.
func testWakeStoppedNode(t *testing.T, c cluster, mode core.FanOut) {
	c.Stop(c.N() - 1)
	defer c.Cont(c.N() - 1)
	_, holder, got := waiting(t, c, mode)
	require.NoError(t, holder.Unlock(testContext(t)))
	requireLocked(t, got)
}

// Wake on real servers: subscriptions lost and re-established, and the
// fallback to polling where the server refuses them.
func init() {
	realCases = append(realCases,
		realCase{"wake-subscriptions-killed", testWakeSubscriptionsKilled},
		realCase{"wake-node-restarted", testWakeNodeRestarted},
		realCase{"wake-refused-polls", testWakeRefusedPolls},
		realCase{"multi-process-wake", testMultiProcessWake},
	)
}

// waiting starts a holder and a waiter on c, and returns once the waiter
// has tried twice (its first attempt, and the one its watch's start
// caused): it then waits on its subscriptions.
func waiting(t *testing.T, c cluster, mode core.FanOut) (w *attemptWatch, holder *redlock.Lock, got <-chan lockResult) {
	t.Helper()
	w = watchAttempts(t, c)
	client := wakeClient(t, w, mode)
	key := testKey(t, "")
	holder = tryLock(testContext(t), t, client, key)
	w.attempts(t, 1)
	got = lockAsync(t, client, key)
	w.attempts(t, 2)
	return w, holder, got
}

// testWakeSubscriptionsKilled: every subscription connection killed
// mid-wait (CLIENT KILL TYPE pubsub): the driver redials and subscribes
// again, the new confirmations make the waiter try again (a release may
// have gone unheard), and the holder's release then wakes it.
func testWakeSubscriptionsKilled(t *testing.T, f Factory, mode core.FanOut) {
	c := startReal(t, f, 3, redistest.Options{}, nil)
	if c.srv[0].Embedded() {
		t.Skip("CLIENT KILL TYPE pubsub needs redis-server")
	}
	w, holder, got := waiting(t, c, mode)
	for _, s := range c.srv {
		_, err := s.Do("CLIENT", "KILL", "TYPE", "pubsub")
		require.NoError(t, err)
	}
	w.attempts(t, 1)
	require.NoError(t, holder.Unlock(testContext(t)))
	requireLocked(t, got)
}

// testWakeNodeRestarted: a node restarted mid-wait (it loses the holder's
// key, and the waiter its subscription there): the driver subscribes
// again once it is back, and the release of the holder's other keys wakes
// the waiter. Its subscription's loss and return count as one node's
// possible release; it needs two, so it makes no attempt meanwhile.
func testWakeNodeRestarted(t *testing.T, f Factory, mode core.FanOut) {
	c := startReal(t, f, 3, redistest.Options{}, nil)
	_, holder, got := waiting(t, c, mode)
	c.Restart(0)
	// The subscription's return has no event the test can wait on but the
	// server's own count, which is polled.
	channel := "redlock:release:" + testKey(t, "")
	require.Eventually(t, func() bool {
		r, err := c.srv[0].Do("PUBSUB", "NUMSUB", channel)
		return err == nil && len(r.([]any)) == 2 && r.([]any)[1] == int64(1)
	}, wakeTimeout, 5*time.Millisecond, "node 0's subscription was not re-established")
	require.NoError(t, holder.Unlock(testContext(t)))
	requireLocked(t, got)
}

// testWakeRefusedPolls: an ACL user without channel rights cannot
// subscribe (NOPERM), and its releases cannot publish: releases still
// work, the driver says once that notifications are unavailable, and Lock
// polls with Options.Backoff's delays.
func testWakeRefusedPolls(t *testing.T, f Factory, mode core.FanOut) {
	opts := redistest.Options{User: "locker", UserPassword: "pw-of-locker"}
	log := syncBuffer{logged: make(chan struct{})}
	prev := slog.Default() // the drivers of RunDial take it as drivers.Options.Logger
	slog.SetDefault(slog.New(slog.NewTextHandler(&log, nil)))
	defer slog.SetDefault(prev)
	c := startReal(t, f, 3, opts, nil)
	if c.srv[0].Embedded() {
		t.Skip("ACL channel rules need redis-server")
	}
	for _, s := range c.srv {
		_, err := s.Do("ACL", "SETUSER", "locker", "resetchannels")
		require.NoError(t, err)
	}
	requireAnnouncer(t, c.Driver())

	client := clientOver(t, c.Driver(), mode, redlock.Options{
		Backoff: redlock.RandomDelay(time.Millisecond, 5*time.Millisecond)})
	key := testKey(t, "")
	for i := range 3 {
		holder, err := client.TryLock(testContext(t), key)
		require.NoError(t, err)
		got := lockAsync(t, client, key)
		if i == 0 { // the waiter's watch dials the subscriptions, which are refused
			select {
			case <-log.logged:
			case <-time.After(wakeTimeout):
				t.Fatal("no warning that notifications are unavailable")
			}
		}
		require.NoError(t, holder.Unlock(testContext(t)), "a release whose announcement is refused still releases")
		requireLocked(t, got)
	}
	assert.Equal(t, 1, strings.Count(log.String(), "release notifications are unavailable"), "%s", log.String())
	assert.Contains(t, log.String(), "NOPERM")
}

// syncBuffer is a bytes.Buffer safe for concurrent writes; logged is
// closed at the first write.
type syncBuffer struct {
	mu     sync.Mutex
	b      bytes.Buffer
	logged chan struct{}
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.b.Len() == 0 {
		close(s.logged)
	}
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
