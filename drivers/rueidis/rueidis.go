// Package rueidis is a Redlock driver (core.Driver) over
// github.com/redis/rueidis: one rueidis client per Redis master, each in
// single-node mode on one connection, with client-side caching and
// retries off.
//
// # Pipelines
//
// A rueidis call blocks its goroutine until the reply, and rueidis has no
// asynchronous API that could put a command on N servers from one
// goroutine; DoMulti, though, sends any number of commands to one server
// as one pipeline. The driver therefore keeps one long-lived goroutine per
// node (package drivers/internal/fanout, pipelined mode), started by Dial
// or New and stopped by Close:
//
//   - Multiplexed rounds (core.Multiplexed, the default) queue their N
//     commands, one per node, and Receive returns each reply as it
//     arrives. Each node's goroutine takes every command queued for its
//     node, from however many concurrent rounds (up to
//     fanout.MaxPipeline), and sends them with one DoMulti (Do for a lone
//     command), then hands each reply to its round. While a pipeline is on
//     the wire the next commands queue up, so pipelines grow with the load
//     and one round trip, one write and a few reads serve every locker
//     that reached the node meanwhile. No round waits on a node it does
//     not need: a slow last node does not hold up a decided round.
//   - Sequential rounds (core.Sequential) execute each command inline, on
//     the caller's goroutine, with Do: no handoff at all.
//
// Why: the earlier design ran each command as its own Do on one of 64
// workers per node. Under load that meant 320 goroutines, four goroutine
// handoffs per command (caller, worker, rueidis's writer and reader, and
// back), and a socket write for nearly every command: at 32 concurrent
// lockers on 5 local servers it spent most of its time in write(2) and
// was slower than a goroutine-per-node peer over the same client. Options.
// PoolSize then also multiplied the connections (64 by default in the
// benchmark: 320 connections, each with 1 MiB of buffers, and the rounds'
// stragglers free to overtake each other). Batching across lockers on one
// goroutine per node made the same load about three times faster with a
// third of the allocations (see BenchmarkAcquireReleaseParallel).
//
// # Order
//
// A node's commands reach it in the order their rounds queued them: one
// goroutine sends them, one pipeline at a time, on one connection. So the
// straggling SET of a decided round (still in flight when its quorum was
// reached) cannot be overtaken by the release that follows it, which
// would leave its key behind until the TTL.
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
// are not sent. rueidis honours
// the deadline on the connection itself (a socket deadline; it closes a
// connection whose reply is late and redials, within the next command's
// deadline), so a SIGSTOPped node costs each round at most the node
// timeout and answers core.StatusTimeout. A command that fails after its
// deadline answers core.StatusTimeout whatever the error. The Begin
// context's values reach rueidis (its hooks, tracing) for sequential
// commands and for a pipeline of one command; a pipeline of several
// rounds' commands cannot carry them all and carries none.
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
// Dial creates every client concurrently. rueidis connects eagerly, but
// with ForceSingleClient it returns a usable client even when that first
// connection fails, and connects again when a command needs it (within the
// command's deadline): so a node that is down does not fail Dial, as a lock
// over N masters must be constructible while a minority is down. Refused
// credentials do not fail Dial either: the nodes' commands fail (with
// core.StatusError naming the node and quoting the server's WRONGPASS or
// NOAUTH) until the configuration is fixed.
//
// Options.Username and Options.Password authenticate with HELLO/AUTH (an
// ACL user with its password, or the default user's password alone);
// Options.TLS enables TLS. Each node gets one pipelined connection, and a
// non-zero Options.PoolSize is refused (see there). Tokens go over
// the wire as 32 lower-case hex digits, the form every driver of this
// module uses, so a lock taken through one driver can be released through
// another.
package rueidis

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	rd "github.com/redis/rueidis"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers/internal/fanout"
	"github.com/redlock-go/redlock/drivers/internal/wire"
)

// DefaultDialTimeout applies when Options.DialTimeout is 0.
const DefaultDialTimeout = 2 * time.Second

// Options configure Dial.
type Options struct {
	// Username and Password authenticate every connection: an ACL user and
	// its password, or the default user's password alone when Username is
	// empty.
	Username, Password string
	// TLS, when not nil, makes every connection TLS with this configuration.
	TLS *tls.Config
	// PoolSize must be 0: each node gets exactly one pipelined connection.
	// The driver sends one pipeline per node at a time (see Pipelines), so
	// more connections would only add idle buffers (1 MiB each) and let a
	// key's commands overtake each other; concurrent sequential rounds
	// share one auto-pipelined connection well. It is refused rather than
	// ignored, so that nobody tunes a knob that does nothing.
	PoolSize int
	// DialTimeout bounds connecting to a node, TLS and HELLO/AUTH included.
	// A reconnection made for a command is also bounded by the command's
	// deadline. 0 means DefaultDialTimeout.
	DialTimeout time.Duration
}

// Driver is a core.Driver over rueidis clients. It is safe for concurrent
// use.
type Driver struct {
	f       *fanout.Fanout
	clients []rd.Client
	scripts []scriptSet      // per node: the scripts the server is known to have cached
	scratch [][]rd.Completed // per node, owned by its pipeliner
	owned   bool             // Dial made the clients: Close closes them
	once    sync.Once
}

var _ core.Driver = (*Driver)(nil)

// ClientOption returns the rueidis options Dial uses for addr: a
// single-node client (ForceSingleClient) on one pipelined connection
// (PipelineMultiplex -1, see Options.PoolSize), no client-side cache, no
// retries (a retried SET NX could report the caller's own key as held),
// and the authentication, TLS and dial settings of opts. It is exported for
// callers who build their own clients for New.
func ClientOption(addr string, opts Options) rd.ClientOption {
	o := rd.ClientOption{
		InitAddress:       []string{addr},
		Username:          opts.Username,
		Password:          opts.Password,
		TLSConfig:         opts.TLS,
		ForceSingleClient: true,
		DisableCache:      true,
		DisableRetry:      true,
	}
	o.Dialer.Timeout = opts.DialTimeout
	if o.Dialer.Timeout == 0 {
		o.Dialer.Timeout = DefaultDialTimeout
	}
	o.PipelineMultiplex = -1 // one connection (rueidis: 2^0); see Options.PoolSize
	return o
}

// Dial validates addrs (host:port each, no duplicates), then creates one
// client per address, concurrently. It fails only for invalid configuration
// (an error matching core.ErrInvalidConfig); unreachable nodes are
// connected again on use.
func Dial(addrs []string, opts Options) (*Driver, error) {
	if err := wire.CheckAddrs("rueidis", addrs); err != nil {
		return nil, err
	}
	switch {
	case opts.PoolSize != 0:
		return nil, fmt.Errorf("%w: rueidis: PoolSize %d: the driver keeps one pipelined connection per node", core.ErrInvalidConfig, opts.PoolSize)
	case opts.DialTimeout < 0:
		return nil, fmt.Errorf("%w: rueidis: DialTimeout %v is negative", core.ErrInvalidConfig, opts.DialTimeout)
	}
	clients := make([]rd.Client, len(addrs))
	errs := make([]error, len(addrs))
	var wg sync.WaitGroup
	for i, addr := range addrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := rd.NewClient(ClientOption(addr, opts))
			clients[i] = c
			if c == nil {
				// Not a connection failure: a bad option.
				errs[i] = &wire.NodeError{Node: i, Addr: addr, Op: core.OpAcquire, Err: errors.Join(core.ErrInvalidConfig, err)}
			}
			// Any other error (unreachable, or refused credentials) leaves
			// a client that connects again on use, and fails the commands
			// that need it meanwhile.
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, c := range clients {
			if c != nil {
				c.Close()
			}
		}
		return nil, errors.Join(errors.New("rueidis: dial"), err)
	}
	d := newDriver(clients, addrs)
	d.owned = true
	return d, nil
}

// New wraps existing rueidis clients, one per master. Each should be a
// single-node client (see ClientOption) with retries disabled. names name
// the nodes in errors; nil takes each client's address. Close stops the
// node goroutines but does not close the clients: they remain the
// caller's.
func New(clients []rd.Client, names []string) (*Driver, error) {
	for i, c := range clients {
		if c == nil {
			return nil, errors.Join(core.ErrInvalidConfig, errors.New("rueidis: client "+strconv.Itoa(i)+" is nil"))
		}
	}
	if names == nil && len(clients) > 0 {
		names = make([]string, len(clients))
		for i, c := range clients {
			names[i] = clientAddr(c)
		}
	}
	if err := wire.CheckNames("rueidis", len(clients), names); err != nil {
		return nil, err
	}
	return newDriver(append([]rd.Client(nil), clients...), names), nil
}

// clientAddr returns a single-node client's address, or "" if it is not
// one.
func clientAddr(c rd.Client) string {
	nodes := c.Nodes()
	if len(nodes) != 1 {
		return ""
	}
	for addr := range nodes {
		return addr
	}
	return ""
}

func newDriver(clients []rd.Client, names []string) *Driver {
	d := &Driver{clients: clients, scripts: make([]scriptSet, len(clients)), scratch: make([][]rd.Completed, len(clients))}
	d.f = fanout.New(fanout.Config{Names: names, Exec: d.exec, ExecMulti: d.execMulti, WireStrings: true})
	return d
}

// Nodes returns N.
func (d *Driver) Nodes() int { return d.f.Nodes() }

// NodeName returns node i's address (or the name given to New).
func (d *Driver) NodeName(i int) string { return d.f.NodeName(i) }

// Begin returns a batch for one round.
func (d *Driver) Begin(ctx context.Context) core.Batch { return d.f.Begin(ctx) }

// Close stops the node goroutines, waiting for commands in flight (each within its
// deadline), then closes the clients Dial made. Rounds after Close answer
// core.StatusError. Close is idempotent and always returns nil.
func (d *Driver) Close() error {
	d.once.Do(func() {
		d.f.Close()
		if d.owned {
			for _, c := range d.clients {
				c.Close()
			}
		}
	})
	return nil
}

// exec runs one command on one node. It is fanout's Exec.
func (d *Driver) exec(ctx context.Context, i int, cmd core.Command) (core.Status, error) {
	c := d.clients[i]
	ss := &d.scripts[i]
	tok := cmd.Token.String()
	if cmd.Op == core.OpAcquire {
		err := c.Do(ctx, c.B().Set().Key(cmd.Key).Value(tok).Nx().PxMilliseconds(wire.Millis(cmd.TTL)).Build()).Error()
		switch {
		case err == nil:
			return core.StatusOK, nil
		case rd.IsRedisNil(err):
			return core.StatusHeld, nil // SET NX: the key exists
		}
		ss.broken(err)
		return core.StatusError, err
	}
	s := wire.ScriptFor(cmd.Op)
	var ms string
	if cmd.Op == core.OpExtend {
		ms = wire.MillisString(cmd.TTL)
	}
	eval := ss.eval(cmd.Op)
	n, err := d.script(ctx, c, s, eval, cmd, tok, ms)
	if err != nil && !eval && wire.IsNoScript(err) {
		// SCRIPT FLUSH or a restart emptied the script cache: EVAL loads it.
		ss.forget(cmd.Op)
		n, err = d.script(ctx, c, s, true, cmd, tok, ms)
	}
	if err != nil {
		ss.broken(err)
		return core.StatusError, err
	}
	ss.learn(cmd.Op)
	return wire.ScriptStatus(n)
}

func (d *Driver) script(ctx context.Context, c rd.Client, s wire.Script, eval bool, cmd core.Command, tok, ms string) (int64, error) {
	var b rd.Completed
	switch {
	case eval && cmd.Op == core.OpExtend:
		b = c.B().Eval().Script(s.Src).Numkeys(1).Key(cmd.Key).Arg(tok, ms).Build()
	case eval:
		b = c.B().Eval().Script(s.Src).Numkeys(1).Key(cmd.Key).Arg(tok).Build()
	case cmd.Op == core.OpExtend:
		b = c.B().Evalsha().Sha1(s.SHA1).Numkeys(1).Key(cmd.Key).Arg(tok, ms).Build()
	default:
		b = c.B().Evalsha().Sha1(s.SHA1).Numkeys(1).Key(cmd.Key).Arg(tok).Build()
	}
	return c.Do(ctx, b).AsInt64()
}

// execMulti runs calls on node i as one pipeline (DoMulti). It is fanout's
// ExecMulti, called by node i's pipeliner only.
func (d *Driver) execMulti(ctx context.Context, i int, calls []fanout.Call, res []fanout.Result) {
	c := d.clients[i]
	ss := &d.scripts[i]
	cmds := d.scratch[i][:0]
	for _, k := range calls {
		cmds = append(cmds, build(c, k, ss.eval(k.Cmd.Op)))
	}
	var rs []rd.RedisResult
	var one [1]rd.RedisResult
	if len(cmds) == 1 {
		// Do returns its result by value: DoMulti's slice would be an
		// allocation per pipeline, and a lone locker's are all of one.
		one[0] = c.Do(ctx, cmds[0])
		rs = one[:]
	} else {
		rs = c.DoMulti(ctx, cmds...)
	}
	var noscript bool
	for n, r := range rs {
		op := calls[n].Cmd.Op
		res[n] = result(op, r)
		noscript = noscript || wire.IsNoScript(res[n].Err)
		ss.observe(op, res[n].Err)
	}
	if noscript {
		// SCRIPT FLUSH or a restart emptied the script cache: EVAL loads
		// it. Only the scripts that met NOSCRIPT are sent again.
		cmds = cmds[:0]
		for n, k := range calls {
			if wire.IsNoScript(res[n].Err) {
				cmds = append(cmds, build(c, k, true))
			}
		}
		rs = c.DoMulti(ctx, cmds...)
		m := 0
		for n, k := range calls {
			if wire.IsNoScript(res[n].Err) {
				res[n] = result(k.Cmd.Op, rs[m])
				ss.observe(k.Cmd.Op, res[n].Err)
				m++
			}
		}
	}
	clear(cmds)
	d.scratch[i] = cmds[:0]
}

// build returns the command for call k: SET NX PX, or EVALSHA (EVAL if
// eval) of the release or extend script.
func build(c rd.Client, k fanout.Call, eval bool) rd.Completed {
	if k.Cmd.Op == core.OpAcquire {
		return c.B().Arbitrary("SET").Keys(k.Cmd.Key).Args(k.Token, "NX", "PX", k.TTL).Build()
	}
	s := wire.ScriptFor(k.Cmd.Op)
	switch {
	case eval && k.Cmd.Op == core.OpExtend:
		return c.B().Eval().Script(s.Src).Numkeys(1).Key(k.Cmd.Key).Arg(k.Token, k.TTL).Build()
	case eval:
		return c.B().Eval().Script(s.Src).Numkeys(1).Key(k.Cmd.Key).Arg(k.Token).Build()
	case k.Cmd.Op == core.OpExtend:
		return c.B().Evalsha().Sha1(s.SHA1).Numkeys(1).Key(k.Cmd.Key).Arg(k.Token, k.TTL).Build()
	}
	return c.B().Evalsha().Sha1(s.SHA1).Numkeys(1).Key(k.Cmd.Key).Arg(k.Token).Build()
}

// result maps op's reply.
func result(op core.Op, r rd.RedisResult) fanout.Result {
	if op == core.OpAcquire {
		err := r.Error()
		switch {
		case err == nil:
			return fanout.Result{Status: core.StatusOK}
		case rd.IsRedisNil(err):
			return fanout.Result{Status: core.StatusHeld} // SET NX: the key exists
		}
		return fanout.Result{Status: core.StatusError, Err: err}
	}
	n, err := r.AsInt64()
	if err != nil {
		return fanout.Result{Status: core.StatusError, Err: err}
	}
	st, err := wire.ScriptStatus(n)
	return fanout.Result{Status: st, Err: err}
}

// scriptSet records which of the two scripts a node is known to have
// cached. Until a script has run on the node, and again after NOSCRIPT or
// after a failure that was neither a reply nor a timeout (a broken
// connection, a refused dial: probably a restart, which empties the
// cache), its commands carry the script's source (EVAL, which caches it)
// rather than its hash (EVALSHA). A NOSCRIPT reply is answered by EVAL,
// but only if somebody reads it: a release abandoned at its deadline on a
// hung node (queued behind the SET it undoes, and run once the node
// wakes) must not depend on that.
type scriptSet struct{ bits atomic.Uint32 }

func scriptBit(op core.Op) uint32 { return 1 << (op - core.OpRelease) }

// eval reports whether a command of op must carry its script's source.
// It is false for OpAcquire, which is no script.
func (s *scriptSet) eval(op core.Op) bool {
	return op != core.OpAcquire && s.bits.Load()&scriptBit(op) == 0
}

func (s *scriptSet) learn(op core.Op) {
	if b := scriptBit(op); s.bits.Load()&b == 0 {
		s.bits.Or(b)
	}
}

func (s *scriptSet) forget(op core.Op) { s.bits.And(^scriptBit(op)) }

// observe learns from the outcome of a command of op: a script that ran
// is cached, one that met NOSCRIPT is not.
func (s *scriptSet) observe(op core.Op, err error) {
	switch {
	case op == core.OpAcquire:
		s.broken(err)
	case err == nil:
		s.learn(op)
	case wire.IsNoScript(err):
		s.forget(op)
	default:
		s.broken(err)
	}
}

// broken forgets every script after a failure that is neither a reply nor
// a timeout.
func (s *scriptSet) broken(err error) {
	if err == nil || errors.Is(err, context.DeadlineExceeded) || s.bits.Load() == 0 {
		return
	}
	if _, reply := rd.IsRedisErr(err); !reply {
		s.bits.Store(0)
	}
}
