// Package radix is a Redlock driver (core.Driver) over
// github.com/mediocregopher/radix/v4: one radix pool per Redis master.
//
// # Fan-out
//
// A radix call blocks its goroutine until the reply, and radix has no
// asynchronous API that could put a command on N servers from one
// goroutine. The driver therefore runs the calls on long-lived per-node
// workers (package drivers/internal/fanout), started by Dial or New and
// stopped by Close, instead of starting a goroutine per node per operation:
//
//   - Sequential rounds (core.Sequential) execute each command inline, on
//     the caller's goroutine: no handoff at all.
//   - Multiplexed rounds (core.Multiplexed, the default) hand all N commands
//     to the nodes' workers, so a round costs about one round trip and N
//     channel handoffs, and Receive returns each reply as it arrives: none
//     runs inline, since the caller would then wait for that node, however
//     slow, after the others had decided the round.
//
// Concurrent calls to one node share the pool's connections, which radix
// pipelines. Options.Workers bounds how many commands to one node are in
// flight at once (64 by default).
//
// # Deadlines
//
// Every command runs under a context whose deadline is the one the Locker
// gave Send, detached from the caller's cancellation but carrying the
// Begin context's values. A command that fails after its deadline answers
// core.StatusTimeout.
//
// radix alone does not bound a command by its context: when a command times
// out, radix keeps reading (to discard) its reply without a deadline, and
// the commands pipelined behind it on the same connection wait for it, for
// as long as the server hangs (radix issue #284). The driver closes a
// connection on which one of its commands missed its deadline and makes the
// pool replace it; this releases the commands queued behind at once, and
// they answer core.StatusTimeout too: a SIGSTOPped node costs each round
// at most the node timeout (with several Lockers of different node
// timeouts, at most the longest in flight on that connection). Pools made
// by Dial have radix's periodic PING disabled for the same reason: a PING
// that hangs would hold up the commands behind it without one of the
// driver's own deadlines to release them. Pools given to New should be
// configured likewise (PoolConfig.PingInterval = -1) and not shared with
// slow commands; on their connections a command released by another's
// timeout answers core.StatusError.
//
// # Stragglers
//
// A multiplexed round stops listening once its quorum is decided; the
// commands still running finish on their workers (within their deadline)
// and their replies are dropped with the round. Nothing blocks and nothing
// leaks.
//
// # Connecting
//
// Dial connects to every node concurrently, but a node that cannot be
// reached does not fail it: a lock over N masters must be constructible
// while a minority is down. Such a node is dialled again in the background
// when a command needs it (at most one dial at a time per node, and not
// more than once per 250 ms); commands meanwhile fail fast with the last
// dial error, or wait, within their deadline, for a dial in progress.
// Refused credentials do not fail Dial either: the node's commands fail
// (core.StatusError naming the node and quoting the server's WRONGPASS or
// NOAUTH) until the configuration is fixed. Once a pool exists, radix
// reconnects it by itself (backing off from 10 ms to 1 s); while it has no
// connection and cannot make one, commands fail at once with the dial error.
//
// Options.Username and Options.Password authenticate with AUTH (an ACL user
// with its password, or the default user's password alone); Options.TLS
// enables TLS. Tokens go over the wire as 32 lower-case hex digits, the
// form every driver of this module uses, so a lock taken through one driver
// can be released through another.
package radix

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	radixv4 "github.com/mediocregopher/radix/v4"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers/internal/fanout"
	"github.com/redlock-go/redlock/drivers/internal/wire"
)

// Defaults applied to zero Options fields.
const (
	DefaultPoolSize    = 4 // connections per node, shared and pipelined
	DefaultDialTimeout = 2 * time.Second
)

// redialInterval is the least time between two dials of a node that was
// down at Dial; minReconnect and maxReconnect bound radix's own backoff
// between reconnections of a pool that lost its connections.
const (
	redialInterval = 250 * time.Millisecond
	minReconnect   = 10 * time.Millisecond
	maxReconnect   = time.Second
)

// Options configure Dial.
type Options struct {
	// Username and Password authenticate every connection: AUTH username
	// password for an ACL user, AUTH password alone when Username is empty.
	Username, Password string
	// TLS, when not nil, makes every connection TLS with this configuration
	// (its ServerName defaults to the host of each address).
	TLS *tls.Config
	// PoolSize is the number of connections radix keeps per node. Commands
	// share them and radix pipelines concurrent commands on each. 0 means
	// DefaultPoolSize.
	PoolSize int
	// DialTimeout bounds connecting to a node, TLS and AUTH included. 0
	// means DefaultDialTimeout.
	DialTimeout time.Duration
	// Workers is the number of fan-out workers per node, that is how many
	// commands to one node may be in flight at once. 0 means 64.
	Workers int
}

// Driver is a core.Driver over radix pools. It is safe for concurrent use.
type Driver struct {
	f     *fanout.Fanout
	nodes []*node
	owned bool // Dial made the pools: Close closes them

	ctx    context.Context // cancelled by Close: stops background dials
	cancel context.CancelFunc
	dials  sync.WaitGroup
	once   sync.Once
}

var _ core.Driver = (*Driver)(nil)

// node is one master: its pool, made now or on first use.
type node struct {
	addr    string
	cfg     radixv4.PoolConfig
	timeout time.Duration // dial timeout
	conns   *conns        // the pool's connections; nil for New's clients
	client  atomic.Pointer[clientBox]

	mu      sync.Mutex
	dialing chan struct{} // closed when the dial in progress ends
	lastErr error         // why the last dial failed
	lastAt  time.Time     // when it ended
	closed  bool
}

type clientBox struct{ radixv4.Client }

// Dial validates addrs (host:port each, no duplicates), then connects one
// pool per address, concurrently. It fails only for invalid configuration
// (an error matching core.ErrInvalidConfig); unreachable nodes are dialled
// again on use.
func Dial(addrs []string, opts Options) (*Driver, error) {
	if err := wire.CheckAddrs("radix", addrs); err != nil {
		return nil, err
	}
	if opts.PoolSize < 0 || opts.DialTimeout < 0 || opts.Workers < 0 {
		return nil, errors.Join(core.ErrInvalidConfig, errors.New("radix: negative PoolSize, DialTimeout or Workers"))
	}
	if opts.PoolSize == 0 {
		opts.PoolSize = DefaultPoolSize
	}
	if opts.DialTimeout == 0 {
		opts.DialTimeout = DefaultDialTimeout
	}
	nd := &net.Dialer{Timeout: opts.DialTimeout}
	dialer := radixv4.Dialer{AuthUser: opts.Username, AuthPass: opts.Password, NetDialer: nd}
	if opts.TLS != nil {
		dialer.NetDialer = &tls.Dialer{NetDialer: nd, Config: opts.TLS}
	}
	d := newDriver(addrs, opts.Workers, true)

	var wg sync.WaitGroup
	for i, addr := range addrs {
		n := &node{addr: addr, timeout: opts.DialTimeout, conns: newConns(dialer)}
		n.cfg = radixv4.PoolConfig{
			Dialer:               radixv4.Dialer{CustomConn: n.conns.dial},
			Size:                 opts.PoolSize,
			PingInterval:         -1,
			MinReconnectInterval: minReconnect,
			MaxReconnectInterval: maxReconnect,
		}
		cfg := n.cfg
		d.nodes[i] = n
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(d.ctx, opts.DialTimeout)
			defer cancel()
			c, err := cfg.New(ctx, "tcp", addr)
			if err == nil {
				n.client.Store(&clientBox{c})
				return
			}
			// Unreachable, or refused credentials: dialled again on use,
			// failing the commands that need it meanwhile.
			n.lastErr, n.lastAt = err, time.Now()
		}()
	}
	wg.Wait()
	return d, nil
}

// New wraps existing radix clients (pools, usually), one per master, with
// the workers of Options.Workers' default. names name the nodes in errors;
// nil takes each client's Addr. Close stops the workers but does not close
// the clients: they remain the caller's. See the package doc on
// PoolConfig.PingInterval.
func New(clients []radixv4.Client, names []string) (*Driver, error) {
	for i, c := range clients {
		if c == nil {
			return nil, errors.Join(core.ErrInvalidConfig, errors.New("radix: client "+strconv.Itoa(i)+" is nil"))
		}
	}
	if names == nil && len(clients) > 0 {
		names = make([]string, len(clients))
		for i, c := range clients {
			names[i] = c.Addr().String()
		}
	}
	if err := wire.CheckNames("radix", len(clients), names); err != nil {
		return nil, err
	}
	d := newDriver(names, 0, false)
	for i, c := range clients {
		n := &node{addr: names[i]}
		n.client.Store(&clientBox{c})
		d.nodes[i] = n
	}
	return d, nil
}

func newDriver(names []string, workers int, owned bool) *Driver {
	d := &Driver{nodes: make([]*node, len(names)), owned: owned}
	d.ctx, d.cancel = context.WithCancel(context.Background())
	d.f = fanout.New(fanout.Config{Names: names, Exec: d.exec, Workers: workers})
	return d
}

// Nodes returns N.
func (d *Driver) Nodes() int { return d.f.Nodes() }

// NodeName returns node i's address (or the name given to New).
func (d *Driver) NodeName(i int) string { return d.f.NodeName(i) }

// Begin returns a batch for one round.
func (d *Driver) Begin(ctx context.Context) core.Batch { return d.f.Begin(ctx) }

// Close stops the workers, waiting for commands in flight (each within its
// deadline), then closes the pools Dial made. Rounds after Close answer
// core.StatusError. Close is idempotent and always returns nil.
func (d *Driver) Close() error {
	d.once.Do(func() {
		d.cancel()
		d.f.Close()
		for _, n := range d.nodes {
			if n == nil {
				continue
			}
			n.mu.Lock()
			n.closed = true
			n.mu.Unlock()
		}
		d.dials.Wait()
		if d.owned {
			for _, n := range d.nodes {
				if n == nil {
					continue
				}
				if c := n.client.Load(); c != nil {
					_ = c.Close()
				}
				n.conns.closeAll()
			}
		}
	})
	return nil
}

// exec runs one command on one node. It is fanout's Exec.
func (d *Driver) exec(ctx context.Context, i int, cmd core.Command) (core.Status, error) {
	c, err := d.client(ctx, i)
	if err != nil {
		return core.StatusError, err
	}
	if n := d.nodes[i]; n.conns != nil {
		if err := n.conns.down(); err != nil {
			return core.StatusError, err
		}
	}
	a := getAction(cmd)
	err = c.Do(ctx, a)
	if cmd.Op != core.OpAcquire && err != nil && isNoScript(err) {
		// SCRIPT FLUSH or a restart emptied the script cache: EVAL loads it.
		putAction(a)
		a = getAction(cmd)
		a.eval = true
		err = c.Do(ctx, a)
	}
	if err != nil {
		if isRedisErr(err) {
			putAction(a) // the reply was read whole
		}
		if errors.As(err, new(*hungError)) {
			return core.StatusTimeout, err
		}
		return core.StatusError, err
	}
	kind, n := a.kind, a.n
	putAction(a)
	if cmd.Op == core.OpAcquire {
		switch kind {
		case '+':
			return core.StatusOK, nil
		case '_':
			return core.StatusHeld, nil // SET NX: the key exists
		}
		return core.StatusError, errUnexpected
	}
	if kind != ':' {
		return core.StatusError, errUnexpected
	}
	return wire.ScriptStatus(n)
}

// client returns node i's client, dialling it if needed.
func (d *Driver) client(ctx context.Context, i int) (radixv4.Client, error) {
	n := d.nodes[i]
	for {
		if c := n.client.Load(); c != nil {
			return c.Client, nil
		}
		n.mu.Lock()
		if n.closed {
			n.mu.Unlock()
			return nil, fanout.ErrClosed
		}
		if c := n.client.Load(); c != nil {
			n.mu.Unlock()
			return c.Client, nil
		}
		ch := n.dialing
		if ch == nil {
			if time.Since(n.lastAt) < redialInterval && n.lastErr != nil {
				err := n.lastErr
				n.mu.Unlock()
				return nil, err
			}
			ch = make(chan struct{})
			n.dialing = ch
			d.dials.Add(1)
			go d.dial(n, ch)
		}
		n.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		n.mu.Lock()
		err := n.lastErr
		ok := n.client.Load() != nil
		n.mu.Unlock()
		if !ok {
			return nil, err
		}
	}
}

// dial makes node n's pool in the background, bounded by the dial timeout
// and by Close.
func (d *Driver) dial(n *node, done chan struct{}) {
	defer d.dials.Done()
	ctx, cancel := context.WithTimeout(d.ctx, n.timeout)
	c, err := n.cfg.New(ctx, "tcp", n.addr)
	cancel()
	n.mu.Lock()
	switch {
	case err != nil:
		n.lastErr, n.lastAt = err, time.Now()
	case n.closed:
		_ = c.Close()
		n.lastErr = fanout.ErrClosed
	default:
		n.client.Store(&clientBox{c})
		n.lastErr = nil
	}
	n.dialing = nil
	close(done)
	n.mu.Unlock()
}
