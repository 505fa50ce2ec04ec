// Package redigo is a Redlock driver (core.Driver) over
// github.com/gomodule/redigo.
//
// Dial connects one redigo connection per Redis master; New takes one
// redis.Pool per master instead and keeps one connection checked out of
// each. A node's commands, from every round, go out on that connection as
// pipelines (redigo's Send, Flush and Receive), in the order their rounds
// issued them: Dial's connections are written while the replies to the
// pipelines before are still being read (engine.Duplex), New's pooled
// ones carry one pipeline at a time. The driver engine shared by every
// driver of this module owns the rest: deadlines on the Client's clock,
// scripts, replies, and the order rule that keeps a release behind the SET
// it undoes (see core.Batch).
//
// Dial honours Options: Username and Password (AUTH), DB (SELECT), TLS,
// DialTimeout and Clock. A node that is down does not fail Dial: its commands
// fail (core.StatusError, naming the node) until it answers. When a
// connection fails (the server restarted, a reply missed its deadline) the
// driver closes it and dials again for the node's next pipeline; until a
// script has run on the new connection its commands carry the script's
// source (EVAL), since a restarted server has lost its script cache.
//
// DialMembers takes the nodes as drivers.Member values, with WAIT
// (Member.WithWait) where asked. redigo has neither a Sentinel nor a
// Cluster client, so only standalone masters are members here: a Sentinel
// group or a Cluster member is refused with core.ErrInvalidConfig, naming
// it (the goredis and radix drivers serve those).
//
// Release notifications (Watch, core.Announcer) come over one more
// connection per node, in subscribe mode, read without a timeout (it
// idles): Dial's is dialled as the command connections are; New's with the
// pool's own DialContext or Dial, outside the pool, since a pooled
// connection cannot be read and written at once nor closed while read.
package redigo

import (
	"context"
	"errors"
	"net"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers"
	"github.com/redlock-go/redlock/drivers/engine"
	"github.com/redlock-go/redlock/drivers/wire"
)

// Options configure Dial; every field is honoured (see drivers.Options).
type Options = drivers.Options

// Driver is a core.Driver over redigo connections. It is safe for
// concurrent use.
type Driver struct{ e *engine.Engine }

var _ core.Announcer = (*Driver)(nil)

// Dial validates addrs (host:port each, no server twice) and opts, then
// starts connecting to every node in the background; it keeps its own copy
// of addrs. It fails only for invalid configuration, with an error
// matching core.ErrInvalidConfig.
func Dial(addrs []string, opts Options) (*Driver, error) {
	cfg, err := dialConfig(addrs, opts)
	if err != nil {
		return nil, err
	}
	return &Driver{engine.New(cfg)}, nil
}

// dialConfig is Dial's engine configuration.
func dialConfig(addrs []string, opts Options) (engine.Config, error) {
	addrs, timeout, err := wire.CheckDial("redigo", addrs, opts)
	if err != nil {
		return engine.Config{}, err
	}
	do := []redis.DialOption{
		redis.DialUsername(opts.Username), redis.DialPassword(opts.Password), redis.DialDatabase(opts.DB),
		redis.DialConnectTimeout(timeout), redis.DialTLSHandshakeTimeout(timeout),
	}
	if opts.TLS != nil {
		do = append(do, redis.DialUseTLS(true), redis.DialTLSConfig(opts.TLS))
	}
	dialer := net.Dialer{Timeout: timeout, KeepAlive: 5 * time.Minute} // redigo's, with DialConnectTimeout
	dial := func(ctx context.Context, i int) (engine.Conn, error) {
		var raw *ownDeadlines
		c, err := redis.DialContext(ctx, "tcp", addrs[i], append(do[:len(do):len(do)], redis.DialContextFunc(
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
				raw = &ownDeadlines{Conn: nc}
				return raw, nil
			}))...)
		if err != nil {
			return nil, err
		}
		raw.own = true // from now on, write and read set the deadlines
		return &duplex{conn{c: c, raw: raw.Conn, writeTimeout: timeout}}, nil
	}
	// Writes have no context in redigo: bound them as the dial is.
	subDo := append(do[:len(do):len(do)], redis.DialWriteTimeout(timeout))
	sub := func(ctx context.Context, i int) (engine.Subscription, error) {
		c, err := redis.DialContext(ctx, "tcp", addrs[i], subDo...) // no read timeout: it idles
		return subscription(c, err)
	}
	return engine.Config{Names: addrs, Dial: dial, DialTimeout: timeout, Subscribe: sub, Clock: opts.Clock, Logger: opts.Logger}, nil
}

// New returns a Driver over existing pools, one per master in node order.
// It checks one connection out of each pool (with GetContext, within the
// deadline of the command that needs it) and keeps it; when it fails, the
// driver closes it, which gives it back to the pool as broken, and checks
// out another. names[i] names node i in errors (typically its address);
// nil names the nodes "pool 0", "pool 1", ... A nil pool, the same pool
// twice or the same name twice (the same server would vote twice) is an
// error matching core.ErrInvalidConfig. Close does not close the pools.
// Release notifications take one more connection per node, dialled with
// the pool's DialContext (or Dial) and kept outside the pool.
// The driver reads its deadlines on the system clock: give a Client over
// it no other (leave redlock.Options.Clock nil).
func New(pools []*redis.Pool, names []string) (*Driver, error) {
	cfg, err := newConfig(pools, names)
	if err != nil {
		return nil, err
	}
	return &Driver{engine.New(cfg)}, nil
}

// newConfig is New's engine configuration.
func newConfig(pools []*redis.Pool, names []string) (engine.Config, error) {
	names, err := wire.CheckClients("redigo", pools, names, func(i int, _ *redis.Pool) string { return "pool " + strconv.Itoa(i) })
	if err != nil {
		return engine.Config{}, err
	}
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
	return engine.Config{Names: names, Dial: dial, Subscribe: sub}, nil
}

// Nodes returns N.
func (d *Driver) Nodes() int { return d.e.Nodes() }

// Clock returns the clock of the commands' deadlines (Options.Clock; New's: the system clock).
func (d *Driver) Clock() core.Clock { return d.e.Clock() }

// NodeName returns node i's address, or the name given to New.
func (d *Driver) NodeName(i int) string { return d.e.NodeName(i) }

// Begin returns a batch for one round.
func (d *Driver) Begin(ctx context.Context) core.Batch { return d.e.Begin(ctx) }

// Watch relays the release announcements of key (core.Announcer).
func (d *Driver) Watch(key string, notify func(node int)) core.Watch { return d.e.Watch(key, notify) }

// Close sends the releases already issued, then closes the connections.
// Commands issued after Close fail with core.ErrClosed. Close is
// idempotent and returns nil.
func (d *Driver) Close() error {
	d.e.Close()
	return nil
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
// redigo's own calls reach ownDeadlines and do nothing. A pool's
// connection (New) is not the driver's to wrap; raw is nil there.
type conn struct {
	c            redis.Conn
	args         boxes
	raw          net.Conn
	writeTimeout time.Duration // with raw: the bound of each pipeline's write
}

// wrapSocket, when a test sets it, wraps each command connection's socket.
var wrapSocket atomic.Pointer[func(net.Conn) net.Conn]

// ownDeadlines is a socket whose deadlines redigo no longer sets once own
// is: the driver sets them on the socket itself (conn.raw). It is set
// before the connection is handed to the engine, and never cleared.
type ownDeadlines struct {
	net.Conn
	own bool
}

func (o *ownDeadlines) SetDeadline(t time.Time) error {
	if o.own {
		return nil
	}
	return o.Conn.SetDeadline(t)
}

func (o *ownDeadlines) SetReadDeadline(t time.Time) error {
	if o.own {
		return nil
	}
	return o.Conn.SetReadDeadline(t)
}

func (o *ownDeadlines) SetWriteDeadline(t time.Time) error {
	if o.own {
		return nil
	}
	return o.Conn.SetWriteDeadline(t)
}

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
		if err := c.c.Send(cmd[0], c.args.of(cmd[1:])...); err != nil {
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
		switch v := v.(type) {
		case nil:
			replies[i] = engine.Reply{Kind: engine.KindNil}
		case string:
			replies[i] = engine.String(v)
		case []byte:
			replies[i] = engine.String(string(v))
		case int64:
			replies[i] = engine.Reply{Kind: engine.KindInt, Int: v}
		default:
			replies[i] = engine.Other(v)
		}
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

// boxes passes strings to redigo's ...interface{} without allocating. Each
// argument is copied into a buffer kept, already boxed as a []byte, for its
// position and length: keys, tokens, TTLs and scripts take a few lengths
// each. redigo copies the arguments into its write buffer in Send, so the
// buffers are free again when Send returns. Twelve positions: the most any
// command has after its name is the Fair fenced acquire's eleven (script,
// 4, key, fence counter, queue, deadlines, token, TTL, waiter, ticket,
// life).
type boxes struct {
	byLen [12]map[int]any
	args  [12]any
}

func (b *boxes) of(words []string) []any {
	for i, w := range words {
		if b.byLen[i] == nil {
			b.byLen[i] = make(map[int]any)
		}
		box, ok := b.byLen[i][len(w)]
		if !ok {
			box = make([]byte, len(w))
			b.byLen[i][len(w)] = box
		}
		copy(box.([]byte), w)
		b.args[i] = box
	}
	return b.args[:len(words)]
}
