package drivers

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers/engine"
	"github.com/redlock-go/redlock/drivers/wire"
)

// Driver is the core.Driver, and core.Announcer, that every client
// package's Dial, DialMembers and New return: the engine (package
// engine) over the connections and subscriptions of one client. The
// engine owns everything but the client's calls: one goroutine and one
// connection per node, pipelines in the order their rounds issued them
// (so that a release never overtakes the SET it undoes, see core.Batch),
// deadlines on the Client's clock, scripts (EVALSHA, and EVAL on a
// connection that has not run them yet, since a restarted server has
// lost its script cache), replies, errors that name the node, a redial
// after any failure, WAIT for members that ask for it, and release
// announcements (Watch). A Driver is safe for concurrent use.
type Driver struct{ e *engine.Engine }

var _ core.Announcer = (*Driver)(nil)

// Start returns a Driver over a new engine of cfg, or err: a client
// package's Dial, DialMembers and New end with it, as in
// Start(DialConfig(...)).
func Start(cfg engine.Config, err error) (*Driver, error) {
	if err != nil {
		return nil, err
	}
	e, err := engine.New(cfg)
	if err != nil {
		return nil, err
	}
	return &Driver{e}, nil
}

// Nodes returns N.
func (d *Driver) Nodes() int { return d.e.Nodes() }

// Clock returns the clock of the commands' deadlines: Options.Clock, or
// the system clock (always, for a Driver made by a New).
func (d *Driver) Clock() core.Clock { return d.e.Clock() }

// NodeName returns node i's name: its address, its Member.String, or the
// name given to New.
func (d *Driver) NodeName(i int) string { return d.e.NodeName(i) }

// Begin returns a batch for one round.
func (d *Driver) Begin(ctx context.Context) core.Batch { return d.e.Begin(ctx) }

var _ core.KeysChecker = (*Driver)(nil)

// CheckKeys refuses, before anything is sent, the keys of a multi-key
// lock that a Cluster member cannot take in one script: keys in more
// than one hash slot (core.KeysChecker). The error names the member.
func (d *Driver) CheckKeys(keys []string) error { return d.e.CheckKeys(keys) }

// Watch relays the release announcements of key (core.Announcer).
func (d *Driver) Watch(key string, notify func(node int)) core.Watch { return d.e.Watch(key, notify) }

// Close sends the releases already issued, then closes the connections
// and clients that Dial or DialMembers made (not those given to New).
// Commands issued after Close fail with core.ErrClosed. Close is
// idempotent and returns nil.
func (d *Driver) Close() error {
	d.e.Close()
	return nil
}

// Adapter is what a client package gives the engine for members it
// dials itself (Dial and DialMembers): how to open the connection of
// node i (members[i]) and its subscription connection, nil if the client
// cannot subscribe. members are copies, validated; timeout bounds each
// dial (Options.DialTimeout, or DefaultDialTimeout).
type Adapter func(members []Member, timeout time.Duration) (engine.Dialer, engine.SubscribeDialer)

// DialConfig is the engine configuration of a client package's Dial:
// it validates addrs (host:port each, no server twice, at most
// core.MaxNodes) and opts before anything connects, then gives adapt
// one standalone Member per address, copied. Each node is named by its
// address. Its only error is invalid configuration, matching
// core.ErrInvalidConfig and naming client; a node that is down fails its
// commands (core.StatusError, naming it) until it answers.
func DialConfig(client string, addrs []string, opts Options, adapt Adapter) (engine.Config, error) {
	addrs, timeout, err := wire.CheckDial(client, addrs, opts)
	if err != nil {
		return engine.Config{}, err
	}
	dial, sub := adapt(Members(addrs...), timeout)
	return engine.Config{Names: addrs, Dial: dial, DialTimeout: timeout, Subscribe: sub, Clock: opts.Clock, Logger: opts.Logger}, nil
}

// MembersConfig is the engine configuration of a client package's
// DialMembers, with the rules Member states for every driver: it
// validates members, of the topologies in supported (the client's), and
// opts (a Cluster has only DB 0), gives adapt copies of the members, and
// names each node by its Member.String, with its WAIT and topology.
func MembersConfig(client string, members []Member, opts Options, adapt Adapter, supported ...Topology) (engine.Config, error) {
	if err := wire.CheckMembers(client, members, supported...); err != nil {
		return engine.Config{}, err
	}
	var all []string
	ms := make([]Member, len(members))
	cfg := engine.Config{Names: make([]string, len(members)), Nodes: make([]engine.NodeConfig, len(members)), Clock: opts.Clock, Logger: opts.Logger}
	for i, m := range members {
		if m.Topology == ClusterGroup && opts.DB != 0 {
			return engine.Config{}, fmt.Errorf("%w: %s: member %d %s: a Cluster has only DB 0, not %d", core.ErrInvalidConfig, client, i, m, opts.DB)
		}
		m.Addrs = slices.Clone(m.Addrs)
		ms[i], cfg.Names[i] = m, m.String()
		cfg.Nodes[i] = engine.NodeConfig{Replicas: m.Replicas, WaitTimeout: m.WaitTimeout, Cluster: m.Topology == ClusterGroup}
		all = append(all, m.Addrs...)
	}
	_, timeout, err := wire.CheckDial(client, all, opts)
	if err != nil {
		return engine.Config{}, err
	}
	cfg.DialTimeout = timeout
	cfg.Dial, cfg.Subscribe = adapt(ms, timeout)
	return cfg, nil
}

// NewConfig is the engine configuration of a client package's New, over
// clients the caller made, one per master in node order: none nil, none
// twice, and names (nil: name gives each client's) one per client,
// distinct and not empty, since the same server would vote twice. Its
// only error is invalid configuration, matching core.ErrInvalidConfig.
// The clients remain the caller's; the deadlines are read on the system
// clock, so a Client over the Driver must take no other (leave
// redlock.Options.Clock nil). adapt gives the engine the clients'
// connections and subscriptions.
func NewConfig[C any](client string, clients []C, names []string, name func(i int, c C) string, adapt func([]C) (engine.Dialer, engine.SubscribeDialer)) (engine.Config, error) {
	names, err := wire.CheckClients(client, clients, names, name)
	if err != nil {
		return engine.Config{}, err
	}
	dial, sub := adapt(slices.Clone(clients))
	return engine.Config{Names: names, Dial: dial, Subscribe: sub}, nil
}
