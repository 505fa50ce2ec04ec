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
// once its connections are gone, makes a command wait for a reconnection
// until the command's deadline. When the node has no open connection and
// the pool's last attempt to dial it failed, the driver fails its commands
// at once with that error instead (core.StatusError, "connection
// refused"), as for a node that was down at Dial.
type conns struct {
	dialer radixv4.Dialer

	mu      sync.Mutex
	open    map[*trackedConn]struct{}
	closed  bool
	dialErr error // the last dial's error; nil after a success
}

func newConns(d radixv4.Dialer) *conns {
	return &conns{dialer: d, open: make(map[*trackedConn]struct{})}
}

// dial is the pools' Dialer.CustomConn.
func (t *conns) dial(ctx context.Context, network, addr string) (radixv4.Conn, error) {
	c, err := t.dialer.Dial(ctx, network, addr)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.dialErr = err
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

// down returns the last dial error if no connection is open, else nil.
func (t *conns) down() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.open) > 0 || t.closed {
		return nil
	}
	return t.dialErr
}

// closeAll closes every connection still open and refuses new ones.
func (t *conns) closeAll() {
	t.mu.Lock()
	open := t.open
	t.open, t.closed = nil, true
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
	delete(c.t.open, c)
	c.t.mu.Unlock()
	return c.Conn.Close()
}
