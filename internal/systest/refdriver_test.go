package systest_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers/wire"
	"github.com/redlock-go/redlock/internal/redistest"
	"github.com/redlock-go/redlock/internal/redistest/embedded"
	"github.com/redlock-go/redlock/internal/systest"
)

// TestRefDriver runs the real-server suite with refDriver, a deliberately
// plain driver, so that the suite's real-server path is tested here rather
// than first by the production drivers.
func TestRefDriver(t *testing.T) {
	systest.Run(t, func(t *testing.T, eps []systest.Endpoint) core.Driver {
		d := newRefDriver(eps)
		t.Cleanup(d.close)
		return d
	})
}

// refDriver runs each command on its own goroutine with a pooled redigo
// connection. It is simple rather than fast: the suite is what is tested.
//
// It keeps core.Batch's order rule the plain way. Two pooled connections
// give no order on the server, so a command whose round closed before
// its reply was received (a straggler) is registered, until it ends, for
// its key on its node; a command sent later for that key on that node
// waits for every straggler registered at its Send before it checks out a
// connection. Without this a release could overtake the SET of an earlier
// round's acquire. Commands of rounds still open are not waited for:
// their replies are yet to be received, and a command another round sends
// meanwhile is concurrent with them (the pooled redigo driver draws the
// same line: it hands a connection on to later commands at Close). So a
// hot key costs no queue of round trips.
//
// Deadlines are the batch's: Receive answers StatusTimeout for a node whose
// deadline passed, while the command's goroutine goes on until the node
// answers (up to stragglerBound), so that it stays a straggler for as long
// as the node may still run it. A later acquire or extend that waited past
// its deadline is not sent; a release is sent anyway, after the
// stragglers, as core.Batch requires, so that the cleanup of a cancelled
// attempt follows its SET to a hung node.
type refDriver struct {
	eps   []systest.Endpoint
	pools []*redis.Pool
	wg    sync.WaitGroup // in-flight commands

	mu         sync.Mutex
	stragglers []map[string][]*refCmd // per node and key: stragglers still running

	hooks refHooks
}

// stragglerBound is how long a command may wait for its node's answer,
// past its deadline: a hung node that continues within it runs what was
// sent to it, in order.
const stragglerBound = 30 * time.Second

// refCmd is one command on its way.
type refCmd struct {
	node     int
	op       core.Op
	key      string
	deadline time.Time
	done     chan struct{} // closed when it has ended
	// Under refDriver.mu.
	ended, straggler bool
}

// refHooks let a test watch and stall commands. They are set before the
// first Send and called on the commands' goroutines; nil ones are skipped.
type refHooks struct {
	// waits: cmd waits for stragglers for its key on node.
	waits func(node int, cmd core.Command)
	// sends: cmd, its turn come, is about to check out a connection.
	sends func(node int, cmd core.Command)
}

func newRefDriver(eps []systest.Endpoint) *refDriver {
	d := &refDriver{eps: eps, pools: make([]*redis.Pool, len(eps)), stragglers: make([]map[string][]*refCmd, len(eps))}
	for i, ep := range eps {
		opts := []redis.DialOption{redis.DialWriteTimeout(5 * time.Second)}
		if ep.Password != "" {
			opts = append(opts, redis.DialPassword(ep.Password))
		}
		if ep.Username != "" {
			opts = append(opts, redis.DialUsername(ep.Username))
		}
		if ep.TLS != nil {
			opts = append(opts, redis.DialUseTLS(true), redis.DialTLSConfig(ep.TLS))
		}
		d.stragglers[i] = map[string][]*refCmd{}
		d.pools[i] = &redis.Pool{
			MaxIdle: 32,
			DialContext: func(ctx context.Context) (redis.Conn, error) {
				return redis.DialContext(ctx, "tcp", ep.Addr, opts...)
			},
		}
	}
	return d
}

func (d *refDriver) close() {
	d.wg.Wait() // every command ends within stragglerBound
	for _, p := range d.pools {
		_ = p.Close() // idempotent; a redis.Pool's Close returns nil
	}
}

// Close is close, for the cases that close a driver themselves.
func (d *refDriver) Close() error {
	d.close()
	return nil
}

func (d *refDriver) Nodes() int            { return len(d.eps) }
func (d *refDriver) NodeName(i int) string { return d.eps[i].Addr }

func (d *refDriver) Begin(ctx context.Context) core.Batch {
	return &refBatch{d: d, replies: make(chan core.Reply, len(d.eps)), unanswered: make([]*refCmd, len(d.eps))}
}

type refBatch struct {
	d          *refDriver
	replies    chan core.Reply // buffered for every node: senders never block
	unanswered []*refCmd       // by node: sent, reply (or timeout) not yet received
	started    []*refCmd       // every command sent, for Close
}

// Send notes the stragglers cmd must wait for here, in the order of the
// Sends and Closes, rather than on the goroutine, which may start late.
func (b *refBatch) Send(node int, cmd core.Command, deadline time.Time) {
	c := &refCmd{node: node, op: cmd.Op, key: cmd.Key, deadline: deadline, done: make(chan struct{})}
	before := b.d.stragglersFor(node, cmd.Key)
	b.unanswered[node] = c
	b.started = append(b.started, c)
	b.d.wg.Add(1)
	go func() {
		defer b.d.wg.Done()
		r := b.d.run(node, cmd, deadline, before)
		b.d.end(c)
		b.replies <- r
	}()
}

// Receive returns the next reply, or StatusTimeout for the node whose
// deadline passes first; a reply that comes after its node timed out is
// dropped.
func (b *refBatch) Receive(cancel <-chan struct{}) (core.Reply, bool) {
	for {
		var next *refCmd
		for _, c := range b.unanswered {
			if c != nil && (next == nil || c.deadline.Before(next.deadline)) {
				next = c
			}
		}
		var expired <-chan time.Time
		if next != nil {
			timer := time.NewTimer(time.Until(next.deadline))
			defer timer.Stop()
			expired = timer.C
		}
		select {
		case r := <-b.replies:
			if b.unanswered[r.Node] == nil {
				continue // its node already timed out
			}
			b.unanswered[r.Node] = nil
			return r, true
		case <-expired:
			b.unanswered[next.node] = nil
			r := wire.Fail(next.node, b.d.eps[next.node].Addr, next.op, context.DeadlineExceeded)
			r.Status = core.StatusTimeout
			return r, true
		case <-cancel:
			return core.Reply{}, false
		}
	}
}

// Close registers the commands still running as stragglers, timed-out ones
// included, and leaves them to finish into the buffered channel.
func (b *refBatch) Close() {
	d := b.d
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, c := range b.started {
		if !c.ended {
			c.straggler = true
			d.stragglers[c.node][c.key] = append(d.stragglers[c.node][c.key], c)
		}
	}
}

// stragglersFor returns the done channels of the stragglers for key on
// node.
func (d *refDriver) stragglersFor(node int, key string) []chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []chan struct{}
	for _, c := range d.stragglers[node][key] {
		out = append(out, c.done)
	}
	return out
}

// end marks c ended, and unregisters it if it is a straggler.
func (d *refDriver) end(c *refCmd) {
	d.mu.Lock()
	c.ended = true
	if c.straggler {
		m := d.stragglers[c.node]
		s := slices.DeleteFunc(m[c.key], func(o *refCmd) bool { return o == c })
		if len(s) == 0 {
			delete(m, c.key)
		} else {
			m[c.key] = s
		}
	}
	d.mu.Unlock()
	close(c.done)
}

// run executes cmd once the stragglers before it have ended. An acquire or
// extend whose deadline passed meanwhile is not sent; a release is.
func (d *refDriver) run(node int, cmd core.Command, deadline time.Time, before []chan struct{}) core.Reply {
	if len(before) > 0 {
		if d.hooks.waits != nil {
			d.hooks.waits(node, cmd)
		}
		for _, done := range before {
			<-done // each ends within stragglerBound
		}
		if cmd.Op != core.OpRelease && !time.Now().Before(deadline) {
			return wire.Fail(node, d.eps[node].Addr, cmd.Op, context.DeadlineExceeded)
		}
	}
	if d.hooks.sends != nil {
		d.hooks.sends(node, cmd)
	}
	r, sent := d.exec(node, cmd, deadline)
	// A release or an extension, a compare-and-do on its token that a
	// second run cannot make do more, whose connection failed under it
	// (the server restarting) goes again while its round has time, as the
	// engine's do (its resend): once more after a send that may have run,
	// and as often as a send did not run (a refused dial after that first
	// break, a LOADING reply from a server loading its data). A refused
	// first dial fails it at once, as there.
	went, spent := sent, false
	for (cmd.Op == core.OpRelease || cmd.Op == core.OpExtend) && went && r.Status == core.StatusError &&
		time.Now().Add(refRedialPause).Before(deadline) {
		ran := sent && !isLoading(r.Err)
		if ran && (spent || isReplyError(r.Err)) {
			break // it went out twice, or the server refused it
		}
		spent = spent || ran
		time.Sleep(refRedialPause)
		r, sent = d.exec(node, cmd, deadline)
	}
	return r
}

// refRedialPause is the pause before a refDriver command goes again.
const refRedialPause = 20 * time.Millisecond

// isReplyError reports whether err is the server's error reply, which a
// command sent again would meet again, rather than the connection's.
func isReplyError(err error) bool {
	var re redis.Error
	return errors.As(err, &re)
}

// isLoading reports whether err is the LOADING reply of a server still
// loading its data, which ran nothing.
func isLoading(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && wire.IsLoading(re)
}

// exec runs cmd on a pooled connection to node, waiting for the node's
// answer up to stragglerBound: the batch answers the deadline itself. It
// reports whether cmd went out: false when no connection could be had.
func (d *refDriver) exec(node int, cmd core.Command, _ time.Time) (core.Reply, bool) {
	addr := d.eps[node].Addr
	ctx, cancel := context.WithTimeout(context.Background(), stragglerBound)
	defer cancel()
	conn, err := d.pools[node].GetContext(ctx)
	if err != nil {
		return wire.Fail(node, addr, cmd.Op, err), false
	}
	defer func() { _ = conn.Close() }() // a broken connection is discarded by the pool; its error is the command's
	return d.execOn(conn, node, cmd), true
}

// execOn runs cmd on conn.
func (d *refDriver) execOn(conn redis.Conn, node int, cmd core.Command) core.Reply {
	addr := d.eps[node].Addr
	const timeout = stragglerBound
	tok := cmd.Token.String()
	if cmd.Op == core.OpAcquire {
		r, err := redis.DoWithTimeout(conn, timeout, "SET", cmd.Key, tok, "NX", "PX", wire.Millis(cmd.TTL))
		switch {
		case err == nil && r == nil:
			return core.Reply{Node: node, Status: core.StatusHeld}
		case err != nil:
			return wire.Fail(node, addr, cmd.Op, err)
		}
		return core.Reply{Node: node, Status: core.StatusOK}
	}
	s := wire.ScriptFor(cmd.Op)
	args := []any{1, cmd.Key, tok}
	if wire.Keys(cmd.Op) == 2 {
		args = []any{2, cmd.Key, core.FenceKeyPrefix + cmd.Key, tok}
	}
	switch cmd.Op {
	case core.OpExtend, core.OpAcquireFenced:
		args = append(args, wire.Millis(cmd.TTL))
	case core.OpRaiseFence:
		args = append(args, strconv.FormatUint(cmd.Fence, 10))
	}
	v, err := redis.DoWithTimeout(conn, timeout, "EVALSHA", append([]any{s.SHA1}, args...)...)
	if wire.IsNoScript(err) {
		v, err = redis.DoWithTimeout(conn, timeout, "EVAL", append([]any{s.Src}, args...)...)
	}
	if err != nil {
		return wire.Fail(node, addr, cmd.Op, err)
	}
	if cmd.Op == core.OpAcquireFenced {
		var fence uint64
		switch v := v.(type) {
		case int64:
			if v <= 0 { // the key exists: minus its PTTL
				return core.Reply{Node: node, Status: core.StatusHeld, TTL: wire.HeldTTL(v)}
			}
			fence, err = wire.FenceInt(v)
		case []byte: // from 2^53 up
			fence, err = wire.FenceString(string(v))
		default:
			err = fmt.Errorf("unexpected reply %T %v", v, v)
		}
		if err != nil {
			return wire.Fail(node, addr, cmd.Op, err)
		}
		return core.Reply{Node: node, Status: core.StatusOK, Fence: fence}
	}
	n, err := redis.Int64(v, nil)
	if err != nil {
		return wire.Fail(node, addr, cmd.Op, err)
	}
	st, err := wire.ScriptStatus(n)
	if err != nil {
		return wire.Fail(node, addr, cmd.Op, err)
	}
	return core.Reply{Node: node, Status: st}
}

// TestRefDriverOrder checks that refDriver keeps core.Batch's order rule,
// on which the suite's verdicts about it rest: a command for a key waits
// for the straggler of an earlier, closed round for the same key on the
// same node; a release that times out waiting is answered StatusTimeout
// but still goes out after the straggler, and the next one waits for both;
// other keys do not wait. The straggler is
// held just before it goes out, so a driver that lets a later command
// overtake it fails here every time rather than now and then.
func TestRefDriverOrder(t *testing.T) {
	srv := embedded.Start(t, redistest.Options{})
	d := newRefDriver([]systest.Endpoint{{Addr: srv.Addr}})
	t.Cleanup(d.close)

	gate := make(chan struct{}) // closed to let the held acquire go
	events := make(chan string, 16)
	note := func(what string, cmd core.Command) { events <- what + " " + cmd.Op.String() + " " + cmd.Key }
	d.hooks.waits = func(_ int, cmd core.Command) { note("waits", cmd) }
	d.hooks.sends = func(_ int, cmd core.Command) {
		note("sends", cmd)
		if cmd.Op == core.OpAcquire {
			select {
			case <-gate:
			case <-t.Context().Done(): // a failed test: let d.close return
			}
		}
	}
	next := func() string {
		t.Helper()
		select {
		case e := <-events:
			return e
		case <-time.After(10 * time.Second):
			require.FailNow(t, "no command waited or went out")
			return ""
		}
	}
	receive := func(b core.Batch) core.Reply {
		t.Helper()
		r, ok := b.Receive(nil)
		require.True(t, ok)
		b.Close()
		return r
	}

	ctx := context.Background()
	far := time.Now().Add(time.Minute)
	tok := core.TokenFromUint64s(7, 7)
	const key = "order"
	rel := core.Command{Op: core.OpRelease, Key: key, Token: tok}

	b := d.Begin(ctx)
	b.Send(0, core.Command{Op: core.OpAcquire, Key: key, Token: tok, TTL: time.Minute}, far)
	require.Equal(t, "sends acquire "+key, next())
	b.Close() // the acquire is a straggler now, held before the wire

	b = d.Begin(ctx)
	b.Send(0, rel, time.Now().Add(50*time.Millisecond))
	require.Equal(t, "waits release "+key, next(), "the release must not overtake the acquire")
	r := receive(b)
	require.Equal(t, core.StatusTimeout, r.Status, "%v", r.Err)

	b = d.Begin(ctx)
	b.Send(0, core.Command{Op: core.OpRelease, Key: "other", Token: tok}, far)
	require.Equal(t, "sends release other", next(), "another key does not wait")
	r = receive(b)
	require.Equal(t, core.StatusMissing, r.Status, "%v", r.Err)

	// After the release that timed out, still behind the acquire.
	b = d.Begin(ctx)
	b.Send(0, rel, far)
	require.Equal(t, "waits release "+key, next(), "the release must not overtake the acquire")
	close(gate)
	// The timed-out release goes out after the acquire, then this one.
	require.Equal(t, "sends release "+key, next())
	require.Equal(t, "sends release "+key, next())
	r = receive(b)
	require.Equal(t, core.StatusMissing, r.Status, "the timed-out release deleted the acquire's key first: %v", r.Err)
	n, err := srv.Do("EXISTS", key)
	require.NoError(t, err)
	require.Equal(t, int64(0), n, "the release deleted the key")
}
