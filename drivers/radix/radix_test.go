package radix_test

import (
	"context"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	radixv4 "github.com/mediocregopher/radix/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers"
	"github.com/redlock-go/redlock/drivers/conformance"
	"github.com/redlock-go/redlock/drivers/radix"
	"github.com/redlock-go/redlock/internal/dialtest"
	"github.com/redlock-go/redlock/internal/redistest"
	"github.com/redlock-go/redlock/internal/redistest/embedded"
	"github.com/redlock-go/redlock/internal/systest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

func addrs(srvs []*redistest.Server) []string {
	out := make([]string, len(srvs))
	for i, s := range srvs {
		out[i] = s.Addr
	}
	return out
}

func open(t *testing.T, a []string, opts radix.Options) *drivers.Driver {
	t.Helper()
	d, err := radix.Dial(a, opts)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, d.Close()) })
	return d
}

var tok = core.TokenFromUint64s(0x0123456789abcdef, 0xfedcba9876543210)

func acquire(key string, t core.Token) core.Command {
	return core.Command{Op: core.OpAcquire, Key: key, Token: t, TTL: 10 * time.Second}
}
func release(key string, t core.Token) core.Command {
	return core.Command{Op: core.OpRelease, Key: key, Token: t}
}
func extend(key string, t core.Token, ttl time.Duration) core.Command {
	return core.Command{Op: core.OpExtend, Key: key, Token: t, TTL: ttl}
}

// fakeClient is a radix Client that is never used: New only validates it.
type fakeClient struct{ addr string }

func (f *fakeClient) Addr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: len(f.addr)}
}
func (f *fakeClient) Close() error                             { return nil }
func (f *fakeClient) Do(context.Context, radixv4.Action) error { return nil }

func TestNewValidation(t *testing.T) {
	p, q := &fakeClient{"p"}, &fakeClient{"qq"}
	dialtest.NewValidation[radixv4.Client](t, radix.New, p, q)
	// Named by their addresses, two clients of one server are refused.
	d, err := radix.New([]radixv4.Client{p, &fakeClient{"r"}}, nil)
	assert.Nil(t, d)
	require.ErrorIs(t, err, core.ErrInvalidConfig)
	assert.ErrorContains(t, err, `clients 0 and 1 have the same name "127.0.0.1:1"`)
}

func TestNewOverUserPools(t *testing.T) {
	ss := embedded.StartN(t, 3, redistest.Options{})
	ctx := context.Background()
	clients := make([]radixv4.Client, len(ss))
	for i, s := range ss {
		p, err := radixv4.PoolConfig{Size: 2}.New(ctx, "tcp", s.Addr)
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, p.Close()) })
		clients[i] = p
	}
	d, err := radix.New(clients, nil)
	require.NoError(t, err)
	assert.Equal(t, 3, d.Nodes())
	assert.Equal(t, ss[1].Addr, d.NodeName(1), "nil names: each client's Addr")
	assert.Equal(t, core.Clock(core.SystemClock{}), d.Clock(), "New's driver reads the system clock")
	for _, mode := range []core.FanOut{core.Multiplexed, core.Sequential} {
		// A sequential round's bound is N node timeouts, and Extend needs
		// two of them left: 1.5 s each of the 5 s TTL.
		client, err := redlock.NewClient(d, redlock.Options{TTL: 5 * time.Second,
			NodeTimeout: 500 * time.Millisecond, FanOut: mode})
		require.NoError(t, err)
		lock, err := client.TryLock(ctx, "user-pools")
		require.NoError(t, err)
		require.NoError(t, lock.Extend(ctx))
		require.NoError(t, lock.Unlock(ctx))
	}
	require.NoError(t, d.Close())
	require.NoError(t, d.Close(), "Close is idempotent")
	for _, c := range clients {
		assert.NoError(t, c.Do(ctx, radixv4.Cmd(nil, "PING")), "Close leaves the caller's pools open")
	}
}

// TestDB: Options.DB is sent as SELECT when each connection is made. The
// test servers have one database, so SELECT 1 is refused, and the node's
// commands fail with the server's error (Dial does not).
func TestDB(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{})
	d := open(t, []string{srv.Addr}, radix.Options{DB: 1})
	r := conformance.SendOne(d, 0, acquire("db", tok), time.Second)
	assert.Equal(t, core.StatusError, r.Status)
	assert.ErrorContains(t, r.Err, "DB index is out of range")
	d = open(t, []string{srv.Addr}, radix.Options{DB: 0})
	r = conformance.SendOne(d, 0, acquire("db", tok), time.Second)
	assert.Equal(t, core.StatusOK, r.Status, "%v", r.Err)
}

// TestTimeoutLeavesNoStaleReply: a pipeline that missed its deadline on a
// hung node must not leave its late reply to answer the next command,
// neither on Dial's connection nor on a caller's pool, and the connection
// is replaced (a pool closes it, since the pipeline does not share it):
// radix would otherwise discard the late replies on it without a deadline,
// holding up the commands behind them for as long as the node hangs.
func TestTimeoutLeavesNoStaleReply(t *testing.T) {
	for _, how := range []string{"Dial", "New"} {
		t.Run(how, func(t *testing.T) {
			srv := redistest.Start(t, redistest.Options{})
			var d core.Driver
			if how == "Dial" {
				d = open(t, []string{srv.Addr}, radix.Options{})
			} else {
				p, err := radixv4.PoolConfig{Size: 1}.New(context.Background(), "tcp", srv.Addr)
				require.NoError(t, err)
				t.Cleanup(func() { assert.NoError(t, p.Close()) })
				nd, err := radix.New([]radixv4.Client{p}, nil)
				require.NoError(t, err)
				t.Cleanup(func() { assert.NoError(t, nd.Close()) })
				d = nd
			}
			require.Equal(t, core.StatusMissing, conformance.SendOne(d, 0, release("warm", tok), time.Second).Status)
			conns := connections(t, srv)
			srv.Stop()
			r := conformance.SendOne(d, 0, acquire("late", tok), 200*time.Millisecond)
			assert.Equal(t, core.StatusTimeout, r.Status, "%v", r.Err)
			time.Sleep(300 * time.Millisecond) // the exchange has given up
			srv.Cont()
			// The late SET's +OK must not answer these.
			for k := range 5 {
				r := conformance.SendOne(d, 0, release("none"+strconv.Itoa(k), tok), 2*time.Second)
				require.Equal(t, core.StatusMissing, r.Status, "command %d: %v", k, r.Err)
			}
			r = conformance.SendOne(d, 0, extend("none", tok, time.Second), 2*time.Second)
			require.Equal(t, core.StatusMissing, r.Status, "%v", r.Err)
			// One more for connections' own.
			assert.Greater(t, connections(t, srv), conns+1, "the timed-out connection was replaced")
		})
	}
}

// connections returns how many connections srv has accepted, its own
// (redistest's Do dials for each call) included.
func connections(t *testing.T, srv *redistest.Server) int {
	t.Helper()
	v, err := srv.Do("INFO", "stats")
	require.NoError(t, err)
	info, _ := v.(string)
	_, rest, ok := strings.Cut(info, "total_connections_received:")
	require.True(t, ok, "INFO stats: %q", info)
	n, err := strconv.Atoi(strings.TrimSpace(rest[:strings.IndexByte(rest, '\n')]))
	require.NoError(t, err)
	return n
}

// TestPipeline forces one pipeline of several rounds' commands on node 0:
// the node is stopped while round A's SET is on the wire, so the next
// rounds' commands queue up and go out together once it continues. Error
// replies (WRONGTYPE) and NOSCRIPT fallbacks in the middle of the pipeline
// must not disturb the other commands' replies, and the release of A's key
// must run after A's straggling SET.
func TestPipeline(t *testing.T) {
	srvs := redistest.StartN(t, 2, redistest.Options{})
	d := open(t, addrs(srvs), radix.Options{})
	other := core.TokenFromUint64s(2, 2)
	s0 := srvs[0]
	_, err := s0.Do("LPUSH", "list", "x")
	require.NoError(t, err)
	_, err = s0.Do("SET", "held", other.String())
	require.NoError(t, err)
	require.Equal(t, core.StatusMissing, conformance.SendOne(d, 0, release("warm", tok), time.Second).Status, "release script loaded")
	require.Equal(t, core.StatusMissing, conformance.SendOne(d, 0, extend("warm", tok, time.Second), time.Second).Status, "extend script loaded")
	_, err = s0.Do("SCRIPT", "FLUSH")
	require.NoError(t, err)

	s0.Stop()
	stopped := true
	defer func() {
		if stopped {
			s0.Cont()
		}
	}()
	a := d.Begin(context.Background())
	defer a.Close()
	dl := time.Now().Add(10 * time.Second)
	a.Send(0, acquire("a", tok), dl)
	a.Send(1, acquire("a", tok), dl)
	r, ok := a.Receive(nil) // node 1; node 0's SET is on the wire
	require.True(t, ok)
	require.Equal(t, 1, r.Node)

	cmds := []struct {
		cmd  core.Command
		want core.Status
	}{
		{release("list", tok), core.StatusError}, // NOSCRIPT, then EVAL: WRONGTYPE
		{acquire("held", tok), core.StatusHeld},
		{release("missing", tok), core.StatusMissing}, // NOSCRIPT, then EVAL
		{acquire("b", tok), core.StatusOK},
		{extend("held", tok, time.Minute), core.StatusHeld}, // NOSCRIPT, then EVAL
		{release("a", tok), core.StatusOK},                  // after A's SET
	}
	got := make([]core.Reply, len(cmds))
	var wg sync.WaitGroup
	for k, c := range cmds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := d.Begin(context.Background())
			defer b.Close()
			b.Send(0, c.cmd, dl)
			b.Send(1, c.cmd, dl)
			for range 2 {
				r, ok := b.Receive(nil)
				if ok && r.Node == 0 {
					got[k] = r
				}
			}
		}()
	}
	time.Sleep(200 * time.Millisecond) // all queued behind A on node 0
	s0.Cont()
	stopped = false
	waitOrFail(t, &wg, 15*time.Second)
	r, ok = a.Receive(nil)
	require.True(t, ok)
	assert.Equal(t, core.Reply{Node: 0, Status: core.StatusOK}, r, "A's SET")
	for k, c := range cmds {
		assert.Equal(t, c.want, got[k].Status, "%v %s: %v", c.cmd.Op, c.cmd.Key, got[k].Err)
	}
	assert.ErrorContains(t, got[0].Err, "WRONGTYPE")
	n, err := s0.Do("EXISTS", "a")
	require.NoError(t, err)
	assert.Equal(t, int64(0), n, "the release ran after A's SET")
	// The connection is still in step.
	assert.Equal(t, core.StatusOK, conformance.SendOne(d, 0, acquire("c", tok), time.Second).Status)
}

func waitOrFail(t *testing.T, wg *sync.WaitGroup, d time.Duration) {
	t.Helper()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatal("calls did not return")
	}
}

// evalCalls returns how many EVAL and EVALSHA commands srv has run (INFO
// commandstats), or skips the test on a server without command stats.
func evalCalls(t *testing.T, srv *redistest.Server) (eval, evalsha int) {
	t.Helper()
	v, err := srv.Do("INFO", "commandstats")
	require.NoError(t, err)
	info, _ := v.(string)
	if !strings.Contains(info, "cmdstat_") {
		t.Skip("the server keeps no command stats")
	}
	count := func(cmd string) int {
		_, rest, ok := strings.Cut(info, "cmdstat_"+cmd+":calls=")
		if !ok {
			return 0
		}
		n, _ := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
		return n
	}
	return count("eval"), count("evalsha")
}

// TestScriptSourceUntilCached: on a new connection a script goes out as
// EVAL until it has run there, then as EVALSHA; after NOSCRIPT, as EVAL
// again, and after a restart (a new connection), as EVAL again.
func TestScriptSourceUntilCached(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{})
	d := open(t, []string{srv.Addr}, radix.Options{})
	send := func(c core.Command) {
		t.Helper()
		r := conformance.SendOne(d, 0, c, 5*time.Second)
		require.Equal(t, core.StatusMissing, r.Status, "%v", r.Err)
	}
	want := func(eval, evalsha int) {
		t.Helper()
		e, es := evalCalls(t, srv)
		assert.Equal(t, eval, e, "EVAL calls")
		assert.Equal(t, evalsha, es, "EVALSHA calls")
	}
	want(0, 0)
	send(release("k", tok)) // fresh connection: the source
	want(1, 0)
	send(release("k", tok))
	want(1, 1)
	send(extend("k", tok, time.Second)) // another script: its source
	want(2, 1)
	send(extend("k", tok, time.Second))
	want(2, 2)
	_, err := srv.Do("SCRIPT", "FLUSH")
	require.NoError(t, err)
	send(release("k", tok)) // NOSCRIPT, then EVAL
	want(3, 3)
	send(release("k", tok)) // cached again: the hash
	want(3, 4)

	srv.Restart()
	conformance.SendOne(d, 0, acquire("k", tok), time.Second) // meets the broken connection
	send(release("other", tok))                               // a new connection: the source
	want(1, 0)
}

func TestAllocations(t *testing.T) {
	for _, mode := range []core.FanOut{core.Multiplexed, core.Sequential} {
		for _, n := range []int{1, 3, 5} {
			t.Run(mode.String()+"/N="+strconv.Itoa(n), func(t *testing.T) {
				// Batches are pooled, each connection reuses its action
				// (request buffer and replies), replies are decoded
				// without allocation.
				assert.Equal(t, systest.LockAllocs, systest.AllocsPerPair(t, dial.Defaults(), n, mode), "the Lock only")
			})
			t.Run("fenced/"+mode.String()+"/N="+strconv.Itoa(n), func(t *testing.T) {
				// A fence comes back as an integer below 2^53.
				assert.Equal(t, systest.LockAllocs, systest.AllocsPerFencedPair(t, dial.Defaults(), n, mode), "the Lock only")
			})
		}
	}
}

// TestNewDoesNotSubscribe: a radix Client lends a connection for one
// Action only, so New has no subscription connection, and Lock polls.
func TestNewDoesNotSubscribe(t *testing.T) {
	assert.Nil(t, radix.ClientSubscriber([]radixv4.Client{&fakeClient{"p"}}))
}
