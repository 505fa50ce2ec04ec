package radix_test

import (
	"context"
	"errors"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	radixv4 "github.com/mediocregopher/radix/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers/internal/wire"
	"github.com/redlock-go/redlock/drivers/radix"
	"github.com/redlock-go/redlock/internal/redistest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func addrs(srvs []*redistest.Server) []string {
	out := make([]string, len(srvs))
	for i, s := range srvs {
		out[i] = s.Addr
	}
	return out
}

func dial(t *testing.T, a []string, opts radix.Options) *radix.Driver {
	t.Helper()
	d, err := radix.Dial(a, opts)
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	return d
}

var tok = core.TokenFromUint64s(0x0123456789abcdef, 0xfedcba9876543210)

// one sends cmd to node i alone and returns the reply.
func one(d core.Driver, i int, cmd core.Command, timeout time.Duration) core.Reply {
	b := d.Begin(context.Background())
	defer b.Close()
	b.Send(i, cmd, time.Now().Add(timeout))
	r, _ := b.Receive(nil)
	return r
}

func acquire(key string, t core.Token) core.Command {
	return core.Command{Op: core.OpAcquire, Key: key, Token: t, TTL: 10 * time.Second}
}
func release(key string, t core.Token) core.Command {
	return core.Command{Op: core.OpRelease, Key: key, Token: t}
}
func extend(key string, t core.Token, ttl time.Duration) core.Command {
	return core.Command{Op: core.OpExtend, Key: key, Token: t, TTL: ttl}
}

// TestDialValidation: Dial validates addresses with wire.CheckAddrs
// (tested there case by case) and refuses the options it cannot honour.
func TestDialValidation(t *testing.T) {
	for _, tc := range []struct {
		name  string
		addrs []string
		opts  radix.Options
		want  string
	}{
		{"empty", nil, radix.Options{}, "no node addresses"},
		{"duplicate", []string{"127.0.0.1:7001", "127.0.0.1:7002", "127.0.0.1:7001"}, radix.Options{}, "repeats address 0"},
		{"pool size", []string{"127.0.0.1:1"}, radix.Options{PoolSize: 4}, "PoolSize 4"},
		{"negative dial timeout", []string{"127.0.0.1:1"}, radix.Options{DialTimeout: -1}, "DialTimeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := radix.Dial(tc.addrs, tc.opts)
			require.Error(t, err)
			assert.Nil(t, d)
			assert.ErrorIs(t, err, core.ErrInvalidConfig)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestNewValidation(t *testing.T) {
	_, err := radix.New(nil, nil)
	assert.ErrorIs(t, err, core.ErrInvalidConfig)
	_, err = radix.New([]radixv4.Client{nil}, []string{"a"})
	assert.ErrorIs(t, err, core.ErrInvalidConfig)

	srv := redistest.Start(t, redistest.Options{})
	ctx := context.Background()
	p, err := radixv4.PoolConfig{Size: 1, PingInterval: -1}.New(ctx, "tcp", srv.Addr)
	require.NoError(t, err)
	defer p.Close()
	_, err = radix.New([]radixv4.Client{p, p}, nil)
	assert.ErrorIs(t, err, core.ErrInvalidConfig, "the same node twice")
	_, err = radix.New([]radixv4.Client{p}, []string{"a", "b"})
	assert.ErrorIs(t, err, core.ErrInvalidConfig)

	d, err := radix.New([]radixv4.Client{p}, nil)
	require.NoError(t, err)
	assert.Equal(t, 1, d.Nodes())
	assert.Equal(t, srv.Addr, d.NodeName(0))
	assert.Equal(t, core.StatusOK, one(d, 0, acquire("k", tok), time.Second).Status)
	require.NoError(t, d.Close())
	// The pool is still the caller's.
	require.NoError(t, p.Do(ctx, radixv4.Cmd(nil, "PING")))
}

func TestCommands(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{})
	d := dial(t, []string{srv.Addr}, radix.Options{})
	other := core.TokenFromUint64s(1, 1)
	const s = time.Second

	r := one(d, 0, acquire("k", tok), s)
	require.Equal(t, core.Reply{Node: 0, Status: core.StatusOK}, r)
	v, err := srv.Do("GET", "k")
	require.NoError(t, err)
	assert.Equal(t, tok.String(), v, "tokens go over the wire in hex")
	pttl, err := srv.Do("PTTL", "k")
	require.NoError(t, err)
	assert.InDelta(t, 10000, pttl, 1000)

	assert.Equal(t, core.StatusHeld, one(d, 0, acquire("k", other), s).Status)
	assert.Equal(t, core.StatusHeld, one(d, 0, release("k", other), s).Status)
	assert.Equal(t, core.StatusHeld, one(d, 0, extend("k", other, 20*s), s).Status)
	assert.Equal(t, core.StatusOK, one(d, 0, extend("k", tok, 20*s), s).Status)
	pttl, err = srv.Do("PTTL", "k")
	require.NoError(t, err)
	assert.Greater(t, pttl, int64(15000))
	assert.Equal(t, core.StatusOK, one(d, 0, release("k", tok), s).Status)
	assert.Equal(t, core.StatusMissing, one(d, 0, release("k", tok), s).Status)
	assert.Equal(t, core.StatusMissing, one(d, 0, extend("k", tok, 20*s), s).Status)
	n, err := srv.Do("EXISTS", "k")
	require.NoError(t, err)
	assert.Equal(t, int64(0), n, "extend never creates the key")

	// A key holding something that is not a string.
	_, err = srv.Do("LPUSH", "list", "x")
	require.NoError(t, err)
	r = one(d, 0, release("list", tok), s)
	assert.Equal(t, core.StatusError, r.Status)
	assert.Contains(t, r.Err.Error(), "WRONGTYPE")
	// The connection is still in step.
	assert.Equal(t, core.StatusOK, one(d, 0, acquire("k2", tok), s).Status)
}

func TestNoScriptFallback(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{})
	d := dial(t, []string{srv.Addr}, radix.Options{})
	for _, op := range []string{"release", "extend"} {
		require.Equal(t, core.StatusOK, one(d, 0, acquire("k", tok), time.Second).Status)
		_, err := srv.Do("SCRIPT", "FLUSH")
		require.NoError(t, err)
		cmd := release("k", tok)
		if op == "extend" {
			cmd = extend("k", tok, 30*time.Second)
		}
		assert.Equal(t, core.StatusOK, one(d, 0, cmd, time.Second).Status, op)
		exists, err := srv.Do("SCRIPT", "EXISTS", wire.ScriptFor(cmd.Op).SHA1)
		require.NoError(t, err)
		assert.Equal(t, []any{int64(1)}, exists, "EVAL loaded the script again")
		_, _ = srv.Do("DEL", "k")
	}
}

func TestLockerRoundTrip(t *testing.T) {
	srvs := redistest.StartN(t, 3, redistest.Options{})
	d := dial(t, addrs(srvs), radix.Options{})
	for _, mode := range []core.FanOut{core.Multiplexed, core.Sequential} {
		l, err := redlock.New(d, core.Config{TTL: 5 * time.Second, FanOut: mode})
		require.NoError(t, err)
		ctx := context.Background()
		lock, err := l.Acquire(ctx, "res-"+mode.String())
		require.NoError(t, err, mode)
		_, err = l.Acquire(ctx, "res-"+mode.String())
		assert.ErrorIs(t, err, core.ErrTaken)
		lock, err = l.Extend(ctx, lock)
		require.NoError(t, err)
		require.NoError(t, l.Release(ctx, lock))
		for _, s := range srvs {
			n, err := s.Do("EXISTS", "res-"+mode.String())
			require.NoError(t, err)
			assert.Equal(t, int64(0), n)
		}
	}
}

func TestStoppedNodeTimesOut(t *testing.T) {
	srvs := redistest.StartN(t, 3, redistest.Options{})
	d := dial(t, addrs(srvs), radix.Options{})
	require.Equal(t, core.StatusOK, one(d, 1, acquire("before", tok), time.Second).Status)
	srvs[1].Stop()
	defer srvs[1].Cont()

	// One command at a time: StatusTimeout, naming the node.
	for k := 0; k < 3; k++ {
		r := one(d, 1, acquire("direct", tok), 50*time.Millisecond)
		assert.Equal(t, core.StatusTimeout, r.Status)
		assert.ErrorIs(t, r.Err, context.DeadlineExceeded)
		assert.Contains(t, r.Err.Error(), "node 1 ("+srvs[1].Addr+")")
	}

	// Many concurrent lockers: every call returns, and the stopped node
	// never answers OK.
	for _, mode := range []core.FanOut{core.Multiplexed, core.Sequential} {
		l, err := redlock.New(d, core.Config{TTL: 5 * time.Second, NodeTimeout: 100 * time.Millisecond, FanOut: mode,
			Retry: core.NoRetry()})
		require.NoError(t, err)
		var wg sync.WaitGroup
		var won atomic.Int32
		for g := 0; g < 8; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for k := 0; k < 5; k++ {
					key := "stop-" + mode.String() + "-" + strconv.Itoa(g) + "-" + strconv.Itoa(k)
					lock, err := l.Acquire(context.Background(), key)
					var e *core.Error
					if errors.As(err, &e) {
						for _, n := range e.Nodes {
							if n.Node == 1 {
								assert.Contains(t, []core.Status{core.StatusTimeout, core.StatusError}, n.Status)
							}
						}
					}
					if err == nil {
						won.Add(1)
						_ = l.Release(context.Background(), lock)
					}
				}
			}()
		}
		waitOrFail(t, &wg, 60*time.Second)
		assert.Positive(t, won.Load(), "the two live nodes make a quorum")
	}
	srvs[1].Cont()
	require.Eventually(t, func() bool {
		return one(d, 1, acquire("after", tok), time.Second).Status == core.StatusOK
	}, 10*time.Second, 50*time.Millisecond, "the node comes back")
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

func deadAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	a := l.Addr().String()
	require.NoError(t, l.Close())
	return a
}

func TestDialWithNodeDown(t *testing.T) {
	srvs := redistest.StartN(t, 2, redistest.Options{})
	down := redistest.Start(t, redistest.Options{})
	down.Kill()
	a := []string{srvs[0].Addr, down.Addr, srvs[1].Addr}
	d := dial(t, a, radix.Options{DialTimeout: time.Second})

	l, err := redlock.New(d, core.Config{TTL: 2 * time.Second})
	require.NoError(t, err)
	lock, err := l.Acquire(context.Background(), "k")
	require.NoError(t, err, "a majority is up")
	require.NoError(t, l.Release(context.Background(), lock))

	r := one(d, 1, acquire("x", tok), time.Second)
	assert.Equal(t, core.StatusError, r.Status)
	assert.Contains(t, r.Err.Error(), down.Addr)

	down.Restart()
	require.Eventually(t, func() bool {
		return one(d, 1, acquire("y", tok), time.Second).Status == core.StatusOK
	}, 10*time.Second, 50*time.Millisecond, "the node is dialled again on use")
}

func TestDialAllDown(t *testing.T) {
	d := dial(t, []string{deadAddr(t), deadAddr(t)}, radix.Options{DialTimeout: time.Second})
	r := one(d, 0, acquire("x", tok), time.Second)
	assert.Equal(t, core.StatusError, r.Status)
}

func TestAuth(t *testing.T) {
	pw := redistest.Start(t, redistest.Options{Password: "s3cret"})
	acl := redistest.Start(t, redistest.Options{User: "locker", UserPassword: "pw2"})

	d := dial(t, []string{pw.Addr}, radix.Options{Password: "s3cret"})
	assert.Equal(t, core.StatusOK, one(d, 0, acquire("k", tok), time.Second).Status)
	d = dial(t, []string{acl.Addr}, radix.Options{Username: "locker", Password: "pw2"})
	assert.Equal(t, core.StatusOK, one(d, 0, acquire("k", tok), time.Second).Status)

	// Refused credentials do not fail Dial: the node's commands fail,
	// naming it and quoting the server.
	for _, tc := range []struct {
		addr string
		opts radix.Options
	}{
		{pw.Addr, radix.Options{Password: "wrong"}},
		{pw.Addr, radix.Options{}},
		{acl.Addr, radix.Options{Username: "locker", Password: "wrong"}},
		{acl.Addr, radix.Options{Password: "pw2"}},
	} {
		d := dial(t, []string{tc.addr}, tc.opts)
		r := one(d, 0, acquire("k", tok), time.Second)
		assert.Equal(t, core.StatusError, r.Status)
		assert.Contains(t, r.Err.Error(), tc.addr)
		assert.Regexp(t, "WRONGPASS|NOAUTH|NOPERM", r.Err.Error())
	}
}

func TestTLS(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{TLS: true, Password: "pw"})
	d := dial(t, []string{srv.Addr}, radix.Options{TLS: srv.ClientTLS(), Password: "pw"})
	assert.Equal(t, core.StatusOK, one(d, 0, acquire("k", tok), time.Second).Status)
	assert.Equal(t, core.StatusOK, one(d, 0, release("k", tok), time.Second).Status)
}

func TestCloseIsIdempotentAndFailsLaterRounds(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{})
	d, err := radix.Dial([]string{srv.Addr}, radix.Options{})
	require.NoError(t, err)
	require.Equal(t, core.StatusOK, one(d, 0, acquire("k", tok), time.Second).Status)
	require.NoError(t, d.Close())
	require.NoError(t, d.Close())
	r := one(d, 0, release("k", tok), time.Second)
	assert.Equal(t, core.StatusError, r.Status)
}

// TestPipeline forces one pipeline of several rounds' commands on node 0:
// the node is stopped while round A's SET is on the wire, so the next
// rounds' commands queue up and go out together once it continues. Error
// replies (WRONGTYPE) and NOSCRIPT fallbacks in the middle of the pipeline
// must not disturb the other commands' replies, and the release of A's key
// must run after A's straggling SET.
func TestPipeline(t *testing.T) {
	srvs := redistest.StartN(t, 2, redistest.Options{})
	d := dial(t, addrs(srvs), radix.Options{})
	other := core.TokenFromUint64s(2, 2)
	s0 := srvs[0]
	_, err := s0.Do("LPUSH", "list", "x")
	require.NoError(t, err)
	_, err = s0.Do("SET", "held", other.String())
	require.NoError(t, err)
	require.Equal(t, core.StatusMissing, one(d, 0, release("warm", tok), time.Second).Status, "scripts loaded")
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
		{release("list", tok), core.StatusError}, // WRONGTYPE (after NOSCRIPT)
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
	assert.Contains(t, got[0].Err.Error(), "WRONGTYPE")
	n, err := s0.Do("EXISTS", "a")
	require.NoError(t, err)
	assert.Equal(t, int64(0), n, "the release ran after A's SET")
	// The connection is still in step.
	assert.Equal(t, core.StatusOK, one(d, 0, acquire("c", tok), time.Second).Status)
}
