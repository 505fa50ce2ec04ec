package goredis

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

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
func DialMembers(members []drivers.Member, opts Options) (*drivers.Driver, error) {
	return drivers.Start(drivers.MembersConfig("goredis", members, opts, adapter(opts), drivers.Standalone, drivers.SentinelGroup, drivers.ClusterGroup))
}

// adapter dials the members of Dial and DialMembers: a standalone
// master's client, a Sentinel group's failover client, a Cluster's
// ClusterClient.
func adapter(opts Options) drivers.Adapter {
	return func(ms []drivers.Member, timeout time.Duration) (engine.Dialer, engine.SubscribeDialer) {
		base := baseOptions(opts, timeout)
		client := func(m drivers.Member) *redis.Client {
			u := base
			u.Addrs, u.MasterName = m.Addrs, m.MasterName
			if m.Topology == drivers.SentinelGroup {
				return redis.NewFailoverClient(u.Failover())
			}
			return redis.NewClient(u.Simple())
		}
		// A Cluster's clients of each node share a pool among its
		// pipelines and WAITs. The pool outnumbers the dials a pipeline
		// makes to a dead master (one per redirection, MaxRedirects 3 and
		// the first): go-redis starts a redial goroutine, which outlives
		// Close by up to a second, once a pool's failed dials reach its
		// size.
		cluster := func(m drivers.Member) *redis.ClusterClient {
			u := base
			u.Addrs, u.PoolSize, u.MaxActiveConns = m.Addrs, 8, 0
			return redis.NewClusterClient(u.Cluster())
		}
		dial := func(ctx context.Context, i int) (engine.Conn, error) {
			if ms[i].Topology == drivers.ClusterGroup {
				return newClusterConn(cluster(ms[i]), ms[i]), nil
			}
			return connOf(ctx, client(ms[i]), ms[i])
		}
		sub := func(ctx context.Context, i int) (engine.Subscription, error) {
			if ms[i].Topology == drivers.ClusterGroup {
				return subscribeCluster(ctx, cluster(ms[i]), ms[i])
			}
			c := client(ms[i])
			return subscribe(ctx, c.Subscribe(ctx), c.Close)
		}
		return dial, sub
	}
}

// connOf takes one connection of c, m's client (Client.Conn), and pings
// it: a Sentinel group's failover client asks the Sentinels there.
func connOf(ctx context.Context, c *redis.Client, m drivers.Member) (engine.Conn, error) {
	rc := c.Conn()
	if err := rc.Ping(ctx).Err(); err != nil {
		_ = rc.Close() // the ping's error is the one to report
		_ = c.Close()
		return nil, wire.MemberError(m, err, errors.Is(err, redis.Nil))
	}
	return newConn(rc, func() error { return errors.Join(rc.Close(), c.Close()) }), nil
}

// clusterConn is a Cluster member's engine Conn: its ClusterClient, which
// connects lazily (the engine's Identify, right after the dial, loads its
// slots). Runs of commands go out as one ClusterClient pipeline, split by
// node and routed by key; a write followed by WAIT goes with it, as one
// pipeline, to the master of its key's slot (ClusterClient.MasterForKey),
// since WAIT counts the replicas of its connection's writes.
type clusterConn struct {
	engine.ClusterID
	c *redis.ClusterClient
}

func newClusterConn(c *redis.ClusterClient, m drivers.Member) *clusterConn {
	return &clusterConn{engine.ClusterID{Masters: func(ctx context.Context) (wire.ClusterMasters, error) { return masters(ctx, c, m) }}, c}
}

// noRetryCmd is a command that go-redis never sends again after a
// connection failure: a SET NX whose reply was lost would find its own
// key, held. MOVED and ASK, after which the command did not run, are
// still followed.
type noRetryCmd struct{ *redis.Cmd }

func (noRetryCmd) NoRetry() bool { return true }

func (c *clusterConn) Close() error { return c.c.Close() }

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
		return ms, wire.MemberError(m, err, false)
	}
	return ms, nil
}

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
		err := engine.RelayShard(func() (engine.Event, error) { return sub{ps, nil}.Receive(ctx) }, push)
		if err == nil || !strings.HasPrefix(err.Error(), "NOPERM") { // the slots may have moved
			c.ReloadState(context.WithoutCancel(ctx))
		}
		return err
	}
}

// Exchange sends cmds in order: each run without WAIT as one
// ClusterClient pipeline, each write with its WAIT on its key's master.
// An error reply (MOVED after the redirections ran out, CLUSTERDOWN) is a
// reply; any other failure is the connection's.
func (c *clusterConn) Exchange(ctx context.Context, cmds [][]string, replies []engine.Reply) error {
	return engine.ExchangeRuns(cmds, replies,
		func(cmds [][]string, replies []engine.Reply) error { return exec(ctx, c.c.Pipeline(), cmds, replies) },
		func(cmds [][]string, replies []engine.Reply) error { return c.waited(ctx, cmds, replies) })
}

// waited sends a write and its WAIT to the master of the write's key.
func (c *clusterConn) waited(ctx context.Context, cmds [][]string, replies []engine.Reply) error {
	key := "" // a command of no key: slot 0's master, as engine.ExchangeBySlot
	if k := wire.KeyIndex(cmds[0]); k > 0 {
		key = cmds[0][k]
	} else if len(cmds[0]) > 1 {
		key = cmds[0][1]
	}
	m, err := c.c.MasterForKey(ctx, key)
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
	return engine.Value(v), nil
}
