// Package radix is a Redlock driver over
// github.com/mediocregopher/radix/v4: the adapters that give the engine
// radix's connections (see drivers.Driver for what the engine does with
// them).
//
// Dial opens one radix connection (radix.Dialer) per Redis master,
// honouring every Options field (DialTimeout bounds the connect, the TLS
// handshake and AUTH together); New takes one radix Client per master
// instead, typically a pool. Dial's connections are written while the
// replies to the pipelines before are still read (engine.Duplex): each
// pipeline is one EncodeDecode that writes it, its replies another that
// reads them, in order. New's clients carry one pipeline at a time, each
// one radix Action whose single EncodeDecode writes every command and
// reads every reply. A closed connection takes with it any reply radix
// would still have read or discarded, so a late reply never answers a
// later command.
//
// DialMembers takes drivers.Member values: standalone masters, Sentinel
// groups (through radix's Sentinel) and Clusters (through radix's
// Cluster), each one vote, with WAIT where asked (see DialMembers).
//
// New's clients remain the caller's. Each pipeline runs through
// Client.Do on a connection of its own (the Action does not share
// connections), and after a failed pipeline radix's pool closes that
// connection rather than reuse it. Give New pools: a bare radix Conn is
// not replaced when it breaks.
//
// Release notifications (Watch) come over one more radix connection per
// node, dialled as Dial's command connections are and kept in subscribe
// mode. A driver made by New has none, and its waiters poll: a radix
// Client lends a connection only for the length of an Action, from a
// fixed-size pool that keeping one for good would shrink (a pool of one
// would starve the commands), or it is a bare Conn, the commands' own.
package radix

import (
	"context"
	"io"
	"slices"

	radixv4 "github.com/mediocregopher/radix/v4"
	"github.com/mediocregopher/radix/v4/resp"

	"github.com/redlock-go/redlock/drivers"
	"github.com/redlock-go/redlock/drivers/engine"
)

// Options configure Dial; every field is honoured (see drivers.Options).
type Options = drivers.Options

// Dial validates addrs and opts and starts connecting to every node in
// the background, one radix connection each (see drivers.DialConfig).
func Dial(addrs []string, opts Options) (*drivers.Driver, error) {
	return drivers.Start(drivers.DialConfig("radix", addrs, opts, adapter(opts)))
}

// New returns a Driver over existing clients (pools, typically), one per
// master in node order (see drivers.NewConfig); nil names take each
// client's Addr.
func New(clients []radixv4.Client, names []string) (*drivers.Driver, error) {
	return drivers.Start(newConfig(clients, names))
}

// newConfig is New's engine configuration.
func newConfig(clients []radixv4.Client, names []string) (engine.Config, error) {
	return drivers.NewConfig("radix", clients, names, func(_ int, c radixv4.Client) string { return c.Addr().String() },
		func(clients []radixv4.Client) (engine.Dialer, engine.SubscribeDialer) {
			return func(_ context.Context, i int) (engine.Conn, error) { return &conn{c: clients[i]}, nil }, nil
		})
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
