package redlock_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/core/memnode"
	"github.com/redlock-go/redlock/drivers/redigo"
	"github.com/redlock-go/redlock/internal/redistest"
	"github.com/redlock-go/redlock/internal/testguard"
)

// recorder keeps every event an Observer hears, Votes copied.
type recorder struct {
	mu       sync.Mutex
	acquires []redlock.AcquireEvent
	votes    []redlock.VoteEvent
	releases []redlock.ReleaseEvent
	extends  []redlock.ExtendEvent
	losses   []redlock.LossEvent
	waiters  []redlock.WaitersEvent
	handoffs []redlock.HandoffEvent
	fences   []redlock.FenceEvent
	lost     chan struct{} // a Loss came
}

func newRecorder() *recorder { return &recorder{lost: make(chan struct{}, 1)} }

func (r *recorder) observer() redlock.Observer {
	return redlock.Observer{
		Acquire: func(e redlock.AcquireEvent) {
			e.Votes = slices.Clone(e.Votes)
			r.mu.Lock()
			defer r.mu.Unlock()
			r.acquires = append(r.acquires, e)
		},
		Vote: func(e redlock.VoteEvent) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.votes = append(r.votes, e)
		},
		Release: func(e redlock.ReleaseEvent) {
			e.Votes = slices.Clone(e.Votes)
			r.mu.Lock()
			defer r.mu.Unlock()
			r.releases = append(r.releases, e)
		},
		Extend: func(e redlock.ExtendEvent) {
			e.Votes = slices.Clone(e.Votes)
			r.mu.Lock()
			defer r.mu.Unlock()
			r.extends = append(r.extends, e)
		},
		Loss: func(e redlock.LossEvent) {
			r.mu.Lock()
			r.losses = append(r.losses, e)
			r.mu.Unlock()
			select {
			case r.lost <- struct{}{}:
			default:
			}
		},
		Waiters: func(e redlock.WaitersEvent) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.waiters = append(r.waiters, e)
		},
		Handoff: func(e redlock.HandoffEvent) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.handoffs = append(r.handoffs, e)
		},
		Fence: func(e redlock.FenceEvent) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.fences = append(r.fences, e)
		},
	}
}

// takeVotes returns and forgets the votes heard so far.
func (r *recorder) takeVotes() []redlock.VoteEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	v := r.votes
	r.votes = nil
	return v
}

func (r *recorder) lastAcquire(t *testing.T) redlock.AcquireEvent {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	require.NotEmpty(t, r.acquires)
	return r.acquires[len(r.acquires)-1]
}

// requireVotes checks that votes are answers of nodes to op on key, each
// with status want, named as the driver names them.
func requireVotes(t *testing.T, d redlock.Driver, votes []redlock.VoteEvent, op core.Op, key string, want core.Status) {
	t.Helper()
	require.NotEmpty(t, votes)
	seen := map[int]bool{}
	for _, v := range votes {
		assert.Equal(t, op, v.Op, "vote %+v", v)
		assert.Equal(t, key, v.Key)
		assert.Equal(t, want, v.Status, "node %d", v.Node)
		assert.Equal(t, d.NodeName(v.Node), v.Name)
		assert.GreaterOrEqual(t, v.Duration, time.Duration(0))
		assert.False(t, v.At.IsZero())
		assert.False(t, seen[v.Node], "node %d voted twice", v.Node)
		seen[v.Node] = true
	}
}

// TestObserverLifecycle: one lock's acquisition, refusal, extension and
// release, each with its outcome and the nodes' votes.
func TestObserverLifecycle(t *testing.T) {
	for _, mode := range []core.FanOut{core.Multiplexed, core.Sequential} {
		t.Run(mode.String(), func(t *testing.T) {
			nodes := memnode.New(3, core.SystemClock{})
			rec := newRecorder()
			c, err := redlock.NewClient(nodes, redlock.Options{Observer: rec.observer(),
				FanOut: mode, Fencing: true})
			require.NoError(t, err)
			type ctxKey struct{}
			ctx := context.WithValue(context.Background(), ctxKey{}, "mine")

			l, err := c.TryLock(ctx, "k")
			require.NoError(t, err)
			a := rec.lastAcquire(t)
			assert.Equal(t, "mine", a.Context.Value(ctxKey{}))
			assert.Equal(t, "k", a.Key)
			assert.True(t, a.Try)
			assert.Equal(t, redlock.OutcomeOK, a.Outcome)
			assert.NoError(t, a.Err)
			assert.Equal(t, 1, a.Attempts)
			assert.Positive(t, a.Duration)
			fence, err := l.Fence()
			require.NoError(t, err)
			assert.Equal(t, fence, a.Fence)
			// Multiplexed decides at the quorum; sequential hears every node.
			if mode == core.Sequential {
				assert.Len(t, a.Votes, 3)
			} else {
				assert.GreaterOrEqual(t, len(a.Votes), 2)
			}
			requireVotes(t, nodes, a.Votes, core.OpAcquireFenced, "k", core.StatusOK)
			votes := rec.takeVotes()
			var acq, raise []redlock.VoteEvent
			for _, v := range votes {
				if v.Op == core.OpRaiseFence {
					raise = append(raise, v)
				} else {
					acq = append(acq, v)
				}
			}
			assert.Equal(t, a.Votes, acq, "the event's votes are the round's")
			requireVotes(t, nodes, raise, core.OpRaiseFence, "k", core.StatusOK)
			assert.Equal(t, []redlock.FenceEvent{{Context: ctx, Key: "k", Fence: fence}}, rec.fences)

			// Taken: one attempt, then its cleanup, whose votes are heard
			// but are not the attempt's.
			_, err = c.TryLock(ctx, "k")
			require.ErrorIs(t, err, redlock.ErrTaken)
			a = rec.lastAcquire(t)
			assert.Equal(t, redlock.OutcomeTaken, a.Outcome)
			assert.Equal(t, err, a.Err)
			assert.Equal(t, 1, a.Attempts)
			requireVotes(t, nodes, a.Votes, core.OpAcquireFenced, "k", core.StatusHeld)
			var cleanup []redlock.VoteEvent
			for _, v := range rec.takeVotes() {
				if v.Op == core.OpRelease {
					cleanup = append(cleanup, v)
				}
			}
			requireVotes(t, nodes, cleanup, core.OpRelease, "k", core.StatusHeld)
			assert.Len(t, rec.fences, 1, "a refused attempt raises no fence")

			require.NoError(t, l.Extend(ctx))
			require.Len(t, rec.extends, 1)
			e := rec.extends[0]
			assert.Equal(t, "k", e.Key)
			assert.False(t, e.Lease)
			assert.Equal(t, redlock.OutcomeOK, e.Outcome)
			assert.Positive(t, e.Duration)
			requireVotes(t, nodes, e.Votes, core.OpExtend, "k", core.StatusOK)
			rec.takeVotes()

			require.NoError(t, l.Unlock(ctx))
			require.Len(t, rec.releases, 1)
			r := rec.releases[0]
			assert.Equal(t, "k", r.Key)
			assert.Equal(t, redlock.OutcomeOK, r.Outcome)
			assert.Positive(t, r.Held)
			assert.Positive(t, r.Duration)
			assert.Len(t, r.Votes, 3, "a release hears every node")
			requireVotes(t, nodes, r.Votes, core.OpRelease, "k", core.StatusOK)
			assert.Equal(t, r.Votes, rec.takeVotes())
			assert.ErrorIs(t, l.Unlock(ctx), redlock.ErrUnlocked)
			assert.Len(t, rec.releases, 1, "a second Unlock sends nothing and says nothing")
			assert.ErrorIs(t, l.Extend(ctx), redlock.ErrUnlocked)
			assert.Len(t, rec.extends, 1, "an Extend after Unlock sends nothing and says nothing")
			assert.Empty(t, rec.losses)
		})
	}
}

// TestObserverFailures: the outcomes of acquisitions refused before any
// round, cancelled, and without a quorum, with the nodes that failed.
func TestObserverFailures(t *testing.T) {
	nodes := memnode.New(3, core.SystemClock{})
	rec := newRecorder()
	c, err := redlock.NewClient(nodes, redlock.Options{Observer: rec.observer()})
	require.NoError(t, err)

	_, err = c.TryLock(context.Background(), "")
	require.ErrorIs(t, err, redlock.ErrInvalidConfig)
	a := rec.lastAcquire(t)
	assert.Equal(t, redlock.OutcomeInvalid, a.Outcome)
	assert.Zero(t, a.Attempts)
	assert.Empty(t, a.Votes)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = c.Lock(ctx, "k")
	require.ErrorIs(t, err, redlock.ErrCancelled)
	a = rec.lastAcquire(t)
	assert.Equal(t, redlock.OutcomeCancelled, a.Outcome)
	assert.False(t, a.Try)
	assert.Zero(t, a.Attempts)

	nodes.SetDown(0, true)
	nodes.SetDown(1, true)
	rec.takeVotes()
	_, err = c.TryLock(context.Background(), "k")
	require.ErrorIs(t, err, redlock.ErrQuorumUnreachable)
	a = rec.lastAcquire(t)
	assert.Equal(t, redlock.OutcomeQuorumUnreachable, a.Outcome)
	assert.Equal(t, 1, a.Attempts)
	down := 0
	for _, v := range a.Votes {
		if v.Status == core.StatusError {
			down++
			assert.Contains(t, []int{0, 1}, v.Node)
			assert.ErrorIs(t, v.Err, memnode.ErrDown)
		}
	}
	assert.GreaterOrEqual(t, down, 1, "the votes name the down nodes")
}

func TestOutcomeOf(t *testing.T) {
	for err, want := range map[error]redlock.Outcome{
		nil: redlock.OutcomeOK,
		&redlock.LostError{Key: "k", Cause: redlock.ErrTaken}: redlock.OutcomeLost,
		fmt.Errorf("x: %w", redlock.ErrCancelled):             redlock.OutcomeCancelled,
		redlock.ErrTaken:             redlock.OutcomeTaken,
		redlock.ErrQuorumUnreachable: redlock.OutcomeQuorumUnreachable,
		redlock.ErrUnlocked:          redlock.OutcomeNotHeld,
		redlock.ErrExtensionLimit:    redlock.OutcomeExtensionLimit,
		redlock.ErrNoFencing:         redlock.OutcomeInvalid,
		errors.New("other"):          redlock.OutcomeOther,
	} {
		assert.Equal(t, want, redlock.OutcomeOf(err), "%v", err)
	}
	assert.Equal(t, "quorum_unreachable", redlock.OutcomeQuorumUnreachable.String())
	assert.Equal(t, "other", redlock.Outcome(200).String())
}

// TestObserverLeaseLoss: the Lease's extensions are observed as such, and
// a loss says its cause and how long the lock was held, on a step clock;
// the same with an Observer of losses alone, which times nothing else.
func TestObserverLeaseLoss(t *testing.T) {
	t.Run("all", func(t *testing.T) { testObserverLeaseLoss(t, false) })
	t.Run("loss-only", func(t *testing.T) { testObserverLeaseLoss(t, true) })
}

func testObserverLeaseLoss(t *testing.T, lossOnly bool) {
	rec := newRecorder()
	obs := rec.observer()
	if lossOnly {
		obs = redlock.Observer{Loss: obs.Loss}
	}
	f := newFixture(t, redlock.Options{Lease: &redlock.Lease{Fraction: 0.5}, Observer: obs})
	l := f.tryLock(t, "k")
	start := f.clock.Now()
	f.clock.set(f.clock.next(t)) // the first extension, at half the validity
	at := f.clock.next(t)        // the watcher sleeps again: it has extended
	other := core.TokenFromUint64s(1, 2)
	f.nodes.Set(0, "k", other, ttl) // the keys expired unseen and another client took them
	f.nodes.Set(1, "k", other, ttl)
	f.clock.set(at)
	<-rec.lost
	<-l.Context().Done()
	require.ErrorIs(t, l.Unlock(context.Background()), redlock.ErrLost)

	rec.mu.Lock()
	defer rec.mu.Unlock()
	require.Len(t, rec.losses, 1)
	loss := rec.losses[0]
	assert.Equal(t, "k", loss.Key)
	assert.Equal(t, redlock.OutcomeTaken, loss.Outcome)
	assert.ErrorIs(t, loss.Cause, redlock.ErrTaken)
	assert.Equal(t, f.clock.Now().Sub(start), loss.Held, "held from the acquisition until the loss")
	assert.Positive(t, loss.Held)
	if lossOnly {
		assert.Empty(t, rec.extends)
		assert.Empty(t, rec.releases)
		return
	}

	require.Len(t, rec.extends, 2)
	assert.True(t, rec.extends[0].Lease)
	assert.Equal(t, redlock.OutcomeOK, rec.extends[0].Outcome)
	assert.True(t, rec.extends[1].Lease)
	assert.Equal(t, redlock.OutcomeLost, rec.extends[1].Outcome, "the extension proved the loss")
	assert.ErrorIs(t, rec.extends[1].Err, redlock.ErrTaken)

	require.Len(t, rec.releases, 1)
	assert.Equal(t, redlock.OutcomeLost, rec.releases[0].Outcome, "Unlock returned the loss")
	assert.ErrorIs(t, rec.releases[0].Err, redlock.ErrLost)
}

// TestObserverWaitersAndHandoff: a Lock that waits for a holder joins
// the key's waiters, and once the holder's release is heard takes the
// lock, which is a handoff.
func TestObserverWaitersAndHandoff(t *testing.T) {
	rec := newRecorder()
	nodes := newCounting(memnode.New(3, core.SystemClock{}))
	c, err := redlock.NewClient(nodes, redlock.Options{Observer: rec.observer(),
		Backoff: redlock.RandomDelay(time.Hour, time.Hour)})
	require.NoError(t, err)
	holder, err := c.TryLock(context.Background(), "k")
	require.NoError(t, err)
	got := make(chan *redlock.Lock)
	go func() {
		l, err := c.Lock(testguard.Context(t), "k")
		assert.NoError(t, err)
		got <- l
	}()
	nodes.waitRefused(2) // an attempt refused, and its cleanup
	require.NoError(t, holder.Unlock(context.Background()))
	l := <-got
	require.NoError(t, l.Unlock(context.Background()))

	rec.mu.Lock()
	defer rec.mu.Unlock()
	assert.Equal(t, []redlock.WaitersEvent{{Key: "k", Waiters: 1, Delta: 1}, {Key: "k", Waiters: 0, Delta: -1}}, rec.waiters)
	require.Len(t, rec.handoffs, 1)
	assert.Equal(t, "k", rec.handoffs[0].Key)
	assert.GreaterOrEqual(t, rec.handoffs[0].Duration, time.Duration(0))
	var waited redlock.AcquireEvent
	for _, e := range rec.acquires {
		if !e.Try {
			waited = e
		}
	}
	assert.Equal(t, redlock.OutcomeOK, waited.Outcome)
	assert.GreaterOrEqual(t, waited.Attempts, 2, "refused, then won")
	assert.Equal(t, int(nodes.attempts.Load())-1, waited.Attempts, "the rounds sent, but the holder's")
	assert.Less(t, rec.handoffs[0].Duration, waited.Duration, "the handoff is the end of the wait")
}

// TestObserverNoHandoffAtExpiry: a waiter that takes the lock once the
// holder's keys expire (the holder never unlocks) was not handed it: no
// Handoff, though it heard its watch start.
func TestObserverNoHandoffAtExpiry(t *testing.T) {
	rec := newRecorder()
	nodes := newCounting(memnode.New(3, core.SystemClock{}))
	c, err := redlock.NewClient(nodes, redlock.Options{Observer: rec.observer(),
		TTL: 200 * time.Millisecond, Backoff: redlock.RandomDelay(time.Hour, time.Hour)})
	require.NoError(t, err)
	_, err = c.TryLock(context.Background(), "k") // never unlocked
	require.NoError(t, err)
	l, err := c.Lock(testguard.Context(t), "k") // at the holder's expiry, learnt from its attempts
	require.NoError(t, err)
	require.NoError(t, l.Unlock(context.Background()))

	rec.mu.Lock()
	defer rec.mu.Unlock()
	assert.Empty(t, rec.handoffs)
	waited := rec.acquires[1]
	assert.False(t, waited.Try)
	assert.Equal(t, redlock.OutcomeOK, waited.Outcome)
	assert.GreaterOrEqual(t, waited.Attempts, 2)
}

// TestObserverUntimed: Fence and Handoff without the timed events.
func TestObserverUntimed(t *testing.T) {
	rec := newRecorder()
	all := rec.observer()
	nodes := newCounting(memnode.New(3, core.SystemClock{}))
	c, err := redlock.NewClient(nodes, redlock.Options{
		Observer: redlock.Observer{Fence: all.Fence, Handoff: all.Handoff, Waiters: all.Waiters},
		Fencing:  true, Backoff: redlock.RandomDelay(time.Hour, time.Hour)})
	require.NoError(t, err)
	holder, err := c.TryLock(context.Background(), "k")
	require.NoError(t, err)
	got := make(chan *redlock.Lock)
	ctx := testguard.Context(t)
	go func() {
		l, err := c.Lock(ctx, "k")
		assert.NoError(t, err)
		got <- l
	}()
	nodes.waitRefused(2)
	require.NoError(t, holder.Unlock(context.Background()))
	l := <-got
	require.NoError(t, l.Unlock(context.Background()))

	rec.mu.Lock()
	defer rec.mu.Unlock()
	f1, _ := holder.Fence()
	f2, _ := l.Fence()
	require.Less(t, f1, f2)
	assert.Equal(t, []redlock.FenceEvent{{Context: context.Background(), Key: "k", Fence: f1},
		{Context: ctx, Key: "k", Fence: f2}}, rec.fences)
	assert.Len(t, rec.handoffs, 1)
	assert.Len(t, rec.waiters, 2)
	assert.Empty(t, rec.acquires)
	assert.Empty(t, rec.votes)
}

// TestObserverNoneAllocates: a TryLock and Unlock pair allocates only
// its Lock without an Observer, and only that with one whose functions
// do nothing.
// (The race detector makes sync.Pool drop objects: skipped under it.)
func TestObserverNoneAllocates(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops objects under the race detector")
	}
	nop := redlock.Observer{
		Acquire: func(redlock.AcquireEvent) {},
		Vote:    func(redlock.VoteEvent) {},
		Release: func(redlock.ReleaseEvent) {},
		Extend:  func(redlock.ExtendEvent) {},
		Loss:    func(redlock.LossEvent) {},
		Waiters: func(redlock.WaitersEvent) {},
		Handoff: func(redlock.HandoffEvent) {},
		Fence:   func(redlock.FenceEvent) {},
	}
	untimed := redlock.Observer{Loss: nop.Loss, Waiters: nop.Waiters, Handoff: nop.Handoff, Fence: nop.Fence}
	for name, obs := range map[string]redlock.Observer{"nil": {}, "no-op": nop, "untimed": untimed} {
		t.Run(name, func(t *testing.T) {
			c, err := redlock.NewClient(memnode.New(3, core.SystemClock{}), redlock.Options{Observer: obs})
			require.NoError(t, err)
			ctx := testguard.Context(t)
			allocs := testing.AllocsPerRun(200, func() {
				l, err := c.TryLock(ctx, "k")
				if err != nil {
					t.Fatal(err)
				}
				if err := l.Unlock(ctx); err != nil {
					t.Fatal(err)
				}
			})
			assert.Equal(t, 1.0, allocs, "allocations per TryLock+Unlock: the Lock only")
		})
	}
}

// TestLoggerOption: the warning that Lock polls goes to Options.Logger,
// and nowhere without one (slog.Default is not used).
func TestLoggerOption(t *testing.T) {
	var def bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&def, nil)))
	defer slog.SetDefault(prev)
	polling := &clockless{memnode.New(3, core.SystemClock{})} // no Watch: not an Announcer

	var buf bytes.Buffer
	_, err := redlock.NewClient(polling, redlock.Options{Logger: slog.New(slog.NewTextHandler(&buf, nil))})
	require.NoError(t, err)
	assert.Contains(t, buf.String(), "does not announce releases")

	_, err = redlock.NewClient(polling, redlock.Options{})
	require.NoError(t, err)
	assert.Empty(t, def.String(), "a nil Logger logs nothing, not to slog.Default")
}

// BenchmarkObserverOverhead: the uncontended TryLock+Unlock pair on
// memnode without an Observer, with one of the untimed events alone
// (Loss, Waiters, Handoff, Fence) and with one whose every function
// counts, alternated five times in one process, each turn b.N pairs. It
// reports the medians of the turns: ns/op without, untimed-ns/op and
// timed-ns/op with, and each one's delta-% from ns/op.
func BenchmarkObserverOverhead(b *testing.B) {
	observerOverhead(b, func() core.Driver { return memnode.New(3, core.SystemClock{}) })
}

// BenchmarkObserverOverheadRedis is BenchmarkObserverOverhead over five
// redis-servers and the redigo driver: the pair a
// user pays for, with and without an Observer.
func BenchmarkObserverOverheadRedis(b *testing.B) {
	srvs := redistest.StartN(b, 5, redistest.Options{})
	addrs := make([]string, len(srvs))
	for i, s := range srvs {
		addrs[i] = s.Addr
	}
	drv, err := redigo.Dial(addrs, redigo.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = drv.Close() })
	observerOverhead(b, func() core.Driver { return drv })
}

func observerOverhead(b *testing.B, driver func() core.Driver) {
	var events atomic.Int64
	timed := redlock.Observer{
		Acquire: func(redlock.AcquireEvent) { events.Add(1) },
		Vote:    func(redlock.VoteEvent) { events.Add(1) },
		Release: func(redlock.ReleaseEvent) { events.Add(1) },
		Extend:  func(redlock.ExtendEvent) { events.Add(1) },
		Loss:    func(redlock.LossEvent) { events.Add(1) },
		Waiters: func(redlock.WaitersEvent) { events.Add(1) },
		Handoff: func(redlock.HandoffEvent) { events.Add(1) },
		Fence:   func(redlock.FenceEvent) { events.Add(1) },
	}
	untimed := redlock.Observer{Loss: timed.Loss, Waiters: timed.Waiters, Handoff: timed.Handoff, Fence: timed.Fence}
	ctx := context.Background()
	turn := func(obs redlock.Observer) float64 {
		c, err := redlock.NewClient(driver(), redlock.Options{Observer: obs})
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		for range b.N {
			l, err := c.TryLock(ctx, "k")
			if err != nil {
				b.Fatal(err)
			}
			if err := l.Unlock(ctx); err != nil {
				b.Fatal(err)
			}
		}
		return float64(time.Since(start).Nanoseconds()) / float64(b.N)
	}
	b.ReportAllocs()
	var none, unt, tim []float64
	for range 5 {
		none = append(none, turn(redlock.Observer{}))
		unt = append(unt, turn(untimed))
		tim = append(tim, turn(timed))
	}
	if events.Load() == 0 {
		b.Fatal("the observer heard nothing")
	}
	b.Logf("N=%d ns/op: none %.0f, untimed %.0f, timed %.0f", b.N, none, unt, tim)
	m0, mu, mt := median(none), median(unt), median(tim)
	b.ReportMetric(m0, "ns/op")
	b.ReportMetric(mu, "untimed-ns/op")
	b.ReportMetric(mt, "timed-ns/op")
	b.ReportMetric(100*(mu-m0)/m0, "untimed-delta-%")
	b.ReportMetric(100*(mt-m0)/m0, "timed-delta-%")
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
