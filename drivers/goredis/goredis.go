// Package goredis is a Redlock driver (core.Driver) over
// github.com/redis/go-redis/v9.
//
// Dial makes one go-redis client per Redis master, on one connection; New
// takes the caller's clients. DialMembers takes quorum members
// (drivers.Member) that may be Sentinel groups, reached through go-redis's
// failover client, or whole Clusters, through its ClusterClient, each
// voting once, with WAIT for their replicas if asked. A node's commands, from every round, go out
// on one go-redis Conn of its client (Client.Conn), one command or one
// pipeline at a time, in the order their rounds issued them. The driver
// engine shared by every driver of this module owns the rest: deadlines,
// scripts, replies, and the order that keeps a release behind the SET it
// undoes.
//
// A node's go-redis commands are made once and sent again with new words
// (RawWriteToCmd, its reply decoded by the engine), so that a command
// allocates nothing. go-redis still allocates for a pipeline of several
// commands, which rounds share only when they overlap: Pipeline.Exec drops
// its slice of commands and the error check ending every pipeline boxes
// errors.As targets; and for a bulk string reply, which it copies through
// an io.LimitReader (the Redlock commands get none).
//
// Dial honours Options: Username and Password (AUTH), DB (SELECT), TLS,
// DialTimeout and Clock. A node that is down does not fail Dial: its commands fail
// (core.StatusError, naming the node) until it answers, and go-redis logs
// each failed dial (redis.SetLogger silences it). When a command fails
// (the server restarted, a reply missed its deadline) the driver closes the
// Conn and its client and makes others, which it pings (go-redis connects
// lazily), for the node's next commands; until a script has run on the new
// connection its commands carry the script's source (EVAL), since a
// restarted server has lost its script cache.
//
// Release notifications (Watch, core.Announcer) come through one go-redis
// PubSub per node, on a connection of its own: Dial makes one more client
// for it with the same options, New uses each caller's client. After a
// failure the driver closes the PubSub, for the engine to redial, rather
// than let go-redis reconnect it behind the engine's back.
package goredis

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers"
	"github.com/redlock-go/redlock/drivers/engine"
	"github.com/redlock-go/redlock/drivers/wire"
)

// Options configure Dial; every field is honoured (see drivers.Options).
type Options = drivers.Options

// Driver is a core.Driver over go-redis clients, safe for concurrent use.
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
	addrs, timeout, err := wire.CheckDial("goredis", addrs, opts)
	if err != nil {
		return engine.Config{}, err
	}
	base := baseOptions(opts, timeout)
	dial := func(ctx context.Context, i int) (engine.Conn, error) {
		o := base
		o.Addr = addrs[i]
		return connOf(ctx, redis.NewClient(&o), nil)
	}
	sub := func(ctx context.Context, i int) (engine.Subscription, error) {
		o := base
		o.Addr = addrs[i]
		c := redis.NewClient(&o)
		return subscribe(ctx, c.Subscribe(ctx), c.Close)
	}
	return engine.Config{Names: addrs, Dial: dial, DialTimeout: timeout, Subscribe: sub, Clock: opts.Clock, Logger: opts.Logger}, nil
}

// baseOptions are the options of the clients Dial and DialMembers make.
func baseOptions(opts Options, timeout time.Duration) redis.Options {
	return redis.Options{
		Username: opts.Username, Password: opts.Password, DB: opts.DB, TLSConfig: opts.TLS,
		DialTimeout: timeout, DialerRetries: 1, // the engine redials
		MaxRetries: -1, // a SET NX sent again would find its own key: held
		// The deadlines are the engine's, in ctx, not go-redis's.
		ContextTimeoutEnabled: true, ReadTimeout: -1, WriteTimeout: -1,
		// One connection, pipelines included. PoolSize 2: a failed dial in a
		// pool of 1 starts a redial goroutine that outlives Close.
		PoolSize: 2, MaxActiveConns: 1, PipelinePoolSize: -1,
		// RESP2: no push notifications, nor what rides on them (maintenance
		// notifications, client-side caching); no CLIENT SETINFO on connect.
		Protocol: 2, DisableIdentity: true,
	}
}

// New returns a Driver over existing clients, one per master in node
// order: *redis.Client, as redis.NewClient and redis.NewFailoverClient
// return, since a Redlock node is one master (a ClusterClient or a Ring
// spreads keys over several). Give them ContextTimeoutEnabled, or a hung
// node keeps its commands past their deadlines. go-redis never sends the
// driver's commands again (RawWriteToCmd is NoRetry), whatever MaxRetries:
// a SET NX retried after a lost reply would find the caller's own key,
// held. names[i] names node i in errors; nil names each by its client's
// Options().Addr. A nil client, the same client twice or the same name
// twice (the same server would vote twice) is an error matching
// core.ErrInvalidConfig. The commands hold one connection of each client
// (Client.Conn, with the client's hooks), given back after a failure and
// by Close, which does not close the clients. Release notifications take
// one PubSub of each client (Client.Subscribe).
// The driver reads its deadlines on the system clock: give a Client over
// it no other (leave redlock.Options.Clock nil).
func New(clients []*redis.Client, names []string) (*Driver, error) {
	cfg, err := newConfig(clients, names)
	if err != nil {
		return nil, err
	}
	return &Driver{engine.New(cfg)}, nil
}

// newConfig is New's engine configuration.
func newConfig(clients []*redis.Client, names []string) (engine.Config, error) {
	names, err := wire.CheckClients("goredis", clients, names, func(_ int, c *redis.Client) string { return c.Options().Addr })
	if err != nil {
		return engine.Config{}, err
	}
	dial := func(_ context.Context, i int) (engine.Conn, error) {
		rc := clients[i].Conn()
		return newConn(rc, rc.Close), nil
	}
	sub := func(ctx context.Context, i int) (engine.Subscription, error) {
		return subscribe(ctx, clients[i].Subscribe(ctx), func() error { return nil })
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
// made; later commands fail with core.ErrClosed. It is idempotent.
func (d *Driver) Close() error {
	d.e.Close()
	return nil
}
