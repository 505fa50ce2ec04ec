package rueidis

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	rd "github.com/redis/rueidis"

	"github.com/redlock-go/redlock/drivers"
	"github.com/redlock-go/redlock/drivers/engine"
	"github.com/redlock-go/redlock/drivers/wire"
)

// DialMembers dials members with the rules drivers.Member states for
// every driver. A standalone member is dialled as Dial dials a node.
//
// A Sentinel group is reached through rueidis's Sentinel client
// (ClientOption.Sentinel), which checks the master's ROLE. After a failure
// the driver makes another, which asks the Sentinels again; the command
// that meets the old connection fails without being sent again (a lost
// vote). Options' credentials, database and TLS apply to the master, TLS
// to the Sentinels too, which are asked without credentials.
//
// A Cluster member is one rueidis cluster client, which routes each
// command by its key and follows MOVED and ASK; a command is never sent
// again after a connection failure. With WAIT, the write and its WAIT go
// together on a dedicated connection of the slot's master (Dedicated),
// where a MOVED or ASK is the vote's error reply: WAIT counts the
// replicas of its own connection's writes. Release announcements are
// heard on a dedicated connection of a second cluster client or, with
// sharded pub/sub, through its Receive of SSUBSCRIBE, over its connection
// to each master, shared by every key. A WAIT still blocking at a
// command's deadline fails the connection, which the driver redials.
func DialMembers(members []drivers.Member, opts Options) (*drivers.Driver, error) {
	return drivers.Start(drivers.MembersConfig("rueidis", members, opts, adapter(opts), drivers.Standalone, drivers.SentinelGroup, drivers.ClusterGroup))
}

// adapter dials the members of Dial and DialMembers.
func adapter(opts Options) drivers.Adapter {
	return func(ms []drivers.Member, timeout time.Duration) (engine.Dialer, engine.SubscribeDialer) {
		dial := func(ctx context.Context, i int) (engine.Conn, error) {
			c, err := memberClient(ctx, ms[i], opts)
			if err != nil {
				return nil, err
			}
			if ms[i].Topology == drivers.ClusterGroup {
				return newClusterConn(c, ms[i]), nil
			}
			return &conn{c: c, owned: true}, nil
		}
		sub := func(ctx context.Context, i int) (engine.Subscription, error) {
			c, err := memberClient(ctx, ms[i], opts)
			if err != nil {
				return nil, err
			}
			if ms[i].Topology == drivers.ClusterGroup {
				return subscribeCluster(ctx, c, ms[i], timeout)
			}
			return subscribe(c, c.Close)
		}
		return dial, sub
	}
}

// memberOption returns the rueidis options DialMembers uses for m: those
// of ClientOption for a standalone master; for a Sentinel group the same
// with the Sentinels' addresses and ClientOption.Sentinel (the master
// name, the dial timeout and TLS, no credentials); for a Cluster a
// cluster client (no ForceSingleClient) over the seeds, shuffled, DB 0.
func memberOption(m drivers.Member, opts Options) rd.ClientOption {
	o := ClientOption(m.Addrs[0], opts)
	switch m.Topology {
	case drivers.SentinelGroup:
		o.InitAddress = slices.Clone(m.Addrs)
		o.ForceSingleClient = false
		o.Sentinel = rd.SentinelOption{MasterSet: m.MasterName, Dialer: o.Dialer, TLSConfig: opts.TLS}
	case drivers.ClusterGroup:
		o.InitAddress = slices.Clone(m.Addrs)
		o.ShuffleInit = true
		o.ForceSingleClient = false
		o.SelectDB = 0
	}
	return o
}

// memberClient makes m's client within ctx's deadline: NewClient dials at
// once (a Sentinel client asks the Sentinels and dials the master; a
// cluster client loads the slots).
func memberClient(ctx context.Context, m drivers.Member, opts Options) (rd.Client, error) {
	o := memberOption(m, opts)
	if dl, ok := ctx.Deadline(); ok {
		if o.Dialer.Timeout = min(o.Dialer.Timeout, time.Until(dl)); o.Dialer.Timeout <= 0 {
			return nil, context.DeadlineExceeded
		}
		o.Sentinel.Dialer.Timeout = o.Dialer.Timeout
	}
	c, err := rd.NewClient(o)
	if err != nil {
		if c != nil {
			c.Close()
		}
		return nil, memberError(m, err)
	}
	if m.Topology == drivers.ClusterGroup && c.Mode() != rd.ClientModeCluster {
		// One seed not in cluster mode: rueidis falls back to a single
		// client.
		c.Close()
		return nil, wire.NotCluster(m, errors.New("the seed has cluster support disabled"))
	}
	return c, nil
}

// memberError is err, m's failed dial, as wire.MemberError says.
func memberError(m drivers.Member, err error) error {
	return wire.MemberError(m, err, rd.IsRedisNil(err))
}

// clusterConn is a Cluster member's engine Conn: its cluster client. Runs
// of commands go out as one DoMulti, split by node and routed by key; a
// write followed by WAIT goes with it on a dedicated connection of the
// master of its key's slot, since WAIT counts the replicas of its
// connection's writes.
type clusterConn struct {
	engine.ClusterID
	c rd.Client
}

func newClusterConn(c rd.Client, m drivers.Member) *clusterConn {
	return &clusterConn{engine.ClusterID{Masters: func(ctx context.Context) (wire.ClusterMasters, error) { return masters(ctx, c, m) }}, c}
}

// subscribeCluster returns a Cluster member's subscription over c: sharded
// (engine.NewShardedSubscription, over c's Receive of SSUBSCRIBE) when
// every master has sharded pub/sub (masters, as Identify asks), otherwise one dedicated connection,
// which hears the PUBLISH a Cluster broadcasts.
func subscribeCluster(ctx context.Context, c rd.Client, m drivers.Member, timeout time.Duration) (engine.Subscription, error) {
	ms, err := masters(ctx, c, m)
	if err != nil {
		c.Close()
		return nil, err
	}
	if !ms.Sharded {
		return subscribe(c, c.Close)
	}
	return engine.NewShardedSubscription(shardRunner(c, timeout), func() error { c.Close(); return nil }), nil
}

// shardRunner subscribes to one channel through c's Receive of SSUBSCRIBE,
// which the cluster client sends to the master of the channel's slot,
// following MOVED, and relays its events (engine.ShardRunner). Receive
// forgets the channel when its context ends but tells the server nothing:
// the runner then sends SUNSUBSCRIBE, bounded by timeout.
func shardRunner(c rd.Client, timeout time.Duration) engine.ShardRunner {
	return func(ctx context.Context, channel string, push func(engine.Event)) error {
		hooked := rd.WithOnSubscriptionHook(ctx, func(s rd.PubSubSubscription) {
			if s.Kind == "ssubscribe" {
				push(engine.Event{Kind: engine.EventSubscribed})
			}
		})
		err := c.Receive(hooked, c.B().Ssubscribe().Channel(channel).Build(), func(rd.PubSubMessage) {
			push(engine.Event{Kind: engine.EventMessage})
		})
		if _, ok := rd.IsRedisErr(err); ok && strings.HasPrefix(err.Error(), "NOPERM") {
			push(engine.Event{Kind: engine.EventRefused, Err: err})
		}
		if ctx.Err() != nil { // the watch ended: the server must forget the channel too
			uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
			_ = c.Do(uctx, c.B().Sunsubscribe().Channel(channel).Build()).Error() // a closed client or a gone master forgets it anyway
			cancel()
		}
		return err // nil: an sunsubscribe, the slot moved
	}
}

func (c *clusterConn) Close() error {
	c.c.Close()
	return nil
}

// masters asks every node c knows, at once, for INFO server and INFO
// replication, and folds the masters' answers; a node that does not
// answer is left out, unless no master does.
func masters(ctx context.Context, c rd.Client, m drivers.Member) (wire.ClusterMasters, error) {
	var (
		mu     sync.Mutex
		wg     sync.WaitGroup
		ms     = wire.NewClusterMasters()
		failed error
	)
	for _, n := range c.Nodes() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rs := n.DoMulti(ctx, n.B().Info().Section("server").Build(), n.B().Info().Section("replication").Build())
			server, err := rs[0].ToString()
			repl, err2 := rs[1].ToString()
			mu.Lock()
			defer mu.Unlock()
			if err = errors.Join(err, err2); err != nil {
				failed = err
				return
			}
			ms.Add(server, repl)
		}()
	}
	wg.Wait()
	if len(ms.IDs) == 0 && failed != nil {
		return ms, memberError(m, failed)
	}
	return ms, nil
}

// Exchange sends cmds in order: each run without WAIT as one DoMulti of
// the cluster client, each write with its WAIT on its key's master. An
// error reply (MOVED after the redirections ran out, CLUSTERDOWN) is a
// reply; any other failure is the connection's, and the replies of the
// other masters of the run still count.
func (c *clusterConn) Exchange(ctx context.Context, cmds [][]string, replies []engine.Reply) error {
	return engine.ExchangeRuns(cmds, replies,
		func(cmds [][]string, replies []engine.Reply) error { return c.run(ctx, cmds, replies) },
		func(cmds [][]string, replies []engine.Reply) error { return c.waited(ctx, cmds, replies) })
}

// run sends cmds, each with its key's slot, as one DoMulti. Commands
// without a key (none of the engine's lock commands) would make rueidis
// pick a node for the whole pipeline: a run with one goes one command at
// a time, the keyless ones on any node.
func (c *clusterConn) run(ctx context.Context, cmds [][]string, replies []engine.Reply) error {
	batch := make(rd.Commands, len(cmds))
	alone := false
	for k, words := range cmds {
		var ok bool
		batch[k], ok = keyed(c.c.B(), words)
		alone = alone || !ok
	}
	if !alone {
		return collect(c.c.DoMulti(ctx, batch...), replies)
	}
	for k, cmd := range batch {
		if err := collect([]rd.RedisResult{c.c.Do(ctx, cmd)}, replies[k:k+1]); err != nil {
			return err
		}
	}
	return nil
}

// waited sends a write and its WAIT on one dedicated connection of the
// master of the write's slot.
func (c *clusterConn) waited(ctx context.Context, cmds [][]string, replies []engine.Reply) error {
	return c.c.Dedicated(func(dc rd.DedicatedClient) error {
		write, _ := keyed(dc.B(), cmds[0])
		wait := dc.B().Arbitrary(cmds[1]...).Build()
		return collect(dc.DoMulti(ctx, write, wait), replies)
	})
}

// keyed builds words as a command whose slot is its key's
// (wire.KeyIndex). It reports false for a command of no key.
func keyed(b rd.Builder, words []string) (rd.Completed, bool) {
	if k := wire.KeyIndex(words); k > 0 {
		return b.Arbitrary(words[:k]...).Keys(words[k]).Args(words[k+1:]...).Build(), true
	}
	return b.Arbitrary(words...).Build(), false
}

// collect decodes rs into replies and returns the first connection
// failure, after filling in every reply that came.
func collect(rs []rd.RedisResult, replies []engine.Reply) error {
	var failed error
	for k, r := range rs {
		rep, err := reply(r)
		if err != nil {
			failed = cmp.Or(failed, err)
			continue
		}
		replies[k] = rep
	}
	return failed
}
