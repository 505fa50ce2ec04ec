// Package rueidis is a Redlock driver (core.Driver) over
// github.com/redis/rueidis: one rueidis client per Redis master, each in
// single-node mode with client-side caching and retries off.
//
// # Fan-out
//
// A rueidis call (Client.Do) blocks its goroutine until the reply, and
// rueidis has no asynchronous API that could put a command on N servers
// from one goroutine (DoMulti pipelines commands to one server only). The
// driver therefore runs the calls on long-lived per-node workers (package
// drivers/internal/fanout), started by Dial or New and stopped by Close,
// instead of starting a goroutine per node per operation:
//
//   - Sequential rounds (core.Sequential) execute each command inline, on
//     the caller's goroutine: no handoff at all.
//   - Multiplexed rounds (core.Multiplexed, the default) hand all N commands
//     to the nodes' workers, so a round costs about one round trip and N
//     channel handoffs, and Receive returns each reply as it arrives: none
//     runs inline, since the caller would then wait for that node, however
//     slow, after the others had decided the round.
//
// rueidis auto-pipelines concurrent calls to one node over a few shared
// connections, so many concurrent lockers cost few connections and few
// system calls. Options.Workers bounds how many commands to one node are in
// flight at once (64 by default).
//
// # Deadlines
//
// Every command runs under a context whose deadline is the one the Locker
// gave Send, detached from the caller's cancellation but carrying the
// Begin context's values. rueidis honours it both on its synchronous path
// (a socket deadline) and on its pipelined path (it stops waiting and
// discards the late reply), and redials a broken connection within the
// same deadline, so a SIGSTOPped node costs each round at most the node
// timeout and answers core.StatusTimeout. A command that fails after its
// deadline answers core.StatusTimeout whatever the error.
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
// Options.TLS enables TLS. Options.PoolSize maps to rueidis's
// PipelineMultiplex: each node gets the largest power of two ≤ PoolSize
// pipelined connections (at most 2^8); 0 means one, which keeps each
// node's commands in issue order. Tokens go over the wire as 32
// lower-case hex digits, the form every driver of this module uses, so a
// lock taken through one driver can be released through another.
package rueidis

import (
	"context"
	"crypto/tls"
	"errors"
	"math/bits"
	"strconv"
	"sync"
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
	// PoolSize sets the pipelined connections per node: the largest power of
	// two not above it, at most 256 (rueidis's PipelineMultiplex). 0 means
	// one. rueidis spreads keyed commands over its connections at random,
	// so with more than one a straggling command of a decided round (an
	// acquire still in flight when its quorum was reached) can be overtaken
	// by the release that follows and leave its key to expire by TTL; on
	// one connection commands reach a node in the order they were issued.
	// One auto-pipelined connection carries a great many lockers.
	PoolSize int
	// DialTimeout bounds connecting to a node, TLS and HELLO/AUTH included.
	// A reconnection made for a command is also bounded by the command's
	// deadline. 0 means DefaultDialTimeout.
	DialTimeout time.Duration
	// Workers is the number of fan-out workers per node, that is how many
	// commands to one node may be in flight at once. 0 means 64.
	Workers int
}

// Driver is a core.Driver over rueidis clients. It is safe for concurrent
// use.
type Driver struct {
	f       *fanout.Fanout
	clients []rd.Client
	scratch [][]rd.Completed // per node, owned by its pipeliner
	owned   bool             // Dial made the clients: Close closes them
	once    sync.Once
}

var _ core.Driver = (*Driver)(nil)

// ClientOption returns the rueidis options Dial uses for addr: a
// single-node client (ForceSingleClient), no client-side cache, no retries
// (a retried SET NX could report the caller's own key as held), and the
// authentication, TLS, pool and dial settings of opts. It is exported for
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
	if opts.PoolSize > 0 {
		o.PipelineMultiplex = min(bits.Len(uint(opts.PoolSize))-1, rd.MaxPipelineMultiplex)
	} else {
		o.PipelineMultiplex = -1 // one connection (rueidis: 2^0); see Options.PoolSize
	}
	return o
}

// Dial validates addrs (host:port each, no duplicates), then creates one
// client per address, concurrently. It fails only for invalid configuration
// (an error matching core.ErrInvalidConfig); unreachable nodes are
// connected again on use.
func Dial(addrs []string, opts Options) (*Driver, error) {
	if err := fanout.CheckAddrs("rueidis", addrs); err != nil {
		return nil, err
	}
	if opts.PoolSize < 0 || opts.DialTimeout < 0 || opts.Workers < 0 {
		return nil, errors.Join(core.ErrInvalidConfig, errors.New("rueidis: negative PoolSize, DialTimeout or Workers"))
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
	d := newDriver(clients, addrs, opts.Workers)
	d.owned = true
	return d, nil
}

// New wraps existing rueidis clients, one per master, with the default
// number of workers. Each should be a single-node client (see
// ClientOption) with retries disabled. names name the nodes in errors; nil
// takes each client's address. Close stops the workers but does not close
// the clients: they remain the caller's.
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
	if err := fanout.CheckNames("rueidis", len(clients), names); err != nil {
		return nil, err
	}
	return newDriver(append([]rd.Client(nil), clients...), names, 0), nil
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

func newDriver(clients []rd.Client, names []string, workers int) *Driver {
	d := &Driver{clients: clients, scratch: make([][]rd.Completed, len(clients))}
	d.f = fanout.New(fanout.Config{Names: names, Exec: d.exec, ExecMulti: d.execMulti, Workers: workers})
	return d
}

// Nodes returns N.
func (d *Driver) Nodes() int { return d.f.Nodes() }

// NodeName returns node i's address (or the name given to New).
func (d *Driver) NodeName(i int) string { return d.f.NodeName(i) }

// Begin returns a batch for one round.
func (d *Driver) Begin(ctx context.Context) core.Batch { return d.f.Begin(ctx) }

// Close stops the workers, waiting for commands in flight (each within its
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
	tok := cmd.Token.String()
	if cmd.Op == core.OpAcquire {
		err := c.Do(ctx, c.B().Set().Key(cmd.Key).Value(tok).Nx().PxMilliseconds(wire.Millis(cmd.TTL)).Build()).Error()
		switch {
		case err == nil:
			return core.StatusOK, nil
		case rd.IsRedisNil(err):
			return core.StatusHeld, nil // SET NX: the key exists
		}
		return core.StatusError, err
	}
	s := wire.ScriptFor(cmd.Op)
	var ms string
	if cmd.Op == core.OpExtend {
		ms = wire.MillisString(cmd.TTL)
	}
	n, err := d.script(ctx, c, s, false, cmd, tok, ms)
	if err != nil && wire.IsNoScript(err) {
		// SCRIPT FLUSH or a restart emptied the script cache: EVAL loads it.
		n, err = d.script(ctx, c, s, true, cmd, tok, ms)
	}
	if err != nil {
		return core.StatusError, err
	}
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
	cmds := d.scratch[i][:0]
	for _, k := range calls {
		cmds = append(cmds, build(c, k, false))
	}
	rs := c.DoMulti(ctx, cmds...)
	var noscript bool
	for n, r := range rs {
		res[n] = result(calls[n].Cmd.Op, r)
		noscript = noscript || wire.IsNoScript(res[n].Err)
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
