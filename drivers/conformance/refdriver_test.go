package conformance_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers/conformance"
	"github.com/redlock-go/redlock/drivers/internal/wire"
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
type refDriver struct {
	eps   []conformance.Endpoint
	pools []*redis.Pool
	wg    sync.WaitGroup // in-flight commands
}

func newRefDriver(eps []conformance.Endpoint) *refDriver {
	d := &refDriver{eps: eps, pools: make([]*redis.Pool, len(eps))}
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

func (b *refBatch) Send(node int, cmd core.Command, deadline time.Time) {
	b.d.wg.Add(1)
	go func() {
		defer b.d.wg.Done()
		b.replies <- b.d.exec(node, cmd, deadline)
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
