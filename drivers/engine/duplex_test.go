package engine

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers/wire"
)

// startDuplex is start over Duplex connections.
func startDuplex(t *testing.T, n int) (*Engine, *fakeNet, *manualClock) {
	t.Helper()
	f := newFakeNet(t, n)
	f.duplex = true
	return startWith(t, f)
}

// noReply fails the test if c already holds a reply.
func noReply(t *testing.T, c <-chan core.Reply, msg string) {
	t.Helper()
	select {
	case r := <-c:
		t.Fatalf("%s: got %v", msg, r)
	default:
	}
}

func TestDuplexWritesBehindUnreadPipelines(t *testing.T) {
	e, f, clock := startDuplex(t, 1)
	b1 := send(e, clock, 0, acquire("a", 1), time.Second)
	defer b1.Close()
	c1 := receive(b1, nil)
	x1 := f.next()
	assert.Equal(t, []string{"SET a"}, x1.names())

	// The first pipeline is unanswered: the next round's command goes out
	// all the same, in a pipeline of its own.
	b2 := send(e, clock, 0, release("z", 2), time.Second)
	defer b2.Close()
	c2 := receive(b2, nil)
	x2 := f.next()
	assert.Equal(t, []string{"EVAL z"}, x2.names())
	assert.Same(t, x1.conn, x2.conn, "on the same connection")

	x2.ok() // its replies come in order: behind the first's
	noReply(t, c2, "the reader reads the replies in order")
	x1.ok()
	assert.Equal(t, core.StatusOK, wait(t, c1).Status)
	assert.Equal(t, core.StatusOK, wait(t, c2).Status)
	_, budget := x2.read(t)
	assertBudget(t, time.Second, budget, "the second pipeline is read by its own deadline")
}

func TestDuplexDepthBoundThenOneWrite(t *testing.T) {
	e, f, clock := startDuplex(t, 1)
	var xs []*exchange
	var cs []<-chan core.Reply
	for i := range duplexDepth {
		b := send(e, clock, 0, acquire(string(rune('a'+i)), uint64(i)), time.Second)
		defer b.Close()
		cs = append(cs, receive(b, nil))
		xs = append(xs, f.next())
	}
	// Every pipe is out: the next rounds' commands queue.
	for i, key := range []string{"q", "r", "s"} {
		b := send(e, clock, 0, acquire(key, 9), time.Second)
		defer b.Close()
		cs = append(cs, receive(b, nil))
		eventuallyQueued(t, e.nodes[0], i+1)
	}
	xs[0].ok() // a pipe comes back: the queue goes out, coalesced
	x := f.next()
	assert.Equal(t, []string{"SET q", "SET r", "SET s"}, x.names(), "one write for the rounds that queued")
	for _, x := range xs[1:] {
		x.ok()
	}
	x.ok()
	for _, c := range cs {
		assert.Equal(t, core.StatusOK, wait(t, c).Status)
	}
}

func TestDuplexTimeoutInFlight(t *testing.T) {
	e, f, clock := startDuplex(t, 1)
	// A hung node holds the first pipeline (an attempt's SET); two more
	// are written behind it: another round's acquire, and the attempt's
	// cleanup.
	b1 := send(e, clock, 0, acquire("a", 1), 50*time.Millisecond)
	defer b1.Close()
	c1 := receive(b1, nil)
	hung := f.next()
	b2 := send(e, clock, 0, acquire("b", 2), time.Second)
	defer b2.Close()
	c2 := receive(b2, nil)
	assert.Equal(t, []string{"SET b"}, f.next().names())
	b3 := send(e, clock, 0, release("a", 1), 200*time.Millisecond)
	b3.Close() // a cleanup that awaits nothing
	x3 := f.next()
	assert.Equal(t, []string{"EVAL a"}, x3.names())
	hung.read(t)

	clock.Advance(50 * time.Millisecond)
	r1 := wait(t, c1)
	assert.Equal(t, core.StatusTimeout, r1.Status)
	assert.ErrorIs(t, r1.Err, context.DeadlineExceeded)
	// The read missed its deadline: the connection is given up. The SET
	// behind it may have reached the node: it is not sent again, and
	// fails as the connection did, before its own deadline.
	r2 := wait(t, c2)
	assert.Equal(t, core.StatusTimeout, r2.Status)
	assert.ErrorIs(t, r2.Err, context.DeadlineExceeded)
	assert.ErrorContains(t, r2.Err, "node 0 (nodeA:6379): acquire: ")
	// The release goes again on a new connection, with the time it had
	// on the wire again, 200 ms (pipeline): it may have to follow a
	// straggling SET, and does not bound a lease.
	f.dialed(0)
	x := f.next()
	assert.NotSame(t, hung.conn, x.conn)
	assert.Equal(t, []string{"EVAL a"}, x.names())
	assertBudget(t, 200*time.Millisecond, x.budget, "the resent release has its budget again")
	assert.Equal(t, 1, f.closedConns())
	x.ok()
}

func TestDuplexFailureMidStream(t *testing.T) {
	e, f, clock := startDuplex(t, 1)
	b1 := send(e, clock, 0, acquire("a", 1), time.Second)
	defer b1.Close()
	c1 := receive(b1, nil)
	x1 := f.next()
	b2 := send(e, clock, 0, acquire("b", 2), time.Second)
	defer b2.Close()
	c2 := receive(b2, nil)
	f.next()
	b3 := send(e, clock, 0, release("c", 3), time.Second)
	defer b3.Close()
	c3 := receive(b3, nil)
	f.next()

	x1.reply(errors.New("ECONNRESET"))
	r1, r2 := wait(t, c1), wait(t, c2)
	for _, r := range []core.Reply{r1, r2} {
		assert.Equal(t, core.StatusError, r.Status)
		assert.ErrorContains(t, r.Err, "node 0 (nodeA:6379): acquire: ECONNRESET")
	}
	f.dialed(0)
	x := f.next()
	assert.Equal(t, []string{"EVAL c"}, x.names(), "the release goes again, the acquire does not")
	x.ok()
	assert.Equal(t, core.StatusOK, wait(t, c3).Status)

	// A release that fails on its second connection is not sent a third time.
	b4 := send(e, clock, 0, acquire("d", 4), time.Second)
	defer b4.Close()
	c4 := receive(b4, nil)
	x4 := f.next()
	b5 := send(e, clock, 0, release("c", 3), time.Second)
	defer b5.Close()
	c5 := receive(b5, nil)
	f.next()
	x4.reply(errors.New("EOF"))
	assert.Equal(t, core.StatusError, wait(t, c4).Status)
	f.dialed(0)
	x5 := f.next()
	assert.Equal(t, []string{"EVAL c"}, x5.names())
	x5.reply(errors.New("EOF again"))
	r5 := wait(t, c5)
	assert.Equal(t, core.StatusError, r5.Status)
	assert.ErrorContains(t, r5.Err, "EOF again")
	assert.Equal(t, 3, f.closedConns(), "each failed connection closed once")
}

func TestDuplexWriteFailure(t *testing.T) {
	e, f, clock := startDuplex(t, 1)
	f.mu.Lock()
	f.writeErr = errors.New("broken pipe")
	f.mu.Unlock()
	b := send(e, clock, 0, acquire("a", 1), time.Second)
	defer b.Close()
	r := wait(t, receive(b, nil))
	assert.Equal(t, core.StatusError, r.Status)
	assert.ErrorContains(t, r.Err, "node 0 (nodeA:6379): acquire: broken pipe")

	b2 := send(e, clock, 0, acquire("b", 2), time.Second)
	defer b2.Close()
	c2 := receive(b2, nil)
	f.dialed(0)
	f.next().ok()
	assert.Equal(t, core.StatusOK, wait(t, c2).Status)
	assert.Equal(t, 1, f.closedConns())
}

func TestDuplexNoScript(t *testing.T) {
	e, f, clock := startDuplex(t, 1)
	run := func(cmd core.Command) (*exchange, <-chan core.Reply) {
		b := send(e, clock, 0, cmd, time.Second)
		t.Cleanup(b.Close)
		c := receive(b, nil)
		return f.next(), c
	}
	noScript := Reply{Kind: KindError, Err: errors.New("NOSCRIPT No matching script")}
	// An extend's script, once cached, goes as EVALSHA.
	x, c := run(extend("k", 1))
	x.ok()
	wait(t, c)
	x, c = run(extend("k", 1))
	require.Equal(t, []string{"EVALSHA", wire.Extend.SHA1}, x.cmds[0][:2])
	// Behind it, another round's acquire waits: if the extend meets
	// NOSCRIPT, it goes again before what was queued after it.
	b := send(e, clock, 0, acquire("j", 2), time.Second)
	defer b.Close()
	cj := receive(b, nil)
	eventuallyQueued(t, e.nodes[0], 1)
	x.reply(nil, noScript)
	x = f.next()
	assert.Equal(t, []string{"EVAL k", "SET j"}, x.names(), "NOSCRIPT: the extend again as EVAL, first")
	x.ok()
	assert.Equal(t, core.StatusOK, wait(t, c).Status)
	assert.Equal(t, core.StatusOK, wait(t, cj).Status)

	// A release is no barrier: it may be overtaken by what follows, which
	// cannot undo it.
	x, c = run(release("k", 1))
	x.ok()
	wait(t, c)
	x, c = run(release("k", 1))
	require.Equal(t, "EVALSHA", x.cmds[0][0])
	x2, c2 := run(acquire("m", 3))
	assert.Equal(t, []string{"SET m"}, x2.names())
	x.reply(nil, noScript)
	x2.ok()
	assert.Equal(t, core.StatusOK, wait(t, c2).Status)
	x = f.next()
	assert.Equal(t, []string{"EVAL", wire.Release.Src}, x.cmds[0][:2])
	x.reply(nil, noScript) // NOSCRIPT twice: an error, not a third try
	r := wait(t, c)
	assert.Equal(t, core.StatusError, r.Status)
	assert.ErrorContains(t, r.Err, "NOSCRIPT")
}

func TestDuplexCloseWithReleasesInFlight(t *testing.T) {
	f := newFakeNet(t, 1)
	f.duplex = true
	clock := newManualClock()
	e := mustNew(t, Config{Names: []string{"n:1"}, Dial: f.dial, Clock: clock})
	f.dialed(0)
	b := send(e, clock, 0, release("k", 1), time.Second)
	c := receive(b, nil)
	x1 := f.next()
	b2 := send(e, clock, 0, acquire("j", 2), time.Second)
	c2 := receive(b2, nil)
	x2 := f.next()

	closed := make(chan struct{})
	go func() { e.Close(); close(closed) }()
	eventuallyQueued(t, e.nodes[0], -1)
	x2.ok()
	select {
	case <-closed:
		t.Fatal("Close returned with a release unanswered")
	default:
	}
	x1.ok()
	<-closed
	assert.Equal(t, core.StatusOK, wait(t, c).Status, "Close waits for the release in flight")
	assert.Equal(t, core.StatusOK, wait(t, c2).Status)
	assert.Equal(t, 1, f.closedConns())
	b.Close()
	b2.Close()
	close(f.exchanges)
}

// okDuplex answers every command at once, without allocating.
type okDuplex struct {
	okConn
	mu   sync.Mutex
	sets []bool // per command written and not yet read: a SET
}

func (c *okDuplex) Write(_ context.Context, cmds [][]string) error {
	c.mu.Lock()
	for _, cmd := range cmds {
		c.sets = append(c.sets, cmd[0] == "SET")
	}
	c.mu.Unlock()
	return nil
}

func (c *okDuplex) Read(_ context.Context, replies []Reply) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range replies {
		replies[i] = Reply{Kind: KindInt, Int: 1}
		if c.sets[i] {
			replies[i] = Reply{Kind: KindOK}
		}
	}
	c.sets = append(c.sets[:0], c.sets[len(replies):]...)
	return nil
}

func TestDuplexZeroAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts: the race detector makes sync.Pool drop objects at random")
	}
	dial := func(context.Context, int) (Conn, error) { return &okDuplex{}, nil }
	e := mustNew(t, Config{Names: []string{"a:1", "b:1", "c:1", "d:1", "e:1"}, Dial: dial})
	defer e.Close()
	round := func(cmd core.Command) {
		b := e.Begin(context.Background())
		dl := time.Now().Add(time.Minute)
		for i := range 5 {
			b.Send(i, cmd, dl)
		}
		for range 5 {
			if r, ok := b.Receive(nil); !ok || r.Status != core.StatusOK {
				panic(r.Err)
			}
		}
		b.Close()
	}
	pair := func() { round(acquire("k", 1)); round(release("k", 1)) }
	for range 100 {
		pair()
	}
	assert.Zero(t, testing.AllocsPerRun(500, pair))
}

func TestDuplexCloseSendsAReleaseAgain(t *testing.T) {
	f := newFakeNet(t, 1)
	f.duplex = true
	clock := newManualClock()
	e := mustNew(t, Config{Names: []string{"n:1"}, Dial: f.dial, Clock: clock})
	f.dialed(0)
	b := send(e, clock, 0, acquire("k", 1), time.Second)
	c := receive(b, nil)
	x1 := f.next()
	b2 := send(e, clock, 0, release("j", 2), time.Second)
	b2.Close()
	f.next()

	closed := make(chan struct{})
	go func() { e.Close(); close(closed) }()
	eventuallyQueued(t, e.nodes[0], -1)
	x1.reply(errors.New("EOF")) // the connection fails with the release unread
	assert.Equal(t, core.StatusError, wait(t, c).Status)
	f.dialed(0)
	x := f.next()
	assert.Equal(t, []string{"EVAL j"}, x.names(), "Close sends the release again on a new connection")
	x.ok()
	<-closed
	assert.Equal(t, 2, f.closedConns())
	b.Close()
	close(f.exchanges)
}
