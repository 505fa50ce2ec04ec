package fanout

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers/internal/wire"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var _ core.Driver = (*Fanout)(nil)

func names(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "fake:" + strconv.Itoa(i)
	}
	return out
}

func goid() uint64 {
	var buf [64]byte
	s := buf[:runtime.Stack(buf[:], false)]
	s = bytes.TrimPrefix(s, []byte("goroutine "))
	s = s[:bytes.IndexByte(s, ' ')]
	id, _ := strconv.ParseUint(string(s), 10, 64)
	return id
}

func newFanout(t *testing.T, n int, exec Exec) *Fanout {
	t.Helper()
	f := New(Config{Names: names(n), Exec: exec, Workers: 4})
	t.Cleanup(f.Close)
	return f
}

func cmd(key string) core.Command {
	return core.Command{Op: core.OpAcquire, Key: key, Token: core.TokenFromUint64s(1, 2), TTL: time.Second}
}

func soon() time.Time { return time.Now().Add(5 * time.Second) }

func TestSequentialRunsInline(t *testing.T) {
	caller := goid()
	var calls []int
	f := newFanout(t, 3, func(ctx context.Context, node int, c core.Command) (core.Status, error) {
		assert.Equal(t, caller, goid(), "sequential command must run on the caller's goroutine")
		calls = append(calls, node)
		return core.StatusOK, nil
	})
	b := f.Begin(context.Background())
	for i := 0; i < 3; i++ {
		b.Send(i, cmd("k"), soon())
		r, ok := b.Receive(nil)
		require.True(t, ok)
		assert.Equal(t, core.Reply{Node: i, Status: core.StatusOK}, r)
	}
	b.Close()
	assert.Equal(t, []int{0, 1, 2}, calls)
}

func TestMultiplexedRunsOnWorkers(t *testing.T) {
	caller := goid()
	var inline atomic.Int32
	release := make(chan struct{})
	f := newFanout(t, 3, func(ctx context.Context, node int, c core.Command) (core.Status, error) {
		if goid() == caller {
			inline.Add(1)
		}
		if node == 2 {
			<-release // a hung last node must not hold up the others' replies
		}
		return core.Status(node + 1), nil
	})
	b := f.Begin(context.Background())
	for i := 0; i < 3; i++ {
		b.Send(i, cmd("k"), soon())
	}
	got := map[int]core.Status{}
	for k := 0; k < 2; k++ {
		r, ok := b.Receive(nil)
		require.True(t, ok)
		got[r.Node] = r.Status
	}
	assert.Equal(t, map[int]core.Status{0: core.StatusOK, 1: core.StatusHeld}, got)
	close(release)
	r, ok := b.Receive(nil)
	require.True(t, ok)
	assert.Equal(t, core.Reply{Node: 2, Status: core.StatusMissing}, r)
	b.Close()
	assert.Zero(t, inline.Load(), "no multiplexed command runs on the caller")
}

func TestRepliesInArrivalOrder(t *testing.T) {
	gates := []chan struct{}{make(chan struct{}), make(chan struct{}), make(chan struct{}), make(chan struct{})}
	f := newFanout(t, 5, func(ctx context.Context, node int, c core.Command) (core.Status, error) {
		if node < 4 {
			<-gates[node]
		}
		return core.StatusOK, nil
	})
	b := f.Begin(context.Background())
	for i := 0; i < 5; i++ {
		b.Send(i, cmd("k"), soon())
	}
	// Node 4 has no gate: it comes first.
	r, ok := b.Receive(nil)
	require.True(t, ok)
	assert.Equal(t, 4, r.Node)
	for _, i := range []int{2, 0, 3, 1} {
		close(gates[i])
		r, ok := b.Receive(nil)
		require.True(t, ok)
		assert.Equal(t, i, r.Node)
	}
	b.Close()
}

type ctxKey struct{}

func TestContextDeadlineAndValues(t *testing.T) {
	deadline := time.Now().Add(time.Hour).Round(0)
	type seenCtx struct {
		dl    time.Time
		has   bool
		value any
		err   error
	}
	seen := make(chan seenCtx, 3)
	f := newFanout(t, 3, func(ctx context.Context, node int, c core.Command) (core.Status, error) {
		dl, has := ctx.Deadline()
		seen <- seenCtx{dl, has, ctx.Value(ctxKey{}), ctx.Err()}
		return core.StatusOK, nil
	})
	parent, cancel := context.WithCancel(context.WithValue(context.Background(), ctxKey{}, "v"))
	defer cancel()
	for _, n := range []int{3, 1} { // multiplexed, then one inline command
		b := f.Begin(parent)
		cancel() // the caller's cancellation must not reach the commands
		for i := 0; i < n; i++ {
			b.Send(i, cmd("k"), deadline)
		}
		for i := 0; i < n; i++ {
			r, ok := b.Receive(nil)
			require.True(t, ok)
			assert.Equal(t, core.StatusOK, r.Status)
			s := <-seen
			assert.True(t, s.has)
			assert.True(t, s.dl.Equal(deadline), "deadline %v, want %v", s.dl, deadline)
			assert.Equal(t, "v", s.value)
			assert.NoError(t, s.err)
		}
		b.Close()
	}
}

func TestContextExpiresAtDeadline(t *testing.T) {
	// A client that waits on Done sees it close at the deadline, with
	// DeadlineExceeded; the context is not reused after that, and the next
	// command gets a live one.
	var calls atomic.Int32
	f := newFanout(t, 2, func(ctx context.Context, node int, c core.Command) (core.Status, error) {
		if calls.Add(1) <= 3 { // round 0: one inline command, two on workers
			<-ctx.Done()
			return core.StatusError, ctx.Err()
		}
		if ctx.Err() != nil {
			return core.StatusError, errors.New("reused an expired context")
		}
		select {
		case <-ctx.Done():
			return core.StatusError, errors.New("done already closed")
		default:
		}
		return core.StatusOK, nil
	})
	for round, want := range []core.Status{core.StatusTimeout, core.StatusOK, core.StatusOK} {
		for _, n := range []int{1, 2} {
			b := f.Begin(context.Background())
			for i := 0; i < n; i++ {
				b.Send(i, cmd("k"), time.Now().Add(20*time.Millisecond))
			}
			for i := 0; i < n; i++ {
				r, ok := b.Receive(nil)
				require.True(t, ok)
				if round == 0 {
					assert.Equal(t, want, r.Status)
					assert.ErrorIs(t, r.Err, context.DeadlineExceeded)
				} else {
					assert.Equal(t, want, r.Status, "%v", r.Err)
				}
			}
			b.Close()
		}
	}
}

func TestExpiredDeadlineIsTimeoutWithoutExec(t *testing.T) {
	var calls atomic.Int32
	f := newFanout(t, 3, func(ctx context.Context, node int, c core.Command) (core.Status, error) {
		calls.Add(1)
		return core.StatusOK, nil
	})
	b := f.Begin(context.Background())
	past := time.Now().Add(-time.Millisecond)
	for i := 0; i < 3; i++ {
		b.Send(i, cmd("k"), past)
	}
	for i := 0; i < 3; i++ {
		r, ok := b.Receive(nil)
		require.True(t, ok)
		assert.Equal(t, core.StatusTimeout, r.Status)
		assert.ErrorIs(t, r.Err, context.DeadlineExceeded)
	}
	b.Close()
	assert.Zero(t, calls.Load())
}

func TestErrorMapping(t *testing.T) {
	boom := errors.New("boom")
	f := newFanout(t, 4, func(ctx context.Context, node int, c core.Command) (core.Status, error) {
		switch node {
		case 0:
			return core.StatusError, boom
		case 1:
			<-ctx.Done() // the deadline bounds the command
			return core.StatusError, ctx.Err()
		case 2:
			<-ctx.Done()
			return core.StatusError, boom // failed after the deadline: a timeout
		}
		return core.StatusTimeout, boom // the client says so
	})
	b := f.Begin(context.Background())
	for i := 0; i < 4; i++ {
		b.Send(i, core.Command{Op: core.OpRelease, Key: "k"}, time.Now().Add(30*time.Millisecond))
	}
	got := map[int]core.Reply{}
	for i := 0; i < 4; i++ {
		r, ok := b.Receive(nil)
		require.True(t, ok)
		got[r.Node] = r
	}
	b.Close()
	want := []core.Status{core.StatusError, core.StatusTimeout, core.StatusTimeout, core.StatusTimeout}
	for i, s := range want {
		r := got[i]
		assert.Equal(t, s, r.Status, "node %d", i)
		var ne *wire.NodeError
		require.ErrorAs(t, r.Err, &ne)
		assert.Equal(t, i, ne.Node)
		assert.Equal(t, "fake:"+strconv.Itoa(i), ne.Addr)
		assert.Equal(t, core.OpRelease, ne.Op)
		assert.Contains(t, r.Err.Error(), "fake:"+strconv.Itoa(i))
	}
	assert.ErrorIs(t, got[0].Err, boom)
	assert.ErrorIs(t, got[1].Err, context.DeadlineExceeded)
}

func TestCancel(t *testing.T) {
	var calls atomic.Int32
	release := make(chan struct{})
	f := newFanout(t, 3, func(ctx context.Context, node int, c core.Command) (core.Status, error) {
		calls.Add(1)
		if node != 2 {
			<-release
		}
		return core.StatusOK, nil
	})
	t.Run("before flush nothing is sent", func(t *testing.T) {
		cancel := make(chan struct{})
		close(cancel)
		b := f.Begin(context.Background())
		for i := 0; i < 3; i++ {
			b.Send(i, cmd("k"), soon())
		}
		_, ok := b.Receive(cancel)
		assert.False(t, ok)
		b.Close()
		assert.Zero(t, calls.Load())
	})
	t.Run("while waiting", func(t *testing.T) {
		cancel := make(chan struct{})
		b := f.Begin(context.Background())
		for i := 0; i < 3; i++ {
			b.Send(i, cmd("k"), soon())
		}
		r, ok := b.Receive(cancel) // node 2, the only one not blocked
		require.True(t, ok)
		assert.Equal(t, 2, r.Node)
		time.AfterFunc(10*time.Millisecond, func() { close(cancel) })
		_, ok = b.Receive(cancel)
		assert.False(t, ok)
		b.Close() // stragglers still running: must not block
		close(release)
	})
}

func TestCloseWithStragglersDoesNotBlockOrLeak(t *testing.T) {
	release := make(chan struct{})
	var finished atomic.Int32
	f := New(Config{Names: names(5), Workers: 2, Exec: func(ctx context.Context, node int, c core.Command) (core.Status, error) {
		defer finished.Add(1)
		if node != 0 && node != 4 {
			<-release
		}
		return core.StatusOK, nil
	}})
	for round := 0; round < 2; round++ {
		b := f.Begin(context.Background())
		for i := 0; i < 5; i++ {
			b.Send(i, cmd("k"), soon())
		}
		for k := 0; k < 2; k++ {
			_, ok := b.Receive(nil)
			require.True(t, ok)
		}
		done := make(chan struct{})
		go func() { b.Close(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("Close blocked on stragglers")
		}
	}
	close(release)
	// Every straggler runs (a job still queued when Close begins would
	// answer ErrClosed instead, so wait for them first).
	require.Eventually(t, func() bool { return finished.Load() == 10 }, 5*time.Second, time.Millisecond)
	f.Close()
	// goleak in TestMain checks that the workers are gone.
}

func TestStragglersNeverReachALaterRound(t *testing.T) {
	// Rounds with random latencies, closed after a random number of
	// replies: every reply received must belong to the round's own key.
	const n = 5
	f := New(Config{Names: names(n), Workers: 8, Exec: func(ctx context.Context, node int, c core.Command) (core.Status, error) {
		if d := time.Duration(rand.IntN(300)) * time.Microsecond; d > 100*time.Microsecond {
			time.Sleep(d)
		}
		if c.Key[len(c.Key)-1]%2 == 0 {
			return core.StatusOK, nil
		}
		return core.StatusHeld, nil
	}})
	defer f.Close()
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := 0; round < 200; round++ {
				key := fmt.Sprintf("g%d-r%d", g, round)
				want := core.StatusHeld
				if key[len(key)-1]%2 == 0 {
					want = core.StatusOK
				}
				b := f.Begin(context.Background())
				seq := rand.IntN(3) == 0
				stop := 1 + rand.IntN(n)
				seen := 0
				for i := 0; i < n; i++ {
					b.Send(i, cmd(key), soon())
					if seq {
						r, ok := b.Receive(nil)
						if !assert.True(t, ok) || !assert.Equal(t, want, r.Status, "round %s", key) {
							return
						}
						seen++
					}
				}
				for ; !seq && seen < stop; seen++ {
					r, ok := b.Receive(nil)
					if !assert.True(t, ok) || !assert.Equal(t, want, r.Status, "round %s", key) {
						return
					}
				}
				b.Close()
			}
		}()
	}
	wg.Wait()
}

func TestFullQueueMakesProgress(t *testing.T) {
	var running, peak atomic.Int32
	f := New(Config{Names: names(3), Workers: 1, Queue: 1, Exec: func(ctx context.Context, node int, c core.Command) (core.Status, error) {
		k := running.Add(1)
		for p := peak.Load(); k > p && !peak.CompareAndSwap(p, k); p = peak.Load() {
		}
		time.Sleep(time.Millisecond)
		running.Add(-1)
		return core.StatusOK, nil
	}})
	defer f.Close()
	var wg sync.WaitGroup
	for g := 0; g < 6; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := 0; round < 10; round++ {
				b := f.Begin(context.Background())
				for i := 0; i < 3; i++ {
					b.Send(i, cmd("k"), soon())
				}
				for i := 0; i < 3; i++ {
					r, ok := b.Receive(nil)
					assert.True(t, ok)
					assert.Equal(t, core.StatusOK, r.Status)
				}
				b.Close()
			}
		}()
	}
	wg.Wait()
	assert.LessOrEqual(t, peak.Load(), int32(3*1+6), "one worker per node plus the inline callers")
}

func TestClosedFanoutAnswersErrClosed(t *testing.T) {
	block := make(chan struct{})
	var once sync.Once
	started := make(chan struct{})
	f := New(Config{Names: names(3), Workers: 1, Exec: func(ctx context.Context, node int, c core.Command) (core.Status, error) {
		if node == 0 {
			once.Do(func() { close(started) })
			<-block
		}
		return core.StatusOK, nil
	}})
	// Occupy node 0's only worker, then queue another job behind it.
	b1 := f.Begin(context.Background())
	b1.Send(0, cmd("a"), soon())
	b1.Send(1, cmd("a"), soon())
	_, ok := b1.Receive(nil) // node 1
	require.True(t, ok)
	<-started
	b2 := f.Begin(context.Background())
	b2.Send(0, cmd("b"), soon())
	b2.Send(1, cmd("b"), soon())
	r, ok := b2.Receive(nil) // node 1; node 0 queued
	require.True(t, ok)
	assert.Equal(t, 1, r.Node)

	closed := make(chan struct{})
	go func() { f.Close(); close(closed) }()
	time.Sleep(10 * time.Millisecond)
	close(block) // the busy worker finishes its command, then Close returns
	<-closed

	r, ok = b1.Receive(nil)
	require.True(t, ok)
	assert.Equal(t, core.Reply{Node: 0, Status: core.StatusOK}, r, "a running command completes")
	r, ok = b2.Receive(nil)
	require.True(t, ok)
	assert.Equal(t, core.StatusError, r.Status)
	assert.ErrorIs(t, r.Err, ErrClosed, "a queued command is answered")
	b1.Close()
	b2.Close()

	b := f.Begin(context.Background())
	for i := 0; i < 3; i++ {
		b.Send(i, cmd("c"), soon())
	}
	for i := 0; i < 3; i++ {
		r, ok := b.Receive(nil)
		require.True(t, ok)
		assert.Equal(t, core.StatusError, r.Status)
		assert.ErrorIs(t, r.Err, ErrClosed)
	}
	b.Close()
	f.Close() // idempotent
}

func TestCloseRacingDispatchLosesNoJob(t *testing.T) {
	for iter := 0; iter < 50; iter++ {
		f := New(Config{Names: names(3), Workers: 1, Exec: func(ctx context.Context, node int, c core.Command) (core.Status, error) {
			return core.StatusOK, nil
		}})
		var wg sync.WaitGroup
		for g := 0; g < 4; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for round := 0; round < 20; round++ {
					b := f.Begin(context.Background())
					for i := 0; i < 3; i++ {
						b.Send(i, cmd("k"), soon())
					}
					for i := 0; i < 3; i++ {
						_, ok := b.Receive(nil) // would hang if a job were lost
						assert.True(t, ok)
					}
					b.Close()
				}
			}()
		}
		time.Sleep(time.Duration(rand.IntN(200)) * time.Microsecond)
		f.Close()
		wg.Wait()
	}
}

func TestSendOutsideContractIgnored(t *testing.T) {
	f := newFanout(t, 2, func(ctx context.Context, node int, c core.Command) (core.Status, error) {
		return core.StatusOK, nil
	})
	b := f.Begin(context.Background())
	b.Send(-1, cmd("k"), soon())
	b.Send(2, cmd("k"), soon())
	_, ok := b.Receive(nil)
	assert.False(t, ok, "nothing outstanding")
	b.Send(0, cmd("k"), soon())
	b.Send(1, cmd("k"), soon())
	b.Send(1, cmd("k"), soon()) // a third command for two nodes
	for i := 0; i < 2; i++ {
		_, ok := b.Receive(nil)
		assert.True(t, ok)
	}
	_, ok = b.Receive(nil)
	assert.False(t, ok)
	b.Close()
}

func TestAllocs(t *testing.T) {
	if testing.Short() {
		t.Skip()
	}
	f := newFanout(t, 3, func(ctx context.Context, node int, c core.Command) (core.Status, error) {
		return core.StatusOK, nil
	})
	ctx := context.Background()
	round := func(seq bool) {
		b := f.Begin(ctx)
		for i := 0; i < 3; i++ {
			b.Send(i, cmd("k"), soon())
			if seq {
				b.Receive(nil)
			}
		}
		if !seq {
			for i := 0; i < 3; i++ {
				b.Receive(nil)
			}
		}
		b.Close()
	}
	for _, seq := range []bool{true, false} {
		a := testing.AllocsPerRun(200, func() { round(seq) })
		t.Logf("sequential=%v: %.1f allocs per round of 3 (fake exec; the deadline context is most of it)", seq, a)
	}
}

func BenchmarkRound(b *testing.B) {
	for _, n := range []int{1, 3, 5} {
		for _, seq := range []bool{false, true} {
			b.Run(fmt.Sprintf("n=%d/sequential=%v", n, seq), func(b *testing.B) {
				f := New(Config{Names: names(n), Exec: func(ctx context.Context, node int, c core.Command) (core.Status, error) {
					return core.StatusOK, nil
				}})
				defer f.Close()
				ctx := context.Background()
				c := cmd("k")
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						bt := f.Begin(ctx)
						dl := time.Now().Add(time.Second)
						for i := 0; i < n; i++ {
							bt.Send(i, c, dl)
							if seq {
								bt.Receive(nil)
							}
						}
						if !seq {
							for i := 0; i < n; i++ {
								bt.Receive(nil)
							}
						}
						bt.Close()
					}
				})
			})
		}
	}
}

// TestLateReleaseStillRuns: with workers (no ExecMulti), a release whose
// deadline passes while it is queued behind a hung command still runs,
// with a deadline of its own; its caller hears StatusTimeout. An acquire
// in its place is not run.
func TestLateReleaseStillRuns(t *testing.T) {
	type run struct {
		op core.Op
		dl time.Time
	}
	ran := make(chan run, 8)
	var calls atomic.Int32
	f := New(Config{Names: names(2), Workers: 1, Exec: func(ctx context.Context, node int, c core.Command) (core.Status, error) {
		if node == 1 {
			return core.StatusOK, nil
		}
		dl, _ := ctx.Deadline()
		ran <- run{c.Op, dl}
		if calls.Add(1) == 1 {
			<-ctx.Done() // hung until the SET's deadline
			return core.StatusError, ctx.Err()
		}
		return core.StatusOK, nil
	}})
	t.Cleanup(f.Close)
	start := time.Now()
	setDL := start.Add(200 * time.Millisecond)
	lateDL := start.Add(100 * time.Millisecond) // passes while queued
	round := func(c core.Command, dl time.Time, replies int) core.Batch {
		b := f.Begin(context.Background())
		b.Send(0, c, dl)
		b.Send(1, c, dl)
		for i := 0; i < replies; i++ {
			r, ok := b.Receive(nil)
			require.True(t, ok)
			assert.Equal(t, core.Reply{Node: 1, Status: core.StatusOK}, r)
		}
		return b
	}
	round(cmd("k"), setDL, 1).Close() // node 0's SET is a straggler
	require.Equal(t, core.OpAcquire, within(t, ran).op)
	// The cleanup's release, then another round's acquire, both queued
	// behind the SET.
	rounds := []core.Batch{round(release("k"), lateDL, 1), round(cmd("other"), lateDL, 1)}
	for _, b := range rounds {
		r, ok := b.Receive(nil)
		require.True(t, ok)
		assert.Equal(t, 0, r.Node)
		assert.Equal(t, core.StatusTimeout, r.Status)
		assert.ErrorIs(t, r.Err, context.DeadlineExceeded)
		b.Close()
	}
	got := within(t, ran)
	assert.Equal(t, core.OpRelease, got.op)
	assert.True(t, got.dl.After(setDL), "the late release has a deadline of its own (%v)", got.dl.Sub(start))
	assert.Empty(t, ran)
}
