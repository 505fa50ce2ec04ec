package redigo

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"hash/maphash"
	"net"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers/internal/wire"
)

// Defaults applied to zero Options fields.
const (
	// DefaultDialTimeout caps a connection attempt (TCP connect, TLS
	// handshake and AUTH). It is only a backstop: every dial happens inside
	// a command and is cut at that command's per-node deadline, which is
	// normally far shorter.
	DefaultDialTimeout = 5 * time.Second
	// DefaultPoolSize is the default PoolSize, or DefaultPoolSizePerCPU ×
	// GOMAXPROCS if that is larger. Idle connections exist only because a
	// burst needed them (a round holds one per node for about a round
	// trip), so the bound only decides how many survive the burst: too
	// low, and every burst ends in closes and the next one in reconnects.
	// Connections idle for IdleTimeout are closed anyway.
	DefaultPoolSize       = 64
	DefaultPoolSizePerCPU = 10
	// IdleTimeout closes the connections of a Dial-made pool that stayed
	// idle this long, rather than trust them.
	IdleTimeout = 5 * time.Minute
	// PingIdle is how long a connection of a Dial-made pool may stay idle
	// before it is PINGed on reuse.
	PingIdle = time.Minute
)

// ErrClosed is the error of a command sent through a closed Driver.
var ErrClosed = errors.New("redigo: driver closed")

// Options configure the pools that Dial creates.
type Options struct {
	// Username and Password authenticate every connection: AUTH user pass
	// for an ACL user, AUTH pass for requirepass. A Username needs a
	// Password.
	Username, Password string
	// TLS, if not nil, makes every connection TLS with this configuration
	// (cloned; ServerName defaults to the address's host). nil is plain TCP.
	TLS *tls.Config
	// PoolSize is the number of idle connections kept per node; 0 means
	// DefaultPoolSize (see there why). Connections in use are not
	// capped: a cap would make a round wait for another round's connection
	// (eating its node timeout) or fail its vote outright, turning local
	// contention into lost locks. Connections beyond PoolSize are closed
	// when returned.
	PoolSize int
	// DialTimeout caps one connection attempt; 0 means DefaultDialTimeout.
	// The per-node deadline of the command that needs the connection cuts
	// the attempt earlier.
	DialTimeout time.Duration
	// Pooled selects the pooled mode, where each command checks a
	// connection out of a redis.Pool per node. The zero value is the
	// pipelined mode: it is as fast for one client, allocates nothing per
	// round, and under concurrency writes many rounds' commands with one
	// system call (see the package documentation and results/).
	Pooled bool
	// Pipeline is the number of long-lived connections per node in the
	// pipelined mode, shared by every round; 0 means DefaultPipeline (1,
	// the fastest measured: more connections batch less). At most
	// MaxPipeline. It must be 0 in the pooled mode, and PoolSize must be 0
	// in the pipelined mode.
	Pipeline int
}

// DefaultPipeline is the number of connections per node in the pipelined
// mode when Options.Pipeline is 0.
const DefaultPipeline = 1

// Driver is a core.Driver over one redigo pool per node, or pipelined
// connections (the default; see Options.Pooled). It is safe for concurrent use. Close it
// when done: it owns one goroutine (the straggler drainer) and, when made
// by Dial, the pools; or, pipelined, a writer goroutine per connection and
// a reader per live connection.
type Driver struct {
	nodes []node
	owned bool // the pools were made by Dial: Close closes them
	epoch time.Time

	batches sync.Pool

	kick    chan struct{} // wakes the drainer
	drainer worker
	stop    chan struct{}
	drained chan struct{}

	mu     sync.RWMutex // excludes park from Driver.Close
	closed atomic.Bool

	// Pipelined mode (Options.Pipeline > 0).
	pipelined  bool
	seed       maphash.Seed
	pbatches   sync.Pool
	wg         sync.WaitGroup // the writers and readers
	stopCtx    context.Context
	stopCancel context.CancelFunc
}

type node struct {
	pool *redis.Pool
	name string
	// suspect is set when the node's last command timed out or lost its
	// connection, and cleared by any reply. Suspect nodes are written and
	// read last in a round.
	suspect atomic.Bool
	// failedAt is when a connection to the node last broke (not timed out),
	// in nanoseconds since Driver.epoch. Idle connections returned to a
	// Dial-made pool before then are PINGed before reuse.
	failedAt atomic.Int64
	// scripts records which scripts the node is known to have cached.
	scripts scriptSet

	// pipes are the node's pipelined connections (pipelined mode only).
	pipes []*pconn

	smu     sync.Mutex
	parked  []line // unfinished lines, oldest first (see park)
	busy    keySet // the keys of the line the drainer is finishing
	drainMu sync.Mutex
}

// scriptSet is a set of the two scripts, by op.
type scriptSet struct{ bits atomic.Uint32 }

func scriptBit(op core.Op) uint32 { return 1 << (op - core.OpRelease) }

func (s *scriptSet) known(op core.Op) bool { return s.bits.Load()&scriptBit(op) != 0 }

func (s *scriptSet) learn(op core.Op) {
	if b := scriptBit(op); s.bits.Load()&b == 0 {
		s.bits.Or(b)
	}
}

func (s *scriptSet) forget(op core.Op) { s.bits.And(^scriptBit(op)) }
func (s *scriptSet) forgetAll()        { s.bits.Store(0) }

// Dial returns a Driver over one new pool per address ("host:port").
// It checks the addresses and options first and fails with an error
// matching core.ErrInvalidConfig that names the offending entry; it does not
// connect: connections are made on first use, so a node that is down at
// start-up only costs its vote.
func Dial(addrs []string, opts Options) (*Driver, error) {
	if err := validate(addrs, opts); err != nil {
		return nil, err
	}
	size := opts.PoolSize
	if size == 0 {
		size = max(DefaultPoolSize, DefaultPoolSizePerCPU*runtime.GOMAXPROCS(0))
	}
	dialTimeout := opts.DialTimeout
	if dialTimeout == 0 {
		dialTimeout = DefaultDialTimeout
	}
	d := newDriver(len(addrs), true)
	if !opts.Pooled {
		if opts.Pipeline == 0 {
			opts.Pipeline = DefaultPipeline
		}
		d.pipelined = true
		d.seed = maphash.MakeSeed()
		d.stopCtx, d.stopCancel = context.WithCancel(context.Background())
		d.pbatches.New = d.newPbatch
		for i, addr := range addrs {
			n := &d.nodes[i]
			n.name = addr
			dial := dialFunc(addr, opts, dialTimeout)
			for k := 0; k < opts.Pipeline; k++ {
				p := newPconn(d, i, dial)
				n.pipes = append(n.pipes, p)
				d.wg.Add(1)
				go p.writeLoop()
			}
		}
		close(d.drained) // no drainer
		return d, nil
	}
	for i, addr := range addrs {
		n := &d.nodes[i]
		n.name = addr
		dial := dialFunc(addr, opts, dialTimeout)
		n.pool = &redis.Pool{
			MaxIdle: size,
			DialContext: func(ctx context.Context) (redis.Conn, error) {
				c, _, err := dial(ctx)
				return c, err
			},
			IdleTimeout: IdleTimeout,
			TestOnBorrowContext: func(ctx context.Context, c redis.Conn, lastUsed time.Time) error {
				return d.checkIdle(ctx, n, c, lastUsed)
			},
		}
	}
	d.start()
	return d, nil
}

// New returns a Driver over existing pools, one per node, in node order.
// names[i] names node i in errors (typically its address); names may be nil,
// which names the nodes "pool 0", "pool 1", ... A nil pool, the same pool
// twice or the same name twice (the same server would vote twice) is an
// error matching core.ErrInvalidConfig. Close does not close the pools.
//
// The pools' connections must implement redis.ConnWithTimeout (every redigo
// connection does): reads are bounded by a per-command timeout, never by the
// connections' own read timeout. A pool's DialContext and
// TestOnBorrowContext receive a context whose deadline is the command's and
// must honour it (and not keep it after returning); Dial and TestOnBorrow,
// which get no context, are not bounded by it. A pool with Wait and
// MaxActive set waits for a connection until the command's deadline, at
// the cost of a timer per checkout.
func New(pools []*redis.Pool, names []string) (*Driver, error) {
	switch {
	case len(pools) == 0:
		return nil, invalidf("no pools")
	case len(pools) > core.MaxNodes:
		return nil, invalidf("%d pools, more than core.MaxNodes (%d)", len(pools), core.MaxNodes)
	case names != nil && len(names) != len(pools):
		return nil, invalidf("%d names for %d pools", len(names), len(pools))
	}
	seenPool := make(map[*redis.Pool]int, len(pools))
	seenName := make(map[string]int, len(pools))
	d := newDriver(len(pools), false)
	for i, p := range pools {
		name := "pool " + strconv.Itoa(i)
		if names != nil {
			name = names[i]
		}
		if p == nil {
			return nil, invalidf("pools[%d] (%s) is nil", i, name)
		}
		if j, dup := seenPool[p]; dup {
			return nil, invalidf("pools[%d] (%s) is the same pool as pools[%d]", i, name, j)
		}
		if j, dup := seenName[name]; dup {
			return nil, invalidf("names[%d] %q repeats names[%d]", i, name, j)
		}
		seenPool[p], seenName[name] = i, i
		d.nodes[i] = node{pool: p, name: name}
	}
	d.start()
	return d, nil
}

func newDriver(n int, owned bool) *Driver {
	d := &Driver{
		nodes:   make([]node, n),
		owned:   owned,
		epoch:   time.Now(),
		kick:    make(chan struct{}, 1),
		stop:    make(chan struct{}),
		drained: make(chan struct{}),
	}
	for i := range d.nodes {
		d.nodes[i].parked = make([]line, 0, MaxParked)
	}
	d.batches.New = func() any {
		return &batch{d: d, w: worker{values: context.Background()}, slots: make([]slot, n)}
	}
	d.drainer.values = context.Background()
	return d
}

func (d *Driver) start() { go d.drainLoop() }

// Nodes returns the number of nodes.
func (d *Driver) Nodes() int { return len(d.nodes) }

// NodeName returns node i's address (Dial) or name (New).
func (d *Driver) NodeName(i int) string { return d.nodes[i].name }

// Begin returns a pooled batch for one round. In the pooled mode, ctx's
// values reach the pools' DialContext and TestOnBorrowContext; its
// cancellation is not used. The pipelined mode does not use ctx.
func (d *Driver) Begin(ctx context.Context) core.Batch {
	if d.pipelined {
		return d.pbatches.Get().(*pbatch)
	}
	b := d.batches.Get().(*batch)
	if ctx != nil {
		b.w.values = ctx
	}
	return b
}

// Close stops the drainer, discards the lines still parked (see the package
// documentation) and, for a Driver made by Dial, closes the pools
// (connections in use are closed when their rounds end). It may wait for
// the line the drainer is finishing, which its deadlines bound. Rounds
// begun after Close fail every command with ErrClosed. Close is
// idempotent.
//
// In the pipelined mode, Close closes the connections: the commands still
// queued or unanswered fail with ErrClosed (their rounds may have ended);
// it waits for the writer and reader goroutines, which exit at once (a
// dial in progress is cancelled).
func (d *Driver) Close() error {
	d.mu.Lock()
	already := d.closed.Swap(true)
	d.mu.Unlock()
	if already {
		return nil
	}
	close(d.stop)
	if d.pipelined {
		d.closePipes()
		return nil
	}
	<-d.drained
	var errs []error
	if d.owned {
		for i := range d.nodes {
			if err := d.nodes[i].pool.Close(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// observe records the outcome of an op on node i: err is the client's
// error (nil for a reply; a redis.Error reply is a reply).
func (d *Driver) observe(i int, op core.Op, err error) {
	if err == errDeadlineEval {
		return // the node answered, but too late to send the EVAL
	}
	n := &d.nodes[i]
	if err == nil {
		if n.suspect.Load() {
			n.suspect.Store(false)
		}
		if op != core.OpAcquire {
			n.scripts.learn(op)
		}
		return
	}
	if _, answered := err.(redis.Error); answered {
		if n.suspect.Load() {
			n.suspect.Store(false)
		}
		return
	}
	if errors.Is(err, redis.ErrPoolExhausted) || errors.Is(err, ErrClosed) {
		return // local conditions: they say nothing about the node
	}
	if !n.suspect.Load() {
		n.suspect.Store(true)
	}
	if !isTimeout(err) {
		// Probably a restart: the server's script cache is empty too.
		n.failedAt.Store(int64(time.Since(d.epoch)))
		n.scripts.forgetAll()
	}
}

// checkIdle is the TestOnBorrowContext of Dial-made pools. It PINGs an
// idle connection before reuse when the connection may have died silently:
// after a connection to the node broke (typically a restart), the idle
// connections older than the break; and any connection idle for longer
// than PingIdle (a server timeout or a middlebox may have closed it). So a
// restart or a quiet period costs at most a round trip, not a failed
// command per pooled connection.
func (d *Driver) checkIdle(ctx context.Context, n *node, c redis.Conn, lastUsed time.Time) error {
	f := n.failedAt.Load()
	if (f == 0 || int64(lastUsed.Sub(d.epoch)) > f) && time.Since(lastUsed) < PingIdle {
		return nil
	}
	timeout := lateRead
	if dl, ok := ctx.Deadline(); ok {
		timeout = readTimeout(dl, time.Now())
	}
	_, err := redis.DoWithTimeout(c, timeout, "PING")
	return err
}

// dialFunc returns the dial of a Dial-made pool or pipelined connection:
// it returns the redigo connection and the network connection under it.
// The TCP connect, the TLS handshake and AUTH are all bounded by ctx's
// deadline (the command's) and by dialTimeout.
func dialFunc(addr string, opts Options, dialTimeout time.Duration) func(context.Context) (redis.Conn, net.Conn, error) {
	dialer := &net.Dialer{Timeout: dialTimeout, KeepAlive: 5 * time.Minute}
	var tlsConf *tls.Config
	if opts.TLS != nil {
		tlsConf = opts.TLS.Clone()
		if tlsConf.ServerName == "" {
			host, _, _ := net.SplitHostPort(addr)
			tlsConf.ServerName = host
		}
	}
	netDial := func(ctx context.Context, network, address string) (net.Conn, error) {
		nc, err := dialer.DialContext(ctx, network, address)
		if err != nil || tlsConf == nil {
			return nc, err
		}
		tc := tls.Client(nc, tlsConf)
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			return nil, err
		}
		return tc, nil
	}
	var dopts []redis.DialOption
	if opts.Password != "" {
		dopts = append(dopts, redis.DialPassword(opts.Password))
		if opts.Username != "" {
			dopts = append(dopts, redis.DialUsername(opts.Username))
		}
	}
	return func(ctx context.Context) (redis.Conn, net.Conn, error) {
		ctx, cancel := context.WithTimeout(ctx, dialTimeout)
		defer cancel()
		var nc net.Conn
		o := append(dopts[:len(dopts):len(dopts)], redis.DialContextFunc(func(ctx context.Context, network, address string) (net.Conn, error) {
			c, err := netDial(ctx, network, address)
			nc = c
			return c, err
		}))
		c, err := redis.DialContext(ctx, "tcp", addr, o...)
		if err != nil {
			return nil, nil, err
		}
		return c, nc, nil
	}
}

// validate checks Dial's arguments before anything connects.
func validate(addrs []string, opts Options) error {
	switch {
	case opts.PoolSize < 0:
		return invalidf("PoolSize %d is negative", opts.PoolSize)
	case opts.Pipeline < 0 || opts.Pipeline > MaxPipeline:
		return invalidf("Pipeline %d is not in 0..%d", opts.Pipeline, MaxPipeline)
	case opts.Pooled && opts.Pipeline != 0:
		return invalidf("Pipeline %d is for the pipelined mode, not Pooled", opts.Pipeline)
	case !opts.Pooled && opts.PoolSize != 0:
		return invalidf("PoolSize %d is for the Pooled mode; the pipelined mode takes Pipeline", opts.PoolSize)
	case opts.DialTimeout < 0:
		return invalidf("DialTimeout %v is negative", opts.DialTimeout)
	case opts.Username != "" && opts.Password == "":
		return invalidf("Username %q without a Password", opts.Username)
	}
	return wire.CheckAddrs("redigo", addrs)
}

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: redigo: %s", core.ErrInvalidConfig, fmt.Sprintf(format, args...))
}
