package engine

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers/internal/dialspec"
	"github.com/redlock-go/redlock/drivers/wire"
	"github.com/redlock-go/redlock/internal/redistest"
)

// kindEnv is one redis-server, an engine over it, and a connection of
// the test's own, for the scripts of the kinds beyond the mutex.
type kindEnv struct {
	t *testing.T
	e *Engine
	c redis.Conn
}

func startKinds(t *testing.T, nodes []NodeConfig, addr string) *kindEnv {
	t.Helper()
	e := mustNew(t, Config{Names: []string{addr}, Nodes: nodes, Dial: func(ctx context.Context, _ int) (Conn, error) {
		c, err := redis.DialContext(ctx, "tcp", addr)
		return redigoConn{c: c}, err
	}})
	t.Cleanup(e.Close)
	c, err := redis.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return &kindEnv{t: t, e: e, c: c}
}

// run sends cmd and returns the node's reply.
func (env *kindEnv) run(cmd core.Command) core.Reply {
	b := env.e.Begin(context.Background())
	defer b.Close()
	b.Send(0, cmd, time.Now().Add(10*time.Second))
	r, ok := b.Receive(nil)
	require.True(env.t, ok)
	return r
}

// expect runs cmd and requires status want without error; it returns
// the reply.
func (env *kindEnv) expect(cmd core.Command, want core.Status, what string) core.Reply {
	env.t.Helper()
	r := env.run(cmd)
	require.NoError(env.t, r.Err, what)
	require.Equal(env.t, want, r.Status, what)
	return r
}

func kcmd(kind core.Kind, op core.Op, key string, tk uint64, ttl time.Duration) core.Command {
	return core.Command{Kind: kind, Op: op, Key: key, Token: tok(tk), TTL: ttl}
}

func allCmd(op core.Op, tk uint64, ttl time.Duration, keys ...string) core.Command {
	return core.Command{Kind: core.KindAll, Op: op, Key: keys[0], Keys: core.NewKeyList(keys), Token: tok(tk), TTL: ttl}
}

// subscribe returns a connection subscribed to the release channels of
// keys, and a function that returns the next key announced, or "" after
// a while with none.
func (env *kindEnv) subscribe(addr string, keys ...string) func() string {
	c, err := redis.Dial("tcp", addr)
	require.NoError(env.t, err)
	env.t.Cleanup(func() { _ = c.Close() })
	ps := redis.PubSubConn{Conn: c}
	for _, k := range keys {
		require.NoError(env.t, ps.Subscribe(wire.ReleaseChannel(k)))
		_, ok := ps.Receive().(redis.Subscription)
		require.True(env.t, ok)
	}
	return func() string {
		for {
			switch m := ps.ReceiveWithTimeout(time.Second).(type) {
			case redis.Message:
				return m.Channel[len(wire.ReleasePrefix):]
			case error:
				return ""
			}
		}
	}
}

// TestReadWriteScriptsOnAServer runs a reader/writer lock's commands
// through the engine to a redis-server: readers share; a writer refused
// for readers marks the key, which keeps new readers out but not a
// reader's extension; the last reader's release is announced; the
// writer then takes the key and its mark goes; readers are refused for
// the writer, with its TTL; fences are the writer's alone.
func TestReadWriteScriptsOnAServer(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	env := startKinds(t, nil, s.Addr)
	heard := env.subscribe(s.Addr, "rw")
	const ttl = 10 * time.Second
	for range 2 { // EVAL, then EVALSHA
		_, err := env.c.Do("FLUSHALL")
		require.NoError(t, err)
		env.expect(kcmd(core.KindRead, core.OpAcquire, "rw", 1, ttl), core.StatusOK, "reader 1")
		env.expect(kcmd(core.KindRead, core.OpAcquire, "rw", 2, 2*ttl), core.StatusOK, "reader 2 beside reader 1")
		r := env.expect(kcmd(core.KindWrite, core.OpAcquire, "rw", 9, ttl), core.StatusHeld, "writer behind readers")
		assert.InDelta(t, 2*ttl, r.TTL, float64(time.Second), "the last reader's time left")
		mark, err := redis.String(env.c.Do("GET", core.WriterWaitPrefix+"rw"))
		require.NoError(t, err)
		assert.Equal(t, tok(9).String(), mark, "the waiting writer's mark")
		r = env.expect(kcmd(core.KindRead, core.OpAcquire, "rw", 3, ttl), core.StatusHeld, "a new reader behind the mark")
		assert.InDelta(t, ttl, r.TTL, float64(time.Second), "the mark's time left")
		env.expect(kcmd(core.KindRead, core.OpExtend, "rw", 1, 3*ttl), core.StatusOK, "a reader extends past the mark")
		env.expect(kcmd(core.KindRead, core.OpExtend, "rw", 3, ttl), core.StatusMissing, "a reader never admitted")
		env.expect(kcmd(core.KindRead, core.OpRelease, "rw", 1, 0), core.StatusOK, "reader 1 leaves")
		env.expect(kcmd(core.KindRead, core.OpRelease, "rw", 1, 0), core.StatusMissing, "reader 1 again")
		env.expect(kcmd(core.KindRead, core.OpRelease, "rw", 2, 0), core.StatusOK, "reader 2 leaves")
		require.Equal(t, "rw", heard(), "the last reader's release is announced")
		env.expect(kcmd(core.KindWrite, core.OpAcquire, "rw", 9, ttl), core.StatusOK, "the writer, readers gone")
		n, err := redis.Int(env.c.Do("EXISTS", core.WriterWaitPrefix+"rw", core.ReadersPrefix+"rw"))
		require.NoError(t, err)
		assert.Zero(t, n, "the writer's mark and the empty reader set are gone")
		r = env.expect(kcmd(core.KindRead, core.OpAcquire, "rw", 4, ttl), core.StatusHeld, "a reader behind the writer")
		assert.InDelta(t, ttl, r.TTL, float64(time.Second))
		env.expect(kcmd(core.KindWrite, core.OpAcquire, "rw", 8, ttl), core.StatusHeld, "a second writer")
		env.expect(kcmd(core.KindWrite, core.OpExtend, "rw", 9, ttl), core.StatusOK, "the writer extends")
		env.expect(kcmd(core.KindWrite, core.OpRelease, "rw", 9, 0), core.StatusOK, "the writer leaves")
		require.Equal(t, "rw", heard(), "the writer's release is announced")

		// Fences: a reader reads the last writer's, 0 before any.
		r = env.expect(kcmd(core.KindRead, core.OpAcquireFenced, "rw", 1, ttl), core.StatusOK, "fenced reader")
		assert.Zero(t, r.Fence)
		env.expect(kcmd(core.KindRead, core.OpRelease, "rw", 1, 0), core.StatusOK, "fenced reader leaves")
		require.Equal(t, "rw", heard())
		r = env.expect(kcmd(core.KindWrite, core.OpAcquireFenced, "rw", 9, ttl), core.StatusOK, "fenced writer")
		assert.Equal(t, uint64(1), r.Fence)
		raise := kcmd(core.KindWrite, core.OpRaiseFence, "rw", 9, 0)
		raise.Fence = 5
		env.expect(raise, core.StatusOK, "the writer raises its fence")
		env.expect(kcmd(core.KindWrite, core.OpRelease, "rw", 9, 0), core.StatusOK, "fenced writer leaves")
		require.Equal(t, "rw", heard())
		r = env.expect(kcmd(core.KindRead, core.OpAcquireFenced, "rw", 2, ttl), core.StatusOK, "fenced reader after the writer")
		assert.Equal(t, uint64(5), r.Fence, "the last writer's fence")
		f, err := redis.Int(env.c.Do("GET", core.FenceKeyPrefix+"rw"))
		require.NoError(t, err)
		assert.Equal(t, 5, f, "a reader never raises the counter")
	}
	r := env.run(kcmd(core.KindRead, core.OpRaiseFence, "rw", 2, 0))
	assert.Equal(t, core.StatusError, r.Status, "a reader's fence raise is refused, unsent")

	// A server that lost its scripts: NOSCRIPT, and the engine sends
	// each again as EVAL.
	_, err := env.c.Do("SCRIPT", "FLUSH")
	require.NoError(t, err)
	env.expect(kcmd(core.KindRead, core.OpAcquire, "rw", 5, ttl), core.StatusOK, "a reader after SCRIPT FLUSH")
	env.expect(kcmd(core.KindRead, core.OpRelease, "rw", 5, 0), core.StatusOK, "its release after SCRIPT FLUSH")
	env.expect(allCmd(core.OpAcquire, 1, ttl, "x", "y"), core.StatusOK, "a multi-key lock after SCRIPT FLUSH")
	env.expect(allCmd(core.OpRelease, 1, 0, "x", "y"), core.StatusOK, "its release after SCRIPT FLUSH")
}

// TestAllScriptsOnAServer runs a multi-key lock's commands through the
// engine to a redis-server: all or nothing, overlapping sets exclude
// each other, release frees and announces each key it held, extension
// and fence raise need every key.
func TestAllScriptsOnAServer(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	env := startKinds(t, nil, s.Addr)
	heard := env.subscribe(s.Addr, "a", "b", "c")
	const ttl = 10 * time.Second
	for range 2 { // EVAL, then EVALSHA
		_, err := env.c.Do("FLUSHALL")
		require.NoError(t, err)
		env.expect(allCmd(core.OpAcquire, 1, ttl, "a", "b"), core.StatusOK, "a and b")
		r := env.expect(allCmd(core.OpAcquire, 2, 2*ttl, "c", "b"), core.StatusHeld, "b and c, b held")
		assert.InDelta(t, ttl, r.TTL, float64(time.Second))
		n, err := redis.Int(env.c.Do("EXISTS", "c"))
		require.NoError(t, err)
		assert.Zero(t, n, "a refused multi-key lock takes no key")
		env.expect(allCmd(core.OpExtend, 1, 3*ttl, "a", "b"), core.StatusOK, "extend both")
		pttl, err := redis.Int64(env.c.Do("PTTL", "b"))
		require.NoError(t, err)
		assert.Greater(t, pttl, (2 * ttl).Milliseconds())
		env.expect(allCmd(core.OpExtend, 1, ttl, "a", "b", "c"), core.StatusMissing, "extend with c missing")
		env.expect(allCmd(core.OpExtend, 2, ttl, "a", "b"), core.StatusHeld, "extend another's")
		env.expect(allCmd(core.OpRelease, 2, 0, "c", "b"), core.StatusHeld, "release another's")
		env.expect(allCmd(core.OpRelease, 1, 0, "a", "b"), core.StatusOK, "release both")
		assert.ElementsMatch(t, []string{"a", "b"}, []string{heard(), heard()}, "each key's release is announced")
		env.expect(allCmd(core.OpRelease, 1, 0, "a", "b"), core.StatusMissing, "release again")

		// Fences: one more than the highest of the counters, on each.
		_, err = env.c.Do("SET", core.FenceKeyPrefix+"b", 41)
		require.NoError(t, err)
		r = env.expect(allCmd(core.OpAcquireFenced, 1, ttl, "a", "b", "c"), core.StatusOK, "fenced a, b, c")
		assert.Equal(t, uint64(42), r.Fence)
		raise := allCmd(core.OpRaiseFence, 1, 0, "a", "b", "c")
		raise.Fence = 50
		env.expect(raise, core.StatusOK, "raise")
		for _, k := range []string{"a", "b", "c"} {
			f, err := redis.Int(env.c.Do("GET", core.FenceKeyPrefix+k))
			require.NoError(t, err)
			assert.Equal(t, 50, f, k)
		}
		raise.Token = tok(2)
		env.expect(raise, core.StatusHeld, "raise by another")
		env.expect(allCmd(core.OpRelease, 1, 0, "a", "b", "c"), core.StatusOK, "release the three")
		assert.ElementsMatch(t, []string{"a", "b", "c"}, []string{heard(), heard(), heard()})
		raise.Token = tok(1)
		env.expect(raise, core.StatusMissing, "raise once released")
	}
}

// TestKindWords: the words each kind's commands go out as, on a Cluster
// member (auxiliary keys named in the key's slot) and a standalone one,
// with WAIT behind a write on a node that asks for it; what no script
// runs, or a Cluster cannot run, is refused unsent, naming the node.
func TestKindWords(t *testing.T) {
	f := newFakeNet(t, 3)
	f.replicas[2] = 1
	e, clock := startNodes(t, f, []NodeConfig{{Cluster: true}, {}, {Replicas: 1, WaitTimeout: 50 * time.Millisecond}})
	tk := tok(1).String()
	fenced := func(c core.Command) core.Command { c.Op = core.OpAcquireFenced; return c }
	waitsOn := func(c core.Command) core.Command { c.Ticket = 1; return c }
	read := kcmd(core.KindRead, core.OpAcquire, "k", 1, 10*time.Second)
	write := kcmd(core.KindWrite, core.OpAcquire, "k", 1, 10*time.Second)
	raise := kcmd(core.KindAll, core.OpRaiseFence, "{t}a", 1, 0)
	raise.Keys, raise.Fence = core.NewKeyList([]string{"{t}a", "{t}b"}), 12
	for _, tc := range []struct {
		node  int
		cmd   core.Command
		words []string // after the script
		reply Reply
		want  core.Reply
	}{
		{0, read, []string{"3", "k", "redlock:readers:{k}", "redlock:writer-waits:{k}", tk, "10000"},
			Reply{Kind: KindOK}, core.Reply{Status: core.StatusOK}},
		{1, fenced(read), []string{"4", "k", "redlock:readers:k", "redlock:writer-waits:k", "redlock:fence:k", tk, "10000"},
			Reply{Kind: KindString, Text: "0"}, core.Reply{Status: core.StatusOK}},
		{0, fenced(read), []string{"4", "k", "redlock:readers:{k}", "redlock:writer-waits:{k}", "redlock:fence:{k}", tk, "10000"},
			Reply{Kind: KindString, Text: "9007199254740993"}, core.Reply{Status: core.StatusOK, Fence: 9007199254740993}},
		{1, read, nil, Reply{Kind: KindInt, Int: -1500}, core.Reply{Status: core.StatusHeld, TTL: 1500 * time.Millisecond}},
		{0, kcmd(core.KindRead, core.OpRelease, "{t}k", 1, 0), []string{"2", "{t}k", "redlock:readers:{t}k", tk},
			Reply{Kind: KindInt, Int: 0}, core.Reply{Status: core.StatusMissing}},
		{1, kcmd(core.KindRead, core.OpExtend, "k", 1, time.Second), []string{"2", "k", "redlock:readers:k", tk, "1000"},
			Reply{Kind: KindInt, Int: 1}, core.Reply{Status: core.StatusOK}},
		{0, write, []string{"3", "k", "redlock:readers:{k}", "redlock:writer-waits:{k}", tk, "10000"},
			Reply{Kind: KindInt, Int: -20}, core.Reply{Status: core.StatusHeld, TTL: 20 * time.Millisecond}},
		{1, fenced(write), []string{"4", "k", "redlock:readers:k", "redlock:writer-waits:k", "redlock:fence:k", tk, "10000"},
			Reply{Kind: KindInt, Int: 3}, core.Reply{Status: core.StatusOK, Fence: 3}},
		{0, kcmd(core.KindWrite, core.OpRelease, "k", 1, 0), []string{"2", "k", "redlock:writer-waits:{k}", tk},
			Reply{Kind: KindInt, Int: 1}, core.Reply{Status: core.StatusOK}},
		{1, waitsOn(kcmd(core.KindWrite, core.OpRelease, "k", 1, 0)), []string{"2", "k", "redlock:writer-waits:k", tk, "w"},
			Reply{Kind: KindInt, Int: 0}, core.Reply{Status: core.StatusMissing}},
		{1, allCmd(core.OpAcquire, 1, 10*time.Second, "a", "b", "c"), []string{"3", "a", "b", "c", tk, "10000", "3"},
			Reply{Kind: KindOK}, core.Reply{Status: core.StatusOK}},
		{0, allCmd(core.OpAcquireFenced, 1, 10*time.Second, "{t}a", "{t}b"), []string{"4", "{t}a", "{t}b", "redlock:fence:{t}a", "redlock:fence:{t}b", tk, "10000", "2"},
			Reply{Kind: KindInt, Int: 0}, core.Reply{Status: core.StatusHeld}},
		{1, allCmd(core.OpRelease, 1, 0, "a", "b"), []string{"2", "a", "b", tk}, Reply{Kind: KindInt, Int: -1}, core.Reply{Status: core.StatusHeld}},
		{1, allCmd(core.OpExtend, 1, 2*time.Second, "a", "b"), []string{"2", "a", "b", tk, "2000"}, Reply{Kind: KindInt, Int: 1}, core.Reply{Status: core.StatusOK}},
		{0, raise, []string{"4", "{t}a", "{t}b", "redlock:fence:{t}a", "redlock:fence:{t}b", tk, "12"}, Reply{Kind: KindInt, Int: 1}, core.Reply{Status: core.StatusOK}},
	} {
		what := fmt.Sprintf("node %d: %v %v", tc.node, tc.cmd.Kind, tc.cmd.Op)
		b := send(e, clock, tc.node, tc.cmd, time.Second)
		c := receive(b, nil)
		x := f.next()
		s, ok := wire.ScriptOf(tc.cmd.Kind, tc.cmd.Op, false)
		require.True(t, ok, what)
		assert.Equal(t, []string{"EVAL", s.Src}, x.cmds[0][:2], what)
		if tc.words != nil {
			assert.Equal(t, tc.words, x.cmds[0][2:], what)
		}
		x.reply(nil, tc.reply)
		r := wait(t, c)
		b.Close()
		tc.want.Node = tc.node
		assert.Equal(t, tc.want, r, what)
	}

	// WAIT behind a reader's acquire; none behind its release.
	b := send(e, clock, 2, read, time.Second)
	c := receive(b, nil)
	x := f.next()
	require.Len(t, x.cmds, 2)
	assert.Equal(t, []string{"WAIT", "1", "50"}, x.cmds[1])
	x.reply(nil, Reply{Kind: KindOK}, Reply{Kind: KindInt, Int: 0})
	r := wait(t, c)
	b.Close()
	assert.ErrorIs(t, r.Err, dialspec.ErrNotReplicated, "a reader counts once replicated")
	b = send(e, clock, 2, kcmd(core.KindRead, core.OpRelease, "k", 1, 0), time.Second)
	c = receive(b, nil)
	x = f.next()
	assert.Len(t, x.cmds, 1)
	x.reply(nil, Reply{Kind: KindInt, Int: 1})
	assert.Equal(t, core.StatusOK, wait(t, c).Status)
	b.Close()

	// Refused unsent: a reader's fence raise anywhere; keys across slots
	// on the Cluster member, which CheckKeys tells beforehand.
	for _, tc := range []struct {
		node int
		cmd  core.Command
		msg  string
	}{
		{1, kcmd(core.KindRead, core.OpRaiseFence, "k", 1, 0), "no raise-fence for a read lock"},
		{0, allCmd(core.OpAcquire, 1, time.Second, "x", "y"), "different hash slots"},
		{0, allCmd(core.OpRelease, 1, 0, "{t}a", "a}b"), `key "a}b"`},
	} {
		b := send(e, clock, tc.node, tc.cmd, time.Second)
		r := wait(t, receive(b, nil))
		b.Close()
		assert.Equal(t, core.StatusError, r.Status, tc.msg)
		assert.ErrorContains(t, r.Err, tc.msg)
		assert.ErrorContains(t, r.Err, e.NodeName(tc.node))
	}
	select {
	case x := <-f.exchanges:
		t.Fatalf("a refused command went out: %v", x.cmds)
	default:
	}
	err := e.CheckKeys([]string{"x", "y"})
	require.ErrorContains(t, err, "node 0 (memberA), a Cluster")
	require.ErrorContains(t, err, "different hash slots")
	require.NoError(t, e.CheckKeys([]string{"{t}x", "{t}y"}))
}
