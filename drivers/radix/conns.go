package radix

import (
	"context"
	"sync"
	"sync/atomic"

	radixv4 "github.com/mediocregopher/radix/v4"

	"github.com/redlock-go/redlock/drivers/internal/fanout"
)

// conns tracks every connection the driver's pools open, so that Close can
// close them all. A radix pool closed while it is still opening its
// connections in the background keeps the one it was opening, with its
// reader and writer goroutines, forever; through the tracker, Close closes
// it too, and a connection opened after Close is closed at once.
//
// It also tells a node that is down from one that is slow: radix's pool,
// once its connection is gone, makes a command wait for a reconnection
// until the command's deadline, and the node's pipeline goroutine with it,
// holding up the commands queued behind. When the node has no open
// connection, the driver waits instead for the pool's next dial (see
// ready); if that or the last dial failed, it fails the node's commands at
// once with the dial error (core.StatusError, "connection refused"), as
// for a node that was down at Dial.
type conns struct {
	dialer radixv4.Dialer

	mu      sync.Mutex
	open    map[*trackedConn]struct{}
	closed  bool
	dialErr error         // the last dial's error; nil after a success
	changed chan struct{} // closed and replaced when a dial ends or a conn closes
}

func newConns(d radixv4.Dialer) *conns {
	return &conns{dialer: d, open: make(map[*trackedConn]struct{}), changed: make(chan struct{})}
}

// notifyLocked wakes the commands waiting in ready.
func (t *conns) notifyLocked() {
	close(t.changed)
	t.changed = make(chan struct{})
}

// ready returns nil once the node has an open connection, the last dial's
// error if it has none and that dial failed, or ctx's error. With no
// connection and no failed dial (the pool is replacing a broken one) it
// waits for the pool's dial.
func (t *conns) ready(ctx context.Context) error {
	for {
		t.mu.Lock()
		switch {
		case len(t.open) > 0 || t.closed:
			t.mu.Unlock()
			return nil
		case t.dialErr != nil:
			err := t.dialErr
			t.mu.Unlock()
			return err
		}
		ch := t.changed
		t.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// dial is the pools' Dialer.CustomConn.
func (t *conns) dial(ctx context.Context, network, addr string) (radixv4.Conn, error) {
	c, err := t.dialer.Dial(ctx, network, addr)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.dialErr = err
	t.notifyLocked()
	if err != nil {
		return nil, err
	}
	tc := &trackedConn{Conn: c, t: t}
	if t.closed {
		_ = c.Close()
		return nil, fanout.ErrClosed
	}
	t.open[tc] = struct{}{}
	return tc, nil
}

// closeAll closes every connection still open and refuses new ones.
func (t *conns) closeAll() {
	t.mu.Lock()
	open := t.open
	t.open, t.closed = nil, true
	t.notifyLocked()
	t.mu.Unlock()
	for c := range open {
		_ = c.Conn.Close()
	}
}

type trackedConn struct {
	radixv4.Conn
	t    *conns
	hung atomic.Bool // closed because a command timed out on it
}

// EncodeDecode releases a hung connection. When a command fails after its
// deadline, radix would keep reading its reply to discard it, without a
// deadline, and every command queued behind it on this shared connection
// would wait for it, for as long as the server hangs (a SIGSTOPped node;
// radix issue #284). So the connection is closed at once: the commands
// queued behind are released, and every failure on it from then on is a
// *hungError, which the driver reports as core.StatusTimeout (the node did
// not answer) and radix's pool takes as a broken connection to replace
// (it does not unwrap to resp.ErrConnUsable).
func (c *trackedConn) EncodeDecode(ctx context.Context, m, u any) error {
	err := c.Conn.EncodeDecode(ctx, m, u)
	switch {
	case err == nil || isRedisErr(err):
		return err
	case c.hung.Load():
		return &hungError{err: err}
	case ctx.Err() != nil && m != nil:
		c.hung.Store(true)
		_ = c.Close()
		return &hungError{err: err}
	}
	return err
}

// hungError is a failure on a connection closed because the node did not
// answer a command by its deadline. It matches context.DeadlineExceeded.
type hungError struct{ err error }

func (e *hungError) Error() string {
	return "connection closed after the node missed a deadline: " + e.err.Error()
}

func (e *hungError) Is(target error) bool { return target == context.DeadlineExceeded }

func (c *trackedConn) Close() error {
	c.t.mu.Lock()
	if _, ok := c.t.open[c]; ok {
		delete(c.t.open, c)
		c.t.notifyLocked()
	}
	c.t.mu.Unlock()
	return c.Conn.Close()
}
