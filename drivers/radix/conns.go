package radix

import (
	"context"
	"sync"

	radixv4 "github.com/mediocregopher/radix/v4"

	"github.com/redlock-go/redlock/drivers/internal/fanout"
)

// conns tracks every connection the driver's pools open, so that Close can
// close them all. A radix pool closed while it is still opening its
// connections in the background keeps the one it was opening, with its
// reader and writer goroutines, forever; through the tracker, Close closes
// it too, and a connection opened after Close is closed at once.
type conns struct {
	dialer radixv4.Dialer

	mu     sync.Mutex
	open   map[*trackedConn]struct{}
	closed bool
}

func newConns(d radixv4.Dialer) *conns {
	return &conns{dialer: d, open: make(map[*trackedConn]struct{})}
}

// dial is the pools' Dialer.CustomConn.
func (t *conns) dial(ctx context.Context, network, addr string) (radixv4.Conn, error) {
	c, err := t.dialer.Dial(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	tc := &trackedConn{Conn: c, t: t}
	t.mu.Lock()
	defer t.mu.Unlock()
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
	t.mu.Unlock()
	for c := range open {
		_ = c.Conn.Close()
	}
}

type trackedConn struct {
	radixv4.Conn
	t *conns
}

func (c *trackedConn) Close() error {
	c.t.mu.Lock()
	delete(c.t.open, c)
	c.t.mu.Unlock()
	return c.Conn.Close()
}
