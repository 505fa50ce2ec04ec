package goredis

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-go/redlock/drivers"
	"github.com/redlock-go/redlock/drivers/engine"
	"github.com/redlock-go/redlock/drivers/wire"
)

// DialMembers dials members with the rules drivers.Member states for
// every driver. A standalone member is dialled as Dial dials a node.
//
// A Sentinel group is reached through go-redis's failover client
// (redis.NewFailoverClient). After a failure the driver makes another,
// which asks the Sentinels again; the command that meets the old
// connection fails without being sent again (a lost vote). Options'
// credentials and TLS apply to the master, TLS to the Sentinels too,
// which are asked without credentials.
//
// A Cluster member is one go-redis ClusterClient, which routes each
// command by its key and follows MOVED and ASK; a command is never sent
// again after a connection failure. Release announcements are heard
// through one subscription of the ClusterClient or, with sharded pub/sub,
// one ClusterClient.SSubscribe per watched key, each on a connection of
// its own.
//
// With WAIT, one WAIT follows the last write of each pipeline and answers
// for all of them (on a Cluster each write has its own, on its master). A
// group left with fewer replicas than Replicas by a failover gets no
// acquisition or extension until they are back; its releases still go. A
// WAIT still blocking at a command's deadline fails the connection, which
// the driver redials.
func DialMembers(members []drivers.Member, opts Options) (*Driver, error) {
	cfg, err := membersConfig(members, opts)
	if err != nil {
		return nil, err
	}
	return &Driver{engine.New(cfg)}, nil
}

// membersConfig is DialMembers's engine configuration.
func membersConfig(members []drivers.Member, opts Options) (engine.Config, error) {
	ms, cfg, err := engine.MembersConfig("goredis", members, opts, drivers.Standalone, drivers.SentinelGroup, drivers.ClusterGroup)
	if err != nil {
		return engine.Config{}, err
	}
	timeout := cfg.DialTimeout
	base := baseOptions(opts, timeout)
	dial := func(ctx context.Context, i int) (engine.Conn, error) {
		m := ms[i]
		switch m.Topology {
		case drivers.SentinelGroup:
			c := redis.NewFailoverClient(failoverOptions(base, m))
			return connOf(ctx, c, func(err error) error { return sentinelError(m, err) })
		case drivers.ClusterGroup:
			return dialCluster(ctx, clusterOptions(base, m), m)
		}
		o := base
		o.Addr = m.Addrs[0]
		return connOf(ctx, redis.NewClient(&o), nil)
	}
	sub := func(ctx context.Context, i int) (engine.Subscription, error) {
		m := ms[i]
		switch m.Topology {
		case drivers.SentinelGroup:
			c := redis.NewFailoverClient(failoverOptions(base, m))
			return subscribe(ctx, c.Subscribe(ctx), c.Close)
		case drivers.ClusterGroup:
			return subscribeCluster(ctx, redis.NewClusterClient(clusterOptions(base, m)), m)
		}
		o := base
		o.Addr = m.Addrs[0]
		c := redis.NewClient(&o)
		return subscribe(ctx, c.Subscribe(ctx), c.Close)
	}
	cfg.Dial, cfg.Subscribe = dial, sub
	return cfg, nil
}

// connOf takes one connection of c (Client.Conn) and pings it; wrap, if
// not nil, rewrites the ping's error.
func connOf(ctx context.Context, c *redis.Client, wrap func(error) error) (engine.Conn, error) {
	rc := c.Conn()
	if err := rc.Ping(ctx).Err(); err != nil {
		_ = rc.Close() // the ping's error is the one to report
		_ = c.Close()
		if wrap != nil {
			err = wrap(err)
		}
		return nil, err
	}
	return newConn(rc, func() error { return errors.Join(rc.Close(), c.Close()) }), nil
}

// failoverOptions are a Sentinel member's client options: Dial's.
func failoverOptions(o redis.Options, m drivers.Member) *redis.FailoverOptions {
	return &redis.FailoverOptions{
		MasterName: m.MasterName, SentinelAddrs: m.Addrs,
		Username: o.Username, Password: o.Password, DB: o.DB, TLSConfig: o.TLSConfig,
		DialTimeout: o.DialTimeout, DialerRetries: o.DialerRetries, MaxRetries: o.MaxRetries,
		ContextTimeoutEnabled: o.ContextTimeoutEnabled, ReadTimeout: o.ReadTimeout, WriteTimeout: o.WriteTimeout,
		PoolSize: o.PoolSize, MaxActiveConns: o.MaxActiveConns, PipelinePoolSize: o.PipelinePoolSize,
		Protocol: o.Protocol, DisableIdentity: o.DisableIdentity,
	}
}

// clusterOptions are a Cluster member's client options: Dial's, with a
// pool of each node's client that its pipelines and WAITs share. The pool
// outnumbers the dials a pipeline makes to a dead master (one per
// redirection, MaxRedirects 3 and the first): go-redis starts a redial
// goroutine, which outlives Close by up to a second, once a pool's failed
// dials reach its size.
func clusterOptions(o redis.Options, m drivers.Member) *redis.ClusterOptions {
	return &redis.ClusterOptions{
		Addrs:    m.Addrs,
		Username: o.Username, Password: o.Password, TLSConfig: o.TLSConfig,
		DialTimeout: o.DialTimeout, DialerRetries: o.DialerRetries, MaxRetries: o.MaxRetries,
		ContextTimeoutEnabled: o.ContextTimeoutEnabled, ReadTimeout: o.ReadTimeout, WriteTimeout: o.WriteTimeout,
		PoolSize: 8, PipelinePoolSize: -1,
		Protocol: o.Protocol, DisableIdentity: o.DisableIdentity,
	}
}

// sentinelError makes err, a Sentinel member's failed dial, match
// drivers.ErrMisconfigured when the Sentinels answered that they do not know
// the master name (a nil reply to SENTINEL GET-MASTER-ADDR-BY-NAME).
func sentinelError(m drivers.Member, err error) error {
	if errors.Is(err, redis.Nil) {
		return fmt.Errorf("%w: %s: the Sentinels know no master %q: %w", drivers.ErrMisconfigured, m, m.MasterName, err)
	}
	return err
}

// clusterError makes err match drivers.ErrMisconfigured when a seed is a
// server not in cluster mode.
func clusterError(m drivers.Member, err error) error {
	if err != nil && strings.Contains(err.Error(), "cluster support disabled") {
		return fmt.Errorf("%w: %s: not a Cluster: %w", drivers.ErrMisconfigured, m, err)
	}
	return err
}

// dialCluster makes a Cluster member's ClusterClient, which connects
// lazily: the engine's Identify, right after, loads its slots.
func dialCluster(_ context.Context, o *redis.ClusterOptions, m drivers.Member) (engine.Conn, error) {
	return &clusterConn{c: redis.NewClusterClient(o), m: m}, nil
}

// clusterConn is a Cluster member's engine Conn: its ClusterClient. Runs
// of commands go out as one ClusterClient pipeline, split by node and
// routed by key; a write followed by WAIT goes with it, as one pipeline,
// to the master of its key's slot (ClusterClient.MasterForKey), since WAIT
// counts the replicas of its connection's writes.
type clusterConn struct {
	c       *redis.ClusterClient
	m       drivers.Member
	sharded bool // every master has sharded pub/sub, as Identify found
}

// noRetryCmd is a command that go-redis never sends again after a
// connection failure: a SET NX whose reply was lost would find its own
// key, held. MOVED and ASK, after which the command did not run, are
// still followed.
type noRetryCmd struct{ *redis.Cmd }

func (noRetryCmd) NoRetry() bool { return true }

func (c *clusterConn) Close() error { return c.c.Close() }

// Identify returns the run_id of each master of the Cluster, and the
// fewest connected replicas any has (engine.Identifier).
func (c *clusterConn) Identify(ctx context.Context) ([]string, int, error) {
	ms, err := masters(ctx, c.c, c.m)
	if err != nil {
		return nil, 0, err
	}
	c.sharded = ms.Sharded
	return ms.IDs, ms.Fewest, nil
}

// masters asks every master of c for INFO server and INFO replication,
// and folds their answers.
func masters(ctx context.Context, c *redis.ClusterClient, m drivers.Member) (wire.ClusterMasters, error) {
	var mu sync.Mutex
	ms := wire.NewClusterMasters()
	err := c.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
		server, err := n.Info(ctx, "server").Result()
		if err != nil {
			return err
		}
		repl, err := n.Info(ctx, "replication").Result()
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		ms.Add(server, repl)
		return nil
	})
	if err != nil {
		return ms, clusterError(m, err)
	}
	return ms, nil
}

// ShardedPubSub reports whether every master has sharded pub/sub
// (engine.ShardedPublisher), as Identify found.
func (c *clusterConn) ShardedPubSub() bool { return c.sharded }

// subscribeCluster returns a Cluster member's subscription over c: sharded
// (engine.NewShardedSubscription, over ClusterClient.SSubscribe) when
// every master has sharded pub/sub, otherwise one SUBSCRIBE connection,
// which hears the PUBLISH a Cluster broadcasts.
func subscribeCluster(ctx context.Context, c *redis.ClusterClient, m drivers.Member) (engine.Subscription, error) {
	ms, err := masters(ctx, c, m)
	if err != nil {
		_ = c.Close() // err is the failure to report
		return nil, err
	}
	if !ms.Sharded {
		return subscribe(ctx, c.Subscribe(ctx), c.Close)
	}
	return engine.NewShardedSubscription(shardRunner(c), c.Close), nil
}

// shardRunner subscribes to one channel through ClusterClient.SSubscribe,
// on the master of its slot, and relays its events (engine.ShardRunner).
// Any end but an ACL's refusal (an sunsubscribe, MOVED, CLUSTERDOWN, a
// dead master) may mean that the slots moved: the ClusterClient reloads
// them for the next run.
func shardRunner(c *redis.ClusterClient) engine.ShardRunner {
	return func(ctx context.Context, channel string, push func(engine.Event)) error {
		ps := c.SSubscribe(ctx, channel)
		defer func() { _ = ps.Close() }()                         // this run's connection; its end is reported as it happened
		stop := context.AfterFunc(ctx, func() { _ = ps.Close() }) // ends Receive
		defer stop()
		for {
			v, err := ps.Receive(ctx)
			var rerr redis.Error
			switch {
			case errors.As(err, &rerr) && strings.HasPrefix(err.Error(), "NOPERM"):
				push(engine.Event{Kind: engine.EventRefused, Err: err})
				return err
			case err != nil: // MOVED, CLUSTERDOWN, a dead master: the slots may have moved
				c.ReloadState(context.WithoutCancel(ctx))
				return err
			}
			switch v := v.(type) {
			case *redis.Subscription:
				if v.Kind == "sunsubscribe" { // the slot moved
					c.ReloadState(context.WithoutCancel(ctx))
					return nil
				}
				if v.Kind == "ssubscribe" {
					push(engine.Event{Kind: engine.EventSubscribed})
				}
			case *redis.Message:
				push(engine.Event{Kind: engine.EventMessage})
			}
		}
	}
}

// Exchange sends cmds in order: each run without WAIT as one
// ClusterClient pipeline, each write with its WAIT on its key's master.
// An error reply (MOVED after the redirections ran out, CLUSTERDOWN) is a
// reply; any other failure is the connection's.
func (c *clusterConn) Exchange(ctx context.Context, cmds [][]string, replies []engine.Reply) error {
	for i := 0; i < len(cmds); {
		if i+1 < len(cmds) && cmds[i+1][0] == "WAIT" {
			if err := c.waited(ctx, cmds[i:i+2], replies[i:i+2]); err != nil {
				return err
			}
			i += 2
			continue
		}
		j := i + 1
		for j < len(cmds) && (j+1 >= len(cmds) || cmds[j+1][0] != "WAIT") {
			j++
		}
		pipe := c.c.Pipeline()
		if err := exec(ctx, pipe, cmds[i:j], replies[i:j]); err != nil {
			return err
		}
		i = j
	}
	return nil
}

// waited sends a write and its WAIT to the master of the write's key.
func (c *clusterConn) waited(ctx context.Context, cmds [][]string, replies []engine.Reply) error {
	m, err := c.c.MasterForKey(ctx, keyOf(cmds[0]))
	if err != nil {
		return err
	}
	err = exec(ctx, m.Pipeline(), cmds, replies)
	if err == nil && replies[0].Kind == engine.KindError && strings.HasPrefix(replies[0].Err.Error(), "MOVED") {
		// The slot moved: the ClusterClient learns where for the next.
		c.c.ReloadState(ctx)
	}
	return err
}

// keyOf returns the key of a command of the engine: SET's, or a script's
// first.
func keyOf(words []string) string {
	if words[0] == "SET" || len(words) < 4 {
		return words[1]
	}
	return words[3]
}

// exec sends cmds as one pipeline of p and reads their replies.
func exec(ctx context.Context, p redis.Pipeliner, cmds [][]string, replies []engine.Reply) error {
	batch := make([]*redis.Cmd, len(cmds))
	for k, words := range cmds {
		args := make([]any, len(words))
		for w := range words {
			args[w] = words[w]
		}
		batch[k] = redis.NewCmd(ctx, args...)
		_ = p.Process(ctx, noRetryCmd{batch[k]})
	}
	_, _ = p.Exec(ctx)
	// A ClusterClient pipeline runs on each master at once: one master's
	// failure leaves the others' replies, which count.
	var failed error
	for k, cmd := range batch {
		r, err := replyOf(cmd)
		if err != nil {
			if failed == nil {
				failed = err
			}
			continue
		}
		replies[k] = r
	}
	return failed
}

// replyOf returns cmd's reply, or the connection's failure.
func replyOf(cmd *redis.Cmd) (engine.Reply, error) {
	v, err := cmd.Result()
	var re redis.Error
	switch {
	case errors.Is(err, redis.Nil):
		return engine.Reply{Kind: engine.KindNil}, nil
	case errors.As(err, &re):
		return engine.Reply{Kind: engine.KindError, Err: err}, nil
	case err != nil:
		return engine.Reply{}, err
	}
	switch v := v.(type) {
	case string:
		return engine.String(v), nil
	case int64:
		return engine.Reply{Kind: engine.KindInt, Int: v}, nil
	}
	return engine.Other(v), nil
}
