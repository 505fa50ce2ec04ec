// Package rueidis is a Redlock driver (core.Driver) over
// github.com/redis/rueidis.
//
// Dial creates one rueidis client per Redis master: a single-node client
// (ForceSingleClient) on one connection, with client-side caching and
// retries off (see ClientOption). New wraps clients the caller made
// instead. A node's commands, from every round, go out on its client as
// pipelines (DoMulti, or Do for a lone command), one pipeline at a time,
// in the order their rounds issued them. The driver engine shared by every
// driver of this module owns the rest: deadlines on the Client's clock,
// scripts, replies, and the order rule that keeps a release behind the SET
// it undoes (see core.Batch).
//
// Dial honours Options: Username and Password (HELLO or AUTH), DB
// (SELECT), TLS, DialTimeout and Clock. A node that is down does not fail Dial:
// its commands fail (core.StatusError, naming the node) until it answers;
// so do refused credentials, quoting the server's error. When a
// connection fails (the server restarted, a reply missed its deadline) the
// driver closes that node's client and creates another for the node's next
// pipeline (a client given to New reconnects by itself); until a script
// has run on the new connection its commands carry the script's source
// (EVAL), since a restarted server has lost its script cache.
//
// DialMembers takes quorum members instead of addresses (drivers.Member):
// standalone masters as Dial's, Sentinel groups through rueidis's Sentinel
// client and Clusters through its cluster client, each one vote, with
// WAIT after each write when a member asks for it (see DialMembers).
//
// Release notifications (Watch, core.Announcer) come over a connection
// per node dedicated to them (Client.Dedicate) in subscribe mode: Dial
// makes one more client for it with the same options, which keeps its own
// connection idle beside it; New dedicates one from each caller's client.
package rueidis

import (
	"cmp"
	"context"
	"time"

	rd "github.com/redis/rueidis"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers"
	"github.com/redlock-go/redlock/drivers/engine"
	"github.com/redlock-go/redlock/drivers/wire"
)

// Options configure Dial; every field is honoured (see drivers.Options).
type Options = drivers.Options

// Driver is a core.Driver over rueidis clients. It is safe for concurrent
// use.
type Driver struct{ e *engine.Engine }

var _ core.Announcer = (*Driver)(nil)

// ClientOption returns the rueidis options Dial uses for addr: a
// single-node client (ForceSingleClient) on one connection
// (PipelineMultiplex -1), no client-side cache, no retries (a retried SET
// NX could report the caller's own key as held), buffers and queue sized
// for small commands from one caller at a time (rueidis's defaults cost 1
// MiB and some 4,000 allocations a dial), and the authentication,
// database, TLS and dial timeout of opts. It is exported for New's callers.
func ClientOption(addr string, opts Options) rd.ClientOption {
	o := rd.ClientOption{
		InitAddress:         []string{addr},
		Username:            opts.Username,
		Password:            opts.Password,
		SelectDB:            opts.DB,
		TLSConfig:           opts.TLS,
		ForceSingleClient:   true,
		DisableCache:        true,
		DisableRetry:        true,
		PipelineMultiplex:   -1, // 2^0 connections
		ReadBufferEachConn:  1 << 14,
		WriteBufferEachConn: 1 << 15,
		RingScaleEachConn:   4, // 16 slots
	}
	o.Dialer.Timeout = cmp.Or(opts.DialTimeout, drivers.DefaultDialTimeout)
	return o
}

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
	addrs, timeout, err := wire.CheckDial("rueidis", addrs, opts)
	if err != nil {
		return engine.Config{}, err
	}
	// NewClient dials at once, bounded by Dialer.Timeout, HELLO/AUTH
	// included. With ForceSingleClient it returns a client even when the
	// dial fails, to dial again on use: the engine redials instead.
	client := func(ctx context.Context, i int) (rd.Client, error) {
		o := ClientOption(addrs[i], opts)
		if dl, ok := ctx.Deadline(); ok {
			if o.Dialer.Timeout = min(o.Dialer.Timeout, time.Until(dl)); o.Dialer.Timeout <= 0 {
				return nil, context.DeadlineExceeded
			}
		}
		c, err := rd.NewClient(o)
		if err != nil {
			if c != nil {
				c.Close()
			}
			return nil, err
		}
		return c, nil
	}
	dial := func(ctx context.Context, i int) (engine.Conn, error) {
		c, err := client(ctx, i)
		if err != nil {
			return nil, err
		}
		return &conn{c: c, owned: true}, nil
	}
	sub := func(ctx context.Context, i int) (engine.Subscription, error) {
		c, err := client(ctx, i)
		if err != nil {
			return nil, err
		}
		return subscribe(c, c.Close)
	}
	return engine.Config{Names: addrs, Dial: dial, DialTimeout: timeout, Subscribe: sub, Clock: opts.Clock, Logger: opts.Logger}, nil
}

// New returns a Driver over existing clients, one per master in node
// order, each a single-node client without retries (see ClientOption),
// which reconnects by itself. names[i] names node i in errors; nil takes
// each client's address. A nil client, the same client twice or
// the same name twice (the same server would vote twice) is an error
// matching core.ErrInvalidConfig. Close does not close the clients.
// Release notifications take one dedicated connection of each client
// (Dedicate), closed rather than given back when they end.
// The driver reads its deadlines on the system clock: give a Client over
// it no other (leave redlock.Options.Clock nil).
func New(clients []rd.Client, names []string) (*Driver, error) {
	cfg, err := newConfig(clients, names)
	if err != nil {
		return nil, err
	}
	return &Driver{engine.New(cfg)}, nil
}

// newConfig is New's engine configuration.
func newConfig(clients []rd.Client, names []string) (engine.Config, error) {
	names, err := wire.CheckClients("rueidis", clients, names, func(_ int, c rd.Client) (addr string) {
		for addr = range c.Nodes() { // one, for a single-node client
		}
		return addr
	})
	if err != nil {
		return engine.Config{}, err
	}
	dial := func(_ context.Context, i int) (engine.Conn, error) {
		return &conn{c: clients[i]}, nil
	}
	sub := func(_ context.Context, i int) (engine.Subscription, error) {
		return subscribe(clients[i], func() {})
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

// Close sends the releases already issued, then closes the clients Dial
// made. Commands issued after Close fail with core.ErrClosed. Close is
// idempotent and returns nil.
func (d *Driver) Close() error {
	d.e.Close()
	return nil
}

// sub is a dedicated connection of a client in subscribe mode: the
// engine's Subscription. rueidis reads it on a goroutine of its own and
// hands what it reads to hooks, which queue it in an engine.Inbox.
type sub struct {
	*engine.Inbox
	c     rd.DedicatedClient
	close func()       // after c.Close: closes the client Dial made
	ended <-chan error // the hooks' end: one error, then closed
}

// subscribe dedicates a connection of c to a subscription.
func subscribe(c rd.Client, closeClient func()) (engine.Subscription, error) {
	dc, _ := c.Dedicate() // the release is in dc.Close
	s := &sub{Inbox: engine.NewInbox(), c: dc, close: closeClient}
	push := func(kind, channel string) {
		if e, ok := engine.EventOf(kind, channel); ok {
			s.Push(e)
		}
	}
	s.ended = dc.SetPubSubHooks(rd.PubSubHooks{
		OnMessage: func(m rd.PubSubMessage) {
			if m.Pattern == "" {
				push("message", m.Channel)
			}
		},
		OnSubscription: func(m rd.PubSubSubscription) { push(m.Kind, m.Channel) },
	})
	select {
	case err := <-s.ended: // the dedicated connection's dial failed
		_ = s.Close() // always nil; it returns the dedicated connection and closes Dial's client
		return nil, cmp.Or(err, rd.ErrClosing)
	default:
		return s, nil
	}
}

// Subscribe and Unsubscribe return when rueidis has read the reply to the
// command (the first confirmation), which the hooks have queued.
func (s *sub) Subscribe(ctx context.Context, chs ...string) error {
	return s.do(ctx, s.c.B().Subscribe().Channel(chs...).Build())
}

func (s *sub) Unsubscribe(ctx context.Context, chs ...string) error {
	return s.do(ctx, s.c.B().Unsubscribe().Channel(chs...).Build())
}

// do sends cmd; an error reply (an ACL's NOPERM) is an event, since it
// comes back here rather than through the hooks.
func (s *sub) do(ctx context.Context, cmd rd.Completed) error {
	err := s.c.Do(ctx, cmd).Error()
	if _, ok := rd.IsRedisErr(err); ok {
		s.Push(engine.Event{Kind: engine.EventRefused, Err: err})
		return nil
	}
	return err
}

func (s *sub) Receive(ctx context.Context) (engine.Event, error) {
	return s.Inbox.Receive(ctx, s.ended)
}

func (s *sub) Close() error {
	if s.Inbox.Close() {
		s.c.Close() // closes the connection rather than give it back
		s.close()
	}
	return nil
}

// conn is one node's client: the engine's Conn.
type conn struct {
	c     rd.Client
	owned bool // Dial made c: Close closes it
	cmds  []rd.Completed
}

func (c *conn) Close() error {
	if c.owned {
		c.c.Close()
	}
	return nil
}

// Exchange sends cmds as one pipeline: DoMulti, or Do for a lone command
// (its result comes by value, where DoMulti allocates a slice).
func (c *conn) Exchange(ctx context.Context, cmds [][]string, replies []engine.Reply) error {
	if len(cmds) == 1 {
		r, err := reply(c.c.Do(ctx, c.c.B().Arbitrary(cmds[0]...).Build()))
		replies[0] = r
		return err
	}
	for _, cmd := range cmds {
		c.cmds = append(c.cmds, c.c.B().Arbitrary(cmd...).Build())
	}
	rs := c.c.DoMulti(ctx, c.cmds...)
	clear(c.cmds) // rueidis recycles the commands it sent
	c.cmds = c.cmds[:0]
	for i, r := range rs {
		rep, err := reply(r)
		if err != nil {
			return err
		}
		replies[i] = rep
	}
	return nil
}

// reply decodes r, or returns the connection's failure.
func reply(r rd.RedisResult) (engine.Reply, error) {
	if err := r.Error(); err != nil {
		if rd.IsRedisNil(err) {
			return engine.Reply{Kind: engine.KindNil}, nil
		}
		if _, ok := rd.IsRedisErr(err); ok {
			return engine.Reply{Kind: engine.KindError, Err: err}, nil
		}
		return engine.Reply{}, err
	}
	m, _ := r.ToMessage()
	if m.IsInt64() {
		n, _ := m.AsInt64()
		return engine.Reply{Kind: engine.KindInt, Int: n}, nil
	}
	if s, err := m.ToString(); err == nil {
		return engine.String(s), nil
	}
	return other(m), nil
}

// other takes its own copy of m, which escapes; reply's stays on the stack.
func other(m rd.RedisMessage) engine.Reply { return engine.Other(&m) }
