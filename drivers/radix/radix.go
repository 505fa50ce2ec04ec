// Package radix is a Redlock driver (core.Driver) over
// github.com/mediocregopher/radix/v4.
//
// Dial opens one radix connection (radix.Dialer) per Redis master; New
// takes one radix Client per master instead, typically a pool. A node's
// commands, from every round, go out as pipelines in the order their
// rounds issued them. Dial's connections are written while the replies to
// the pipelines before are still read (engine.Duplex): each pipeline is
// one EncodeDecode that writes it, its replies another that reads them,
// in order. New's clients carry one pipeline at a time, each one radix
// Action whose single EncodeDecode writes every command and reads every
// reply, so a pipeline costs one write and one round trip. The driver engine shared by
// every driver of this module owns the rest: deadlines on the Client's
// clock, scripts, replies, and the order rule that keeps a release behind
// the SET it undoes (see core.Batch).
//
// Dial honours every field of Options: Username and Password (AUTH), DB
// (SELECT), TLS, DialTimeout, which bounds the connect, the TLS handshake
// and AUTH together, and Clock. A node that is down does not fail Dial: its
// commands fail (core.StatusError, naming the node) until it answers.
//
// When a pipeline fails (the server restarted, a reply missed its
// deadline) the driver closes the connection and dials again for the
// node's next pipeline; until a script has run on the new connection its
// commands carry the script's source (EVAL), since a restarted server has
// lost its script cache. A closed connection takes with it any reply radix
// would still have read or discarded, so a late reply never answers a
// later command.
//
// DialMembers takes drivers.Member values: standalone masters, Sentinel
// groups (through radix's Sentinel) and Clusters (through radix's
// Cluster), each one vote, with WAIT where asked (see DialMembers).
//
// New's clients remain the caller's: Close does not close them. Each
// pipeline runs through Client.Do on a connection of its own (the Action
// does not share connections), and after a failed pipeline radix's pool
// closes that connection rather than reuse it. Give New pools: a bare
// radix Conn is not replaced when it breaks.
//
// Release notifications (Watch, core.Announcer) come over one more radix
// connection per node, dialled as Dial's command connections are and kept
// in subscribe mode. A driver made by New has none, and its waiters poll: a
// radix Client lends a connection only for the length of an Action, from a
// fixed-size pool that keeping one for good would shrink (a pool of one
// would starve the commands), or it is a bare Conn, the commands' own.
package radix

import (
	"context"
	"crypto/tls"
	"io"
	"slices"
	"strconv"

	radixv4 "github.com/mediocregopher/radix/v4"
	"github.com/mediocregopher/radix/v4/resp"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers"
	"github.com/redlock-go/redlock/drivers/engine"
	"github.com/redlock-go/redlock/drivers/wire"
)

// Options configure Dial; every field is honoured (see drivers.Options).
type Options = drivers.Options

// Driver is a core.Driver over radix connections. It is safe for
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
	addrs, timeout, err := wire.CheckDial("radix", addrs, opts)
	if err != nil {
		return engine.Config{}, err
	}
	dialer := radixv4.Dialer{AuthUser: opts.Username, AuthPass: opts.Password}
	if opts.DB != 0 {
		dialer.SelectDB = strconv.Itoa(opts.DB)
	}
	if opts.TLS != nil {
		dialer.NetDialer = &tls.Dialer{Config: opts.TLS}
	}
	dial := func(ctx context.Context, i int) (engine.Conn, error) {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		c, err := dialer.Dial(ctx, "tcp", addrs[i])
		if err != nil {
			return nil, err
		}
		return &duplex{conn: conn{c: c, own: true}, rc: c}, nil
	}
	sub := func(ctx context.Context, i int) (engine.Subscription, error) {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		c, err := dialer.Dial(ctx, "tcp", addrs[i])
		if err != nil {
			return nil, err
		}
		return sub{c}, nil
	}
	return engine.Config{Names: addrs, Dial: dial, DialTimeout: timeout, Subscribe: sub, Clock: opts.Clock, Logger: opts.Logger}, nil
}

// New returns a Driver over existing clients (pools, typically), one per
// master in node order. names[i] names node i in errors; nil takes each
// client's Addr. A nil client, the same client twice or the same name
// twice (the same server would vote twice) is an error matching
// core.ErrInvalidConfig. Close does not close the clients.
// The driver reads its deadlines on the system clock: give a Client over
// it no other (leave redlock.Options.Clock nil).
func New(clients []radixv4.Client, names []string) (*Driver, error) {
	cfg, err := newConfig(clients, names)
	if err != nil {
		return nil, err
	}
	return &Driver{engine.New(cfg)}, nil
}

// newConfig is New's engine configuration.
func newConfig(clients []radixv4.Client, names []string) (engine.Config, error) {
	names, err := wire.CheckClients("radix", clients, names, func(_ int, c radixv4.Client) string { return c.Addr().String() })
	if err != nil {
		return engine.Config{}, err
	}
	dial := func(_ context.Context, i int) (engine.Conn, error) { return &conn{c: clients[i]}, nil }
	return engine.Config{Names: names, Dial: dial}, nil
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

// Close sends the releases already issued, then closes the connections
// Dial made. Commands issued after Close fail with core.ErrClosed. Close
// is idempotent and returns nil.
func (d *Driver) Close() error {
	d.e.Close()
	return nil
}

// sub is a radix connection in subscribe mode: the engine's Subscription.
// It is a bare Conn rather than radix's PubSubConn, which keeps the
// confirmations to itself. Subscribe and Unsubscribe only encode, Receive
// only decodes: radix's Conn runs each on its writer or reader goroutine,
// so they may overlap, and Close ends a pending decode.
type sub struct{ c radixv4.Conn }

func (s sub) Subscribe(ctx context.Context, chs ...string) error {
	return s.c.EncodeDecode(ctx, radixv4.Cmd(nil, "SUBSCRIBE", chs...), nil)
}

func (s sub) Unsubscribe(ctx context.Context, chs ...string) error {
	return s.c.EncodeDecode(ctx, radixv4.Cmd(nil, "UNSUBSCRIBE", chs...), nil)
}

func (s sub) Close() error { return s.c.Close() }

// Receive reads ev only after a decode that succeeded: a decode ended by
// Close may still be writing it.
func (s sub) Receive(ctx context.Context) (engine.Event, error) {
	var ev event
	if err := s.c.EncodeDecode(ctx, nil, &ev); err != nil {
		return engine.Event{}, err
	}
	return engine.Event(ev), nil
}

// event decodes the next event, skipping pongs and pattern messages.
type event engine.Event

func (e *event) UnmarshalRESP(br resp.BufferedReader, _ *resp.Opts) error {
	for {
		ev, ok, err := engine.ReadEvent(br)
		if ok || err != nil {
			*e = event(ev)
			return err
		}
	}
}

// conn is the engine's Conn: a radix connection made by Dial, a client
// given to New, or a Sentinel member's radix Sentinel.
type conn struct {
	c   doer
	own bool    // made by Dial: Close closes it
	a   *action // reused while the exchanges succeed
}

// doer is what conn uses of its client: a radix Client, or a Sentinel
// (a MultiClient, whose Do goes to the master).
type doer interface {
	Do(ctx context.Context, a radixv4.Action) error
	Close() error
}

func (c *conn) Close() error {
	if c.own {
		return c.c.Close()
	}
	return nil
}

// Exchange sends cmds as one Action and copies out the replies.
func (c *conn) Exchange(ctx context.Context, cmds [][]string, replies []engine.Reply) error {
	a := c.a
	if a == nil {
		a = new(action)
		c.a = a
	}
	a.req = a.req[:0]
	for _, cmd := range cmds {
		a.req = engine.AppendCommand(a.req, cmd)
	}
	a.replies = slices.Grow(a.replies[:0], len(cmds))[:len(cmds)]
	if err := c.c.Do(ctx, a); err != nil {
		// radix may still write a.req (a pipeline queued to its writer) or
		// read the replies into a (the reader discards a cancelled
		// pipeline's replies with it): a is radix's now.
		c.a = nil
		return err
	}
	copy(replies, a.replies)
	clear(a.replies)
	return nil
}

// duplex is a connection Dial made: the engine's Duplex. A radix Conn
// takes concurrent EncodeDecode calls and decodes in the order it encoded:
// Write encodes a pipeline and decodes nothing, Read decodes the next
// replies and encodes nothing. A client given to New is not one: a pool
// lends a connection per Action.
type duplex struct {
	conn
	rc   radixv4.Conn
	w, r *action // the writer's and the reader's, reused while they succeed
}

var _ engine.Duplex = (*duplex)(nil)

// Write encodes cmds as one write.
func (d *duplex) Write(ctx context.Context, cmds [][]string) error {
	w := d.w
	if w == nil {
		w = new(action)
		d.w = w
	}
	w.req = w.req[:0]
	for _, cmd := range cmds {
		w.req = engine.AppendCommand(w.req, cmd)
	}
	if err := d.rc.EncodeDecode(ctx, w, nil); err != nil {
		d.w = nil // radix may still write it
		return err
	}
	return nil
}

// Read decodes the next len(replies) replies.
func (d *duplex) Read(ctx context.Context, replies []engine.Reply) error {
	r := d.r
	if r == nil {
		r = new(action)
		d.r = r
	}
	r.replies = slices.Grow(r.replies[:0], len(replies))[:len(replies)]
	if err := d.rc.EncodeDecode(ctx, nil, r); err != nil {
		d.r = nil // radix may still read into it
		return err
	}
	copy(replies, r.replies)
	clear(r.replies)
	return nil
}

// action is one pipeline as a radix Action, and its own marshaler and
// unmarshaler: its request is written whole, and its replies read one per
// command. An error reply is a reply, not an error: UnmarshalRESP fails
// only on a read error or a reply of no Redlock kind, after which radix
// closes the connection, or discards the replies if none was read yet.
type action struct {
	req     []byte
	replies []engine.Reply
}

// Properties is the zero value: no CanShareConn, so a pool lends the
// pipeline a connection of its own and closes it if the pipeline fails.
func (a *action) Properties() radixv4.ActionProperties { return radixv4.ActionProperties{} }

func (a *action) Perform(ctx context.Context, c radixv4.Conn) error {
	return c.EncodeDecode(ctx, a, a)
}

func (a *action) MarshalRESP(w io.Writer, _ *resp.Opts) error {
	_, err := w.Write(a.req)
	return err
}

func (a *action) UnmarshalRESP(br resp.BufferedReader, _ *resp.Opts) error {
	for i := range a.replies {
		r, err := engine.ReadReply(br)
		if err != nil {
			return err
		}
		a.replies[i] = r
	}
	return nil
}
