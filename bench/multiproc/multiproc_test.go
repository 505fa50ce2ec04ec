package multiproc

import (
	"context"
	"fmt"
	"math"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/bench/servers"
	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/core/memnode"
	"github.com/redlock-go/redlock/internal/redistest"
)

// enterEnv makes the test binary a process that enters a section of the
// shared page at its value and exits without leaving it.
const enterEnv = "MULTIPROC_TEST_ENTER"

func TestMain(m *testing.M) {
	if os.Getenv(ChildEnv) == "1" {
		os.Exit(Child(os.Stdin, os.Stdout, os.Stderr))
	}
	if path := os.Getenv(enterEnv); path != "" {
		sh, err := OpenShared(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		sh.Enter()
		os.Exit(0)
	}
	redistest.Main(m)
}

func TestPairGaps(t *testing.T) {
	ms := int64(time.Millisecond)
	// Entry order 1..6; listed out of order, as children report them.
	secs := []Section{
		{Contender: 2, Ticket: 3, Acq: 12 * ms, Call: 13 * ms, Rel: 14 * ms},     // after ticket 2: 12-11 = 1 ms, 2 ms from its call
		{Contender: 0, Ticket: 1, Acq: 1 * ms, Call: 2 * ms, Rel: 3 * ms},        // no predecessor
		{Contender: 1, Ticket: 2, Acq: 5 * ms, Call: 10 * ms, Rel: 11 * ms},      // after ticket 1: 5-3 = 2 ms, 3 ms from its call
		{Contender: 0, Ticket: 5, Acq: 20 * ms, Call: 21 * ms, Rel: 0},           // its predecessor (4) is missing; its Unlock failed
		{Contender: 1, Ticket: 6, Acq: 30 * ms, Call: 30*ms + 200, Rel: 31 * ms}, // after a failed Unlock: no gap
		{Contender: 3, Ticket: 7, Acq: 30*ms + 500, Call: 32 * ms, Rel: 33 * ms}, // before ticket 6's Unlock returned: early, 0; 300 ns from its call
		{Contender: 3, Ticket: 8, Acq: 100 * ms, Call: 100 * ms, Rel: 101 * ms},  // after the window
	}
	g := PairGaps(secs, 0, 50*ms)
	assert.Equal(t, int64(3), g.Handoffs, "tickets 2, 3 and 7")
	assert.Equal(t, int64(1), g.Early)
	assert.Equal(t, 2*time.Millisecond, g.Max().Round(time.Millisecond))
	assert.Equal(t, time.Millisecond, g.Quantile(50).Round(100*time.Microsecond))
	assert.Less(t, g.Quantile(1), time.Microsecond, "the early handoff counts as 0")
	assert.Equal(t, 300*time.Nanosecond, g.FromCall(1).Round(10*time.Nanosecond), "the early handoff from the Unlock call")
	assert.Equal(t, 2*time.Millisecond, g.FromCall(50).Round(100*time.Microsecond))
	assert.Equal(t, 3*time.Millisecond, g.FromCall(100).Round(100*time.Microsecond))

	// The window decides by the acquire: from 4 ms on, ticket 2 is in
	// and ticket 1 (its predecessor) out, which still pairs.
	g = PairGaps(secs, 4*ms, 13*ms)
	assert.Equal(t, int64(2), g.Handoffs)
	assert.Equal(t, int64(0), g.Early)

	// By the timestamps alone, tickets 5, 6 and 7 (20, 30 and 30.0005
	// ms) pair with ticket 3's Unlock (14 ms), the latest that returned
	// before them, ticket 6's having failed: 6, 16 and 16.0005 ms; ticket
	// 2 and 3 as by entry (2 and 1 ms); ticket 1 with none.
	lg := LatestReleaseGaps(secs, 0, 50*ms)
	assert.Equal(t, int64(5), lg.Handoffs)
	assert.InDelta(t, float64(16*ms), float64(lg.Max()), float64(50*time.Microsecond))
	assert.InDelta(t, float64(6*ms), float64(lg.Quantile(50)), float64(10*time.Microsecond))
	assert.Equal(t, int64(0), PairGaps(nil, 0, ms).Handoffs)
	assert.Equal(t, time.Duration(0), PairGaps(nil, 0, ms).Quantile(50))
}

func TestFairness(t *testing.T) {
	r, starved := Fairness([]int64{10, 5, 20, 8})
	assert.Equal(t, 4.0, r)
	assert.Equal(t, 0, starved)
	r, starved = Fairness([]int64{7, 0, 3, 0})
	assert.True(t, math.IsInf(r, 1))
	assert.Equal(t, 2, starved)
	r, _ = Fairness([]int64{9})
	assert.Equal(t, 1.0, r)
	r, starved = Fairness([]int64{0, 0})
	assert.True(t, math.IsNaN(r))
	assert.Equal(t, 2, starved)

	var rec Record
	summarize(&rec, []Section{
		{Contender: 0, Ticket: 1, Acq: 10, Rel: 20, Attempts: 1},
		{Contender: 1, Ticket: 2, Acq: 30, Rel: 40, Attempts: 3},
		{Contender: 0, Ticket: 3, Acq: 50, Rel: 60, Attempts: 2},
		{Contender: 0, Ticket: 4, Acq: 70, Rel: 80, Attempts: 5}, // out of the window
	}, 3, 0, 70)
	assert.Equal(t, []int64{2, 1, 0}, rec.PerContender)
	assert.Equal(t, 1, rec.Starved)
	assert.Equal(t, 0.0, rec.Fairness)
	assert.Equal(t, "inf (1 starved)", rec.FairnessText())
	assert.Equal(t, int64(3), rec.Sections)
	assert.Equal(t, int64(6), rec.Attempts)
	assert.Equal(t, 2.0, rec.AttemptsPerAcq)
	assert.Equal(t, int64(2), rec.Handoffs)
}

// Two mappings of one file, as two processes have, see each other's
// sections: a section entered while another is inside is an overlap,
// and a load-store that interleaves with another loses an update.
func TestSharedCatchesOverlap(t *testing.T) {
	if !Supported {
		t.Skip("Linux only")
	}
	a, path, err := CreateShared(t.TempDir())
	require.NoError(t, err)
	defer func() { assert.NoError(t, a.Close()) }()
	b, err := OpenShared(path)
	require.NoError(t, err)
	defer func() { assert.NoError(t, b.Close()) }()

	// One after the other: no overlap.
	for _, s := range []*Shared{a, b, a} {
		_, overlap := s.Enter()
		require.False(t, overlap)
		s.Store(s.Load() + 1)
		s.Leave()
	}
	require.True(t, a.Exclusion().Exclusive())
	require.Equal(t, Exclusion{Entered: 3, Counter: 3}, b.Exclusion())

	// Two goroutines, deliberately inside at once.
	inside, done := make(chan int64), make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		a.Enter()
		v := a.Load()
		inside <- v
		<-done
		a.Store(v + 1) // overwrites the second section's store
		a.Leave()
	}()
	v := <-inside
	ticket, overlap := b.Enter()
	assert.True(t, overlap, "the second section entered while the first was inside")
	assert.Equal(t, int64(5), ticket)
	b.Store(v + 1)
	close(done)
	wg.Wait()
	b.Leave()
	e := a.Exclusion()
	assert.Equal(t, int64(1), e.Overlaps)
	assert.Equal(t, int64(5), e.Entered)
	assert.Equal(t, int64(1), e.LostUpdates())
	assert.False(t, e.Exclusive())
}

// A section left inside by another process is caught by this one.
func TestSharedCatchesOverlapAcrossProcesses(t *testing.T) {
	if !Supported {
		t.Skip("Linux only")
	}
	sh, path, err := CreateShared(t.TempDir())
	require.NoError(t, err)
	defer func() { assert.NoError(t, sh.Close()) }()
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := execCommand(exe, enterEnv+"="+path)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Equal(t, Exclusion{Entered: 1}, sh.Exclusion(), "the other process's section is inside")
	_, overlap := sh.Enter()
	assert.True(t, overlap)
	assert.Equal(t, int64(1), sh.Exclusion().Overlaps)
}

func TestAttemptCounter(t *testing.T) {
	cluster := memnode.New(3, core.SystemClock{})
	counter, drv := CountAttempts(cluster)
	c, err := redlock.NewClient(drv, redlock.Options{TTL: 10 * time.Second})
	require.NoError(t, err)
	var n atomic.Int64
	ctx := WithAttempts(context.Background(), &n)
	l, err := c.TryLock(ctx, "k")
	require.NoError(t, err)
	assert.Equal(t, int64(1), n.Load(), "one acquire round")
	_, err = c.TryLock(ctx, "k")
	require.ErrorIs(t, err, core.ErrTaken)
	assert.Equal(t, int64(2), n.Load(), "a failed attempt counts; its cleanup does not")
	require.NoError(t, l.Unlock(ctx))
	assert.Equal(t, int64(2), n.Load(), "a release does not count")
	l, err = c.TryLock(context.Background(), "k")
	require.NoError(t, err)
	assert.Equal(t, int64(1), counter.Unattributed(), "a round without a counter")
	require.NoError(t, l.Unlock(context.Background()))
	assert.Equal(t, int64(2), n.Load())

	// The counter's batches flush as memnode's do (core.Flusher), so that
	// a Client over it takes the driver's own path; memnode does not
	// gather.
	b := drv.Begin(ctx)
	_, flushes := b.(core.Flusher)
	_, gathers := b.(core.Gatherer)
	b.Close()
	assert.True(t, flushes, "the counter hides the driver's Flusher")
	assert.False(t, gathers)
}

// The child mode end to end: 2 processes × 2 goroutines on real
// redis-servers, in both modes.
func TestRunEndToEnd(t *testing.T) {
	if !Supported {
		t.Skip("Linux only")
	}
	set, err := servers.StartRedis(redistest.RedisServerPath(t), 3)
	require.NoError(t, err)
	defer func() { assert.NoError(t, set.Close()) }()
	exe, err := os.Executable()
	require.NoError(t, err)
	for _, mode := range Modes {
		t.Run(mode, func(t *testing.T) {
			spec := Spec{Driver: "redigo", Addrs: set.Addrs(), Mode: mode, Key: "multiproc-test-" + mode,
				Procs: 2, Goroutines: 2, Hold: 200 * time.Microsecond, Warmup: 100 * time.Millisecond,
				Duration: 400 * time.Millisecond, TTL: 10 * time.Second}
			rec, err := Run(context.Background(), spec, exe, nil, os.Stderr)
			require.NoError(t, err)
			assert.Positive(t, rec.Sections)
			assert.GreaterOrEqual(t, rec.Attempts, rec.Sections, "every acquisition takes at least one attempt")
			assert.True(t, rec.Exclusive(), "%+v", rec.Exclusion)
			assert.GreaterOrEqual(t, rec.Entered, rec.Sections)
			assert.Len(t, rec.PerContender, 4)
			var sum int64
			for _, n := range rec.PerContender {
				sum += n
			}
			assert.Equal(t, rec.Sections, sum)
			assert.Zero(t, rec.Errors, rec.FirstError)
			assert.Zero(t, rec.Unattributed)
			assert.Equal(t, 3, rec.Nodes)
		})
	}
}

func TestRunRefusesBadSpecs(t *testing.T) {
	for _, s := range []Spec{
		{Mode: Wake, Procs: 0, Goroutines: 1, Duration: time.Second},
		{Mode: Wake, Procs: 1, Goroutines: 1, Duration: 0},
		{Mode: "spin", Procs: 1, Goroutines: 1, Duration: time.Second},
	} {
		_, err := Run(context.Background(), s, "/nonexistent", nil, os.Stderr)
		assert.Error(t, err, "%+v", s)
	}
}

// Over the in-memory driver each process has a lock of its own, so the
// processes' sections overlap: the shared page catches it and the cell
// fails.
func TestRunCatchesABrokenLockAcrossProcesses(t *testing.T) {
	if !Supported {
		t.Skip("Linux only")
	}
	exe, err := os.Executable()
	require.NoError(t, err)
	spec := Spec{Driver: "mem", Addrs: []string{"-", "-", "-"}, Mode: Poll, Key: "k",
		Procs: 2, Goroutines: 1, Hold: 5 * time.Millisecond, Duration: 300 * time.Millisecond, TTL: 10 * time.Second}
	rec, err := Run(context.Background(), spec, exe, nil, os.Stderr)
	require.ErrorIs(t, err, ErrExclusion)
	assert.Contains(t, err.Error(), "mem poll 2×1")
	assert.True(t, rec.Failed())
	assert.Positive(t, rec.Overlaps)
	assert.Positive(t, rec.Sections)
}
