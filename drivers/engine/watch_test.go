package engine

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers/wire"
)

// The channels of the keys the tests watch, spelled out: they are the
// release script's, which PUBLISHes on "redlock:release:<key>".
const (
	chK     = "redlock:release:k"
	chJ     = "redlock:release:j"
	chOther = "redlock:release:other"
)

// subCall is one Subscribe or Unsubscribe a fakeSub received.
type subCall struct {
	conn     *fakeSub
	cmd      string // "SUBSCRIBE" or "UNSUBSCRIBE"
	channels []string
}

// subDial is one call of fakeSubNet.dial: conn is nil when it failed.
type subDial struct {
	node int
	conn *fakeSub
}

// fakeSubNet is the nodes' pub/sub side of a test: every dial and every
// command the engine writes is an event the test receives, and the test
// hands the engine what its connections receive.
type fakeSubNet struct {
	t      *testing.T
	dials  chan subDial
	calls  chan subCall
	active atomic.Int64 // the engine's calls of dial and of the connections' methods in progress

	mu      sync.Mutex
	ndials  []int         // per node
	dialErr []error       // per node, returned by dial when set
	hold    chan struct{} // when set, a Receive ended by Close waits for it to close
	held    chan int      // the nodes of the Receives that hold waits for
}

// fakeSub is one subscription connection.
type fakeSub struct {
	net      *fakeSubNet
	node     int
	deadline bool // the dial's context had a deadline

	events chan Event    // the test's pushes, taken by Receive
	fail   chan error    // the test's failure, returned by Receive
	closed chan struct{} // closed by Close
	once   sync.Once

	mu  sync.Mutex
	err error // the failure Receive returned
}

var errSubClosed = errors.New("use of closed subscription")

func newFakeSubNet(t *testing.T, n int) *fakeSubNet {
	return &fakeSubNet{t: t, dials: make(chan subDial, 1024), calls: make(chan subCall, 1024),
		ndials: make([]int, n), dialErr: make([]error, n)}
}

func (f *fakeSubNet) dial(ctx context.Context, node int) (Subscription, error) {
	f.active.Add(1)
	defer f.active.Add(-1)
	_, deadline := ctx.Deadline()
	f.mu.Lock()
	f.ndials[node]++
	err := f.dialErr[node]
	f.mu.Unlock()
	if err != nil {
		f.dials <- subDial{node: node}
		return nil, err
	}
	c := &fakeSub{net: f, node: node, deadline: deadline,
		events: make(chan Event), fail: make(chan error), closed: make(chan struct{})}
	f.dials <- subDial{node: node, conn: c}
	return c, nil
}

// setDialErr makes node's dials fail with err (nil: succeed).
func (f *fakeSubNet) setDialErr(node int, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.dialErr[node] = err
}

// dialCounts returns how many dials each node made.
func (f *fakeSubNet) dialCounts() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.ndials)
}

// nextDial waits for the next dial of any node.
func (f *fakeSubNet) nextDial() subDial {
	f.t.Helper()
	select {
	case d := <-f.dials:
		return d
	case <-time.After(10 * time.Second):
		f.t.Fatal("no subscription dial")
		return subDial{}
	}
}

// dialedAll waits for one successful dial of each of the n nodes, in any
// order, and returns their connections by node.
func (f *fakeSubNet) dialedAll(n int) []*fakeSub {
	f.t.Helper()
	conns := make([]*fakeSub, n)
	for range n {
		d := f.nextDial()
		require.NotNil(f.t, d.conn, "node %d's dial failed", d.node)
		require.Nil(f.t, conns[d.node], "node %d dialled twice", d.node)
		conns[d.node] = d.conn
	}
	return conns
}

// redialed waits for node to dial successfully, and returns how many of
// its dials failed first.
func (f *fakeSubNet) redialed(node int) (*fakeSub, int) {
	f.t.Helper()
	failed := 0
	for {
		d := f.nextDial()
		require.Equal(f.t, node, d.node, "another node dialled")
		if d.conn != nil {
			return d.conn, failed
		}
		failed++
	}
}

// call waits for the next command the engine writes.
func (f *fakeSubNet) call() subCall {
	f.t.Helper()
	select {
	case c := <-f.calls:
		return c
	case <-time.After(10 * time.Second):
		f.t.Fatal("no SUBSCRIBE or UNSUBSCRIBE")
		return subCall{}
	}
}

// callsAll waits for one command on each of the n nodes, in any order,
// and returns them by node.
func (f *fakeSubNet) callsAll(n int) []subCall {
	f.t.Helper()
	calls := make([]subCall, n)
	for range n {
		c := f.call()
		require.Zero(f.t, calls[c.conn.node].cmd, "node %d wrote twice: %v then %v", c.conn.node, calls[c.conn.node], c)
		calls[c.conn.node] = c
	}
	return calls
}

// expectAll waits for one command on each of conns' nodes, each cmd for
// exactly channels (in any order), on that node's connection.
func (f *fakeSubNet) expectAll(conns []*fakeSub, cmd string, channels ...string) {
	f.t.Helper()
	for i, c := range f.callsAll(len(conns)) {
		assert.Same(f.t, conns[i], c.conn, "node %d: on its one subscription connection", i) //nolint:gosec // G602: callsAll returns len(conns) calls
		assert.Equal(f.t, cmd, c.cmd, "node %d", i)
		assert.ElementsMatch(f.t, channels, c.channels, "node %d: %s", i, cmd)
	}
}

func (c *fakeSub) Subscribe(_ context.Context, channels ...string) error {
	return c.write("SUBSCRIBE", channels)
}

func (c *fakeSub) Unsubscribe(_ context.Context, channels ...string) error {
	return c.write("UNSUBSCRIBE", channels)
}

func (c *fakeSub) write(cmd string, channels []string) error {
	c.net.active.Add(1)
	defer c.net.active.Add(-1)
	if len(channels) == 0 {
		c.net.t.Errorf("node %d: %s without a channel", c.node, cmd)
	}
	if err := c.failed(); err != nil {
		return err
	}
	c.net.calls <- subCall{conn: c, cmd: cmd, channels: slices.Clone(channels)}
	return nil
}

func (c *fakeSub) Receive(context.Context) (Event, error) {
	c.net.active.Add(1)
	defer c.net.active.Add(-1)
	if err := c.failed(); err != nil {
		return Event{}, err
	}
	select {
	case ev := <-c.events:
		return ev, nil
	case err := <-c.fail:
		c.mu.Lock()
		c.err = err
		c.mu.Unlock()
		return Event{}, err
	case <-c.closed:
		c.net.mu.Lock()
		hold := c.net.hold
		c.net.mu.Unlock()
		if hold != nil {
			c.net.held <- c.node
			<-hold
		}
		return Event{}, errSubClosed
	}
}

func (c *fakeSub) Close() error {
	c.once.Do(func() { close(c.closed) })
	return nil
}

// failed returns the connection's failure, if it failed or was closed.
func (c *fakeSub) failed() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return c.err
	}
	if c.isClosed() {
		return errSubClosed
	}
	return nil
}

func (c *fakeSub) isClosed() bool {
	select {
	case <-c.closed:
		return true
	default:
		return false
	}
}

// push hands ev to the engine's Receive.
func (c *fakeSub) push(ev Event) {
	c.net.t.Helper()
	select {
	case c.events <- ev:
	case <-c.closed:
		c.net.t.Fatalf("node %d: %v pushed on a closed connection", c.node, ev)
	case <-time.After(10 * time.Second):
		c.net.t.Fatalf("node %d: nobody receives %v", c.node, ev)
	}
}

// breakWith fails the engine's Receive with err.
func (c *fakeSub) breakWith(err error) {
	c.net.t.Helper()
	select {
	case c.fail <- err:
	case <-time.After(10 * time.Second):
		c.net.t.Fatalf("node %d: nobody receives", c.node)
	}
}

// waitClosed waits until the engine closes the connection.
func (c *fakeSub) waitClosed() {
	c.net.t.Helper()
	select {
	case <-c.closed:
	case <-time.After(10 * time.Second):
		c.net.t.Fatalf("node %d: connection not closed", c.node)
	}
}

func subscribed(ch string) Event   { return Event{Kind: EventSubscribed, Channel: ch} }
func unsubscribed(ch string) Event { return Event{Kind: EventUnsubscribed, Channel: ch} }
func message(ch string) Event      { return Event{Kind: EventMessage, Channel: ch} }

// notes records a Watch's notifications, in order.
type notes struct {
	t        *testing.T
	c        chan int
	overflow atomic.Bool
}

func newNotes(t *testing.T) *notes { return &notes{t: t, c: make(chan int, 1024)} }

// notify is the Watch's notify: it must not block.
func (n *notes) notify(node int) {
	select {
	case n.c <- node:
	default:
		n.overflow.Store(true)
	}
}

// expect waits for the next notification, which must be of node.
func (n *notes) expect(node int) {
	n.t.Helper()
	require.False(n.t, n.overflow.Load(), "notifications overflowed")
	select {
	case got := <-n.c:
		require.Equal(n.t, node, got, "notified node")
	case <-time.After(10 * time.Second):
		n.t.Fatalf("node %d not notified", node)
	}
}

// none checks that no notification is pending.
func (n *notes) none() {
	n.t.Helper()
	require.False(n.t, n.overflow.Load(), "notifications overflowed")
	select {
	case got := <-n.c:
		n.t.Fatalf("unexpected notification of node %d", got)
	default:
	}
}

// syncBuffer is a bytes.Buffer that a logger may write from any goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func okDial(context.Context, int) (Conn, error) { return okConn{}, nil }

// startWatch returns an engine over n nodes whose subscription
// connections f dials, logging into logs, closed at cleanup.
func startWatch(t *testing.T, n int) (e *Engine, f *fakeSubNet, logs *syncBuffer) {
	t.Helper()
	f = newFakeSubNet(t, n)
	logs = &syncBuffer{}
	names := make([]string, n)
	for i := range names {
		names[i] = "node" + string(rune('A'+i)) + ":6379"
	}
	e = mustNew(t, Config{Names: names, Dial: okDial, Subscribe: f.dial,
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	t.Cleanup(e.Close)
	return e, f, logs
}

// TestWatchSubscribes: the subscription connections are dialled at the
// first Watch, one per node, shared by the keys; a key's channel is
// subscribed on every node at its first Watch and unsubscribed at the Stop
// of its last.
func TestWatchSubscribes(t *testing.T) {
	e, f, _ := startWatch(t, 3)
	assert.Equal(t, []int{0, 0, 0}, f.dialCounts(), "no subscription connection before the first Watch")

	a := newNotes(t)
	ha := e.Watch("k", a.notify)
	conns := f.dialedAll(3)
	for i, c := range conns {
		assert.True(t, c.deadline, "node %d: the dial has a deadline", i)
	}
	f.expectAll(conns, "SUBSCRIBE", chK)
	assert.Zero(t, ha.Listening(), "nothing confirmed yet")

	// A second Watch of k sends nothing: the next command each node writes
	// is a barrier key's SUBSCRIBE, alone.
	b := newNotes(t)
	hb := e.Watch("k", b.notify)
	j := newNotes(t)
	hj := e.Watch("j", j.notify)
	f.expectAll(conns, "SUBSCRIBE", chJ)

	// The Stop of one of k's watches keeps k: the next command is the
	// barrier's UNSUBSCRIBE, alone.
	hb.Stop()
	assert.Zero(t, hb.Listening())
	hj.Stop()
	f.expectAll(conns, "UNSUBSCRIBE", chJ)

	// The Stop of the last sends UNSUBSCRIBE; a second Stop nothing.
	ha.Stop()
	f.expectAll(conns, "UNSUBSCRIBE", chK)
	ha.Stop()
	hb.Stop()
	m := newNotes(t)
	hm := e.Watch("other", m.notify)
	f.expectAll(conns, "SUBSCRIBE", chOther)
	hm.Stop()
	f.expectAll(conns, "UNSUBSCRIBE", chOther)

	assert.Equal(t, []int{1, 1, 1}, f.dialCounts(), "one connection per node, shared by every key")
	for _, n := range []*notes{a, b, j, m} {
		n.none()
	}
}

// TestWatchNotifiesAndListens: notify(i) on node i's confirmation and on
// each message of the key's channel, never for another channel; Listening
// has bit i from node i's confirmation until its unsubscription or its
// connection's failure.
func TestWatchNotifiesAndListens(t *testing.T) {
	e, f, _ := startWatch(t, 3)
	k := newNotes(t)
	hk := e.Watch("k", k.notify)
	conns := f.dialedAll(3)
	f.expectAll(conns, "SUBSCRIBE", chK)
	assert.Zero(t, hk.Listening())

	for _, step := range []struct {
		node int
		want uint32
	}{{1, 0b010}, {0, 0b011}, {2, 0b111}} {
		conns[step.node].push(subscribed(chK))
		k.expect(step.node)
		assert.Equal(t, step.want, hk.Listening(), "after node %d's confirmation", step.node)
	}

	// Another key on the same connections: its confirmations and messages
	// are its own.
	j := newNotes(t)
	hj := e.Watch("j", j.notify)
	f.expectAll(conns, "SUBSCRIBE", chJ)
	conns[0].push(subscribed(chJ))
	j.expect(0)
	assert.Equal(t, uint32(0b001), hj.Listening())
	assert.Equal(t, uint32(0b111), hk.Listening())
	k.none()

	// A second Watch of a confirmed key listens at once, is notified of
	// each node it listens to, as a subscription's start notifies (a
	// release announced before it began went unheard by it: a reader that
	// joined its Client's subscription after the writer's release slept
	// until the writer's TTL, TestReadersWaitTogetherOnRedis), and hears
	// what the first hears.
	k2 := newNotes(t)
	hk2 := e.Watch("k", k2.notify)
	assert.Equal(t, uint32(0b111), hk2.Listening())
	k2.expect(0)
	k2.expect(1)
	k2.expect(2)
	k.none()

	// Messages: a message for k notifies k's watches of its node; one for
	// another channel, sent first on the same connection, notifies no one.
	conns[2].push(message(chK))
	k.expect(2)
	k2.expect(2)
	conns[0].push(message(chOther))
	conns[0].push(message(chK))
	k.expect(0)
	k2.expect(0)
	conns[1].push(message(chJ))
	j.expect(1)
	k.none()
	k2.none()
	j.none()

	// An unsubscription confirmed by the server loses the node, and
	// notifies.
	conns[1].push(unsubscribed(chK))
	k.expect(1)
	k2.expect(1)
	assert.Equal(t, uint32(0b101), hk.Listening())

	// So does the failure of node 2's connection, for the channels
	// confirmed on it only (k, not j).
	conns[2].breakWith(io.EOF)
	k.expect(2)
	k2.expect(2)
	assert.Equal(t, uint32(0b001), hk.Listening())
	assert.Equal(t, uint32(0b001), hj.Listening())
	j.none()

	hk2.Stop()
	assert.Zero(t, hk2.Listening(), "a stopped watch listens to no node")
	assert.Equal(t, uint32(0b001), hk.Listening())
	k.none()
}

// TestWatchRedials: a node whose connection fails notifies each
// confirmed channel's watches, dials again (again after failed dials),
// subscribes to every watched channel, and listens again from the new
// confirmations.
func TestWatchRedials(t *testing.T) {
	e, f, _ := startWatch(t, 2)
	k, j := newNotes(t), newNotes(t)
	hk := e.Watch("k", k.notify)
	conns := f.dialedAll(2)
	f.expectAll(conns, "SUBSCRIBE", chK)
	hj := e.Watch("j", j.notify)
	f.expectAll(conns, "SUBSCRIBE", chJ)
	for i, c := range conns {
		c.push(subscribed(chK))
		k.expect(i)
		c.push(subscribed(chJ))
		j.expect(i)
	}
	require.Equal(t, uint32(0b11), hk.Listening())
	require.Equal(t, uint32(0b11), hj.Listening())

	// resubscribed waits for node 0's SUBSCRIBEs of every watched channel
	// on conn, then confirms them one at a time.
	resubscribed := func(conn *fakeSub) {
		t.Helper()
		var got []string
		for len(got) < 2 {
			c := f.call()
			require.Same(t, conn, c.conn, "on the new connection")
			require.Equal(t, "SUBSCRIBE", c.cmd)
			got = append(got, c.channels...)
		}
		assert.ElementsMatch(t, []string{chK, chJ}, got, "every watched channel, once")
		assert.Equal(t, uint32(0b10), hk.Listening(), "not listening before the new confirmation")
		assert.Equal(t, uint32(0b10), hj.Listening())

		conn.push(subscribed(chK))
		k.expect(0)
		j.none()
		assert.Equal(t, uint32(0b11), hk.Listening())
		assert.Equal(t, uint32(0b10), hj.Listening())
		conn.push(subscribed(chJ))
		j.expect(0)
		assert.Equal(t, uint32(0b11), hj.Listening())
	}

	old := conns[0]
	old.breakWith(errors.New("read: connection reset by peer"))
	k.expect(0)
	j.expect(0)
	assert.Equal(t, uint32(0b10), hk.Listening())
	assert.Equal(t, uint32(0b10), hj.Listening())
	old.waitClosed()
	fresh, failed := f.redialed(0)
	assert.Zero(t, failed)
	assert.NotSame(t, old, fresh)
	assert.Equal(t, []int{2, 1}, f.dialCounts(), "node 0 dialled again, node 1 not")
	resubscribed(fresh)

	// The new connection fails too, and the dials fail twice before one
	// succeeds.
	f.setDialErr(0, errRefused)
	fresh.breakWith(io.EOF)
	k.expect(0)
	j.expect(0)
	d := f.nextDial()
	require.Equal(t, subDial{node: 0}, d, "a failed dial")
	d = f.nextDial()
	require.Equal(t, subDial{node: 0}, d, "retried: a failed dial")
	f.setDialErr(0, nil)
	third, _ := f.redialed(0)
	resubscribed(third)
	assert.Equal(t, 1, f.dialCounts()[1])
	assert.False(t, conns[1].isClosed(), "node 1's connection lives on")
	k.none()
	j.none()
}

// TestWatchRefused: a node whose server refuses (NOPERM) is not listened
// to, and the engine warns once, naming the first node refused, however
// many refuse.
func TestWatchRefused(t *testing.T) {
	e, f, logs := startWatch(t, 3)
	k := newNotes(t)
	hk := e.Watch("k", k.notify)
	conns := f.dialedAll(3)
	f.expectAll(conns, "SUBSCRIBE", chK)
	conns[2].push(subscribed(chK))
	k.expect(2)

	noperm := "NOPERM User app has no permissions to access the 'redlock:release:k' channel"
	conns[1].push(Event{Kind: EventRefused, Err: errors.New(noperm)})
	conns[1].waitClosed()
	k.none() // nothing was confirmed on node 1
	assert.Equal(t, uint32(0b100), hk.Listening())

	// Node 2 refuses a later command: listened to no more, and no second
	// warning.
	conns[2].push(Event{Kind: EventRefused, Err: errors.New("ERR unknown command 'SUBSCRIBE'")})
	conns[2].waitClosed()
	k.expect(2)
	assert.Zero(t, hk.Listening())

	conns[0].push(subscribed(chK))
	k.expect(0)
	assert.Equal(t, uint32(0b001), hk.Listening(), "the other nodes are listened to")
	conns[0].push(message(chK))
	k.expect(0)

	out := logs.String()
	assert.Equal(t, 1, strings.Count(out, "\n"), "one warning: %s", out)
	assert.Contains(t, out, "level=WARN")
	assert.Contains(t, out, "addr=nodeB:6379", "names the refusing node's address")
	assert.Contains(t, out, noperm, "and the server's error")
	assert.NotContains(t, out, "unknown command")
	assert.Equal(t, []int{1, 1, 1}, f.dialCounts(), "a refusing node is not redialled at once")
	k.none()
}

// TestWatchNoNotifyAfterStop: while messages flow, notify is never called
// once Stop has returned, neither for a watch whose key stays watched nor
// for the key's last.
func TestWatchNoNotifyAfterStop(t *testing.T) {
	e, f, _ := startWatch(t, 1)
	type counted struct {
		stopped atomic.Bool
		calls   atomic.Int64
		late    atomic.Int64
		heard   chan struct{}
	}
	watch := func(key string, c *counted) core.Watch {
		c.heard = make(chan struct{}, 1)
		return e.Watch(key, func(int) {
			c.calls.Add(1)
			if c.stopped.Load() {
				c.late.Add(1)
			}
			select {
			case c.heard <- struct{}{}:
			default:
			}
		})
	}
	heard := func(c *counted) {
		t.Helper()
		select {
		case <-c.heard:
		case <-time.After(10 * time.Second):
			t.Fatal("not notified")
		}
	}
	var w1, w2 counted
	h1 := watch("k", &w1)
	conn := f.dialedAll(1)[0]
	f.expectAll([]*fakeSub{conn}, "SUBSCRIBE", chK)
	h2 := watch("k", &w2)
	j := newNotes(t)
	hj := e.Watch("j", j.notify)
	f.expectAll([]*fakeSub{conn}, "SUBSCRIBE", chJ)

	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case conn.events <- message(chK):
			case <-quit:
				return
			}
		}
	}()

	heard(&w1)
	h1.Stop() // one of k's two watches
	w1.stopped.Store(true)
	heard(&w2) // what came before, maybe
	heard(&w2) // messages flow on
	h2.Stop()  // the last
	w2.stopped.Store(true)
	close(quit)
	<-done

	// More messages after Stop, then a barrier: when j hears its message,
	// k's were dispatched.
	for range 10 {
		conn.push(message(chK))
	}
	conn.push(message(chJ))
	j.expect(0)
	assert.Positive(t, w1.calls.Load())
	assert.Zero(t, w1.late.Load(), "notified after Stop of one watch")
	assert.Zero(t, w2.late.Load(), "notified after Stop of the last watch")
	c := f.call()
	assert.Equal(t, "UNSUBSCRIBE", c.cmd)
	assert.Equal(t, []string{chK}, c.channels)
	hj.Stop()
}

// TestWatchClose: Close notifies the confirmed subscriptions' watches
// (they stop), closes every connection and stops every goroutine, a
// subscriber waiting to redial included; a Watch after Close never
// listens and dials nothing.
func TestWatchClose(t *testing.T) {
	e, f, _ := startWatch(t, 3)
	k := newNotes(t)
	hk := e.Watch("k", k.notify)
	conns := f.dialedAll(3)
	f.expectAll(conns, "SUBSCRIBE", chK)
	conns[0].push(subscribed(chK))
	k.expect(0)
	conns[1].push(subscribed(chK))
	k.expect(1)

	// Node 2 between dials: its connection failed, and so do its dials.
	f.setDialErr(2, errRefused)
	conns[2].breakWith(io.EOF)
	require.Equal(t, subDial{node: 2}, f.nextDial())

	// Close waits for the Receives it ends: hold them.
	hold := make(chan struct{})
	f.mu.Lock()
	f.hold, f.held = hold, make(chan int, 3)
	f.mu.Unlock()
	closed := make(chan struct{})
	go func() { e.Close(); close(closed) }()
	var ended []int
	for range 2 {
		select {
		case i := <-f.held:
			ended = append(ended, i)
		case <-time.After(10 * time.Second):
			t.Fatal("Close does not end the Receives")
		}
	}
	assert.ElementsMatch(t, []int{0, 1}, ended, "the connected nodes' Receives end")
	select {
	case <-closed:
		t.Fatal("Close returned before the Receives it ended")
	default:
	}
	close(hold)
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close does not return")
	}
	assert.Zero(t, f.active.Load(), "a dial, a write or a Receive outlives Close")
	for i, c := range conns {
		assert.True(t, c.isClosed(), "node %d's connection is closed", i)
	}
	var got []int // Close has returned: what it notified is there
	for len(got) < 3 {
		select {
		case i := <-k.c:
			got = append(got, i)
			continue
		default:
		}
		break
	}
	assert.ElementsMatch(t, []int{0, 1}, got, "the confirmed subscriptions stopped")
	assert.Zero(t, hk.Listening())
	goleak.VerifyNone(t)

	dials := f.dialCounts()
	late := newNotes(t)
	hl := e.Watch("k", late.notify)
	hn := e.Watch("new", late.notify)
	assert.Zero(t, hl.Listening())
	assert.Zero(t, hn.Listening())
	hl.Stop()
	hn.Stop()
	hk.Stop()
	e.Close()
	assert.Equal(t, dials, f.dialCounts(), "no dial after Close")
	assert.Empty(t, f.calls, "no command after Close")
	late.none()
	k.none()
}

// TestWatchCloseBeforeWatch: an engine closed before any Watch starts no
// subscriber.
func TestWatchCloseBeforeWatch(t *testing.T) {
	e, f, _ := startWatch(t, 2)
	e.Close()
	n := newNotes(t)
	h := e.Watch("k", n.notify)
	assert.Zero(t, h.Listening())
	h.Stop()
	assert.Equal(t, []int{0, 0}, f.dialCounts())
	e.watcher.mu.Lock()
	assert.Nil(t, e.watcher.subs, "no subscriber")
	e.watcher.mu.Unlock()
	n.none()
}

// TestWatchWithoutSubscribe: without Config.Subscribe, a Watch never
// listens, no subscriber starts, and the engine says once that waiters
// poll.
func TestWatchWithoutSubscribe(t *testing.T) {
	logs := &syncBuffer{}
	e := mustNew(t, Config{Names: []string{"a:1", "b:1"}, Dial: okDial, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	t.Cleanup(e.Close)
	n := newNotes(t)
	h := e.Watch("k", n.notify)
	h2 := e.Watch("k", n.notify)
	h3 := e.Watch("j", n.notify)
	assert.Zero(t, h.Listening())
	assert.Zero(t, h2.Listening())
	assert.Zero(t, h3.Listening())
	h.Stop()
	h.Stop()
	h2.Stop()
	h3.Stop()
	e.watcher.mu.Lock()
	assert.Nil(t, e.watcher.subs, "no subscriber, nothing to dial")
	e.watcher.mu.Unlock()
	n.none()
	out := logs.String()
	assert.Equal(t, 1, strings.Count(out, "\n"), "one warning: %s", out)
	assert.Contains(t, out, "level=WARN")
	assert.Contains(t, out, "waiters poll")
}

// TestNilLoggerLogsNothing: without Config.Logger (drivers.Options.Logger
// nil) the warning goes nowhere, not to slog.Default.
func TestNilLoggerLogsNothing(t *testing.T) {
	logs := &syncBuffer{}
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(logs, nil)))
	defer slog.SetDefault(prev)
	e := mustNew(t, Config{Names: []string{"a:1", "b:1"}, Dial: okDial})
	t.Cleanup(e.Close)
	e.watcher.mu.Lock()
	warned := e.watcher.warned
	e.watcher.mu.Unlock()
	require.False(t, warned)
	e.Watch("k", func(int) {}).Stop()
	e.watcher.mu.Lock()
	warned = e.watcher.warned
	e.watcher.mu.Unlock()
	assert.True(t, warned, "the warning was given")
	assert.Empty(t, logs.String(), "to nobody")
}

// TestRedialDelay: the delay before a subscription redial doubles from
// redialMin after each failed dial or short-lived failure, never past
// redialMax, and starts again from redialMin after a session that
// connected.
func TestRedialDelay(t *testing.T) {
	d, seen := redialMin, []time.Duration{}
	for range 10 {
		d = nextRedial(d, false)
		seen = append(seen, d)
	}
	assert.Equal(t, []time.Duration{20 * time.Millisecond, 40 * time.Millisecond, 80 * time.Millisecond,
		160 * time.Millisecond, 320 * time.Millisecond, 640 * time.Millisecond,
		redialMax, redialMax, redialMax, redialMax}, seen)
	assert.Equal(t, redialMin, nextRedial(redialMax, true), "after a session that connected")
}

// TestWatchHearsTurnsOnceFairIsSent: a Watch made after a Fair command
// was sent subscribes to the engine's turn channel for the key too, even
// when that command never reached its node (here, an acquire whose
// deadline had passed): otherwise a process whose first Fair attempt
// failed before the wire would never hear its turns.
func TestWatchHearsTurnsOnceFairIsSent(t *testing.T) {
	e, f, _ := startWatch(t, 3)
	b := e.Begin(context.Background())
	b.Send(0, core.Command{Op: core.OpAcquire, Probe: true, Fair: true, Key: "k", Token: core.TokenFromUint64s(1, 2), TTL: time.Second},
		time.Now().Add(-time.Second))
	r, ok := b.Receive(nil)
	b.Close()
	require.True(t, ok)
	require.Equal(t, core.StatusTimeout, r.Status, "not sent: its deadline had passed")

	n := newNotes(t)
	h := e.Watch("k", n.notify)
	defer h.Stop()
	f.expectAll(f.dialedAll(3), "SUBSCRIBE", chK, wire.TurnChannel(e.waiter, "k"))
}
