package fanout

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers/internal/wire"
)

func newPipelined(t *testing.T, n int, exec Exec, multi ExecMulti) *Fanout {
	t.Helper()
	if exec == nil {
		exec = func(context.Context, int, core.Command) (core.Status, error) {
			return core.StatusError, errors.New("unexpected inline command")
		}
	}
	f := New(Config{Names: names(n), Exec: exec, ExecMulti: multi, WireStrings: true})
	t.Cleanup(f.Close)
	return f
}

// roundOf sends c to every node and receives every reply.
func roundOf(f *Fanout, ctx context.Context, c core.Command, deadline time.Time) []core.Reply {
	b := f.Begin(ctx)
	defer b.Close()
	for i := 0; i < f.Nodes(); i++ {
		b.Send(i, c, deadline)
	}
	out := make([]core.Reply, 0, f.Nodes())
	for i := 0; i < f.Nodes(); i++ {
		r, ok := b.Receive(nil)
		if !ok {
			break
		}
		out = append(out, r)
	}
	return out
}

func TestPipelineBatchesRoundsInQueueOrder(t *testing.T) {
	// While node 0's first pipeline is held, more rounds queue up; the
	// next pipeline carries all of them, in the order they were queued.
	gate := make(chan struct{})
	var mu sync.Mutex
	var pipelines [][]string // node 0's, by key
	var first atomic.Bool
	f := newPipelined(t, 2, nil, func(ctx context.Context, node int, calls []Call, res []Result) {
		if node == 0 {
			var keys []string
			for _, c := range calls {
				keys = append(keys, c.Cmd.Key)
			}
			mu.Lock()
			pipelines = append(pipelines, keys)
			mu.Unlock()
			if first.CompareAndSwap(false, true) {
				<-gate
			}
		}
		for i := range res {
			res[i] = Result{Status: core.StatusOK}
		}
	})
	done := make(chan []core.Reply, 6)
	go func() { done <- roundOf(f, context.Background(), cmd("k0"), soon()) }()
	require.Eventually(t, first.Load, 5*time.Second, time.Millisecond)
	// Queue rounds one after the other: each waits for node 1 only.
	for k := 1; k <= 5; k++ {
		b := f.Begin(context.Background())
		b.Send(0, cmd("k"+string(rune('0'+k))), soon())
		b.Send(1, cmd("x"), soon())
		r, ok := b.Receive(nil)
		require.True(t, ok)
		require.Equal(t, 1, r.Node, "node 0 is held")
		b.Close() // node 0's command stays queued: a straggler
	}
	close(gate)
	assert.Len(t, <-done, 2)
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(pipelines) == 2
	}, 5*time.Second, time.Millisecond)
	assert.Equal(t, [][]string{{"k0"}, {"k1", "k2", "k3", "k4", "k5"}}, pipelines)
}

func TestPipelineWireArguments(t *testing.T) {
	tk := core.TokenFromUint64s(1, 2)
	seen := make(chan Call, 9)
	f := newPipelined(t, 3, nil, func(ctx context.Context, node int, calls []Call, res []Result) {
		for i, c := range calls {
			seen <- c
			res[i] = Result{Status: core.StatusOK}
		}
	})
	for _, c := range []core.Command{
		{Op: core.OpAcquire, Key: "k", Token: tk, TTL: 1500 * time.Millisecond},
		{Op: core.OpExtend, Key: "k", Token: tk, TTL: 2 * time.Second},
		{Op: core.OpRelease, Key: "k", Token: tk},
	} {
		for _, r := range roundOf(f, context.Background(), c, soon()) {
			assert.Equal(t, core.StatusOK, r.Status)
		}
		for i := 0; i < 3; i++ {
			got := <-seen
			assert.Equal(t, c, got.Cmd)
			assert.Equal(t, wire.Token(tk), got.Token)
			if c.Op == core.OpRelease {
				assert.Empty(t, got.TTL)
			} else {
				assert.Equal(t, wire.MillisString(c.TTL), got.TTL)
			}
		}
	}
}

// TestPipelineWithoutWireStrings: a client that encodes from Call.Cmd gets
// the commands and no strings, so nothing is encoded for it.
func TestPipelineWithoutWireStrings(t *testing.T) {
	tk := core.TokenFromUint64s(1, 2)
	seen := make(chan Call, 3)
	f := New(Config{Names: names(3), Exec: func(context.Context, int, core.Command) (core.Status, error) {
		return core.StatusError, errors.New("unexpected inline command")
	}, ExecMulti: func(ctx context.Context, node int, calls []Call, res []Result) {
		for i, c := range calls {
			seen <- c
			res[i] = Result{Status: core.StatusOK}
		}
	}})
	t.Cleanup(f.Close)
	c := core.Command{Op: core.OpAcquire, Key: "k", Token: tk, TTL: time.Second}
	for _, r := range roundOf(f, context.Background(), c, soon()) {
		assert.Equal(t, core.StatusOK, r.Status)
	}
	for i := 0; i < 3; i++ {
		got := <-seen
		assert.Equal(t, c, got.Cmd)
		assert.Empty(t, got.Token)
		assert.Empty(t, got.TTL)
	}
}

func TestPipelineContext(t *testing.T) {
	// A pipeline's deadline is its earliest command's; one command carries
	// its round's values, several rounds' commands carry none; the
	// caller's cancellation never reaches them.
	type seenCtx struct {
		n     int
		dl    time.Time
		value any
	}
	gate := make(chan struct{})
	seen := make(chan seenCtx, 4)
	var calls atomic.Int32
	f := newPipelined(t, 2, nil, func(ctx context.Context, node int, cs []Call, res []Result) {
		if node == 0 {
			dl, _ := ctx.Deadline()
			seen <- seenCtx{len(cs), dl, ctx.Value(ctxKey{})}
			if calls.Add(1) == 1 {
				<-gate
			}
		}
		for i := range res {
			res[i] = Result{Status: core.StatusOK}
		}
	})
	parent, cancel := context.WithCancel(context.WithValue(context.Background(), ctxKey{}, "v"))
	cancel()
	early := time.Now().Add(time.Hour).Round(0)
	late := early.Add(time.Minute)
	// Two commands each, so that they go to the pipeliners (one alone
	// would run inline). Node 1 answers at once.
	got := map[core.Batch]int{}
	send := func(dl time.Time) core.Batch {
		b := f.Begin(parent)
		b.Send(0, cmd("k"), dl)
		b.Send(1, cmd("k"), dl)
		r, ok := b.Receive(nil)
		require.True(t, ok)
		assert.Equal(t, core.StatusOK, r.Status)
		got[b]++
		return b
	}
	b0 := send(late)
	s := <-seen
	assert.Equal(t, seenCtx{1, late, "v"}, s)
	b1, b2 := send(late), send(early)
	close(gate)
	s = <-seen
	assert.Equal(t, 2, s.n)
	assert.True(t, s.dl.Equal(early), "deadline %v, want %v", s.dl, early)
	assert.Nil(t, s.value)
	for _, b := range []core.Batch{b0, b1, b2} {
		for ; got[b] < 2; got[b]++ {
			r, ok := b.Receive(nil)
			require.True(t, ok)
			assert.Equal(t, core.StatusOK, r.Status)
		}
		b.Close()
	}
}

func TestPipelineTimeoutsAndErrors(t *testing.T) {
	boom := errors.New("boom")
	var calls atomic.Int32
	f := newPipelined(t, 2, nil, func(ctx context.Context, node int, cs []Call, res []Result) {
		switch calls.Add(1) {
		case 1, 2: // a hung node: the context ends at the deadline
			<-ctx.Done()
			for i := range res {
				res[i] = Result{Status: core.StatusError, Err: ctx.Err()}
			}
			return
		}
		if ctx.Err() != nil {
			panic("reused an expired context")
		}
		for i := range res {
			res[i] = Result{Status: core.StatusError, Err: boom}
		}
	})
	start := time.Now()
	rs := roundOf(f, context.Background(), cmd("k"), time.Now().Add(30*time.Millisecond))
	assert.Less(t, time.Since(start), 5*time.Second)
	require.Len(t, rs, 2)
	for _, r := range rs {
		assert.Equal(t, core.StatusTimeout, r.Status)
		assert.ErrorIs(t, r.Err, context.DeadlineExceeded)
	}
	for _, r := range roundOf(f, context.Background(), cmd("k"), soon()) {
		assert.Equal(t, core.StatusError, r.Status)
		assert.ErrorIs(t, r.Err, boom)
		assert.Contains(t, r.Err.Error(), "fake:")
	}
	// Expired before it was sent: not sent.
	n := calls.Load()
	for _, r := range roundOf(f, context.Background(), cmd("k"), time.Now().Add(-time.Millisecond)) {
		assert.Equal(t, core.StatusTimeout, r.Status)
	}
	assert.Equal(t, n, calls.Load())
}

func TestPipelineSequentialRunsInline(t *testing.T) {
	caller := goid()
	f := newPipelined(t, 2, func(ctx context.Context, node int, c core.Command) (core.Status, error) {
		assert.Equal(t, caller, goid())
		return core.StatusOK, nil
	}, func(context.Context, int, []Call, []Result) { panic("pipelined a sequential command") })
	b := f.Begin(context.Background())
	for i := 0; i < 2; i++ {
		b.Send(i, cmd("k"), soon())
		r, ok := b.Receive(nil)
		require.True(t, ok)
		assert.Equal(t, core.StatusOK, r.Status)
	}
	b.Close()
}

func TestPipelineCloseWithQueuedJobs(t *testing.T) {
	// Close while a pipeline is held: it finishes by its deadline, the
	// queued commands answer ErrClosed, nothing blocks or leaks.
	started := make(chan struct{}, 1)
	f := New(Config{Names: names(2), Exec: func(context.Context, int, core.Command) (core.Status, error) {
		return core.StatusOK, nil
	}, ExecMulti: func(ctx context.Context, node int, cs []Call, res []Result) {
		if node == 0 {
			select {
			case started <- struct{}{}:
			default:
			}
			<-ctx.Done()
		}
		for i := range res {
			res[i] = Result{Status: core.StatusError, Err: ctx.Err()}
			if ctx.Err() == nil {
				res[i] = Result{Status: core.StatusOK}
			}
		}
	}})
	dl := time.Now().Add(200 * time.Millisecond)
	var batches []core.Batch
	for k := 0; k < 3; k++ {
		b := f.Begin(context.Background())
		b.Send(0, cmd("k"), dl)
		b.Send(1, cmd("k"), dl)
		r, ok := b.Receive(nil)
		require.True(t, ok)
		assert.Equal(t, 1, r.Node)
		batches = append(batches, b)
		if k == 0 {
			<-started
		}
	}
	f.Close()
	for k, b := range batches {
		r, ok := b.Receive(nil)
		require.True(t, ok)
		if k == 0 {
			assert.Equal(t, core.StatusTimeout, r.Status)
		} else {
			assert.ErrorIs(t, r.Err, ErrClosed)
		}
		b.Close()
	}
}

// pipelineSeen is one ExecMulti call on a node, as a fake client saw it.
type pipelineSeen struct {
	ops []core.Op
	dl  time.Time // the context's deadline
}

func opsOf(calls []Call) []core.Op {
	ops := make([]core.Op, len(calls))
	for i, c := range calls {
		ops[i] = c.Cmd.Op
	}
	return ops
}

// within returns the next value from ch, failing the test if none comes
// in 5 s (a bound for a broken engine, not a synchronization).
func within[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(5 * time.Second):
		t.Fatal("nothing came")
		panic("unreachable")
	}
}

func release(key string) core.Command {
	return core.Command{Op: core.OpRelease, Key: key, Token: core.TokenFromUint64s(1, 2)}
}

// TestPipelineLateReleaseFollowsHungSet: a node hangs on an attempt's SET
// until the SET's deadline; the attempt's cleanup release, queued behind
// it, has a deadline that passes meanwhile. The release must still go on
// the wire after the SET (the server may run the SET once it wakes, and
// the release is what undoes it), with a deadline of its own; its caller
// hears StatusTimeout once its deadline has passed, as before. An acquire
// queued behind the SET with the same deadline is not sent: an unsent SET
// leaves nothing behind.
func TestPipelineLateReleaseFollowsHungSet(t *testing.T) {
	seen := make(chan pipelineSeen, 8)
	var calls atomic.Int32
	f := newPipelined(t, 2, nil, func(ctx context.Context, node int, cs []Call, res []Result) {
		if node == 0 {
			dl, _ := ctx.Deadline()
			seen <- pipelineSeen{opsOf(cs), dl}
			if calls.Add(1) == 1 {
				<-ctx.Done() // hung until the SET's deadline
				for i := range res {
					res[i] = Result{Status: core.StatusError, Err: ctx.Err()}
				}
				return
			}
		}
		for i := range res {
			res[i] = Result{Status: core.StatusOK}
		}
	})
	start := time.Now()
	setDL := start.Add(200 * time.Millisecond)
	lateDL := start.Add(100 * time.Millisecond) // passes while queued

	attempt := f.Begin(context.Background())
	attempt.Send(0, cmd("k"), setDL)
	attempt.Send(1, cmd("k"), setDL)
	r, ok := attempt.Receive(nil)
	require.True(t, ok)
	require.Equal(t, 1, r.Node)
	attempt.Close()          // node 0's SET is a straggler
	first := within(t, seen) // the SET is on the wire before the release is queued
	require.Equal(t, []core.Op{core.OpAcquire}, first.ops)

	// The cleanup's release, then another round's acquire, both queued
	// behind the SET on node 0 (node 1 answers at once).
	var rounds []core.Batch
	for _, c := range []core.Command{release("k"), cmd("other")} {
		b := f.Begin(context.Background())
		b.Send(0, c, lateDL)
		b.Send(1, c, lateDL)
		r, ok := b.Receive(nil)
		require.True(t, ok)
		require.Equal(t, core.Reply{Node: 1, Status: core.StatusOK}, r)
		rounds = append(rounds, b)
	}
	for _, b := range rounds {
		r, ok := b.Receive(nil)
		require.True(t, ok)
		assert.Equal(t, 0, r.Node)
		assert.Equal(t, core.StatusTimeout, r.Status)
		assert.ErrorIs(t, r.Err, context.DeadlineExceeded)
		b.Close()
	}
	assert.False(t, time.Now().Before(lateDL), "answered before its deadline")

	second := within(t, seen)
	assert.Equal(t, []core.Op{core.OpRelease}, second.ops, "the late release is sent, the late acquire is not")
	assert.True(t, second.dl.After(setDL), "the late release has a deadline of its own (%v), not the passed one", second.dl.Sub(start))
	assert.Empty(t, seen)
}

// TestPipelineReleaseBehindMissedDeadline: once a node's pipeline missed
// its deadline (its client has probably given up the connection, and a new
// one may take a dial), a release taken next is given its full time from
// then on the wire, though its caller is answered at its own deadline:
// the release still reaches the node if the node recovers, rather than
// expiring during the reconnection.
func TestPipelineReleaseBehindMissedDeadline(t *testing.T) {
	seen := make(chan pipelineSeen, 8)
	gate := make(chan struct{})
	var calls atomic.Int32
	f := newPipelined(t, 2, nil, func(ctx context.Context, node int, cs []Call, res []Result) {
		if node == 0 {
			dl, _ := ctx.Deadline()
			seen <- pipelineSeen{opsOf(cs), dl}
			switch calls.Add(1) {
			case 1:
				<-ctx.Done() // hung until the SET's deadline
				for i := range res {
					res[i] = Result{Status: core.StatusError, Err: ctx.Err()}
				}
				return
			case 2:
				// Reconnecting, past the release's own deadline. (A
				// context that ends at that deadline ends it too, and
				// the test fails below rather than hang.)
				select {
				case <-gate:
				case <-ctx.Done():
				}
			}
		}
		for i := range res {
			res[i] = Result{Status: core.StatusOK}
		}
	})
	start := time.Now()
	setDL := start.Add(100 * time.Millisecond)
	relDL := start.Add(150 * time.Millisecond) // not passed when it is taken

	attempt := f.Begin(context.Background())
	attempt.Send(0, cmd("k"), setDL)
	attempt.Send(1, cmd("k"), setDL)
	r, ok := attempt.Receive(nil)
	require.True(t, ok)
	require.Equal(t, 1, r.Node)
	attempt.Close()
	require.Equal(t, []core.Op{core.OpAcquire}, within(t, seen).ops)

	cleanup := f.Begin(context.Background())
	cleanup.Send(0, release("k"), relDL)
	cleanup.Send(1, release("k"), relDL)
	got := map[int]core.Reply{}
	for i := 0; i < 2; i++ {
		r, ok := cleanup.Receive(nil) // node 0's comes while its pipeline is held
		require.True(t, ok)
		got[r.Node] = r
	}
	cleanup.Close()
	close(gate)
	assert.Equal(t, core.StatusOK, got[1].Status)
	assert.Equal(t, core.StatusTimeout, got[0].Status)
	assert.ErrorIs(t, got[0].Err, context.DeadlineExceeded)
	assert.False(t, time.Now().Before(relDL), "answered before its deadline")

	second := within(t, seen)
	assert.Equal(t, []core.Op{core.OpRelease}, second.ops)
	assert.True(t, second.dl.After(relDL.Add(50*time.Millisecond)), "deadline on the wire %v, want its full time counted from %v", second.dl.Sub(start), setDL.Sub(start))

	// The node answers again: the next pipeline runs as usual.
	b := f.Begin(context.Background())
	b.Send(0, release("k"), soon())
	b.Send(1, release("k"), soon())
	for i := 0; i < 2; i++ {
		r, ok := b.Receive(nil)
		require.True(t, ok)
		assert.Equal(t, core.StatusOK, r.Status)
	}
	b.Close()
	third := within(t, seen)
	assert.Equal(t, []core.Op{core.OpRelease}, third.ops)
}

// TestCloseSendsBufferedReleases: a cleanup that awaits no node sends its
// releases and closes the batch without a Receive (core's Round is done
// once every awaited reply is in); the releases must still go out, to
// every node, without blocking Close. Acquires and extends still buffered
// at Close are dropped: nothing was sent for them.
func TestCloseSendsBufferedReleases(t *testing.T) {
	seen := make(chan int, 8)
	gate := make(chan struct{})
	f := newPipelined(t, 3, func(ctx context.Context, node int, c core.Command) (core.Status, error) {
		return core.StatusOK, nil // the awaited node 0, inline
	}, func(ctx context.Context, node int, cs []Call, res []Result) {
		for i, c := range cs {
			require.Equal(t, core.OpRelease, c.Cmd.Op)
			seen <- node
			res[i] = Result{Status: core.StatusOK}
		}
		if node == 2 {
			<-gate // a slow node does not hold up Close
		}
	})
	b := f.Begin(context.Background())
	b.Send(0, release("k"), soon())
	r, ok := b.Receive(nil)
	require.True(t, ok)
	assert.Equal(t, core.Reply{Node: 0, Status: core.StatusOK}, r)
	b.Send(1, release("k"), soon())
	b.Send(2, release("k"), soon())
	b.Close()
	got := []int{within(t, seen), within(t, seen)}
	assert.ElementsMatch(t, []int{1, 2}, got)
	close(gate)

	for _, c := range []core.Command{cmd("k"), {Op: core.OpExtend, Key: "k", TTL: time.Second}} {
		b := f.Begin(context.Background())
		b.Send(1, c, soon())
		b.Send(2, c, soon())
		b.Close()
	}
	// A release after them on both nodes: nothing else comes first.
	b = f.Begin(context.Background())
	b.Send(1, release("k"), soon())
	b.Send(2, release("k"), soon())
	for i := 0; i < 2; i++ {
		_, ok := b.Receive(nil)
		require.True(t, ok)
	}
	b.Close()
	assert.ElementsMatch(t, []int{1, 2}, []int{within(t, seen), within(t, seen)})
	assert.Empty(t, seen)
}
