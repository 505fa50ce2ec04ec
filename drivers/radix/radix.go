// Package radix is a Redlock driver (core.Driver) over
// github.com/mediocregopher/radix/v4: one radix pool of one connection per
// Redis master.
//
// # Pipelines
//
// A radix call blocks its goroutine until the reply, and radix has no
// asynchronous API that could put a command on N servers from one
// goroutine; a radix Pipeline, though, sends any number of commands to one
// server in one write and reads their replies in order. The driver
// therefore keeps one long-lived goroutine per node (package
// drivers/internal/fanout, pipelined mode), started by Dial or New and
// stopped by Close:
//
//   - Multiplexed rounds (core.Multiplexed, the default) queue their N
//     commands, one per node, and Receive returns each reply as it
//     arrives. Each node's goroutine takes every command queued for its
//     node, from however many concurrent rounds (up to
//     fanout.MaxPipeline), and sends them as one radix Pipeline (a lone
//     command as itself), then hands each reply to its round. While a
//     pipeline is on the wire the next commands queue up, so pipelines grow
//     with the load and one round trip and one write serve every locker
//     that reached the node meanwhile. No round waits on a node it does
//     not need: a slow last node does not hold up a decided round.
//   - Sequential rounds (core.Sequential) execute each command inline, on
//     the caller's goroutine: no handoff at all. Concurrent sequential
//     rounds share the node's connection, which radix pipelines.
//
// Commands are the driver's own radix Actions: each writes its RESP request
// straight from the core.Command and parses its reply itself, so the
// driver's commands and pipelines allocate nothing once warm: an
// acquire+release through a Locker costs 0 allocations in either fan-out
// (fanout's string encoding, Config.WireStrings, is left off).
//
// Why: the earlier design ran each command as its own call on one of 64
// workers per node, over a pool of 4 connections per node. Under load that
// meant 320 goroutines, a goroutine handoff and a socket write per command,
// and commands of one key free to take different connections: the
// straggling SET of a decided round could be overtaken by the release that
// followed it, which left its key behind until the TTL. Batching across
// lockers on one goroutine and one connection per node keeps the order
// and made 32 concurrent lockers on 5 local servers about five times
// faster (redlock-bench: 7.8k to 36k acquire+release per second; see also
// BenchmarkAcquireReleaseParallel).
//
// # Order
//
// A node's commands reach it in the order their rounds queued them: one
// goroutine sends them, one pipeline at a time, on one connection. So a
// release cannot take effect before an earlier command for its key whose
// reply was not awaited (core.Batch). A command that missed its deadline
// is exempt, as the contract allows: its connection is closed (see
// Deadlines), and the server may or may not have run it.
//
// A release is the exception to both: it is never dropped for lateness.
// The cleanup of an attempt abandoned on a hung node queues its release
// behind the attempt's SET, which the node runs when it wakes; the release
// must run after it or the key stays until its TTL. So a release whose
// deadline passed while queued still goes to the node, after the commands
// queued before it, given again the time it had when queued; after the
// node missed a deadline a release gets that time from when it goes out;
// and releases a round sent but never received are sent when it closes
// (see package fanout). Its round hears core.StatusTimeout at its own
// deadline. When the SET's pipeline timed out, the release goes on the
// replacement connection: the SET is already in the server's socket
// buffer on the old one, and the server reads that before any command of
// a connection it has yet to accept. Until a script has run on a node (and again after NOSCRIPT, or
// a broken connection: probably a restart), its commands carry the
// script's source (EVAL) rather than its hash (EVALSHA): a release whose
// reply nobody reads must not meet NOSCRIPT with nobody left to send it
// again.
//
// # Deadlines
//
// Every command runs under a context whose deadline is the one the Locker
// gave Send, detached from the caller's cancellation. A pipeline runs under
// the earliest deadline of its commands; lockers sharing a node timeout
// queue commands in nearly deadline order, so that is each command's own
// give or take the spread of one queue. Commands whose deadline passed
// while queued answer core.StatusTimeout and, except releases (see Order),
// are not sent; so does a
// command that fails after its deadline, whatever the error. The Begin
// context's values reach radix for sequential commands and for a pipeline
// of one command; a pipeline of several rounds' commands carries none.
//
// radix alone does not bound a command by its context: when a command times
// out, radix keeps reading (to discard) its reply without a deadline, and
// the commands pipelined behind it on the same connection wait for it, for
// as long as the server hangs (radix issue #284). The driver closes a
// connection on which one of its commands or pipelines missed its deadline
// and makes the pool replace it; this releases the commands queued behind
// at once, and they answer core.StatusTimeout too: a SIGSTOPped node costs
// each round at most the node timeout (with several Lockers of different
// node timeouts, at most the longest in flight on that connection). Pools
// made by Dial have radix's periodic PING disabled for the same reason: a
// PING that hangs would hold up the commands behind it without one of the
// driver's own deadlines to release them. Pools given to New should be
// configured likewise (PoolConfig.PingInterval = -1) and not shared with
// slow commands; on their connections a command released by another's
// timeout answers core.StatusError.
//
// # Stragglers
//
// A multiplexed round stops listening once its quorum is decided; its
// commands still queued or on the wire finish (within their deadline) and
// their replies are dropped with the round. Nothing blocks and nothing
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
// replaces its connection when it breaks (backing off from 10 ms to 1 s);
// while it has none and cannot make one, commands fail at once with the
// dial error. With one connection, a node that restarts fails the one
// command that meets the broken connection; a pool of several kept
// connections to the old process that failed commands, picked at random,
// after others had succeeded on a new connection (a round's SET could land
// and its cleanup release fail, leaving the key until its TTL).
//
// Options.Username and Options.Password authenticate with AUTH (an ACL user
// with its password, or the default user's password alone); Options.TLS
// enables TLS. A non-zero Options.PoolSize is refused (see there). Tokens
// go over the wire as 32 lower-case hex digits, the form every driver of
// this module uses, so a lock taken through one driver can be released
// through another.
package radix

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
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

// DefaultDialTimeout applies when Options.DialTimeout is 0.
const DefaultDialTimeout = 2 * time.Second

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
	// PoolSize must be 0: each node gets exactly one connection (a radix
	// pool of size 1, which replaces it when it breaks). The driver sends
	// one pipeline per node at a time (see Pipelines), so more connections
	// would only let a key's commands take different paths, and keep
	// connections to a restarted node's old process that fail commands
	// long after a new one works (see Connecting). It is refused rather
	// than ignored, so that nobody tunes a knob that does nothing.
	PoolSize int
	// DialTimeout bounds connecting to a node, TLS and AUTH included. 0
	// means DefaultDialTimeout.
	DialTimeout time.Duration
}

// Driver is a core.Driver over radix pools. It is safe for concurrent use.
type Driver struct {
	f       *fanout.Fanout
	nodes   []*node
	scratch []scratch // per node, owned by its pipeliner
	owned   bool      // Dial made the pools: Close closes them

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
	scripts scriptSet // the scripts the server is known to have cached

	mu      sync.Mutex
	dialing chan struct{} // closed when the dial in progress ends
	lastErr error         // why the last dial failed
	lastAt  time.Time     // when it ended
	closed  bool
}

type clientBox struct{ radixv4.Client }

// scratch is a node pipeliner's reusable pipeline. Both are dropped for
// new ones after a pipeline fails: radix may still hold them.
type scratch struct {
	acts []*action // the pipeline's commands, in calls order
	redo []*action // those sent again as EVAL after NOSCRIPT
	pipe pipe
}

// Dial validates addrs (host:port each, no duplicates), then connects one
// pool per address, concurrently. It fails only for invalid configuration
// (an error matching core.ErrInvalidConfig); unreachable nodes are dialled
// again on use.
func Dial(addrs []string, opts Options) (*Driver, error) {
	if err := wire.CheckAddrs("radix", addrs); err != nil {
		return nil, err
	}
	switch {
	case opts.PoolSize != 0:
		return nil, fmt.Errorf("%w: radix: PoolSize %d: the driver keeps one connection per node", core.ErrInvalidConfig, opts.PoolSize)
	case opts.DialTimeout < 0:
		return nil, fmt.Errorf("%w: radix: DialTimeout %v is negative", core.ErrInvalidConfig, opts.DialTimeout)
	}
	if opts.DialTimeout == 0 {
		opts.DialTimeout = DefaultDialTimeout
	}
	nd := &net.Dialer{Timeout: opts.DialTimeout}
	dialer := radixv4.Dialer{AuthUser: opts.Username, AuthPass: opts.Password, NetDialer: nd}
	if opts.TLS != nil {
		dialer.NetDialer = &tls.Dialer{NetDialer: nd, Config: opts.TLS}
	}
	d := newDriver(addrs, true)

	var wg sync.WaitGroup
	for i, addr := range addrs {
		n := &node{addr: addr, timeout: opts.DialTimeout, conns: newConns(dialer)}
		n.cfg = radixv4.PoolConfig{
			Dialer:               radixv4.Dialer{CustomConn: n.conns.dial},
			Size:                 1, // see Options.PoolSize
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

// New wraps existing radix clients, one per master: pools of one
// connection (PoolConfig.Size = 1, PingInterval = -1) keep the guarantees
// of the package doc (see Order). names name the nodes in errors; nil
// takes each client's Addr. Close stops the node goroutines but does not
// close the clients: they remain the caller's.
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
	d := newDriver(names, false)
	for i, c := range clients {
		n := &node{addr: names[i]}
		n.client.Store(&clientBox{c})
		d.nodes[i] = n
	}
	return d, nil
}

func newDriver(names []string, owned bool) *Driver {
	d := &Driver{nodes: make([]*node, len(names)), scratch: make([]scratch, len(names)), owned: owned}
	d.ctx, d.cancel = context.WithCancel(context.Background())
	d.f = fanout.New(fanout.Config{Names: names, Exec: d.exec, ExecMulti: d.execMulti})
	return d
}

// Nodes returns N.
func (d *Driver) Nodes() int { return d.f.Nodes() }

// NodeName returns node i's address (or the name given to New).
func (d *Driver) NodeName(i int) string { return d.f.NodeName(i) }

// Begin returns a batch for one round.
func (d *Driver) Begin(ctx context.Context) core.Batch { return d.f.Begin(ctx) }

// Close stops the node goroutines, waiting for commands in flight (each within its
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

// exec runs one command on one node, on the caller's goroutine (a
// sequential round). It is fanout's Exec.
func (d *Driver) exec(ctx context.Context, i int, cmd core.Command) (core.Status, error) {
	n := d.nodes[i]
	c, err := d.ready(ctx, i)
	if err != nil {
		n.scripts.broken(err)
		return core.StatusError, err
	}
	a := getAction(cmd)
	a.eval = n.scripts.eval(cmd.Op)
	if err := c.Do(ctx, a); err != nil {
		n.scripts.broken(err)
		return failed(err) // a is radix's now
	}
	if a.noScript() {
		n.scripts.forget(a.cmd.Op)
		a.retryEval()
		if err := c.Do(ctx, a); err != nil {
			n.scripts.broken(err)
			return failed(err)
		}
	}
	n.scripts.observe(a)
	st, err := a.result()
	putAction(a)
	return st, err
}

// execMulti runs calls on node i as one radix pipeline, on the node's one
// connection. It is fanout's ExecMulti, called by node i's pipeliner only.
func (d *Driver) execMulti(ctx context.Context, i int, calls []fanout.Call, res []fanout.Result) {
	n := d.nodes[i]
	c, err := d.ready(ctx, i)
	if err != nil {
		n.scripts.broken(err)
		for k := range res {
			res[k] = fanout.Result{Status: core.StatusError, Err: err}
		}
		return
	}
	s := &d.scratch[i]
	acts := s.acts[:0]
	for _, k := range calls {
		a := getAction(k.Cmd)
		a.eval = n.scripts.eval(k.Cmd.Op)
		acts = append(acts, a)
	}
	s.acts = acts
	if err := s.run(ctx, c, acts); err != nil {
		n.scripts.broken(err)
		st, err := failed(err)
		for k := range res {
			res[k] = fanout.Result{Status: st, Err: err}
		}
		s.drop()
		return
	}
	// SCRIPT FLUSH or a restart emptied the script cache: EVAL loads it.
	// Only the scripts that met NOSCRIPT are sent again.
	redo := s.redo[:0]
	for _, a := range acts {
		if a.noScript() {
			n.scripts.forget(a.cmd.Op)
			a.retryEval()
			redo = append(redo, a)
		} else {
			n.scripts.observe(a)
		}
	}
	s.redo = redo
	if len(redo) > 0 {
		if err := s.run(ctx, c, redo); err != nil {
			n.scripts.broken(err)
			st, err := failed(err)
			for k, a := range acts {
				if a.kind == 0 { // sent again, unanswered
					res[k] = fanout.Result{Status: st, Err: err}
				} else {
					res[k] = result(a)
				}
			}
			s.drop()
			return
		}
		for _, a := range redo {
			n.scripts.observe(a)
		}
	}
	for k, a := range acts {
		res[k] = result(a)
		putAction(a)
	}
	clear(acts)
	clear(redo)
	s.acts, s.redo = acts[:0], redo[:0]
}

func result(a *action) fanout.Result {
	st, err := a.result()
	return fanout.Result{Status: st, Err: err}
}

// run sends acts on c, alone or as one pipeline, and reads every reply.
func (s *scratch) run(ctx context.Context, c radixv4.Client, acts []*action) error {
	if len(acts) == 1 {
		return c.Do(ctx, acts[0])
	}
	if s.pipe.Pipeline == nil {
		s.pipe.Pipeline = radixv4.NewPipeline()
	} else {
		s.pipe.Reset()
	}
	for _, a := range acts {
		s.pipe.Append(a)
	}
	return c.Do(ctx, s.pipe)
}

// drop abandons the scratch pipeline and its actions after a failure:
// radix's reader or writer may still hold them.
func (s *scratch) drop() { *s = scratch{} }

// failed maps a command that got no reply: StatusTimeout when the
// connection was closed because the node missed a deadline, StatusError
// otherwise (fanout makes that StatusTimeout too if the deadline passed).
func failed(err error) (core.Status, error) {
	if errors.As(err, new(*hungError)) {
		return core.StatusTimeout, err
	}
	return core.StatusError, err
}

// ready returns node i's client, dialling it if needed, or the reason to
// fail its commands at once (see Connecting).
func (d *Driver) ready(ctx context.Context, i int) (radixv4.Client, error) {
	c, err := d.client(ctx, i)
	if err != nil {
		return nil, err
	}
	if n := d.nodes[i]; n.conns != nil {
		if err := n.conns.ready(ctx); err != nil {
			return nil, err
		}
	}
	return c, nil
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
