// Package redigo is a Redlock driver over github.com/gomodule/redigo:
// the adapters that give the engine redigo's connections (see
// drivers.Driver for what the engine does with them).
//
// Dial connects one redigo connection per Redis master, honouring every
// Options field (AUTH, SELECT, TLS); New takes one redis.Pool per master
// instead and keeps one connection checked out of each. A node's
// pipelines go out with redigo's Send, Flush and Receive: on Dial's
// connections while the replies to the pipelines before are still read
// (engine.Duplex), on New's pooled ones one at a time. redigo has neither
// a Sentinel nor a Cluster client: DialMembers takes standalone masters.
//
// Release notifications (Watch) come over one more connection per node,
// in subscribe mode, read without a timeout (it idles): Dial's is dialled
// as the command connections are; New's with the pool's own DialContext
// or Dial, outside the pool, since a pooled connection cannot be read and
// written at once nor closed while read.
package redigo

import (
	"context"
	"errors"
	"net"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlock-go/redlock/drivers"
	"github.com/redlock-go/redlock/drivers/engine"
)

// Options configure Dial; every field is honoured (see drivers.Options).
type Options = drivers.Options

// Dial validates addrs and opts and starts connecting to every node in the
// background, one redigo connection each (see drivers.DialConfig).
func Dial(addrs []string, opts Options) (*drivers.Driver, error) {
	return drivers.Start(drivers.DialConfig("redigo", addrs, opts, adapter(opts)))
}

// DialMembers is Dial for members given as drivers.Member values: it
// accepts standalone masters only (drivers.NewStandalone, drivers.Members),
// each dialled as Dial dials a node, with or without WAIT
// (Member.WithWait, see drivers.MembersConfig). redigo has neither a
// Sentinel nor a Cluster client: a Sentinel group or a Cluster member is
// refused with an error matching core.ErrInvalidConfig that names it; use
// the goredis or radix driver for those.
func DialMembers(members []drivers.Member, opts Options) (*drivers.Driver, error) {
	return drivers.Start(drivers.MembersConfig("redigo", members, opts, adapter(opts), drivers.Standalone))
}

// adapter dials the standalone masters of Dial and DialMembers.
func adapter(opts Options) drivers.Adapter {
	return func(ms []drivers.Member, timeout time.Duration) (engine.Dialer, engine.SubscribeDialer) {
		do := []redis.DialOption{
			redis.DialUsername(opts.Username), redis.DialPassword(opts.Password), redis.DialDatabase(opts.DB),
			redis.DialConnectTimeout(timeout), redis.DialTLSHandshakeTimeout(timeout),
		}
		if opts.TLS != nil {
			do = append(do, redis.DialUseTLS(true), redis.DialTLSConfig(opts.TLS))
		}
		dialer := net.Dialer{Timeout: timeout, KeepAlive: 5 * time.Minute} // redigo's, with DialConnectTimeout
		dial := func(ctx context.Context, i int) (engine.Conn, error) {
			var raw *engine.OwnDeadlines
			c, err := redis.DialContext(ctx, "tcp", ms[i].Addrs[0], append(do[:len(do):len(do)], redis.DialContextFunc(
				func(ctx context.Context, network, addr string) (net.Conn, error) {
					nc, err := dialer.DialContext(ctx, network, addr)
					if err != nil {
						return nil, err
					}
					if wrap := wrapSocket.Load(); wrap != nil {
						nc = (*wrap)(nc)
					}
					// AUTH and SELECT go out in DialContext, before the
					// driver sets deadlines: bound their writes as the dial is.
					if err := nc.SetWriteDeadline(time.Now().Add(timeout)); err != nil {
						_ = nc.Close() // the deadline's error is the one to report
						return nil, err
					}
					raw = &engine.OwnDeadlines{Conn: nc}
					return raw, nil
				}))...)
			if err != nil {
				return nil, err
			}
			raw.Own = true // from now on, write and read set the deadlines
			return &duplex{conn{c: c, raw: raw.Conn, writeTimeout: timeout}}, nil
		}
		// Writes have no context in redigo: bound them as the dial is.
		subDo := append(do[:len(do):len(do)], redis.DialWriteTimeout(timeout))
		sub := func(ctx context.Context, i int) (engine.Subscription, error) {
			c, err := redis.DialContext(ctx, "tcp", ms[i].Addrs[0], subDo...) // no read timeout: it idles
			return subscription(c, err)
		}
		return dial, sub
	}
}

// New returns a Driver over existing pools, one per master in node order
// (see drivers.NewConfig); nil names name the nodes "pool 0", "pool 1",
// ... It checks one connection out of each pool (with GetContext, within
// the deadline of the command that needs it) and keeps it; when it fails,
// the driver closes it, which gives it back to the pool as broken, and
// checks out another. Release notifications take one more connection per
// node, dialled with the pool's DialContext (or Dial) and kept outside the
// pool. Close does not close the pools.
func New(pools []*redis.Pool, names []string) (*drivers.Driver, error) {
	return drivers.Start(newConfig(pools, names))
}

// newConfig is New's engine configuration.
func newConfig(pools []*redis.Pool, names []string) (engine.Config, error) {
	return drivers.NewConfig("redigo", pools, names, func(i int, _ *redis.Pool) string { return "pool " + strconv.Itoa(i) },
		func(pools []*redis.Pool) (engine.Dialer, engine.SubscribeDialer) {
			dial := func(ctx context.Context, i int) (engine.Conn, error) {
				c, err := pools[i].GetContext(ctx)
				if err != nil {
					return nil, err
				}
				return &conn{c: c}, nil
			}
			sub := func(ctx context.Context, i int) (engine.Subscription, error) {
				switch p := pools[i]; {
				case p.DialContext != nil:
					return subscription(p.DialContext(ctx))
				case p.Dial != nil:
					return subscription(p.Dial())
				}
				return nil, errors.New("redigo: the pool has neither Dial nor DialContext")
			}
			return dial, sub
		})
}

// sub is a redigo connection in subscribe mode: the engine's Subscription.
// redigo allows one writer (Subscribe, Unsubscribe) and one reader
// (Receive) at a time, and Close ends a Receive by closing the socket.
type sub struct{ c redis.PubSubConn }

func subscription(c redis.Conn, err error) (engine.Subscription, error) {
	if err != nil {
		return nil, err
	}
	return sub{redis.PubSubConn{Conn: c}}, nil
}

func (s sub) Subscribe(_ context.Context, chs ...string) error {
	return s.c.Subscribe(redis.Args{}.AddFlat(chs)...)
}

func (s sub) Unsubscribe(_ context.Context, chs ...string) error {
	return s.c.Unsubscribe(redis.Args{}.AddFlat(chs)...)
}

func (s sub) Close() error { return s.c.Close() }

// Receive reads without a timeout, whatever read timeout the connection
// was dialled with (a pool's Dial may set one): the connection idles.
func (s sub) Receive(context.Context) (engine.Event, error) {
	for {
		if err := s.c.Conn.Err(); err != nil { // closed or failed: for good
			return engine.Event{}, err
		}
		var v any
		if _, ok := s.c.Conn.(redis.ConnWithTimeout); ok {
			v = s.c.ReceiveWithTimeout(0)
		} else {
			v = s.c.Receive()
		}
		var e engine.Event
		ok := false
		switch v := v.(type) {
		case redis.Message:
			e, ok = engine.EventOf("message", v.Channel)
			ok = ok && v.Pattern == ""
		case redis.Subscription:
			e, ok = engine.EventOf(v.Kind, v.Channel)
		case redis.Error: // an error reply, such as an ACL's NOPERM
			return engine.Event{Kind: engine.EventRefused, Err: v}, nil
		case error:
			return engine.Event{}, v
		}
		if ok {
			return e, nil
		}
	}
}

// conn is one redigo connection: the engine's Conn.
//
// redigo sets a socket deadline for each command it sends and each reply
// it reads, at the cost of a timer update and a clock reading each. On a
// connection Dial made, raw is the socket, whose deadlines the driver
// sets instead, once per pipeline written and once per pipeline read:
// redigo's own calls reach engine.OwnDeadlines and do nothing. A pool's
// connection (New) is not the driver's to wrap; raw is nil there.
type conn struct {
	c            redis.Conn
	args         engine.Boxes
	raw          net.Conn
	writeTimeout time.Duration // with raw: the bound of each pipeline's write
}

// wrapSocket, when a test sets it, wraps each command connection's socket.
var wrapSocket atomic.Pointer[func(net.Conn) net.Conn]

// Close closes the connection. On a socket whose deadlines the driver
// sets, a TLS connection's close alert goes out under a fresh write
// deadline, since the one the last pipeline left may have passed.
func (c *conn) Close() error {
	if c.raw != nil {
		_ = c.raw.SetWriteDeadline(time.Now().Add(c.writeTimeout)) // a failure here shows in Close's
	}
	return c.c.Close()
}

// Exchange sends cmds with Send and one Flush, then reads the replies.
func (c *conn) Exchange(ctx context.Context, cmds [][]string, replies []engine.Reply) error {
	if err := c.write(cmds); err != nil {
		return err
	}
	return c.read(ctx, replies)
}

// write sends cmds with Send and one Flush, within the write timeout the
// connection was dialled with (redigo's writes take no context).
func (c *conn) write(cmds [][]string) error {
	if c.raw != nil {
		if err := c.raw.SetWriteDeadline(time.Now().Add(c.writeTimeout)); err != nil {
			return err
		}
	}
	for _, cmd := range cmds {
		if err := c.c.Send(cmd[0], c.args.Of(cmd[1:])...); err != nil {
			return err
		}
	}
	return c.c.Flush()
}

// read reads len(replies) replies, each by ctx's deadline.
func (c *conn) read(ctx context.Context, replies []engine.Reply) error {
	deadline, _ := ctx.Deadline()
	if c.raw != nil {
		if !time.Now().Before(deadline) {
			return context.DeadlineExceeded
		}
		if err := c.raw.SetReadDeadline(deadline); err != nil {
			return err
		}
	}
	for i := range replies {
		var v any
		var err error
		if c.raw != nil {
			v, err = c.c.Receive() // by the socket's deadline, set above
		} else if d := time.Until(deadline); d <= 0 {
			return context.DeadlineExceeded
		} else {
			v, err = redis.ReceiveWithTimeout(c.c, d)
		}
		if err != nil {
			var rerr redis.Error // declared here: As moves it to the heap, on errors only
			if errors.As(err, &rerr) {
				replies[i] = engine.Reply{Kind: engine.KindError, Err: rerr}
				continue
			}
			return err
		}
		replies[i] = engine.Value(v)
	}
	return nil
}

// duplex is a connection Dial made: the engine's Duplex. redigo allows one
// caller of Send and Flush (Write) beside one of Receive (Read); Close
// takes the connection's lock and closes its socket, which ends either.
// A pool's connection (New) is not one: closing it gives it back to its
// pool, which must not happen while it is read or written.
type duplex struct{ conn }

var _ engine.Duplex = (*duplex)(nil)

func (d *duplex) Write(_ context.Context, cmds [][]string) error { return d.write(cmds) }

func (d *duplex) Read(ctx context.Context, replies []engine.Reply) error { return d.read(ctx, replies) }
