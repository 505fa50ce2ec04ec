package radix

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	radixv4 "github.com/mediocregopher/radix/v4"
	"github.com/mediocregopher/radix/v4/resp"
	"github.com/mediocregopher/radix/v4/resp/resp3"

	"github.com/redlock-go/redlock/drivers"
	"github.com/redlock-go/redlock/drivers/engine"
	"github.com/redlock-go/redlock/drivers/wire"
)

// DialMembers dials members with the rules drivers.Member states for
// every driver. A standalone member is dialled as Dial dials a node.
//
// A Sentinel group is reached through a radix Sentinel
// (radix.SentinelConfig.New), which asks the Sentinels for the master and
// follows +switch-master. Each pipeline is one Action on the master's
// connection. The driver does not let radix move the member to another
// master behind its back: a pipeline that finds the master changed since
// the member connected, or that fails, fails (a lost vote, never sent
// again), and the driver makes another Sentinel, which asks again and
// checks the new master as a new connection is checked. Options'
// credentials, DB and TLS apply to the master; the Sentinels are asked
// over TLS when it is set, without credentials.
//
// A Cluster member is one radix Cluster (radix.ClusterConfig.New): each
// command is an Action routed by its key; radix follows MOVED and ASK,
// and a command is never sent again after a connection failure. A
// pipeline's commands go in order within each hash slot, one Action at a
// time, and the slots at once; a write and its WAIT are one Action.
//
// Release announcements: one radix connection in subscribe mode per
// member, dialled to the master the Sentinels name (one left on a demoted
// master still hears the releases, which Redis passes to its replicas),
// or to a master of the Cluster's topology. radix has no sharded pub/sub: where a Cluster uses
// it, each watched key has a connection of its own, with SSUBSCRIBE, to
// the master the topology gives its slot, dialled again after the slot
// moves.
func DialMembers(members []drivers.Member, opts Options) (*drivers.Driver, error) {
	return drivers.Start(drivers.MembersConfig("radix", members, opts, adapter(opts), drivers.Standalone, drivers.SentinelGroup, drivers.ClusterGroup))
}

// adapter dials the members of Dial and DialMembers.
func adapter(opts Options) drivers.Adapter {
	return func(ms []drivers.Member, timeout time.Duration) (engine.Dialer, engine.SubscribeDialer) {
		dialer := radixv4.Dialer{AuthUser: opts.Username, AuthPass: opts.Password}
		sentinels := radixv4.Dialer{}
		if opts.TLS != nil {
			dialer.NetDialer = &tls.Dialer{Config: opts.TLS}
			sentinels.NetDialer = &tls.Dialer{Config: opts.TLS}
		}
		clusterDialer := dialer
		if opts.DB != 0 {
			dialer.SelectDB = strconv.Itoa(opts.DB)
		}
		dial := func(ctx context.Context, i int) (engine.Conn, error) {
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			m := ms[i]
			switch m.Topology {
			case drivers.SentinelGroup:
				return dialSentinel(ctx, m, dialer, sentinels)
			case drivers.ClusterGroup:
				return dialCluster(ctx, m, clusterDialer)
			}
			c, err := dialer.Dial(ctx, "tcp", m.Addrs[0])
			if err != nil {
				return nil, err
			}
			return &duplex{conn: conn{c: c, own: true}, rc: c}, nil
		}
		sub := func(ctx context.Context, i int) (engine.Subscription, error) {
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			m := ms[i]
			addr := m.Addrs[0]
			d := dialer
			switch m.Topology {
			case drivers.SentinelGroup:
				sc, err := dialSentinel(ctx, m, dialer, sentinels)
				if err != nil {
					return nil, err
				}
				addr = sc.primary
				_ = sc.Close() // asked who the master is: the answer is what counts
			case drivers.ClusterGroup:
				cc, err := dialCluster(ctx, m, clusterDialer)
				if err != nil {
					return nil, err
				}
				ms, err := cc.Masters(ctx)
				if err != nil {
					_ = cc.Close() // err is the failure to report
					return nil, err
				}
				if ms.Sharded {
					return engine.NewShardedSubscription(shardRunner(cc.c, clusterDialer, timeout), cc.Close), nil
				}
				primaries := cc.c.Topo().Primaries()
				_ = cc.Close() // asked for the topology: the answer is what counts
				if len(primaries) == 0 {
					return nil, fmt.Errorf("%s: no master in the Cluster's topology", m)
				}
				addr, d = primaries[0].Addr, clusterDialer
			}
			c, err := d.Dial(ctx, "tcp", addr)
			if err != nil {
				return nil, err
			}
			return sub{c}, nil
		}
		return dial, sub
	}
}

// sentinelConn is a Sentinel member's engine Conn: a radix Sentinel, and
// the master it named when it connected.
type sentinelConn struct {
	conn
	sc      *radixv4.Sentinel
	primary string
}

// dialSentinel makes a radix Sentinel for m.
func dialSentinel(ctx context.Context, m drivers.Member, dialer, sentinels radixv4.Dialer) (*sentinelConn, error) {
	pools := newPools(dialer, false)
	cfg := radixv4.SentinelConfig{PoolConfig: radixv4.PoolConfig{CustomPool: pools.make}, SentinelDialer: sentinels}
	sc, err := cfg.New(ctx, m.MasterName, m.Addrs)
	if err != nil {
		pools.closeAll()
		return nil, wire.MemberError(m, err, false)
	}
	primary, err := sentinelPrimary(sc)
	if err != nil {
		_ = sc.Close() // the lookup's error is the one to report
		return nil, err
	}
	return &sentinelConn{conn: conn{c: sc, own: true}, sc: sc, primary: primary}, nil
}

// pools makes the pools of a radix Sentinel or Cluster
// (PoolConfig.CustomPool).
//
// Both make a pool to every server of the group (a Sentinel's master and
// replicas, every node of a Cluster), and fail to start, or to follow a
// MOVED, when one does not answer (a server that just died, which the
// Sentinels or the Cluster have not yet seen down), without closing the
// pools they made. A pool that cannot be made is therefore a deadPool,
// whose Do fails with the dial's error: a command routed to it fails, and
// the engine dials the member again. The first pool of a Cluster is the
// exception (seeded): its error makes radix try the next seed. The pools
// made are closed if the Sentinel or Cluster still fails to start.
//
// Each pool is a oneConn: radix's own pool redials in the background,
// and a redial that ends after its Close leaves a connection running.
type pools struct {
	dialer radixv4.Dialer
	mu     sync.Mutex
	made   []radixv4.Client
	seeded bool // a Cluster's: an error is returned until a pool is made
}

func newPools(dialer radixv4.Dialer, seeded bool) *pools {
	return &pools{dialer: dialer, seeded: seeded}
}

func (ps *pools) make(ctx context.Context, network, addr string) (radixv4.Client, error) {
	c, err := ps.dialer.Dial(ctx, network, addr)
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if err != nil {
		if ps.seeded && len(ps.made) == 0 {
			return nil, err
		}
		return deadPool{addr, err}, nil
	}
	p := &oneConn{dialer: ps.dialer, network: network, addr: addr, c: c}
	ps.made = append(ps.made, p)
	return p, nil
}

// oneConn is a radix Client over one connection. After an I/O error the
// connection is dropped, and the next Do dials another in its caller's
// goroutine; a dial that ends after Close is closed at once.
type oneConn struct {
	dialer        radixv4.Dialer
	network, addr string
	mu            sync.Mutex
	c             radixv4.Conn // nil: dial on the next Do
	closed        bool
}

var errPoolClosed = errors.New("radix: the member's connection is closed")

func (o *oneConn) conn(ctx context.Context) (radixv4.Conn, error) {
	o.mu.Lock()
	c, closed := o.c, o.closed
	o.mu.Unlock()
	if closed {
		return nil, errPoolClosed
	}
	if c != nil {
		return c, nil
	}
	c, err := o.dialer.Dial(ctx, o.network, o.addr)
	if err != nil {
		return nil, err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed || o.c != nil { // closed meanwhile, or another Do dialled first
		_ = c.Close() // never used
		if o.closed {
			return nil, errPoolClosed
		}
		return o.c, nil
	}
	o.c = c
	return c, nil
}

// Do performs a on the connection; an error that leaves it unusable
// drops it.
func (o *oneConn) Do(ctx context.Context, a radixv4.Action) error {
	c, err := o.conn(ctx)
	if err != nil {
		return err
	}
	return a.Perform(ctx, watched{c, o})
}

// drop forgets c, if it is still the connection, and closes it.
func (o *oneConn) drop(c radixv4.Conn) {
	o.mu.Lock()
	if o.c == c {
		o.c = nil
	}
	o.mu.Unlock()
	_ = c.Close() // broken already
}

func (o *oneConn) Addr() net.Addr { return serverAddr(o.addr) }

func (o *oneConn) Close() error {
	o.mu.Lock()
	c := o.c
	o.c, o.closed = nil, true
	o.mu.Unlock()
	if c == nil {
		return nil
	}
	return c.Close()
}

// watched is a oneConn's connection as an Action sees it: an error that
// leaves it unusable drops it; a usable one (resp.ErrConnUsable) or an
// error reply (as keyed returns a redirection) does not.
//
// A reply that comes after its command's context ended is still read, by
// radix's reader, into the command's target, after EncodeDecode has
// returned. The driver's own actions are given up on error; radix's
// Cluster reads its CLUSTER SLOTS target after one (getTopo). So radix's
// own commands (Cmd: one command, one reply) get their reply through a
// RawMessage of their own, read into the target only once EncodeDecode
// has succeeded. Anything else goes as it is: the driver's actions, and
// radix's ASKING in front of one of them, whose two replies are read as
// one target.
type watched struct {
	radixv4.Conn
	o *oneConn
}

// radixCmd is the type of radix's Cmd actions.
var radixCmd = reflect.TypeOf(radixv4.Cmd(nil, "PING"))

func (w watched) EncodeDecode(ctx context.Context, m, u any) error {
	var raw *resp3.RawMessage
	into := u
	if reflect.TypeOf(u) == radixCmd {
		raw = new(resp3.RawMessage)
		into = raw
	}
	err := w.Conn.EncodeDecode(ctx, m, into)
	if err != nil && !errors.As(err, new(resp.ErrConnUsable)) && !errors.As(err, new(resp3.SimpleError)) {
		w.o.drop(w.Conn)
	}
	if err != nil || raw == nil {
		return err
	}
	return raw.UnmarshalInto(u, resp.NewOpts())
}

func (w watched) Do(ctx context.Context, a radixv4.Action) error { return a.Perform(ctx, w) }

func (ps *pools) closeAll() {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for _, p := range ps.made {
		_ = p.Close() // closing for good: nothing to do about a failure
	}
	ps.made = nil
}

// deadPool stands for a pool that could not be made: every Action fails
// with the dial's error.
type deadPool struct {
	addr string
	err  error
}

func (p deadPool) Do(context.Context, radixv4.Action) error {
	return fmt.Errorf("radix: %s: %w", p.addr, p.err)
}

func (p deadPool) Addr() net.Addr { return serverAddr(p.addr) }
func (deadPool) Close() error     { return nil }

// serverAddr is the address a oneConn or deadPool was made for.
type serverAddr string

func (serverAddr) Network() string  { return "tcp" }
func (a serverAddr) String() string { return string(a) }

// sentinelPrimary returns the address of the master sc sends to.
func sentinelPrimary(sc *radixv4.Sentinel) (string, error) {
	rs, err := sc.Clients() // one entry: the primary's
	if err != nil {
		return "", err
	}
	for addr := range rs {
		return addr, nil
	}
	return "", errors.New("radix: the Sentinel names no master")
}

// Exchange sends cmds to the master the Sentinel named when it connected;
// once it names another, every Exchange fails, and the engine dials the
// member again.
func (c *sentinelConn) Exchange(ctx context.Context, cmds [][]string, replies []engine.Reply) error {
	now, err := sentinelPrimary(c.sc)
	if err != nil {
		return err
	}
	if now != c.primary {
		return fmt.Errorf("radix: the Sentinels switched the master from %s to %s", c.primary, now)
	}
	return c.conn.Exchange(ctx, cmds, replies)
}

// clusterConn is a Cluster member's engine Conn: a radix Cluster, which
// routes each command by its key.
type clusterConn struct {
	engine.ClusterID
	c *radixv4.Cluster
}

// shardRunner subscribes to one channel with SSUBSCRIBE (engine.ShardRunner),
// which radix does not offer: on a connection of its own to the master
// that c's topology gives the channel's slot (radix.ClusterSlot). Any end
// but an ACL's refusal (an sunsubscribe, MOVED, a dead master) may mean
// that the slots moved: c syncs its topology for the next run. timeout
// bounds the dial and the sync.
func shardRunner(c *radixv4.Cluster, dialer radixv4.Dialer, timeout time.Duration) engine.ShardRunner {
	return func(ctx context.Context, channel string, push func(engine.Event)) (err error) {
		defer func() {
			if ctx.Err() == nil { // bounded, and given up with the subscription: a stopped node must not hold up Close
				sctx, cancel := context.WithTimeout(ctx, timeout)
				_ = c.Sync(sctx) // its failure shows in the next run
				cancel()
			}
		}()
		addr, ok := slotMaster(c.Topo(), radixv4.ClusterSlot([]byte(channel)))
		if !ok {
			return fmt.Errorf("no master for the slot of %s in the topology", channel)
		}
		dctx, cancel := context.WithTimeout(ctx, timeout) // the dial's bound, as the engine's
		conn, err := dialer.Dial(dctx, "tcp", addr)
		cancel()
		if err != nil {
			return err
		}
		defer func() { _ = conn.Close() }()                         // this run's connection; its end is reported as it happened
		stop := context.AfterFunc(ctx, func() { _ = conn.Close() }) // ends a pending decode
		defer stop()
		if err := conn.EncodeDecode(ctx, radixv4.Cmd(nil, "SSUBSCRIBE", channel), nil); err != nil {
			return err
		}
		return engine.RelayShard(func() (engine.Event, error) { return sub{conn}.Receive(ctx) }, push)
	}
}

// slotMaster returns the address of the master of slot in topo.
func slotMaster(topo radixv4.ClusterTopo, slot uint16) (string, bool) {
	for _, n := range topo.Primaries() {
		for _, r := range n.Slots {
			if slot >= r[0] && slot < r[1] {
				return n.Addr, true
			}
		}
	}
	return "", false
}

// dialCluster makes a radix Cluster for m. CLUSTERDOWN is a reply:
// radix does not delay it.
func dialCluster(ctx context.Context, m drivers.Member, dialer radixv4.Dialer) (*clusterConn, error) {
	pools := newPools(dialer, true)
	cfg := radixv4.ClusterConfig{PoolConfig: radixv4.PoolConfig{CustomPool: pools.make}, OnDownDelayActionsBy: -1}
	c, err := cfg.New(ctx, m.Addrs)
	if err != nil {
		pools.closeAll()
		return nil, wire.MemberError(m, err, false)
	}
	cc := &clusterConn{c: c}
	cc.Masters = func(ctx context.Context) (wire.ClusterMasters, error) { return masters(ctx, c) }
	return cc, nil
}

func (c *clusterConn) Close() error { return c.c.Close() }

// masters asks every master of the topology for INFO server and INFO
// replication, and folds their answers.
func masters(ctx context.Context, c *radixv4.Cluster) (wire.ClusterMasters, error) {
	ms := wire.NewClusterMasters()
	sets, err := c.Clients()
	if err != nil {
		return ms, err
	}
	replies := make([]engine.Reply, 2)
	for addr, rs := range sets {
		clear(replies)
		on := conn{c: rs.Primary}
		if err := on.Exchange(ctx, [][]string{{"INFO", "server"}, {"INFO", "replication"}}, replies); err != nil {
			return ms, fmt.Errorf("%s: %w", addr, err)
		}
		ms.Add(replies[0].Text, replies[1].Text)
	}
	return ms, nil
}

// Exchange sends cmds, each as one Action routed by its key (a write
// followed by WAIT goes with it, in one Action): in order within each
// hash slot, the slots at once. An error reply (MOVED after radix's
// redirections ran out, CLUSTERDOWN) is a reply; any other failure is the
// connection's, returned once every slot's commands are done, the other
// slots' replies filled in (they ran: their rounds count them).
func (c *clusterConn) Exchange(ctx context.Context, cmds [][]string, replies []engine.Reply) error {
	slot := func(key string) uint16 { return radixv4.ClusterSlot([]byte(key)) }
	return engine.ExchangeBySlot(cmds, slot, func(key string, i, n int) error {
		a := &keyed{key: key, action: action{replies: make([]engine.Reply, n)}}
		for _, cmd := range cmds[i : i+n] {
			a.req = engine.AppendCommand(a.req, cmd)
		}
		err := c.c.Do(ctx, a)
		if err != nil && !errors.As(err, new(resp3.SimpleError)) {
			return err // a may still be read into: radix's now
		}
		copy(replies[i:i+n], a.replies)
		return nil
	})
}

// keyed is one command, or a write and its WAIT, as a radix Action that
// a Cluster routes by key. Its replies are read as action's are; a MOVED
// or ASK reply to its first command is then returned as the error radix's
// Cluster follows (the command did not run: sending it again is safe).
type keyed struct {
	key string
	action
}

func (a *keyed) Properties() radixv4.ActionProperties {
	return radixv4.ActionProperties{Keys: []string{a.key}, CanRetry: true}
}

func (a *keyed) Perform(ctx context.Context, c radixv4.Conn) error {
	return c.EncodeDecode(ctx, a, a)
}

// UnmarshalRESP reads every reply, as action's does, so that the
// connection stays usable, before it returns a redirection as an error.
func (a *keyed) UnmarshalRESP(br resp.BufferedReader, o *resp.Opts) error {
	if err := a.action.UnmarshalRESP(br, o); err != nil {
		return err
	}
	if r := a.replies[0]; r.Kind == engine.KindError {
		if msg := r.Err.Error(); strings.HasPrefix(msg, "MOVED ") || strings.HasPrefix(msg, "ASK ") {
			return resp3.SimpleError{S: msg}
		}
	}
	return nil
}
