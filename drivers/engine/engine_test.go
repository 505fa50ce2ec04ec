package engine

import (
	"bufio"
	"context"
	"errors"
	"math/bits"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers/internal/dialspec"
	"github.com/redlock-go/redlock/drivers/wire"
	"github.com/redlock-go/redlock/internal/testguard"
)

// TestMain arms the hang guard (internal/testguard), then runs the tests
// and checks that none left a goroutine behind.
func TestMain(m *testing.M) {
	testguard.Arm()
	goleak.VerifyTestMain(m)
}

const ttl = 10 * time.Second

func tok(i uint64) core.Token { return core.TokenFromUint64s(0xfeedface, i) }

func acquire(key string, i uint64) core.Command {
	return core.Command{Op: core.OpAcquire, Key: key, Token: tok(i), TTL: ttl}
}

func release(key string, i uint64) core.Command {
	return core.Command{Op: core.OpRelease, Key: key, Token: tok(i)}
}

func extend(key string, i uint64) core.Command {
	return core.Command{Op: core.OpExtend, Key: key, Token: tok(i), TTL: ttl}
}

func acquireFenced(key string, i uint64) core.Command {
	return core.Command{Op: core.OpAcquireFenced, Key: key, Token: tok(i), TTL: ttl}
}

func raise(key string, i, fence uint64) core.Command {
	return core.Command{Op: core.OpRaiseFence, Key: key, Token: tok(i), Fence: fence}
}

// start returns an engine over n fake nodes on a manual clock, each node
// dialled once, closed at cleanup.
func start(t *testing.T, n int) (*Engine, *fakeNet, *manualClock) {
	t.Helper()
	return startWith(t, newFakeNet(t, n))
}

// startWith is start over f.
func startWith(t *testing.T, f *fakeNet) (*Engine, *fakeNet, *manualClock) {
	t.Helper()
	n := len(f.runID)
	clock := newManualClock()
	names := make([]string, n)
	for i := range names {
		names[i] = "node" + string(rune('A'+i)) + ":6379"
	}
	e := mustNew(t, Config{Names: names, Dial: f.dial, Clock: clock})
	for range n {
		<-f.dials
	}
	t.Cleanup(func() {
		go func() { // answer what Close sends
			for x := range f.exchanges {
				x.ok()
			}
		}()
		e.Close()
		close(f.exchanges)
	})
	return e, f, clock
}

// send starts a round of one command on node and returns its batch.
func send(e *Engine, clock *manualClock, node int, cmd core.Command, timeout time.Duration) core.Batch {
	b := e.Begin(context.Background())
	b.Send(node, cmd, clock.Now().Add(timeout))
	return b
}

// receive returns the batch's next reply in a channel, so that the test can
// move the clock meanwhile.
func receive(b core.Batch, cancel <-chan struct{}) <-chan core.Reply {
	c := make(chan core.Reply, 1)
	go func() {
		r, ok := b.Receive(cancel)
		if !ok {
			r = core.Reply{Node: -1}
		}
		c <- r
	}()
	return c
}

func wait(t *testing.T, c <-chan core.Reply) core.Reply {
	t.Helper()
	select {
	case r := <-c:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("no reply")
		return core.Reply{}
	}
}

func TestCommandsAndReplies(t *testing.T) {
	e, f, clock := start(t, 1)
	for _, tc := range []struct {
		name  string
		cmd   core.Command
		words []string
		reply Reply
		want  core.Status
		err   string
		fence uint64
	}{
		{"acquire ok", acquire("k", 1), []string{"SET", "k", tok(1).String(), "NX", "PX", "10000"}, Reply{Kind: KindOK}, core.StatusOK, "", 0},
		{"acquire held", acquire("k", 1), nil, Reply{Kind: KindNil}, core.StatusHeld, "", 0},
		{"acquire error reply", acquire("k", 1), nil, Reply{Kind: KindError, Err: errors.New("OOM command not allowed")}, core.StatusError, "OOM", 0},
		{"acquire int", acquire("k", 1), nil, Reply{Kind: KindInt, Int: 1}, core.StatusError, "unexpected reply kind", 0},
		{"release first as EVAL", release("k", 2), []string{"EVAL", wire.Release.Src, "1", "k", tok(2).String()}, Reply{Kind: KindInt, Int: 1}, core.StatusOK, "", 0},
		{"release then EVALSHA", release("k", 2), []string{"EVALSHA", wire.Release.SHA1, "1", "k", tok(2).String()}, Reply{Kind: KindInt, Int: 0}, core.StatusMissing, "", 0},
		{"release held", release("k", 2), nil, Reply{Kind: KindInt, Int: -1}, core.StatusHeld, "", 0},
		{"release odd int", release("k", 2), nil, Reply{Kind: KindInt, Int: 7}, core.StatusError, "unexpected script reply 7", 0},
		{"release wrongtype", release("k", 2), nil, Reply{Kind: KindError, Err: errors.New("WRONGTYPE")}, core.StatusError, "WRONGTYPE", 0},
		{"extend first as EVAL", extend("k", 3), []string{"EVAL", wire.Extend.Src, "1", "k", tok(3).String(), "10000"}, Reply{Kind: KindInt, Int: 1}, core.StatusOK, "", 0},
		{"extend then EVALSHA", extend("k", 3), []string{"EVALSHA", wire.Extend.SHA1, "1", "k", tok(3).String(), "10000"}, Reply{Kind: KindInt, Int: 1}, core.StatusOK, "", 0},
		{"other reply", extend("k", 3), nil, Other(1.5), core.StatusError, "unexpected reply float64 1.5", 0},
		{"string reply", acquire("k", 3), nil, String("QUEUED"), core.StatusError, "unexpected reply kind", 0},

		// Fenced acquire: two keys, the second the fence counter; the
		// counter comes back as an integer, or as a string from 2^53 up.
		{"acquire-fenced first as EVAL", acquireFenced("k", 4),
			[]string{"EVAL", wire.AcquireFenced.Src, "2", "k", "redlock:fence:k", tok(4).String(), "10000"},
			Reply{Kind: KindInt, Int: 7}, core.StatusOK, "", 7},
		{"acquire-fenced then EVALSHA", acquireFenced("k", 4),
			[]string{"EVALSHA", wire.AcquireFenced.SHA1, "2", "k", "redlock:fence:k", tok(4).String(), "10000"},
			Reply{Kind: KindInt, Int: 1}, core.StatusOK, "", 1},
		{"acquire-fenced held", acquireFenced("k", 4), nil, Reply{Kind: KindInt, Int: -1500}, core.StatusHeld, "", 0},
		{"acquire-fenced past 2^53", acquireFenced("k", 4), nil, String("9007199254740993"), core.StatusOK, "", 1<<53 + 1},
		{"acquire-fenced at 2^63-1", acquireFenced("k", 4), nil, String("9223372036854775807"), core.StatusOK, "", 1<<63 - 1},
		{"acquire-fenced beyond 2^63-1", acquireFenced("k", 4), nil, String("9223372036854775808"), core.StatusError, `unexpected fence "9223372036854775808"`, 0},
		{"acquire-fenced 20 digits", acquireFenced("k", 4), nil, String("18446744073709551616"), core.StatusError, "unexpected fence", 0},
		{"acquire-fenced not a number", acquireFenced("k", 4), nil, String("12a"), core.StatusError, `unexpected fence "12a"`, 0},
		{"acquire-fenced leading zero", acquireFenced("k", 4), nil, String("012"), core.StatusError, `unexpected fence "012"`, 0},
		{"acquire-fenced empty", acquireFenced("k", 4), nil, String(""), core.StatusError, `unexpected fence ""`, 0},
		{"acquire-fenced held without expiry", acquireFenced("k", 4), nil, Reply{Kind: KindInt, Int: 0}, core.StatusHeld, "", 0},
		{"acquire-fenced nil", acquireFenced("k", 4), nil, Reply{Kind: KindNil}, core.StatusError, "unexpected reply kind", 0},
		{"acquire-fenced OK", acquireFenced("k", 4), nil, Reply{Kind: KindOK}, core.StatusError, "unexpected reply kind", 0},
		{"acquire-fenced error reply", acquireFenced("k", 4), nil,
			Reply{Kind: KindError, Err: errors.New("ERR increment or decrement would overflow")}, core.StatusError, "overflow", 0},

		// Raise: the fence in decimal, replies as release's and extend's.
		{"raise first as EVAL", raise("k", 5, 42),
			[]string{"EVAL", wire.RaiseFence.Src, "2", "k", "redlock:fence:k", tok(5).String(), "42"},
			Reply{Kind: KindInt, Int: 1}, core.StatusOK, "", 0},
		{"raise then EVALSHA", raise("k", 5, 1<<63-1),
			[]string{"EVALSHA", wire.RaiseFence.SHA1, "2", "k", "redlock:fence:k", tok(5).String(), "9223372036854775807"},
			Reply{Kind: KindInt, Int: 0}, core.StatusMissing, "", 0},
		{"raise held", raise("k", 5, 42), nil, Reply{Kind: KindInt, Int: -1}, core.StatusHeld, "", 0},
		{"raise odd int", raise("k", 5, 42), nil, Reply{Kind: KindInt, Int: 2}, core.StatusError, "unexpected script reply 2", 0},
		{"raise string", raise("k", 5, 42), nil, String("42"), core.StatusError, "unexpected reply kind", 0},
		{"raise nil", raise("k", 5, 42), nil, Reply{Kind: KindNil}, core.StatusError, "unexpected reply kind", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := send(e, clock, 0, tc.cmd, time.Second)
			defer b.Close()
			c := receive(b, nil)
			x := f.next()
			if tc.words != nil {
				assert.Equal(t, [][]string{tc.words}, x.cmds)
			}
			x.reply(nil, tc.reply)
			r := wait(t, c)
			assert.Equal(t, tc.want, r.Status)
			assert.Equal(t, 0, r.Node)
			assert.Equal(t, tc.fence, r.Fence)
			if tc.err == "" {
				assert.NoError(t, r.Err)
				return
			}
			assert.ErrorContains(t, r.Err, "node 0 (nodeA:6379): "+tc.cmd.Op.String()+": ")
			assert.ErrorContains(t, r.Err, tc.err)
		})
	}
}

func TestPipelineCarriesQueuedRoundsInOrder(t *testing.T) {
	e, f, clock := start(t, 1)
	first := send(e, clock, 0, acquire("a", 1), time.Second)
	defer first.Close()
	c0 := receive(first, nil)
	x := f.next()
	assert.Equal(t, []string{"SET a"}, x.names())

	// While the node works on the first pipeline, three rounds queue.
	var cs []<-chan core.Reply
	for i, cmd := range []core.Command{acquire("b", 2), release("a", 1), acquire("c", 3)} {
		b := send(e, clock, 0, cmd, time.Second)
		defer b.Close()
		cs = append(cs, receive(b, nil))
		eventuallyQueued(t, e.nodes[0], i+1)
	}
	x.ok()
	assert.Equal(t, core.StatusOK, wait(t, c0).Status)

	x = f.next()
	assert.Equal(t, []string{"SET b", "EVAL a", "SET c"}, x.names(), "one pipeline, in queue order")
	x.ok()
	for _, c := range cs {
		assert.Equal(t, core.StatusOK, wait(t, c).Status)
	}
}

// TestRepliesWakeRoundsBeforeTheNextPipeline: over a connection that
// carries one pipeline at a time, the node lets the rounds its replies
// woke queue their next commands before it takes the queue for the next
// pipeline, which then carries them: without that, they wait a round
// trip more and go out in a pipeline of their own. One CPU makes the
// order the scheduler's alone; it still looks at its global queue, where
// the yielding node goes, once in 61 turns, which may let the node take
// the queue with some releases still to come, or none: a scenario where
// none came is tried again, up to three times in all.
func TestRepliesWakeRoundsBeforeTheNextPipeline(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	e, f, clock := start(t, 1)
	joined := false
	for try := 0; try < 3 && !joined; try++ {
		k := strconv.Itoa(try)
		first := send(e, clock, 0, acquire("first"+k, 9), time.Second)
		c0 := receive(first, nil)
		x := f.next()
		// While the node waits on the first pipeline, four rounds queue a
		// SET each; as each hears its reply, it sends its release.
		var done []chan core.Reply
		for i := range uint64(4) {
			key := "r" + k + strconv.FormatUint(i, 10)
			b := send(e, clock, 0, acquire(key, i), time.Second)
			c := make(chan core.Reply, 1)
			go func() {
				defer b.Close()
				if _, ok := b.Receive(nil); !ok {
					c <- core.Reply{Node: -1}
					return
				}
				rb := send(e, clock, 0, release(key, i), time.Second)
				defer rb.Close()
				r, _ := rb.Receive(nil)
				c <- r
			}()
			done = append(done, c)
			eventuallyQueued(t, e.nodes[0], int(i)+1)
		}
		x.ok()
		assert.Equal(t, core.StatusOK, wait(t, c0).Status)
		first.Close()
		x = f.next()
		assert.Equal(t, []string{"SET r" + k + "0", "SET r" + k + "1", "SET r" + k + "2", "SET r" + k + "3"}, x.names())
		// One more SET queues behind them: the queue is not empty when
		// their replies come.
		late := send(e, clock, 0, acquire("late"+k, 8), time.Second)
		cl := receive(late, nil)
		eventuallyQueued(t, e.nodes[0], 1)
		x.ok()
		x = f.next()
		names := x.names()
		x.ok()
		if len(names) > 1 {
			joined = true
			assert.Equal(t, "SET late"+k, names[0], "the queue's own command first")
			var keys []string // EVAL, or EVALSHA once a release ran
			for _, name := range names[1:] {
				keys = append(keys, strings.TrimPrefix(strings.TrimPrefix(name, "EVALSHA "), "EVAL "))
			}
			assert.Subset(t, []string{"r" + k + "0", "r" + k + "1", "r" + k + "2", "r" + k + "3"}, keys, "woken rounds' releases")
		}
		for len(names) < 5 { // the releases that missed it
			x = f.next()
			names = append(names, x.names()...)
			x.ok()
		}
		for _, c := range done {
			assert.Equal(t, core.StatusOK, wait(t, c).Status)
		}
		assert.Equal(t, core.StatusOK, wait(t, cl).Status)
		late.Close()
	}
	assert.True(t, joined, "the woken rounds' releases never joined the next pipeline")
}

// eventuallyQueued waits until node's queue holds want commands, as the
// goroutines the test started fill it, or (want -1) until Close has begun.
func eventuallyQueued(t *testing.T, n *node, want int) {
	t.Helper()
	n.mu.Lock()
	got := len(n.queue)
	if n.closing {
		got = -1
	}
	if got == want {
		n.mu.Unlock()
		return
	}
	events := make(chan int, 64)
	n.queued = func(k int) { events <- k }
	n.mu.Unlock()
	defer func() { n.mu.Lock(); n.queued = nil; n.mu.Unlock() }()
	timeout := time.After(10 * time.Second)
	for got != want {
		select {
		case got = <-events:
		case <-timeout:
			t.Fatalf("queue holds %d commands, want %d", got, want)
		}
	}
}

// assertBudget checks that an exchange's context left it want, on the
// system clock, give or take the time the exchange took to begin.
func assertBudget(t *testing.T, want, got time.Duration, msg string) {
	t.Helper()
	assert.LessOrEqual(t, got, want, msg)
	assert.Greater(t, got, want-50*time.Millisecond, msg)
}

func TestTimeoutAtDeadlineThenRedial(t *testing.T) {
	e, f, clock := start(t, 1)
	b := send(e, clock, 0, acquire("k", 1), 50*time.Millisecond)
	defer b.Close()
	c := receive(b, nil)
	x := f.next()
	// The manual clock reads 2026: the deadline a client sees is on the
	// system clock, as far away as the command's is on the engine's.
	assertBudget(t, 50*time.Millisecond, x.budget, "the pipeline runs until the command's deadline")

	clock.Advance(50 * time.Millisecond)
	r := wait(t, c)
	assert.Equal(t, core.StatusTimeout, r.Status)
	assert.ErrorIs(t, r.Err, context.DeadlineExceeded)
	assert.ErrorContains(t, r.Err, "node 0 (nodeA:6379): acquire: ")
	<-x.ctx.Done() // the exchange's context expired on the same clock

	// The connection that missed its deadline is closed; the next
	// pipeline dials a new one, on which scripts go as EVAL again.
	b2 := send(e, clock, 0, release("k", 1), time.Second)
	defer b2.Close()
	c2 := receive(b2, nil)
	f.dialed(0)
	assert.Equal(t, 1, f.closedConns())
	x2 := f.next()
	assert.NotSame(t, x.conn, x2.conn)
	assert.Equal(t, []string{"EVAL k"}, x2.names())
	x2.ok()
	assert.Equal(t, core.StatusOK, wait(t, c2).Status)
}

func TestLateAcquireDroppedLateReleaseSent(t *testing.T) {
	e, f, clock := start(t, 1)
	// A hung node holds the first pipeline (an attempt's SET).
	b := send(e, clock, 0, acquire("k", 1), 50*time.Millisecond)
	defer b.Close()
	c := receive(b, nil)
	hung := f.next()

	// Behind it: another round's acquire, a fence raise, and the first
	// attempt's cleanup.
	b2 := send(e, clock, 0, acquire("other", 2), 50*time.Millisecond)
	defer b2.Close()
	c2 := receive(b2, nil)
	b4 := send(e, clock, 0, raise("k", 1, 9), 50*time.Millisecond)
	defer b4.Close()
	c4 := receive(b4, nil)
	b3 := send(e, clock, 0, release("k", 1), 200*time.Millisecond)
	b3.Close() // a cleanup that awaits nothing: the release still goes
	eventuallyQueued(t, e.nodes[0], 3)

	clock.Advance(300 * time.Millisecond) // every deadline passes
	assert.Equal(t, core.StatusTimeout, wait(t, c).Status)
	assert.Equal(t, core.StatusTimeout, wait(t, c2).Status)
	assert.Equal(t, core.StatusTimeout, wait(t, c4).Status)
	hung.reply(context.DeadlineExceeded) // the client gives up

	f.dialed(0)
	x := f.next()
	assert.Equal(t, []string{"EVAL k"}, x.names(), "the late acquire and raise are not sent; the late release is")
	assertBudget(t, 200*time.Millisecond, x.budget, "the release gets the time it had when queued")
	x.ok()
}

func TestNoScriptFallsBackToEval(t *testing.T) {
	e, f, clock := start(t, 1)
	run := func(cmd core.Command) *exchange {
		b := send(e, clock, 0, cmd, time.Second)
		c := receive(b, nil)
		x := f.next()
		t.Cleanup(func() { wait(t, c); b.Close() })
		return x
	}
	// Each script is cached per op: the fenced ones too.
	for _, cmd := range []core.Command{release("k", 1), extend("k", 1), acquireFenced("k", 1), raise("k", 1, 3)} {
		x := run(cmd)
		assert.Equal(t, "EVAL", x.cmds[0][0], "%v: first as EVAL", cmd.Op)
		x.ok() // now cached
		x = run(cmd)
		assert.Equal(t, []string{"EVALSHA", wire.ScriptFor(cmd.Op).SHA1}, x.cmds[0][:2], "%v", cmd.Op)
		x.reply(nil, Reply{Kind: KindError, Err: errors.New("NOSCRIPT No matching script")})
		x = f.next()
		assert.Equal(t, []string{"EVAL", wire.ScriptFor(cmd.Op).Src}, x.cmds[0][:2],
			"%v: NOSCRIPT: sent again as EVAL in the same pipeline's time", cmd.Op)
		x.ok()
		x = run(cmd)
		assert.Equal(t, "EVALSHA", x.cmds[0][0], "%v", cmd.Op)
		x.ok()
	}
}

// TestFencedAcquireHeldCachesItsScript: a held key answers the fenced
// acquire with the holder's TTL, which also proves the script ran.
func TestFencedAcquireHeldCachesItsScript(t *testing.T) {
	e, f, clock := start(t, 1)
	for _, want := range []string{"EVAL", "EVALSHA"} {
		b := send(e, clock, 0, acquireFenced("k", 1), time.Second)
		c := receive(b, nil)
		x := f.next()
		assert.Equal(t, want, x.cmds[0][0])
		x.reply(nil, Reply{Kind: KindInt, Int: -5})
		assert.Equal(t, core.Reply{Node: 0, Status: core.StatusHeld, TTL: 5 * time.Millisecond}, wait(t, c))
		b.Close()
	}
}

// TestProbeReportsTheHoldersTTL: an acquire with Probe runs the probe
// script, EVAL then EVALSHA, and a held key's reply carries its PTTL; a
// plain acquire stays a SET NX.
func TestProbeReportsTheHoldersTTL(t *testing.T) {
	e, f, clock := start(t, 1)
	probe := acquire("k", 1)
	probe.Probe = true
	for _, tc := range []struct {
		cmd   core.Command
		words []string
		reply Reply
		want  core.Reply
	}{
		{probe, []string{"EVAL", wire.AcquireProbe.Src, "1", "k", tok(1).String(), "10000"},
			Reply{Kind: KindInt, Int: -2500}, core.Reply{Status: core.StatusHeld, TTL: 2500 * time.Millisecond}},
		{probe, []string{"EVALSHA", wire.AcquireProbe.SHA1, "1", "k", tok(1).String(), "10000"},
			Reply{Kind: KindOK}, core.Reply{Status: core.StatusOK}},
		{probe, nil, Reply{Kind: KindInt, Int: 0}, core.Reply{Status: core.StatusHeld}}, // no expiry: unknown
		{acquire("k", 1), []string{"SET", "k", tok(1).String(), "NX", "PX", "10000"},
			Reply{Kind: KindNil}, core.Reply{Status: core.StatusHeld}},
	} {
		b := send(e, clock, 0, tc.cmd, time.Second)
		c := receive(b, nil)
		x := f.next()
		if tc.words != nil {
			assert.Equal(t, [][]string{tc.words}, x.cmds)
		}
		x.reply(nil, tc.reply)
		assert.Equal(t, tc.want, wait(t, c))
		b.Close()
	}
}

// TestScriptBits: every script a command of a kind and op runs has a
// bit of its own in node.scripts, a uint32; a writer's release,
// extension and fence raise share the mutex's, whose scripts they run.
func TestScriptBits(t *testing.T) {
	seen := map[uint32]wire.Script{}
	for k := core.KindMutex; k <= core.KindAll; k++ {
		for op := core.OpAcquire; op <= core.OpRaiseFence; op++ {
			s, ok := wire.ScriptOf(k, op, false)
			if !ok {
				continue
			}
			bit := scriptBit(k, op)
			require.NotZero(t, bit, "%v %v overflows node.scripts", k, op)
			require.Equal(t, 1, bits.OnesCount32(bit), "%v %v", k, op)
			if other, dup := seen[bit]; dup {
				require.Equal(t, other, s, "%v %v shares its bit with another script", k, op)
			}
			seen[bit] = s
		}
	}
}

func TestRepliesNeverReachALaterReceive(t *testing.T) {
	e, f, clock := start(t, 2)
	b := e.Begin(context.Background())
	defer b.Close()
	b.Send(0, acquire("k", 1), clock.Now().Add(50*time.Millisecond))
	b.Send(1, acquire("k", 1), clock.Now().Add(100*time.Millisecond))
	c := receive(b, nil)
	x0, x1 := f.next(), f.next()
	if x0.conn.node != 0 {
		x0, x1 = x1, x0
	}
	clock.Advance(50 * time.Millisecond)
	r := wait(t, c)
	assert.Equal(t, core.Reply{Node: 0, Status: core.StatusTimeout}, core.Reply{Node: r.Node, Status: r.Status})

	x0.ok() // node 0's answer comes after its timeout: not returned again
	c = receive(b, nil)
	x1.ok()
	r = wait(t, c)
	assert.Equal(t, 1, r.Node)
	assert.Equal(t, core.StatusOK, r.Status)
}

func TestCancelSendsOnlyReleases(t *testing.T) {
	e, f, clock := start(t, 2)
	b := e.Begin(context.Background())
	b.Send(0, acquire("k", 1), clock.Now().Add(time.Second))
	b.Send(1, release("k", 0), clock.Now().Add(time.Second))
	cancel := make(chan struct{})
	close(cancel)
	_, ok := b.Receive(cancel)
	assert.False(t, ok)
	x := f.next()
	assert.Equal(t, 1, x.conn.node)
	assert.Equal(t, []string{"EVAL k"}, x.names(), "cancelled before sending: the release goes, the acquire does not")
	x.ok()
	b.Close()
	select {
	case x := <-f.exchanges:
		t.Fatalf("unexpected exchange %v", x.names())
	default:
	}
}

func TestCancelWhileWaiting(t *testing.T) {
	e, f, clock := start(t, 1)
	b := send(e, clock, 0, acquire("k", 1), time.Second)
	cancel := make(chan struct{})
	c := receive(b, cancel)
	x := f.next()
	close(cancel)
	assert.Equal(t, -1, wait(t, c).Node, "Receive returns at once when cancelled")
	b.Close()
	x.ok() // the straggler's reply is dropped with the batch
}

func TestDialFailureIsANodeError(t *testing.T) {
	e, f, clock := start(t, 1)
	// Break the connection, then refuse the dial.
	b := send(e, clock, 0, acquire("k", 1), time.Second)
	c := receive(b, nil)
	f.next().reply(errors.New("EOF"))
	r := wait(t, c)
	b.Close()
	assert.Equal(t, core.StatusError, r.Status)
	assert.ErrorContains(t, r.Err, "node 0 (nodeA:6379): acquire: EOF")

	f.dialErr[0] = errRefused
	b = send(e, clock, 0, acquire("k", 1), time.Second)
	c = receive(b, nil)
	f.dialed(0)
	r = wait(t, c)
	b.Close()
	assert.Equal(t, core.StatusError, r.Status, "a refused dial is an error, not a timeout")
	assert.ErrorIs(t, r.Err, errRefused)
}

func TestContextValuesReachALoneCommand(t *testing.T) {
	e, f, clock := start(t, 1)
	type key struct{}
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), key{}, "v"))
	b := e.Begin(ctx)
	defer b.Close()
	b.Send(0, acquire("k", 1), clock.Now().Add(time.Second))
	c := receive(b, nil)
	x := f.next()
	cancel()
	assert.Equal(t, "v", x.ctx.Value(key{}))
	assert.NoError(t, x.ctx.Err(), "the caller's cancellation does not reach the command")
	x.ok()
	wait(t, c)
}

func TestCloseSendsQueuedReleases(t *testing.T) {
	f := newFakeNet(t, 1)
	clock := newManualClock()
	e := mustNew(t, Config{Names: []string{"n:1"}, Dial: f.dial, Clock: clock})
	f.dialed(0)
	b := send(e, clock, 0, acquire("k", 1), time.Second)
	c := receive(b, nil)
	hung := f.next()
	b2 := send(e, clock, 0, acquire("j", 2), time.Second)
	c2 := receive(b2, nil)
	b3 := send(e, clock, 0, release("k", 1), time.Second)
	b3.Close()
	eventuallyQueued(t, e.nodes[0], 2)

	closed := make(chan struct{})
	go func() { e.Close(); close(closed) }()
	eventuallyQueued(t, e.nodes[0], -1) // Close has begun
	b4 := send(e, clock, 0, acquire("late", 3), time.Second)
	r := wait(t, receive(b4, nil))
	assert.ErrorIs(t, r.Err, core.ErrClosed, "after Close: ErrClosed")
	assert.Equal(t, core.StatusError, r.Status)

	hung.ok()
	x := f.next()
	assert.Equal(t, []string{"EVAL k"}, x.names(), "Close sends the queued release, not the acquire")
	x.ok()
	<-closed
	assert.Equal(t, core.StatusOK, wait(t, c).Status)
	assert.ErrorIs(t, wait(t, c2).Err, core.ErrClosed)
	assert.Equal(t, 1, f.closedConns())
	b.Close()
	b2.Close()
	b4.Close()
}

// okConn answers every command at once, without allocating.
type okConn struct{}

func (okConn) Exchange(_ context.Context, cmds [][]string, replies []Reply) error {
	for i, c := range cmds {
		replies[i] = Reply{Kind: KindInt, Int: 1}
		if c[0] == "SET" {
			replies[i] = Reply{Kind: KindOK}
		}
	}
	return nil
}

func (okConn) Close() error { return nil }

func TestZeroAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts: the race detector makes sync.Pool drop objects at random")
	}
	dial := func(context.Context, int) (Conn, error) { return okConn{}, nil }
	e := mustNew(t, Config{Names: []string{"a:1", "b:1", "c:1", "d:1", "e:1"}, Dial: dial})
	defer e.Close()
	for _, seq := range []bool{false, true} {
		round := func(cmd core.Command) {
			b := e.Begin(context.Background())
			dl := time.Now().Add(time.Minute)
			for i := range 5 {
				b.Send(i, cmd, dl)
				if seq {
					if r, ok := b.Receive(nil); !ok || r.Status != core.StatusOK {
						panic(r.Err)
					}
				}
			}
			for range 5 {
				if seq {
					break
				}
				if r, ok := b.Receive(nil); !ok || r.Status != core.StatusOK {
					panic(r.Err)
				}
			}
			b.Close()
		}
		pair := func() { round(acquire("k", 1)); round(release("k", 1)) }
		for range 100 {
			pair()
		}
		assert.Zero(t, testing.AllocsPerRun(500, pair), "sequential=%v", seq)
		// Fenced: the acquire, the raise, the release.
		fenced := func() { round(acquireFenced("k", 1)); round(raise("k", 1, 1<<53+1)); round(release("k", 1)) }
		for range 100 {
			fenced()
		}
		assert.Zero(t, testing.AllocsPerRun(500, fenced), "fenced, sequential=%v", seq)
	}
}

func TestSameServerTwiceIsRefused(t *testing.T) {
	f := newFakeNet(t, 3)
	f.runID[2] = f.runID[0] // node 2 reaches node 0's server under another address
	clock := newManualClock()
	e := mustNew(t, Config{Names: []string{"a:1", "b:1", "proxy:1"}, Dial: f.dial, Clock: clock})
	defer e.Close()
	for range 3 {
		<-f.dials
	}
	refused := 0
	for i := range 3 {
		b := send(e, clock, i, acquire("k", 1), time.Second)
		c := receive(b, nil)
		var r core.Reply
		select {
		case r = <-c: // refused: the node dialled again, and was refused again
		case x := <-f.exchanges:
			x.ok()
			r = wait(t, c)
		}
		b.Close()
		if r.Status == core.StatusError {
			refused++
			require.ErrorIs(t, r.Err, dialspec.ErrMisconfigured)
			assert.NotErrorIs(t, r.Err, core.ErrInvalidConfig)
			assert.ErrorContains(t, r.Err, "is the same server as node")
			assert.ErrorContains(t, r.Err, "run_id "+f.runID[0])
			assert.Contains(t, []int{0, 2}, i, "only the two names of one server")
		} else {
			assert.Equal(t, core.StatusOK, r.Status)
		}
	}
	assert.Equal(t, 1, refused, "the second of the two to connect is refused")
}

func TestRESP(t *testing.T) {
	assert.Equal(t, "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n", string(AppendCommand(nil, []string{"SET", "k", ""})))
	for _, tc := range []struct {
		in   string
		want Reply
		err  bool
	}{
		{"+OK\r\n", Reply{Kind: KindOK}, false},
		{"+QUEUED\r\n", Reply{Kind: KindString, Text: "QUEUED"}, false},
		{"-NOSCRIPT No matching script\r\n", Reply{Kind: KindError}, false},
		{":-1\r\n", Reply{Kind: KindInt, Int: -1}, false},
		{":42\r\n", Reply{Kind: KindInt, Int: 42}, false},
		{"$-1\r\n", Reply{Kind: KindNil}, false},
		{"*-1\r\n", Reply{Kind: KindNil}, false},
		{"_\r\n", Reply{Kind: KindNil}, false},
		{"$12\r\nrun_id:abc\r\n\r\n", Reply{Kind: KindString, Text: "run_id:abc\r\n"}, false},
		{"*1\r\n:1\r\n", Reply{}, true},
		{":x\r\n", Reply{}, true},
		{"+OK\n", Reply{}, true},
		{"%1\r\n", Reply{}, true},
		{"$5\r\nab", Reply{}, true},
	} {
		r, err := ReadReply(bufio.NewReader(strings.NewReader(tc.in)))
		if tc.err {
			assert.Error(t, err, "%q", tc.in)
			continue
		}
		require.NoError(t, err, "%q", tc.in)
		if tc.want.Kind == KindError {
			assert.Equal(t, KindError, r.Kind)
			assert.EqualError(t, r.Err, tc.in[1:len(tc.in)-2])
			continue
		}
		assert.Equal(t, tc.want, r, "%q", tc.in)
	}
}

// mustNew is New, for a Config the test knows valid.
func mustNew(t testing.TB, cfg Config) *Engine {
	t.Helper()
	e, err := New(cfg)
	require.NoError(t, err)
	return e
}

// TestNewRefusesAnInvalidConfig: a Config that cannot work is refused
// with an error matching core.ErrInvalidConfig that says why, before any
// node is dialled.
func TestNewRefusesAnInvalidConfig(t *testing.T) {
	var dials atomic.Int32
	dial := func(context.Context, int) (Conn, error) {
		dials.Add(1)
		return okConn{}, nil
	}
	many := make([]string, core.MaxNodes+1)
	for i := range many {
		many[i] = "n" + strconv.Itoa(i) + ":1"
	}
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"no nodes", Config{Dial: dial}, "no nodes"},
		{"too many", Config{Names: many, Dial: dial}, "33 nodes, more than 32"},
		{"no Dial", Config{Names: []string{"a:1"}}, "no Dial"},
		{"empty name", Config{Names: []string{"a:1", ""}, Dial: dial}, "node 1 has no name"},
		{"twice", Config{Names: []string{"a:1", "b:1", "a:1"}, Dial: dial}, "node 2 (a:1) is node 0 again"},
		{"short Nodes", Config{Names: []string{"a:1", "b:1"}, Dial: dial, Nodes: []NodeConfig{{}}}, "1 NodeConfigs for 2 nodes"},
		{"negative Replicas", Config{Names: []string{"a:1"}, Dial: dial, Nodes: []NodeConfig{{Replicas: -1}}}, "Replicas -1 is negative"},
		{"no WaitTimeout", Config{Names: []string{"a:1"}, Dial: dial, Nodes: []NodeConfig{{Replicas: 1}}}, "positive WaitTimeout"},
	} {
		e, err := New(tc.cfg)
		assert.Nil(t, e, tc.name)
		require.ErrorIs(t, err, core.ErrInvalidConfig, tc.name)
		assert.ErrorContains(t, err, tc.want, tc.name)
	}
	assert.Zero(t, dials.Load(), "nothing dialled")

	e := mustNew(t, Config{Names: many[:core.MaxNodes], Dial: dial})
	e.Close()
	assert.Equal(t, int32(core.MaxNodes), dials.Load(), "MaxNodes nodes start")
}
