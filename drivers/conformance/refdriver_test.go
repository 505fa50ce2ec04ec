package conformance_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers/conformance"
	"github.com/redlock-go/redlock/drivers/internal/wire"
	"github.com/redlock-go/redlock/internal/redistest"
)

// TestRefDriver runs the real-server suite with refDriver, a deliberately
// plain driver, so that the suite's real-server path is tested here rather
// than first by the production drivers.
func TestRefDriver(t *testing.T) {
	conformance.Run(t, func(t *testing.T, eps []conformance.Endpoint) core.Driver {
		d := newRefDriver(eps)
		t.Cleanup(d.close)
		return d
	})
}

// refDriver runs each command on its own goroutine with a pooled redigo
// connection. It is simple rather than fast: the suite is what is tested.
//
// It keeps core.Batch's order rule the plain way: a command waits, before
// it checks out a connection, until the command issued before it for the
// same key on the same node has ended (its reply read, or its deadline
// passed), even if that command's round closed without reading it. Two
// pooled connections give no order on the server, so without the wait a
// release could overtake the SET of the acquire it undoes.
type refDriver struct {
	eps   []conformance.Endpoint
	pools []*redis.Pool
	wg    sync.WaitGroup // in-flight commands

	mu   sync.Mutex
	last []map[string]chan struct{} // per node and key: closed when the newest command issued has ended

	hooks refHooks
}

// refHooks let a test watch and stall commands. They are set before the
// first Send and called on the commands' goroutines; nil ones are skipped.
type refHooks struct {
	// waits: cmd waits for the previous command for its key on node.
	waits func(node int, cmd core.Command)
	// sends: cmd, its turn come, is about to check out a connection.
	sends func(node int, cmd core.Command)
}

func newRefDriver(eps []conformance.Endpoint) *refDriver {
	d := &refDriver{eps: eps, pools: make([]*redis.Pool, len(eps)), last: make([]map[string]chan struct{}, len(eps))}
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
		d.last[i] = map[string]chan struct{}{}
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
	d.wg.Wait() // every command ends by its deadline
	for _, p := range d.pools {
		p.Close()
	}
}

func (d *refDriver) Nodes() int            { return len(d.eps) }
func (d *refDriver) NodeName(i int) string { return d.eps[i].Addr }

func (d *refDriver) Begin(ctx context.Context) core.Batch {
	return &refBatch{d: d, replies: make(chan core.Reply, len(d.eps))}
}

type refBatch struct {
	d       *refDriver
	replies chan core.Reply // buffered for every node: senders never block
}

// Send takes cmd's place in its key's order on node here, in the order
// the Sends are made, rather than on the goroutine, which may start late.
func (b *refBatch) Send(node int, cmd core.Command, deadline time.Time) {
	prev, done := b.d.enter(node, cmd.Key)
	b.d.wg.Add(1)
	go func() {
		defer b.d.wg.Done()
		b.replies <- b.d.run(node, cmd, deadline, prev)
		// A command that timed out waiting for prev still ends after it,
		// so that the commands behind it stay behind prev too. prev ends
		// by its own deadline.
		<-prev
		b.d.leave(node, cmd.Key, done)
	}()
}

func (b *refBatch) Receive(cancel <-chan struct{}) (core.Reply, bool) {
	select {
	case r := <-b.replies:
		return r, true
	case <-cancel:
		return core.Reply{}, false
	}
}

// Close leaves stragglers to finish into the buffered channel.
func (b *refBatch) Close() {}

// closedChan is the predecessor of a command that has none.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// enter makes a command for key on node the newest in its key's order. It
// returns the channel closed when the previous one has ended, and the
// channel the new command closes (through leave) when it has.
func (d *refDriver) enter(node int, key string) (prev <-chan struct{}, done chan struct{}) {
	done = make(chan struct{})
	d.mu.Lock()
	defer d.mu.Unlock()
	if p, ok := d.last[node][key]; ok {
		prev = p
	} else {
		prev = closedChan
	}
	d.last[node][key] = done
	return prev, done
}

// leave ends a command: the next one for its key on node may go.
func (d *refDriver) leave(node int, key string, done chan struct{}) {
	d.mu.Lock()
	if d.last[node][key] == done {
		delete(d.last[node], key)
	}
	d.mu.Unlock()
	close(done)
}

// run executes cmd once prev has ended. If cmd's deadline passes first,
// cmd is not sent and answers a timeout.
func (d *refDriver) run(node int, cmd core.Command, deadline time.Time, prev <-chan struct{}) core.Reply {
	select {
	case <-prev:
	default:
		if d.hooks.waits != nil {
			d.hooks.waits(node, cmd)
		}
		timer := time.NewTimer(time.Until(deadline))
		defer timer.Stop()
		select {
		case <-prev:
		case <-timer.C:
			return wire.Fail(node, d.eps[node].Addr, cmd.Op, context.DeadlineExceeded)
		}
	}
	if d.hooks.sends != nil {
		d.hooks.sends(node, cmd)
	}
	return d.exec(node, cmd, deadline)
}

// exec runs cmd on a pooled connection to node, bounded by deadline.
func (d *refDriver) exec(node int, cmd core.Command, deadline time.Time) core.Reply {
	addr := d.eps[node].Addr
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	conn, err := d.pools[node].GetContext(ctx)
	if err != nil {
		return wire.Fail(node, addr, cmd.Op, err)
	}
	defer conn.Close() // a broken connection is discarded by the pool
	timeout := time.Until(deadline)
	if timeout <= 0 {
		return wire.Fail(node, addr, cmd.Op, context.DeadlineExceeded)
	}
	tok := wire.Token(cmd.Token)
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
	if cmd.Op == core.OpExtend {
		args = append(args, wire.Millis(cmd.TTL))
	}
	n, err := redis.Int64(redis.DoWithTimeout(conn, timeout, "EVALSHA", append([]any{s.SHA1}, args...)...))
	if wire.IsNoScript(err) {
		if timeout = time.Until(deadline); timeout <= 0 {
			return wire.Fail(node, addr, cmd.Op, context.DeadlineExceeded)
		}
		n, err = redis.Int64(redis.DoWithTimeout(conn, timeout, "EVAL", append([]any{s.Src}, args...)...))
	}
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
// same node; one that times out waiting is not sent and keeps the
// commands behind it waiting; other keys do not wait. The straggler is
// held just before it goes out, so a driver that lets a later command
// overtake it fails here every time rather than now and then.
func TestRefDriverOrder(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{Embedded: true})
	d := newRefDriver([]conformance.Endpoint{{Addr: srv.Addr}})
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

	// Behind the release that timed out, still behind the acquire.
	b = d.Begin(ctx)
	b.Send(0, rel, far)
	require.Equal(t, "waits release "+key, next(), "the release must not overtake the acquire")
	close(gate)
	require.Equal(t, "sends release "+key, next())
	r = receive(b)
	require.Equal(t, core.StatusOK, r.Status, "the release finds the acquire's key: %v", r.Err)
	n, err := srv.Do("EXISTS", key)
	require.NoError(t, err)
	require.Equal(t, int64(0), n, "the release deleted the key")
}
