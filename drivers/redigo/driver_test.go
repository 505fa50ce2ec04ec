package redigo

import (
	"context"
	"errors"
	"os"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers/internal/wire"
	"github.com/redlock-go/redlock/internal/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// servers starts n servers and a driver over them, closed at cleanup.
func servers(t *testing.T, n int) ([]*redistest.Server, *Driver) {
	t.Helper()
	return serversWith(t, n, Options{Pooled: true})
}

// serversWith is servers with the driver's options.
func serversWith(t *testing.T, n int, opts Options) ([]*redistest.Server, *Driver) {
	t.Helper()
	ss := redistest.StartN(t, n, redistest.Options{})
	addrs := make([]string, n)
	for i, s := range ss {
		addrs[i] = s.Addr
	}
	d, err := Dial(addrs, opts)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	return ss, d
}

func tok(i uint64) core.Token { return core.TokenFromUint64s(0xfeedface, i) }

// round sends cmd to every node at once and receives every reply, indexed
// by node.
func round(d *Driver, cmd core.Command, timeout time.Duration) []core.Reply {
	b := d.Begin(context.Background())
	defer b.Close()
	dl := time.Now().Add(timeout)
	for i := 0; i < d.Nodes(); i++ {
		b.Send(i, cmd, dl)
	}
	out := make([]core.Reply, d.Nodes())
	for range out {
		r, ok := b.Receive(nil)
		if !ok {
			panic("receive without cancel failed")
		}
		out[r.Node] = r
	}
	return out
}

func statuses(rs []core.Reply) []core.Status {
	out := make([]core.Status, len(rs))
	for i, r := range rs {
		out[i] = r.Status
	}
	return out
}

func repeat(s core.Status, n int) []core.Status {
	out := make([]core.Status, n)
	for i := range out {
		out[i] = s
	}
	return out
}

func TestDialValidation(t *testing.T) {
	tests := []struct {
		name  string
		addrs []string
		opts  Options
		want  string // in the message
	}{
		{"nil list", nil, Options{}, "no node addresses"},
		{"duplicate", []string{"a:1", "b:1", "A:1"}, Options{}, `address 2 "A:1" repeats address 0 "a:1"`},
		{"negative pool", []string{"a:1"}, Options{Pooled: true, PoolSize: -1}, "PoolSize -1"},
		{"pool size when pipelined", []string{"a:1"}, Options{PoolSize: 8}, "PoolSize 8 is for the Pooled mode"},
		{"pipeline when pooled", []string{"a:1"}, Options{Pooled: true, Pipeline: 2}, "Pipeline 2 is for the pipelined mode"},
		{"negative dial timeout", []string{"a:1"}, Options{DialTimeout: -time.Second}, "DialTimeout -1s"},
		{"user without password", []string{"a:1"}, Options{Username: "u"}, `Username "u" without a Password`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Dial(tc.addrs, tc.opts)
			require.Error(t, err)
			assert.Nil(t, d)
			assert.ErrorIs(t, err, core.ErrInvalidConfig)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestDialDoesNotConnect(t *testing.T) {
	// Nothing listens on port 1: Dial succeeds, commands fail.
	d, err := Dial([]string{"127.0.0.1:1"}, Options{})
	require.NoError(t, err)
	defer d.Close()
	assert.Equal(t, 1, d.Nodes())
	assert.Equal(t, "127.0.0.1:1", d.NodeName(0))
	r := round(d, core.Command{Op: core.OpAcquire, Key: "k", Token: tok(1), TTL: time.Second}, time.Second)
	assert.Equal(t, core.StatusError, r[0].Status)
	var ne *wire.NodeError
	require.ErrorAs(t, r[0].Err, &ne)
	assert.Equal(t, 0, ne.Node)
	assert.Equal(t, "127.0.0.1:1", ne.Addr)
	assert.Contains(t, r[0].Err.Error(), "node 0 (127.0.0.1:1): acquire:")
}

func TestNewValidation(t *testing.T) {
	p := &redis.Pool{}
	q := &redis.Pool{}
	for _, tc := range []struct {
		name  string
		pools []*redis.Pool
		names []string
		want  string
	}{
		{"none", nil, nil, "no pools"},
		{"nil pool", []*redis.Pool{p, nil}, nil, "pools[1] (pool 1) is nil"},
		{"nil pool named", []*redis.Pool{p, nil}, []string{"a", "b"}, "pools[1] (b) is nil"},
		{"same pool", []*redis.Pool{p, q, p}, nil, "pools[2] (pool 2) is the same pool as pools[0]"},
		{"same name", []*redis.Pool{p, q}, []string{"a", "a"}, `names[1] "a" repeats names[0]`},
		{"names length", []*redis.Pool{p, q}, []string{"a"}, "1 names for 2 pools"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := New(tc.pools, tc.names)
			assert.Nil(t, d)
			assert.ErrorIs(t, err, core.ErrInvalidConfig)
			assert.ErrorContains(t, err, tc.want)
		})
	}
	d, err := New([]*redis.Pool{p, q}, nil)
	require.NoError(t, err)
	assert.Equal(t, "pool 1", d.NodeName(1))
	require.NoError(t, d.Close())
	require.NoError(t, d.Close(), "Close is idempotent")
}

func TestCommands(t *testing.T) {
	ss, d := servers(t, 3)
	const key = "cmds"
	mine, theirs := tok(1), tok(2)
	acq := core.Command{Op: core.OpAcquire, Key: key, Token: mine, TTL: 5 * time.Second}

	assert.Equal(t, repeat(core.StatusOK, 3), statuses(round(d, acq, time.Second)))
	for _, s := range ss {
		v, err := s.Do("GET", key)
		require.NoError(t, err)
		assert.Equal(t, wire.Token(mine), v, "token in wire form")
		pttl, err := redis.Int64(s.Do("PTTL", key))
		require.NoError(t, err)
		assert.InDelta(t, 5000, pttl, 1000)
	}
	assert.Equal(t, repeat(core.StatusHeld, 3), statuses(round(d, acq, time.Second)), "SET NX nil reply")

	other := core.Command{Op: core.OpRelease, Key: key, Token: theirs}
	assert.Equal(t, repeat(core.StatusHeld, 3), statuses(round(d, other, time.Second)), "release by another token")
	other.Op, other.TTL = core.OpExtend, 20*time.Second
	assert.Equal(t, repeat(core.StatusHeld, 3), statuses(round(d, other, time.Second)), "extend by another token")

	ext := core.Command{Op: core.OpExtend, Key: key, Token: mine, TTL: 20 * time.Second}
	assert.Equal(t, repeat(core.StatusOK, 3), statuses(round(d, ext, time.Second)))
	pttl, err := redis.Int64(ss[1].Do("PTTL", key))
	require.NoError(t, err)
	assert.Greater(t, pttl, int64(10000), "extended")

	rel := core.Command{Op: core.OpRelease, Key: key, Token: mine}
	assert.Equal(t, repeat(core.StatusOK, 3), statuses(round(d, rel, time.Second)))
	n, err := redis.Int(ss[0].Do("EXISTS", key))
	require.NoError(t, err)
	assert.Zero(t, n)
	assert.Equal(t, repeat(core.StatusMissing, 3), statuses(round(d, rel, time.Second)), "release of a missing key")
	assert.Equal(t, repeat(core.StatusMissing, 3), statuses(round(d, ext, time.Second)), "extend never creates")
	n, err = redis.Int(ss[0].Do("EXISTS", key))
	require.NoError(t, err)
	assert.Zero(t, n)

	// A server error reply: the key holds a list.
	_, err = ss[2].Do("RPUSH", "list", "x")
	require.NoError(t, err)
	r := round(d, core.Command{Op: core.OpRelease, Key: "list", Token: mine}, time.Second)
	assert.Equal(t, []core.Status{core.StatusMissing, core.StatusMissing, core.StatusError}, statuses(r))
	assert.ErrorContains(t, r[2].Err, "node 2 ("+ss[2].Addr+"): release: ")
	assert.ErrorContains(t, r[2].Err, "WRONGTYPE")
}

func TestLockerBothFanOuts(t *testing.T) {
	_, d := servers(t, 3)
	for _, f := range []core.FanOut{core.Multiplexed, core.Sequential} {
		t.Run(f.String(), func(t *testing.T) {
			l, err := redlock.New(d, core.Config{TTL: 5 * time.Second, FanOut: f, NodeTimeout: time.Second})
			require.NoError(t, err)
			ctx := context.Background()
			lock, err := l.Acquire(ctx, "locker-"+f.String())
			require.NoError(t, err)
			_, err = l.Acquire(ctx, "locker-"+f.String())
			assert.ErrorIs(t, err, core.ErrTaken)
			lock, err = l.Extend(ctx, lock)
			require.NoError(t, err)
			assert.Equal(t, 1, lock.Extensions())
			require.NoError(t, l.Release(ctx, lock))
			assert.ErrorIs(t, l.Release(ctx, lock), core.ErrNotHeld)
		})
	}
}

func TestNoScriptFallback(t *testing.T) {
	ss, d := servers(t, 3)
	const key = "noscript"
	acq := core.Command{Op: core.OpAcquire, Key: key, Token: tok(1), TTL: 5 * time.Second}
	require.Equal(t, repeat(core.StatusOK, 3), statuses(round(d, acq, time.Second)))
	for _, s := range ss {
		_, err := s.Do("SCRIPT", "FLUSH")
		require.NoError(t, err)
	}
	ext := core.Command{Op: core.OpExtend, Key: key, Token: tok(1), TTL: 30 * time.Second}
	assert.Equal(t, repeat(core.StatusOK, 3), statuses(round(d, ext, time.Second)), "EVAL after NOSCRIPT")
	for _, s := range ss {
		_, err := s.Do("SCRIPT", "FLUSH")
		require.NoError(t, err)
	}
	rel := core.Command{Op: core.OpRelease, Key: key, Token: tok(1)}
	assert.Equal(t, repeat(core.StatusOK, 3), statuses(round(d, rel, time.Second)))
	// The script is cached again: EVALSHA works without a fallback.
	ok, err := redis.Ints(ss[0].Do("SCRIPT", "EXISTS", wire.Release.SHA1, wire.Extend.SHA1))
	require.NoError(t, err)
	assert.Equal(t, []int{1, 0}, ok, "EVAL cached the release script")
	// Sequential shape too.
	_, err = ss[0].Do("SCRIPT", "FLUSH")
	require.NoError(t, err)
	b := d.Begin(context.Background())
	b.Send(0, rel, time.Now().Add(time.Second))
	r, ok2 := b.Receive(nil)
	b.Close()
	require.True(t, ok2)
	assert.Equal(t, core.StatusMissing, r.Status)
}

func TestStoppedNodeTimesOut(t *testing.T) {
	ss, d := servers(t, 3)
	acq := core.Command{Op: core.OpAcquire, Key: "stopped", Token: tok(1), TTL: 5 * time.Second}
	// Warm the pools, so the stopped node has an idle connection to hang on.
	round(d, core.Command{Op: core.OpRelease, Key: "warm", Token: tok(1)}, time.Second)
	idle := d.nodes[0].pool.IdleCount()
	require.Positive(t, idle)

	ss[0].Stop()
	stopped := true
	defer func() {
		if stopped {
			ss[0].Cont()
		}
	}()
	r := round(d, acq, 300*time.Millisecond)
	assert.Equal(t, []core.Status{core.StatusTimeout, core.StatusOK, core.StatusOK}, statuses(r))
	assert.True(t, wire.IsTimeout(r[0].Err), "%v", r[0].Err)
	assert.ErrorContains(t, r[0].Err, "node 0 ("+ss[0].Addr+"): acquire: ")
	assert.True(t, d.nodes[0].suspect.Load())
	assert.Equal(t, idle-1, d.nodes[0].pool.IdleCount(), "the timed-out connection is not returned")
	assert.Equal(t, idle-1, d.nodes[0].pool.ActiveCount(), "the timed-out connection is closed")

	// Sequential shape: Send then Receive on the stopped node.
	b := d.Begin(context.Background())
	b.Send(0, acq, time.Now().Add(100*time.Millisecond))
	r0, ok := b.Receive(nil)
	b.Close()
	require.True(t, ok)
	assert.Equal(t, core.StatusTimeout, r0.Status)

	ss[0].Cont()
	stopped = false
	// The node recovers; its pending SETs were executed late on the
	// server, but the timed-out connections were dropped, so nothing is
	// misread.
	rel := core.Command{Op: core.OpRelease, Key: "stopped", Token: tok(1)}
	assert.Equal(t, repeat(core.StatusOK, 3), statuses(round(d, rel, time.Second)))
	assert.False(t, d.nodes[0].suspect.Load())
}

func TestSuspectNodeDeferred(t *testing.T) {
	ss, d := servers(t, 3)
	ss[0].Stop()
	stopped := true
	defer func() {
		if stopped {
			ss[0].Cont()
		}
	}()
	acq := core.Command{Op: core.OpAcquire, Key: "order", Token: tok(1), TTL: 5 * time.Second}
	r := round(d, acq, 200*time.Millisecond) // node 0 times out and becomes suspect
	require.Equal(t, core.StatusTimeout, r[0].Status)
	require.True(t, d.nodes[0].suspect.Load())
	require.Zero(t, d.nodes[0].pool.ActiveCount(), "the timed-out connection is gone")

	b := d.Begin(context.Background())
	dl := time.Now().Add(5 * time.Second)
	rel := core.Command{Op: core.OpRelease, Key: "order", Token: tok(1)}
	for i := 0; i < 3; i++ {
		b.Send(i, rel, dl)
	}
	// The healthy nodes are written and read first; the suspect node's
	// command waits, its connection not even checked out.
	r1, ok1 := b.Receive(nil)
	r2, ok2 := b.Receive(nil)
	require.True(t, ok1)
	require.True(t, ok2)
	assert.Equal(t, []int{1, 2}, []int{r1.Node, r2.Node})
	assert.Equal(t, []core.Status{core.StatusOK, core.StatusOK}, []core.Status{r1.Status, r2.Status})
	assert.Zero(t, d.nodes[0].pool.ActiveCount(), "suspect node not contacted yet")
	// Close hands the unwritten command to the drainer, which runs it
	// within its deadline: once the node resumes, it answers and is no
	// longer suspect.
	b.Close()
	require.Eventually(t, func() bool { return d.nodes[0].pool.ActiveCount() == 1 }, 5*time.Second, time.Millisecond,
		"the drainer checks out a connection for the deferred command")
	ss[0].Cont()
	stopped = false
	require.Eventually(t, func() bool { return !d.nodes[0].suspect.Load() }, 10*time.Second, time.Millisecond)

	// When the healthy nodes do not decide, the suspect node is contacted
	// within the round.
	ss[1].Stop()
	defer ss[1].Cont()
	round(d, rel, 200*time.Millisecond)
	require.True(t, d.nodes[1].suspect.Load())
	b = d.Begin(context.Background())
	dl = time.Now().Add(5 * time.Second)
	b.Send(1, rel, dl)
	b.Send(2, rel, dl)
	rr, ok := b.Receive(nil)
	require.True(t, ok)
	assert.Equal(t, 2, rr.Node)
	b.Close()
	b = d.Begin(context.Background())
	b.Send(1, rel, time.Now().Add(100*time.Millisecond))
	rr, ok = b.Receive(nil)
	b.Close()
	require.True(t, ok)
	assert.Equal(t, core.Reply{Node: 1, Status: core.StatusTimeout}, core.Reply{Node: rr.Node, Status: rr.Status}, "sequential: the suspect node is run at once")
}

func TestCancelBeforeRead(t *testing.T) {
	_, d := servers(t, 3)
	cancel := make(chan struct{})
	close(cancel)
	b := d.Begin(context.Background())
	dl := time.Now().Add(time.Second)
	for i := 0; i < 3; i++ {
		b.Send(i, core.Command{Op: core.OpAcquire, Key: "cancel", Token: tok(1), TTL: time.Second}, dl)
	}
	_, ok := b.Receive(cancel)
	assert.False(t, ok)
	b.Close() // nothing was written: the three commands are dropped
	_, ok = d.Begin(context.Background()).Receive(nil)
	assert.False(t, ok, "nothing sent, nothing to receive")
}

func TestStragglersDrained(t *testing.T) {
	_, d := servers(t, 3)
	round(d, core.Command{Op: core.OpRelease, Key: "warm", Token: tok(1)}, time.Second)
	idle := d.nodes[2].pool.IdleCount()
	b := d.Begin(context.Background())
	dl := time.Now().Add(time.Second)
	for i := 0; i < 3; i++ {
		b.Send(i, core.Command{Op: core.OpAcquire, Key: "straggle", Token: tok(1), TTL: time.Second}, dl)
	}
	_, ok := b.Receive(nil)
	require.True(t, ok)
	b.Close()
	// The drainer reads the two replies left and returns the connections.
	require.Eventually(t, func() bool {
		return d.nodes[1].pool.IdleCount() == idle && d.nodes[2].pool.IdleCount() == idle
	}, 5*time.Second, time.Millisecond)
	assert.Equal(t, idle, d.nodes[2].pool.ActiveCount())
}

func TestCloseWithStragglersOnStoppedNode(t *testing.T) {
	ss := redistest.StartN(t, 3, redistest.Options{})
	d, err := Dial([]string{ss[0].Addr, ss[1].Addr, ss[2].Addr}, Options{Pooled: true})
	require.NoError(t, err)
	ss[0].Stop()
	defer ss[0].Cont()
	// Mark node 0 suspect so that it is read last.
	r0 := round(d, core.Command{Op: core.OpRelease, Key: "x", Token: tok(1)}, 100*time.Millisecond)
	require.Equal(t, []core.Status{core.StatusTimeout, core.StatusMissing, core.StatusMissing}, statuses(r0), "%v", r0)
	require.True(t, d.nodes[0].suspect.Load())
	b := d.Begin(context.Background())
	dl := time.Now().Add(2 * time.Second)
	for i := 0; i < 3; i++ {
		b.Send(i, core.Command{Op: core.OpRelease, Key: "x", Token: tok(1)}, dl)
	}
	for i := 0; i < 2; i++ {
		r, ok := b.Receive(nil)
		require.True(t, ok)
		assert.NotEqual(t, 0, r.Node)
	}
	b.Close() // hands node 0's connection to the drainer, which blocks on it
	// Driver.Close stops the drainer once its read reaches the straggler's
	// deadline and leaves no goroutine behind (TestMain checks).
	require.NoError(t, d.Close())
	assert.Zero(t, d.nodes[0].pool.ActiveCount(), "every connection closed")
	assert.Zero(t, d.nodes[1].pool.ActiveCount())
}

func TestRestartedNodeCostsOneCommand(t *testing.T) {
	ss, d := servers(t, 1)
	rel := core.Command{Op: core.OpRelease, Key: "restart", Token: tok(1)}
	// Fill the pool with several idle connections.
	cs := make([]redis.Conn, 4)
	for i := range cs {
		cs[i] = d.nodes[0].pool.Get()
		_, err := cs[i].Do("PING")
		require.NoError(t, err)
	}
	for _, c := range cs {
		require.NoError(t, c.Close())
	}
	require.GreaterOrEqual(t, d.nodes[0].pool.IdleCount(), 4)
	ss[0].Restart()
	r := round(d, rel, time.Second)
	assert.Equal(t, core.StatusError, r[0].Status, "the first command finds a dead connection: %v", r[0].Err)
	for i := 0; i < 3; i++ {
		r = round(d, rel, time.Second)
		assert.Equal(t, core.StatusMissing, r[0].Status, "later commands PING old connections first: %v", r[0].Err)
	}
}

func TestAuth(t *testing.T) {
	s := redistest.Start(t, redistest.Options{User: "locker", UserPassword: "s3cret"})
	d, err := Dial([]string{s.Addr}, Options{Username: "locker", Password: "s3cret"})
	require.NoError(t, err)
	defer d.Close()
	r := round(d, core.Command{Op: core.OpAcquire, Key: "auth", Token: tok(1), TTL: time.Second}, 2*time.Second)
	assert.Equal(t, core.StatusOK, r[0].Status, "%v", r[0].Err)

	bad, err := Dial([]string{s.Addr}, Options{Username: "locker", Password: "wrong"})
	require.NoError(t, err)
	defer bad.Close()
	r = round(bad, core.Command{Op: core.OpAcquire, Key: "auth", Token: tok(1), TTL: time.Second}, 2*time.Second)
	assert.Equal(t, core.StatusError, r[0].Status)
	assert.ErrorContains(t, r[0].Err, "WRONGPASS")
}

func TestTLS(t *testing.T) {
	s := redistest.Start(t, redistest.Options{TLS: true, Password: "pw"})
	d, err := Dial([]string{s.Addr}, Options{Password: "pw", TLS: s.ClientTLS()})
	require.NoError(t, err)
	defer d.Close()
	r := round(d, core.Command{Op: core.OpAcquire, Key: "tls", Token: tok(1), TTL: time.Second}, 5*time.Second)
	assert.Equal(t, core.StatusOK, r[0].Status, "%v", r[0].Err)

	plain, err := Dial([]string{s.Addr}, Options{Password: "pw"})
	require.NoError(t, err)
	defer plain.Close()
	r = round(plain, core.Command{Op: core.OpAcquire, Key: "tls", Token: tok(1), TTL: time.Second}, 2*time.Second)
	assert.NotEqual(t, core.StatusOK, r[0].Status)
}

func TestNewOverUserPools(t *testing.T) {
	ss := redistest.StartN(t, 3, redistest.Options{})
	pools := make([]*redis.Pool, 3)
	names := make([]string, 3)
	for i, s := range ss {
		addr := s.Addr
		pools[i] = &redis.Pool{MaxIdle: 2, Dial: func() (redis.Conn, error) { return redis.Dial("tcp", addr) }}
		names[i] = addr
		defer pools[i].Close()
	}
	d, err := New(pools, names)
	require.NoError(t, err)
	defer d.Close()
	l, err := redlock.New(d, core.Config{TTL: 5 * time.Second, NodeTimeout: time.Second})
	require.NoError(t, err)
	lock, err := l.Acquire(context.Background(), "user-pools")
	require.NoError(t, err)
	require.NoError(t, l.Release(context.Background(), lock))
	require.NoError(t, d.Close())
	_, err = pools[0].Get().Do("PING")
	assert.NoError(t, err, "Close leaves user pools open")
}

func TestAfterClose(t *testing.T) {
	_, d := servers(t, 1)
	require.NoError(t, d.Close())
	r := round(d, core.Command{Op: core.OpAcquire, Key: "closed", Token: tok(1), TTL: time.Second}, time.Second)
	assert.Equal(t, core.StatusError, r[0].Status)
	assert.ErrorIs(t, r[0].Err, ErrClosed)
}

func TestPassedDeadlineNotSent(t *testing.T) {
	ss, d := servers(t, 1)
	r := round(d, core.Command{Op: core.OpAcquire, Key: "late", Token: tok(1), TTL: time.Second}, -time.Millisecond)
	assert.Equal(t, core.StatusTimeout, r[0].Status)
	assert.ErrorIs(t, r[0].Err, os.ErrDeadlineExceeded)
	n, err := redis.Int(ss[0].Do("EXISTS", "late"))
	require.NoError(t, err)
	assert.Zero(t, n)
}

func TestCheckoutContext(t *testing.T) {
	type k struct{}
	b := &worker{values: context.WithValue(context.Background(), k{}, "v")}
	dl := time.Now().Add(time.Hour)
	c := b.checkoutCtx(dl)
	got, ok := c.Deadline()
	assert.True(t, ok)
	assert.Equal(t, dl, got)
	assert.Equal(t, "v", c.Value(k{}))
	assert.NoError(t, c.Err())
	c.finish()
	assert.Same(t, c, b.checkoutCtx(dl), "unobserved: reused")
	done := c.Done()
	c.finish()
	<-done
	assert.ErrorIs(t, c.Err(), context.Canceled)
	assert.NotSame(t, c, b.checkoutCtx(dl), "observed: replaced")

	c = b.checkoutCtx(time.Now().Add(time.Millisecond))
	<-c.Done()
	assert.ErrorIs(t, c.Err(), context.DeadlineExceeded)
	c.finish()
	assert.ErrorIs(t, c.Err(), context.DeadlineExceeded)

	c = b.checkoutCtx(time.Now().Add(-time.Millisecond))
	assert.ErrorIs(t, c.Err(), context.DeadlineExceeded)
	<-c.Done()
	var _ context.Context = c
	assert.True(t, errors.Is(c.Err(), context.DeadlineExceeded))
}

// allocsPerRound measures the allocations of one Acquire plus one Release
// through a Locker.
func allocsPerRound(t *testing.T, n int, f core.FanOut, opts Options) float64 {
	_, d := serversWith(t, n, opts)
	l, err := redlock.New(d, core.Config{TTL: 10 * time.Second, FanOut: f, NodeTimeout: time.Second})
	require.NoError(t, err)
	ctx := context.Background()
	do := func() {
		lock, err := l.Acquire(ctx, "allocs")
		if err != nil {
			panic(err)
		}
		if err := l.Release(ctx, lock); err != nil {
			panic(err)
		}
	}
	for i := 0; i < 500; i++ {
		do() // fill the pools
	}
	return testing.AllocsPerRun(500, do)
}

func TestAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop batches at random")
	}
	for _, f := range []core.FanOut{core.Multiplexed, core.Sequential} {
		for _, n := range []int{1, 3, 5} {
			t.Run(f.String()+"/"+strconv.Itoa(n), func(t *testing.T) {
				a := allocsPerRound(t, n, f, Options{Pooled: true})
				t.Logf("acquire+release, N=%d, %s: %.1f allocs", n, f, a)
				// Per acquire+release: one redigo activeConn per node and
				// round, and the new token's box; the drainer's lag may
				// cost a few dials while the pools grow. A context or an
				// argument slice per node would go far beyond the bound.
				assert.LessOrEqual(t, a, float64(3*n+4))
			})
			t.Run("pipelined/"+f.String()+"/"+strconv.Itoa(n), func(t *testing.T) {
				a := allocsPerRound(t, n, f, Options{Pipeline: 1})
				t.Logf("pipelined: acquire+release, N=%d, %s: %.1f allocs", n, f, a)
				// Batches are reused, arguments are boxed once per
				// connection, replies need no allocation: nothing per node.
				assert.LessOrEqual(t, a, 1.0)
			})
		}
	}
}

func BenchmarkAcquireRelease(b *testing.B) {
	for _, n := range []int{1, 3, 5} {
		b.Run("N="+strconv.Itoa(n), func(b *testing.B) {
			ss := redistest.StartN(b, n, redistest.Options{})
			addrs := make([]string, n)
			for i, s := range ss {
				addrs[i] = s.Addr
			}
			d, err := Dial(addrs, Options{})
			require.NoError(b, err)
			defer d.Close()
			l, err := redlock.New(d, core.Config{TTL: 10 * time.Second, NodeTimeout: time.Second})
			require.NoError(b, err)
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				lock, err := l.Acquire(ctx, "bench")
				if err != nil {
					b.Fatal(err)
				}
				if err := l.Release(ctx, lock); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestCheckIdle(t *testing.T) {
	ss, d := servers(t, 1)
	n := &d.nodes[0]
	c, err := n.pool.GetContext(context.Background()) // dials: no check
	require.NoError(t, err)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	assert.NoError(t, d.checkIdle(ctx, n, c, time.Now()), "fresh: no PING")
	assert.NoError(t, d.checkIdle(ctx, n, c, time.Now().Add(-PingIdle)), "long idle: PING answered")
	ss[0].Stop()
	defer ss[0].Cont()
	assert.NoError(t, d.checkIdle(ctx, n, c, time.Now()), "fresh: not PINGed, so not seen hung")
	err = d.checkIdle(ctx, n, c, time.Now().Add(-PingIdle))
	assert.True(t, wire.IsTimeout(err), "long idle: the PING times out at the deadline: %v", err)
}

func goroutinesCreated() uint64 {
	s := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

func TestNoGoroutinePerRound(t *testing.T) {
	_, pooled := servers(t, 5)
	_, pipelined := serversWith(t, 5, Options{Pipeline: 2})
	for _, f := range []core.FanOut{core.Multiplexed, core.Sequential} {
		for _, d := range []*Driver{pooled, pipelined} {
			t.Run(f.String()+"/pipelined="+strconv.FormatBool(d.pipelined), func(t *testing.T) {
				l, err := redlock.New(d, core.Config{TTL: 10 * time.Second, FanOut: f, NodeTimeout: time.Second})
				require.NoError(t, err)
				ctx := context.Background()
				do := func() {
					lock, err := l.Acquire(ctx, "goroutines")
					require.NoError(t, err)
					require.NoError(t, l.Release(ctx, lock))
				}
				for i := 0; i < 300; i++ {
					do() // grow the pools
				}
				const rounds = 500
				before := goroutinesCreated()
				for i := 0; i < rounds; i++ {
					do()
				}
				created := goroutinesCreated() - before
				t.Logf("%s: %d goroutines created in %d acquire+release", f, created, rounds)
				// Only a dial starts one (the net package watches its context);
				// the pools are grown, so dials are rare.
				assert.Less(t, float64(created)/rounds, 0.05)
			})
		}
	}
}

// A round never overtakes the previous round's stragglers on the same key:
// a release sent right after an acquire whose replies were not all read
// finds the key set on every node.
func TestNextRoundRunsAfterStragglers(t *testing.T) {
	_, d := servers(t, 3)
	for i := 0; i < 200; i++ {
		key := "order-" + strconv.Itoa(i%7)
		acq := core.Command{Op: core.OpAcquire, Key: key, Token: tok(uint64(i)), TTL: 10 * time.Second}
		b := d.Begin(context.Background())
		dl := time.Now().Add(time.Second)
		for j := 0; j < 3; j++ {
			b.Send(j, acq, dl)
		}
		r, ok := b.Receive(nil)
		require.True(t, ok)
		require.Equal(t, core.StatusOK, r.Status)
		b.Close() // two SETs still in flight
		rel := core.Command{Op: core.OpRelease, Key: key, Token: tok(uint64(i))}
		require.Equal(t, repeat(core.StatusOK, 3), statuses(round(d, rel, time.Second)), "round %d", i)
	}
}

// A command pipelined behind a parked line is still bounded by its own
// deadline, even when the line's commands have later ones.
func TestAdoptedLineKeepsOwnDeadline(t *testing.T) {
	ss, d := servers(t, 1)
	round(d, core.Command{Op: core.OpRelease, Key: "warm", Token: tok(1)}, time.Second)
	ss[0].Stop()
	defer ss[0].Cont()
	cancelled := make(chan struct{})
	close(cancelled)
	b := d.Begin(context.Background())
	b.Send(0, core.Command{Op: core.OpAcquire, Key: "late", Token: tok(1), TTL: time.Minute}, time.Now().Add(30*time.Second))
	_, ok := b.Receive(cancelled) // writes, does not read
	require.False(t, ok)
	b.Close() // parks the line, its SET unanswered until 30 s from now
	b = d.Begin(context.Background())
	b.Send(0, core.Command{Op: core.OpRelease, Key: "late", Token: tok(1)}, time.Now().Add(200*time.Millisecond))
	r, ok := b.Receive(nil)
	b.Close()
	require.True(t, ok)
	assert.Equal(t, core.StatusTimeout, r.Status, "%v", r.Err)
}

// A pool with Wait and MaxActive waits for a connection until the
// command's deadline, and no longer.
func TestWaitPool(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	var dials atomic.Int32
	p := &redis.Pool{MaxActive: 1, MaxIdle: 1, Wait: true, DialContext: func(ctx context.Context) (redis.Conn, error) {
		dials.Add(1)
		_, ok := ctx.Deadline()
		assert.True(t, ok, "the checkout context carries the command's deadline")
		return redis.DialContext(ctx, "tcp", s.Addr)
	}}
	defer p.Close()
	d, err := New([]*redis.Pool{p}, []string{s.Addr})
	require.NoError(t, err)
	defer d.Close()
	acq := core.Command{Op: core.OpAcquire, Key: "wait", Token: tok(1), TTL: time.Second}
	assert.Equal(t, core.StatusOK, round(d, acq, time.Second)[0].Status)

	held := p.Get() // the only connection
	r := round(d, acq, 100*time.Millisecond)
	assert.Equal(t, core.StatusTimeout, r[0].Status, "%v", r[0].Err)
	assert.ErrorIs(t, r[0].Err, context.DeadlineExceeded)
	held.Close()
	r = round(d, core.Command{Op: core.OpRelease, Key: "wait", Token: tok(1)}, time.Second)
	assert.Equal(t, core.StatusOK, r[0].Status, "%v", r[0].Err)
	assert.Equal(t, int32(1), dials.Load())
}

// A release whose reply the round did not wait for still takes effect
// after SCRIPT FLUSH: in the pooled mode the drainer answers NOSCRIPT with
// EVAL, in the pipelined mode the reader queues the command again as EVAL.
func TestStragglerNoScript(t *testing.T) {
	for _, mode := range []struct {
		name  string
		start func(t *testing.T) ([]*redistest.Server, *Driver)
	}{
		{"pooled", func(t *testing.T) ([]*redistest.Server, *Driver) { return servers(t, 3) }},
		{"pipelined", func(t *testing.T) ([]*redistest.Server, *Driver) { return pipeServers(t, 3, 1) }},
	} {
		t.Run(mode.name, func(t *testing.T) {
			ss, d := mode.start(t)
			const key = "straggler-noscript"
			acq := core.Command{Op: core.OpAcquire, Key: key, Token: tok(1), TTL: 10 * time.Second}
			require.Equal(t, repeat(core.StatusOK, 3), statuses(round(d, acq, time.Second)))
			round(d, core.Command{Op: core.OpRelease, Key: "other", Token: tok(1)}, time.Second)
			require.True(t, d.nodes[0].scripts.known(core.OpRelease), "the scripts are known")
			for _, s := range ss {
				_, err := s.Do("SCRIPT", "FLUSH")
				require.NoError(t, err)
			}
			b := d.Begin(context.Background())
			dl := time.Now().Add(2 * time.Second)
			rel := core.Command{Op: core.OpRelease, Key: key, Token: tok(1)}
			for j := 0; j < 3; j++ {
				b.Send(j, rel, dl)
			}
			r, ok := b.Receive(nil)
			require.True(t, ok)
			assert.Equal(t, core.StatusOK, r.Status, "EVAL after NOSCRIPT: %v", r.Err)
			b.Close()
			for i, s := range ss {
				require.Eventually(t, func() bool {
					n, err := redis.Int(s.Do("EXISTS", key))
					return err == nil && n == 0
				}, 5*time.Second, time.Millisecond, "node %d still holds the key", i)
			}
		})
	}
}

// TestCleanupFollowsHungSet: an attempt's SET is on the wire to a stopped
// node when the attempt ends (a straggler, or read until it timed out);
// the cleanup's release for its key must still reach that node after the
// SET, so that once the node continues the SET runs and the release then
// deletes the key. The release must not be dropped because the round did
// not wait for it (a cleanup that awaits none of its nodes closes the
// batch without a Receive) or because its deadline passed before it could
// be written (it waited for the drainer to finish the SET's line, or for
// a connection).
func TestCleanupFollowsHungSet(t *testing.T) {
	for _, mode := range []struct {
		name string
		opts Options
	}{{"pooled", Options{Pooled: true}}, {"pipelined", Options{}}} {
		for _, tc := range []struct {
			name      string
			straggler bool // the attempt closes without reading the hung node
			awaited   bool // the cleanup receives the hung node's reply
		}{
			{"straggling SET, awaited release", true, true},
			{"timed-out SET, release not awaited", false, false},
		} {
			t.Run(mode.name+"/"+tc.name, func(t *testing.T) {
				ss, d := serversWith(t, 2, mode.opts)
				const timeout = 200 * time.Millisecond
				const hung = 1 // node 0 answers (and, pooled, is read first)
				tk := tok(7)
				key := "cleanup-" + mode.name + "-" + strconv.FormatBool(tc.straggler)
				ss[hung].Stop()
				stopped := true
				defer func() {
					if stopped {
						ss[hung].Cont()
					}
				}()

				a := d.Begin(context.Background())
				dl := time.Now().Add(timeout)
				for i := 0; i < 2; i++ {
					a.Send(i, core.Command{Op: core.OpAcquire, Key: key, Token: tk, TTL: time.Minute}, dl)
				}
				replies := 2
				if tc.straggler {
					replies = 1
				}
				for k := 0; k < replies; k++ {
					r, ok := a.Receive(nil)
					require.True(t, ok)
					if r.Node == hung {
						require.Equal(t, core.StatusTimeout, r.Status)
					} else {
						require.Equal(t, core.StatusOK, r.Status, "%v", r.Err)
					}
				}
				a.Close()
				if tc.straggler && mode.opts.Pooled {
					// The drainer takes the SET's line: the release cannot
					// join it, and waits for the drainer past its deadline.
					n := &d.nodes[hung]
					require.Eventually(t, func() bool {
						n.smu.Lock()
						defer n.smu.Unlock()
						return n.busy.has(key)
					}, 5*time.Second, time.Millisecond)
				}

				rel := core.Command{Op: core.OpRelease, Key: key, Token: tk}
				c := d.Begin(context.Background())
				dl = time.Now().Add(timeout)
				if tc.awaited {
					c.Send(0, rel, dl)
					c.Send(1, rel, dl)
					got := map[int]core.Status{}
					for k := 0; k < 2; k++ {
						r, ok := c.Receive(nil)
						require.True(t, ok)
						got[r.Node] = r.Status
					}
					assert.Equal(t, map[int]core.Status{hung: core.StatusTimeout, 1 - hung: core.StatusOK}, got)
				} else {
					c.Send(hung, rel, dl)
				}
				c.Close()

				ss[hung].Cont()
				stopped = false
				require.Eventually(t, func() bool {
					info, err := ss[hung].Do("INFO", "commandstats")
					if s, _ := info.(string); err != nil || !strings.Contains(s, "cmdstat_set:") {
						return false // the SET has not run yet
					}
					n, err := ss[hung].Do("EXISTS", key)
					return err == nil && n == int64(0)
				}, 5*time.Second, 5*time.Millisecond, "the SET ran on the hung node and the release after it")
			})
		}
	}
}
