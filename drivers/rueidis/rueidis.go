// Package rueidis is a Redlock driver over github.com/redis/rueidis: the
// adapters that give the engine rueidis's clients (see drivers.Driver for
// what the engine does with them).
//
// Dial creates one rueidis client per Redis master: a single-node client
// (ForceSingleClient) on one connection, with client-side caching and
// retries off (see ClientOption), honouring every Options field
// (Username and Password by HELLO or AUTH; refused credentials fail the
// node's commands, quoting the server's error). New wraps clients the
// caller made instead, which reconnect by themselves; after a failure the
// driver replaces a client Dial made. A node's pipelines go out on its
// client with DoMulti, or Do for a lone command, one at a time.
//
// DialMembers takes standalone masters as Dial's, Sentinel groups through
// rueidis's Sentinel client and Clusters through its cluster client, each
// one vote, with WAIT after each write when a member asks for it (see
// DialMembers).
//
// Release notifications (Watch) come over a connection per node dedicated
// to them (Client.Dedicate) in subscribe mode: Dial makes one more client
// for it with the same options, which keeps its own connection idle
// beside it; New dedicates one from each caller's client.
package rueidis

import (
	"cmp"
	"context"

	rd "github.com/redis/rueidis"

	"github.com/redlock-go/redlock/drivers"
	"github.com/redlock-go/redlock/drivers/engine"
)

// Options configure Dial; every field is honoured (see drivers.Options).
type Options = drivers.Options

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

// Dial validates addrs and opts and starts connecting to every node in
// the background, one rueidis client each (see drivers.DialConfig).
func Dial(addrs []string, opts Options) (*drivers.Driver, error) {
	return drivers.Start(drivers.DialConfig("rueidis", addrs, opts, adapter(opts)))
}

// New returns a Driver over existing clients, one per master in node
// order (see drivers.NewConfig), each a single-node client without
// retries (see ClientOption); nil names take each client's address.
// Release notifications take one dedicated connection of each client
// (Dedicate), closed rather than given back when they end.
func New(clients []rd.Client, names []string) (*drivers.Driver, error) {
	return drivers.Start(newConfig(clients, names))
}

// newConfig is New's engine configuration.
func newConfig(clients []rd.Client, names []string) (engine.Config, error) {
	return drivers.NewConfig("rueidis", clients, names, func(_ int, c rd.Client) (addr string) {
		for addr = range c.Nodes() { // one, for a single-node client
		}
		return addr
	}, func(clients []rd.Client) (engine.Dialer, engine.SubscribeDialer) {
		dial := func(_ context.Context, i int) (engine.Conn, error) { return &conn{c: clients[i]}, nil }
		sub := func(_ context.Context, i int) (engine.Subscription, error) { return subscribe(clients[i], func() {}) }
		return dial, sub
	})
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
	return collect(rs, replies)
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
