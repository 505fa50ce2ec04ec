// Package goredis is a Redlock driver over github.com/redis/go-redis/v9:
// the adapters that give the engine go-redis's clients (see
// drivers.Driver for what the engine does with them).
//
// Dial makes one go-redis client per Redis master, on one connection,
// honouring every Options field; New takes the caller's clients.
// DialMembers takes quorum members (drivers.Member) that may be Sentinel
// groups, reached through go-redis's failover client, or whole Clusters,
// through its ClusterClient. A node's commands go out on one go-redis
// Conn of its client (Client.Conn), one command or one pipeline at a
// time: go-redis cannot write without reading.
//
// A node's go-redis commands are made once and sent again with new words
// (RawWriteToCmd, its reply decoded by the engine), so that a command
// allocates nothing. go-redis still allocates for a pipeline of several
// commands, which rounds share only when they overlap: Pipeline.Exec drops
// its slice of commands and the error check ending every pipeline boxes
// errors.As targets; and for a bulk string reply, which it copies through
// an io.LimitReader (the Redlock commands get none).
//
// A node that is down fails its commands until it answers, and go-redis
// logs each failed dial (redis.SetLogger silences it). After a failure
// the driver closes the Conn and its client and makes others, which it
// pings (go-redis connects lazily).
//
// Release notifications (Watch) come through one go-redis PubSub per
// node, on a connection of its own: Dial makes one more client for it
// with the same options, New uses each caller's client. After a failure
// the driver closes the PubSub, for the engine to redial, rather than let
// go-redis reconnect it behind the engine's back.
package goredis

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-go/redlock/drivers"
	"github.com/redlock-go/redlock/drivers/engine"
)

// Options configure Dial; every field is honoured (see drivers.Options).
type Options = drivers.Options

// Dial validates addrs and opts and starts connecting to every node in
// the background, one go-redis client each (see drivers.DialConfig).
func Dial(addrs []string, opts Options) (*drivers.Driver, error) {
	return drivers.Start(drivers.DialConfig("goredis", addrs, opts, adapter(opts)))
}

// baseOptions are the options of the clients Dial and DialMembers make:
// Simple's for a standalone master, Failover's for a Sentinel group
// (the Sentinels asked without credentials), Cluster's for a Cluster.
func baseOptions(opts Options, timeout time.Duration) redis.UniversalOptions {
	return redis.UniversalOptions{
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
// order (see drivers.NewConfig): *redis.Client, as redis.NewClient and
// redis.NewFailoverClient return, since a Redlock node is one master (a
// ClusterClient or a Ring spreads keys over several). Give them
// ContextTimeoutEnabled, or a hung node keeps its commands past their
// deadlines. go-redis never sends the driver's commands again
// (RawWriteToCmd is NoRetry), whatever MaxRetries: a SET NX retried after
// a lost reply would find the caller's own key, held. nil names take each
// client's Options().Addr. The commands hold one connection of each
// client (Client.Conn, with the client's hooks), given back after a
// failure and by Close. Release notifications take one PubSub of each
// client (Client.Subscribe).
func New(clients []*redis.Client, names []string) (*drivers.Driver, error) {
	return drivers.Start(newConfig(clients, names))
}

// newConfig is New's engine configuration.
func newConfig(clients []*redis.Client, names []string) (engine.Config, error) {
	return drivers.NewConfig("goredis", clients, names, func(_ int, c *redis.Client) string { return c.Options().Addr },
		func(clients []*redis.Client) (engine.Dialer, engine.SubscribeDialer) {
			dial := func(_ context.Context, i int) (engine.Conn, error) {
				rc := clients[i].Conn()
				return newConn(rc, rc.Close), nil
			}
			sub := func(ctx context.Context, i int) (engine.Subscription, error) {
				return subscribe(ctx, clients[i].Subscribe(ctx), func() error { return nil })
			}
			return dial, sub
		})
}
