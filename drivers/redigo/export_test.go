package redigo

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlock-go/redlock/drivers"
	"github.com/redlock-go/redlock/drivers/engine"
)

// Subscriber returns the subscription dialer that Dial gives the engine.
func Subscriber(addrs []string, opts Options) engine.SubscribeDialer {
	return subscriber(dialConfig(addrs, opts))
}

// PoolSubscriber returns the one that New gives it.
func PoolSubscriber(pools []*redis.Pool) engine.SubscribeDialer {
	return subscriber(newConfig(pools, nil))
}

// dialConfig is Dial's engine configuration.
func dialConfig(addrs []string, opts Options) (engine.Config, error) {
	return drivers.DialConfig("redigo", addrs, opts, adapter(opts))
}

func subscriber(cfg engine.Config, err error) engine.SubscribeDialer {
	if err != nil {
		panic(err)
	}
	return cfg.Subscribe
}

// SocketDeadlines counts the deadlines set on the sockets of the command
// connections Dial makes from now until the test ends.
type SocketDeadlines struct{ Read, Write atomic.Int64 }

func CountSocketDeadlines(t testing.TB) *SocketDeadlines {
	n := new(SocketDeadlines)
	wrap := func(c net.Conn) net.Conn { return countingSocket{c, n} }
	wrapSocket.Store(&wrap)
	t.Cleanup(func() { wrapSocket.Store(nil) })
	return n
}

type countingSocket struct {
	net.Conn
	n *SocketDeadlines
}

func (c countingSocket) SetDeadline(t time.Time) error {
	c.n.Read.Add(1)
	c.n.Write.Add(1)
	return c.Conn.SetDeadline(t)
}

func (c countingSocket) SetReadDeadline(t time.Time) error {
	c.n.Read.Add(1)
	return c.Conn.SetReadDeadline(t)
}

func (c countingSocket) SetWriteDeadline(t time.Time) error {
	c.n.Write.Add(1)
	return c.Conn.SetWriteDeadline(t)
}

// DialDuplex dials node i as Dial's engine does.
func DialDuplex(ctx context.Context, addrs []string, opts Options, i int) (engine.Duplex, error) {
	cfg, err := dialConfig(addrs, opts)
	if err != nil {
		return nil, err
	}
	c, err := cfg.Dial(ctx, i)
	if err != nil {
		return nil, err
	}
	return c.(engine.Duplex), nil
}
