package engine

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// manualClock is a Clock that moves only when the test advances it. Due
// timers run synchronously in Advance.
type manualClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*manualTimer
}

type manualTimer struct {
	c    *manualClock
	when time.Time
	f    func()
	on   bool
}

func newManualClock() *manualClock {
	return &manualClock{now: time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)}
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualClock) AfterFunc(d time.Duration, f func()) Timer {
	t := &manualTimer{c: c, f: f}
	t.Reset(d)
	return t
}

func (t *manualTimer) Reset(d time.Duration) bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := t.on
	t.when, t.on = t.c.now.Add(d), true
	if !slices.Contains(t.c.timers, t) {
		t.c.timers = append(t.c.timers, t)
	}
	return was
}

func (t *manualTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := t.on
	t.on = false
	return was
}

// Advance moves the clock by d and runs the timers that came due.
func (c *manualClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []func()
	for _, t := range c.timers {
		if t.on && !t.when.After(c.now) {
			t.on = false
			due = append(due, t.f)
		}
	}
	c.mu.Unlock()
	for _, f := range due {
		f()
	}
}

// exchange is one Exchange call on a fakeConn, held until the test answers.
type exchange struct {
	conn *fakeConn
	cmds [][]string
	// budget is the time left until the context's deadline, which is a
	// reading of the system clock (a client sets its socket deadlines from
	// it), when the exchange began.
	budget time.Duration
	ctx    context.Context
	answer chan answer

	// A fakeDuplex's: closed when the Read of the exchange begins, which
	// sets ctx and readBudget (the time left to the Read's deadline).
	reading    chan struct{}
	mu         sync.Mutex
	readBudget time.Duration
}

// read returns the context and budget of the Read of a fakeDuplex's
// exchange, once it has begun, failing the test if it does not.
func (x *exchange) read(t *testing.T) (context.Context, time.Duration) {
	t.Helper()
	select {
	case <-x.reading:
	case <-time.After(10 * time.Second):
		t.Fatal("no read")
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.ctx, x.readBudget
}

type answer struct {
	replies []Reply
	err     error
}

// reply ends the exchange with these replies and error.
func (x *exchange) reply(err error, rs ...Reply) { x.answer <- answer{rs, err} }

// ok answers every command as a success: OK for SET, 1 for a script.
func (x *exchange) ok() {
	rs := make([]Reply, len(x.cmds))
	for i, c := range x.cmds {
		rs[i] = Reply{Kind: KindOK}
		if c[0] != "SET" {
			rs[i] = Reply{Kind: KindInt, Int: 1}
		}
	}
	x.reply(nil, rs...)
}

// names returns each command's name and key, such as "SET k".
func (x *exchange) names() []string {
	out := make([]string, len(x.cmds))
	for i, c := range x.cmds {
		key := c[1]
		if c[0] != "SET" {
			key = c[3]
		}
		out[i] = c[0] + " " + key
	}
	return out
}

// fakeNet is the nodes' side of a test: every dial and exchange is an
// event the test receives and answers.
type fakeNet struct {
	t         *testing.T
	exchanges chan *exchange
	dials     chan int
	dialErr   []error  // per node, returned by Dial when set
	runID     []string // per node, its server's run_id in INFO
	replicas  []int    // per node, its master's connected replicas in INFO
	duplex    bool     // dial Duplex connections (fakeDuplex)
	writeErr  error    // returned by a fakeDuplex's next Write when set

	mu     sync.Mutex
	closed []*fakeConn
}

type fakeConn struct {
	net  *fakeNet
	node int
}

func newFakeNet(t *testing.T, n int) *fakeNet {
	f := &fakeNet{t: t, exchanges: make(chan *exchange, 64), dials: make(chan int, 64), dialErr: make([]error, n), runID: make([]string, n), replicas: make([]int, n)}
	for i := range f.runID {
		f.runID[i] = strings.Repeat(strconv.Itoa(i), 40)
	}
	return f
}

func (f *fakeNet) dial(ctx context.Context, node int) (Conn, error) {
	f.dials <- node
	f.mu.Lock()
	err := f.dialErr[node]
	f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if f.duplex {
		return &fakeDuplex{fakeConn: fakeConn{net: f, node: node}, pending: make(chan *exchange, 64), gone: make(chan struct{})}, nil
	}
	return &fakeConn{net: f, node: node}, nil
}

// fakeDuplex is a Duplex connection: each Write is an exchange the test
// receives (fakeNet.next) and answers; Read waits for the answer to the
// oldest exchange written and not yet read, or for its context, or for
// Close.
type fakeDuplex struct {
	fakeConn
	pending chan *exchange
	gone    chan struct{}
	once    sync.Once
}

func (c *fakeDuplex) Write(ctx context.Context, cmds [][]string) error {
	c.net.mu.Lock()
	err := c.net.writeErr
	c.net.writeErr = nil
	c.net.mu.Unlock()
	if err != nil {
		return err
	}
	dl, _ := ctx.Deadline()
	x := &exchange{conn: &c.fakeConn, budget: time.Until(dl), answer: make(chan answer, 1), reading: make(chan struct{})}
	for _, cmd := range cmds {
		x.cmds = append(x.cmds, slices.Clone(cmd))
	}
	c.pending <- x
	c.net.exchanges <- x
	return nil
}

func (c *fakeDuplex) Read(ctx context.Context, replies []Reply) error {
	x := <-c.pending
	x.mu.Lock()
	dl, _ := ctx.Deadline()
	x.ctx, x.readBudget = ctx, time.Until(dl)
	x.mu.Unlock()
	close(x.reading)
	select {
	case a := <-x.answer:
		copy(replies, a.replies)
		return a.err
	case <-ctx.Done():
		return ctx.Err()
	case <-c.gone:
		return errors.New("use of closed connection")
	}
}

func (c *fakeDuplex) Close() error {
	c.once.Do(func() {
		close(c.gone)
		_ = c.fakeConn.Close() // always nil: it records the close
	})
	return nil
}

func (c *fakeConn) Exchange(ctx context.Context, cmds [][]string, replies []Reply) error {
	if cmds[0][0] == "INFO" { // the engine's identity check after a dial: answered here
		c.net.mu.Lock()
		defer c.net.mu.Unlock()
		for i, cmd := range cmds {
			switch cmd[1] {
			case "server":
				replies[i] = String("# Server\r\nredis_version:7.0.15\r\nrun_id:" + c.net.runID[c.node] + "\r\ntcp_port:6379\r\n")
			case "replication":
				replies[i] = String("# Replication\r\nrole:master\r\nconnected_slaves:" + strconv.Itoa(c.net.replicas[c.node]) + "\r\nmaster_repl_offset:0\r\n")
			}
		}
		return nil
	}
	dl, _ := ctx.Deadline()
	x := &exchange{conn: c, budget: time.Until(dl), ctx: ctx, answer: make(chan answer, 1)}
	for _, cmd := range cmds {
		x.cmds = append(x.cmds, slices.Clone(cmd))
	}
	c.net.exchanges <- x
	select {
	case a := <-x.answer:
		copy(replies, a.replies)
		return a.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *fakeConn) Close() error {
	c.net.mu.Lock()
	c.net.closed = append(c.net.closed, c)
	c.net.mu.Unlock()
	return nil
}

// next returns the next exchange, failing the test if none comes.
func (f *fakeNet) next() *exchange {
	f.t.Helper()
	select {
	case x := <-f.exchanges:
		return x
	case <-time.After(10 * time.Second):
		f.t.Fatal("no exchange")
		return nil
	}
}

// dialed waits for a dial of node.
func (f *fakeNet) dialed(node int) {
	f.t.Helper()
	select {
	case i := <-f.dials:
		if i != node {
			f.t.Fatalf("dialed node %d, want %d", i, node)
		}
	case <-time.After(10 * time.Second):
		f.t.Fatalf("node %d not dialled", node)
	}
}

// closedConns returns how many connections the engine closed.
func (f *fakeNet) closedConns() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.closed)
}

var errRefused = errors.New("connection refused")
