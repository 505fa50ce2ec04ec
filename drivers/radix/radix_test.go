package radix_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	radixv4 "github.com/mediocregopher/radix/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers/conformance"
	"github.com/redlock-go/redlock/drivers/radix"
	"github.com/redlock-go/redlock/internal/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

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
	assert.Equal(t, core.StatusOK, conformance.SendOne(d, 0, acquire("k", tok), time.Second).Status)
	require.NoError(t, d.Close())
	// The pool is still the caller's.
	require.NoError(t, p.Do(ctx, radixv4.Cmd(nil, "PING")))
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
	require.Equal(t, core.StatusMissing, conformance.SendOne(d, 0, release("warm", tok), time.Second).Status, "scripts loaded")
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

// TestScriptSourceUntilCached: until a node has run a script, its commands
// carry the script's source (EVAL), so that a release whose reply nobody
// reads (a cleanup abandoned at its deadline on a hung node, which the node
// runs when it wakes) cannot meet NOSCRIPT with nobody left to send it
// again. Once the script ran there, its hash is sent (EVALSHA); after
// NOSCRIPT, the source again. Both paths: a node's pipeline (multiplexed)
// and an inline command (sequential).
func TestScriptSourceUntilCached(t *testing.T) {
	srvs := redistest.StartN(t, 2, redistest.Options{})
	d := dial(t, addrs(srvs), radix.Options{})
	s0 := srvs[0]
	multiplexed := func(c core.Command) {
		t.Helper()
		b := d.Begin(context.Background())
		defer b.Close()
		dl := time.Now().Add(5 * time.Second)
		b.Send(0, c, dl)
		b.Send(1, c, dl)
		for range 2 {
			r, ok := b.Receive(nil)
			require.True(t, ok)
			require.Equal(t, core.StatusMissing, r.Status, "%v", r.Err)
		}
	}
	sequential := func(c core.Command) {
		t.Helper()
		r := conformance.SendOne(d, 0, c, 5*time.Second)
		require.Equal(t, core.StatusMissing, r.Status, "%v", r.Err)
	}
	want := func(eval, evalsha int) {
		t.Helper()
		e, es := evalCalls(t, s0)
		assert.Equal(t, eval, e, "EVAL calls")
		assert.Equal(t, evalsha, es, "EVALSHA calls")
	}
	want(0, 0)
	multiplexed(release("k", tok)) // fresh server: the source
	want(1, 0)
	multiplexed(release("k", tok))
	want(1, 1)
	sequential(extend("k", tok, time.Second)) // another script: its source
	want(2, 1)
	sequential(extend("k", tok, time.Second))
	want(2, 2)
	_, err := s0.Do("SCRIPT", "FLUSH")
	require.NoError(t, err)
	multiplexed(release("k", tok)) // NOSCRIPT, then EVAL
	want(3, 3)
	multiplexed(release("k", tok)) // cached again: the hash
	want(3, 4)
}
