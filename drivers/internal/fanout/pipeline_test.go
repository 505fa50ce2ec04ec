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
