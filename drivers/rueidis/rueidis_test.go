package rueidis_test

import (
	"context"
	"errors"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	rd "github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers/internal/wire"
	rueidis "github.com/redlock-go/redlock/drivers/rueidis"
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

func dial(t *testing.T, a []string, opts rueidis.Options) *rueidis.Driver {
	t.Helper()
	d, err := rueidis.Dial(a, opts)
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

func TestDialValidation(t *testing.T) {
	for _, tc := range []struct {
		name  string
		addrs []string
		want  string
	}{
		{"empty", nil, "no node addresses"},
		{"no port", []string{"127.0.0.1:1", "127.0.0.1"}, `address 1 "127.0.0.1"`},
		{"no host", []string{":6379"}, `address 0 ":6379" has no host`},
		{"bad port", []string{"127.0.0.1:http"}, "invalid port"},
		{"port zero", []string{"127.0.0.1:0"}, "invalid port"},
		{"port too big", []string{"127.0.0.1:65536"}, "invalid port"},
		{"duplicate", []string{"127.0.0.1:7001", "127.0.0.1:7002", "127.0.0.1:7001"}, `address 2 "127.0.0.1:7001" repeats address 0`},
		{"duplicate host case", []string{"LocalHost:7001", "localhost:7001"}, "repeats"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := rueidis.Dial(tc.addrs, rueidis.Options{})
			require.Error(t, err)
			assert.Nil(t, d)
			assert.ErrorIs(t, err, core.ErrInvalidConfig)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	for _, size := range []int{-1, 64} {
		_, err := rueidis.Dial([]string{"127.0.0.1:1"}, rueidis.Options{PoolSize: size})
		assert.ErrorIs(t, err, core.ErrInvalidConfig)
		assert.ErrorContains(t, err, "one pipelined connection per node")
	}
}

func TestNewValidation(t *testing.T) {
	_, err := rueidis.New(nil, nil)
	assert.ErrorIs(t, err, core.ErrInvalidConfig)
	_, err = rueidis.New([]rd.Client{nil}, []string{"a"})
	assert.ErrorIs(t, err, core.ErrInvalidConfig)

	srv := redistest.Start(t, redistest.Options{})
	ctx := context.Background()
	c, err := rd.NewClient(rueidis.ClientOption(srv.Addr, rueidis.Options{}))
	require.NoError(t, err)
	defer c.Close()
	_, err = rueidis.New([]rd.Client{c, c}, nil)
	assert.ErrorIs(t, err, core.ErrInvalidConfig, "the same node twice")
	_, err = rueidis.New([]rd.Client{c}, []string{"a", "b"})
	assert.ErrorIs(t, err, core.ErrInvalidConfig)

	d, err := rueidis.New([]rd.Client{c}, nil)
	require.NoError(t, err)
	assert.Equal(t, 1, d.Nodes())
	assert.Equal(t, srv.Addr, d.NodeName(0))
	assert.Equal(t, core.StatusOK, one(d, 0, acquire("k", tok), time.Second).Status)
	require.NoError(t, d.Close())
	// The client is still the caller's.
	require.NoError(t, c.Do(ctx, c.B().Ping().Build()).Error())
}

func TestOneConnectionPerNode(t *testing.T) {
	assert.Equal(t, -1, rueidis.ClientOption("h:1", rueidis.Options{}).PipelineMultiplex)
}

func TestCommands(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{})
	d := dial(t, []string{srv.Addr}, rueidis.Options{})
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
	d := dial(t, []string{srv.Addr}, rueidis.Options{})
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
	d := dial(t, addrs(srvs), rueidis.Options{})
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
	d := dial(t, addrs(srvs), rueidis.Options{})
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
	d := dial(t, a, rueidis.Options{DialTimeout: time.Second})

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
	d := dial(t, []string{deadAddr(t), deadAddr(t)}, rueidis.Options{DialTimeout: time.Second})
	r := one(d, 0, acquire("x", tok), time.Second)
	assert.Equal(t, core.StatusError, r.Status)
}

func TestAuth(t *testing.T) {
	pw := redistest.Start(t, redistest.Options{Password: "s3cret"})
	acl := redistest.Start(t, redistest.Options{User: "locker", UserPassword: "pw2"})

	d := dial(t, []string{pw.Addr}, rueidis.Options{Password: "s3cret"})
	assert.Equal(t, core.StatusOK, one(d, 0, acquire("k", tok), time.Second).Status)
	d = dial(t, []string{acl.Addr}, rueidis.Options{Username: "locker", Password: "pw2"})
	assert.Equal(t, core.StatusOK, one(d, 0, acquire("k", tok), time.Second).Status)

	// Refused credentials do not fail Dial: the node's commands fail,
	// naming it and quoting the server.
	for _, tc := range []struct {
		addr string
		opts rueidis.Options
	}{
		{pw.Addr, rueidis.Options{Password: "wrong"}},
		{pw.Addr, rueidis.Options{}},
		{acl.Addr, rueidis.Options{Username: "locker", Password: "wrong"}},
		{acl.Addr, rueidis.Options{Password: "pw2"}},
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
	d := dial(t, []string{srv.Addr}, rueidis.Options{TLS: srv.ClientTLS(), Password: "pw"})
	assert.Equal(t, core.StatusOK, one(d, 0, acquire("k", tok), time.Second).Status)
	assert.Equal(t, core.StatusOK, one(d, 0, release("k", tok), time.Second).Status)
}

func TestCloseIsIdempotentAndFailsLaterRounds(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{})
	d, err := rueidis.Dial([]string{srv.Addr}, rueidis.Options{})
	require.NoError(t, err)
	require.Equal(t, core.StatusOK, one(d, 0, acquire("k", tok), time.Second).Status)
	require.NoError(t, d.Close())
	require.NoError(t, d.Close())
	r := one(d, 0, release("k", tok), time.Second)
	assert.Equal(t, core.StatusError, r.Status)
}
