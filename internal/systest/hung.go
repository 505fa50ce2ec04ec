package systest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/internal/batchwrap"
	"github.com/redlock-go/redlock/internal/redistest"
)

// lifecycleCases check what a real server process and a real driver's
// connections add: SIGSTOP, and closing the driver right after a release.
var lifecycleCases = []realCase{
	{"cancel-with-hung-nodes-leaves-nothing", testCancelWithHungNodes},
	{"failure-bounds", testFailureBounds},
	{"release-then-close", testReleaseThenClose},
}

// testReleaseThenClose: twenty times, a fresh driver locks, unlocks and
// is closed at once, as a short-lived program would; then no node holds
// the key. A delete still in flight when Unlock returned would be lost.
func testReleaseThenClose(t *testing.T, f Factory, mode core.FanOut) {
	c := startReal(t, f, 5, redistest.Options{}, nil)
	ctx := testContext(t)
	for i := range 20 {
		key := testKey(t, ":"+strconv.Itoa(i))
		d := f(t, c.eps)
		closer, ok := d.(interface{ Close() error })
		require.True(t, ok, "the driver has no Close")
		client, err := redlock.NewClient(d, keepable(clientOptions(mode, redlock.Options{}), d.Nodes()))
		require.NoError(t, err)
		lock, err := client.TryLock(ctx, key)
		require.NoError(t, err)
		require.NoError(t, lock.Unlock(ctx))
		require.NoError(t, closer.Close())
		for n := range c.N() {
			if tok, pttl, ok := c.Get(n, key); ok {
				require.FailNowf(t, "key left behind", "round %d: node %d (%s) holds %q with %s for %v after Unlock and Close",
					i, n, c.Name(n), key, tok, pttl)
			}
		}
	}
}

// testKillMinorityWhileHeld: kill -9 of the largest minority while the lock
// is held costs nothing: the lock stays valid, extends on the quorum, and
// releases cleanly on the nodes left.
func testKillMinorityWhileHeld(t *testing.T, c cluster, mode core.FanOut) {
	ctx, n, key := testContext(t), c.N(), testKey(t, "")
	client := newClient(t, c, mode, redlock.Options{})
	lock, err := client.TryLock(ctx, key)
	require.NoError(t, err)
	requireHolds(t, c, key, lock.Token(), defaultTTL/2, all(n)...)
	until := lock.Until()
	var killed []int
	for i := 0; len(killed) < n-core.Quorum(n); i += 2 {
		c.Kill(i)
		killed = append(killed, i)
	}
	require.True(t, valid(lock, time.Now()), "killing a minority does not end the lock")
	// A TTL that the extension shows, and that outlasts its round: a
	// killed node whose connection broke under the extension costs the
	// round that node's timeout, as the driver dials it again to send the
	// extension again (the engine's resend), and a sequential round
	// reaches the nodes left only after the killed ones.
	for _, i := range without(all(n), killed...) {
		c.Set(i, key, lock.Token(), defaultTTL*2/5)
	}
	require.NoError(t, lock.Extend(ctx), "extend on the quorum left")
	assert.True(t, lock.Until().After(until), "the validity counts from the extension")
	requireHolds(t, c, key, lock.Token(), defaultTTL/2, without(all(n), killed...)...)
	require.NoError(t, lock.Unlock(ctx))
	requireAbsent(t, c, key, without(all(n), killed...)...)
}

// sendWatch is a driver that reports, on sent, the node of every acquire
// command its rounds send, so that a test can act once a round is known to
// be waiting on a hung node, and keeps the token of the last.
type sendWatch struct {
	core.Driver
	sent chan int
	mu   sync.Mutex
	tok  core.Token
}

// token returns the token of the last acquire command sent.
func (d *sendWatch) token() core.Token {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.tok
}

func (d *sendWatch) Clock() core.Clock { return clockOf(d.Driver) }

func (d *sendWatch) Begin(ctx context.Context) core.Batch {
	b := d.Driver.Begin(ctx)
	return batchwrap.Keep(&watchedBatch{Batch: b, d: d}, b)
}

type watchedBatch struct {
	core.Batch
	d *sendWatch
}

func (b *watchedBatch) Send(node int, cmd core.Command, deadline time.Time) {
	b.Batch.Send(node, cmd, deadline)
	if cmd.Op == core.OpAcquire {
		b.d.mu.Lock()
		b.d.tok = cmd.Token
		b.d.mu.Unlock()
		b.d.sent <- node
	}
}

// testCancelWithHungNodes: an acquire cancelled while two of five nodes are
// SIGSTOPped leaves no key of the cancelled attempt on any node once they
// continue. The attempt's SETs are queued on the hung nodes; its cleanup's
// deletes must run after them there, not be dropped because they timed
// out.
func testCancelWithHungNodes(t *testing.T, f Factory, mode core.FanOut) {
	c := startReal(t, f, 5, redistest.Options{}, nil)
	base, key := testContext(t), testKey(t, "")
	// Node 0 is held by another client: the quorum of three needs a hung
	// node, so the round stays open until the cancel.
	c.Set(0, key, foreignToken, time.Minute)
	hung := []int{1, 2}
	for _, i := range hung {
		c.Stop(i)
	}
	watch := &sendWatch{Driver: c.Driver(), sent: make(chan int, 4*c.N())}
	client := clientOver(t, watch, mode, redlock.Options{NodeTimeout: time.Second})

	ctx, cancel := context.WithCancel(base)
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := client.TryLock(ctx, key)
		errc <- err
	}()
	sentTo := map[int]bool{}
	for !sentTo[1] { // both fan-outs wait on node 1 once it has the SET
		select {
		case n := <-watch.sent:
			sentTo[n] = true
		case <-base.Done():
			t.Fatal("the attempt never sent its SET to node 1")
		}
	}
	cancel()
	err := <-errc
	requireKind(t, err, core.ErrCancelled)
	for len(watch.sent) > 0 {
		sentTo[<-watch.sent] = true
	}
	tok := watch.token() // the one attempt's

	for _, i := range hung {
		c.Cont(i)
	}
	// Each continued node runs what was queued for it: the SET first, then
	// the cleanup's delete. Wait for the SET, so that the check below cannot
	// pass before it lands; then nothing of the attempt may remain.
	for _, i := range hung {
		if sentTo[i] {
			waitForCommand(t, c, i, "set")
		}
	}
	requireSettles(t, c, all(c.N()), func(i int) string {
		if got, pttl, ok := c.Get(i, key); ok && got == tok.String() {
			return "holds the cancelled attempt's key for another " + pttl.String()
		}
		return ""
	})
}

// waitForCommand waits until node i has run cmd at least once (INFO
// commandstats), up to settle; a driver that never wrote the command is
// not waited for longer.
func waitForCommand(t *testing.T, c *realCluster, i int, cmd string) {
	t.Helper()
	for deadline := time.Now().Add(settle); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		info, err := redis.String(c.srv[i].Do("INFO", "commandstats"))
		require.NoError(t, err)
		if strings.Contains(info, "cmdstat_"+cmd+":calls=") {
			return
		}
	}
	t.Logf("node %d (%s) never ran %s: the driver did not write it", i, c.Name(i), cmd)
}

// testFailureBounds: a hung minority costs an acquisition at most one node
// timeout; a majority that refuses connections or hangs makes an attempt
// fail with ErrQuorumUnreachable, naming those nodes, within the node
// timeouts it may wait (its cleanup does not wait for them again); Lock,
// trying again until its ctx's deadline, returns by that deadline plus
// the attempt it interrupts. The bounds carry generous slack for a loaded
// machine: they catch hangs and extra rounds, not slowness.
func testFailureBounds(t *testing.T, f Factory, mode core.FanOut) {
	const (
		timeout = 200 * time.Millisecond
		delay   = 20 * time.Millisecond
		tries   = 3
		slack   = 500 * time.Millisecond
	)
	c := startReal(t, f, 5, redistest.Options{}, nil)
	ctx := testContext(t)
	client := newClient(t, c, mode, redlock.Options{NodeTimeout: timeout, Backoff: redlock.RandomDelay(delay, delay)})
	within := func(what string, start time.Time, bound time.Duration) {
		t.Helper()
		elapsed := time.Since(start)
		assert.LessOrEqual(t, elapsed, bound+slack, "%s took %v, bound %v (+%v slack)", what, elapsed, bound, slack)
	}

	c.Stop(1)
	start := time.Now()
	lock, err := client.TryLock(ctx, testKey(t, "-minority"))
	require.NoError(t, err)
	within("an acquisition past one hung node", start, timeout)
	require.NoError(t, lock.Unlock(ctx))

	// Three of five hung: each attempt waits one node timeout when
	// multiplexed, and one per hung node it reaches before the quorum is
	// lost (three) when sequential; the cleanups do not wait again.
	hung := []int{1, 2, 3}
	c.Stop(2)
	c.Stop(3)
	perAttempt := timeout
	if mode == core.Sequential {
		perAttempt = 3 * timeout
	}
	start = time.Now()
	_, err = client.TryLock(ctx, testKey(t, "-hung"))
	within("an attempt with a hung majority", start, perAttempt)
	e := requireError(t, err, core.ErrQuorumUnreachable)
	assert.Equal(t, 1, e.Attempts)
	assert.ElementsMatch(t, hung, e.Failed(core.StatusTimeout), "%v", err)
	assertNamed(t, c, err, hung)

	// Lock tries again until its deadline: time for tries attempts. The
	// deadline ends a wait (the last attempt's error) or an attempt
	// (ErrCancelled), whose cleanup may then wait for the hung nodes
	// once.
	deadline := tries*perAttempt + (tries-1)*delay
	lctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	start = time.Now()
	_, err = client.Lock(lctx, testKey(t, "-hung-lock"))
	within("Lock with a hung majority", start, deadline+perAttempt)
	if errors.Is(err, core.ErrCancelled) {
		e = requireError(t, err, core.ErrCancelled)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
	} else {
		e = requireError(t, err, core.ErrQuorumUnreachable)
		assert.ElementsMatch(t, hung, e.Failed(core.StatusTimeout), "%v", err)
	}
	assert.GreaterOrEqual(t, e.Attempts, 2, "Lock tried again: %v", err)
	for _, i := range hung {
		c.Cont(i)
	}

	// Three of five refusing connections: no node timeout at all.
	for _, i := range hung {
		c.Kill(i)
	}
	start = time.Now()
	_, err = client.TryLock(ctx, testKey(t, "-killed"))
	within("an attempt with a majority down", start, 0)
	if err == nil { // explain, rather than only fail: it should be impossible
		var seen []string
		for _, i := range hung {
			seen = append(seen, fmt.Sprintf("node %d (%s): %s", i, c.Name(i), whoAnswers(c.Name(i))))
		}
		t.Fatalf("an acquisition with three of five servers killed succeeded; at their addresses now: %s",
			strings.Join(seen, "; "))
	}
	e = requireError(t, err, core.ErrQuorumUnreachable)
	assert.Equal(t, 1, e.Attempts)
	failed := e.Failed(core.StatusError)
	assert.NotEmpty(t, failed, "%v", err)
	assert.Subset(t, hung, failed, "only the killed nodes fail: %v", err)
	assertNamed(t, c, err, failed)
}

// whoAnswers describes what answers INFO at addr: a killed server's
// address should refuse, and anything else names a process that took it.
func whoAnswers(addr string) string {
	conn, err := redis.Dial("tcp", addr, redis.DialConnectTimeout(time.Second), redis.DialReadTimeout(time.Second))
	if err != nil {
		return err.Error()
	}
	defer func() { _ = conn.Close() }() // a diagnostic's connection: nothing to report
	info, err := redis.String(conn.Do("INFO", "server"))
	if err != nil {
		return err.Error()
	}
	var fields []string
	for _, line := range strings.Split(info, "\n") {
		if k, _, _ := strings.Cut(line, ":"); k == "process_id" || k == "tcp_port" || k == "run_id" {
			fields = append(fields, strings.TrimSpace(line))
		}
	}
	return "answers " + strings.Join(fields, " ")
}
