package redlock_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/internal/testguard"
)

// attemptLog keeps the Attempts of every acquisition a Client finished.
type attemptLog struct {
	mu       sync.Mutex
	attempts []int
}

func (a *attemptLog) acquired(e redlock.AcquireEvent) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.attempts = append(a.attempts, e.Attempts)
}

func (a *attemptLog) last() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.attempts[len(a.attempts)-1]
}

// taken runs take in a goroutine and returns the channel its Lock comes
// on (nil with an error, which fails the test).
func taken(t *testing.T, take func() (*redlock.Lock, error)) <-chan *redlock.Lock {
	got := make(chan *redlock.Lock, 1)
	go func() {
		l, err := take()
		assert.NoError(t, err)
		got <- l
	}()
	return got
}

// receive returns the Lock that comes on got, or fails the test once ctx
// ends (what says what was awaited).
func receive(ctx context.Context, t *testing.T, got <-chan *redlock.Lock, what string) *redlock.Lock {
	t.Helper()
	select {
	case l := <-got:
		require.NotNil(t, l, what)
		return l
	case <-ctx.Done():
		t.Fatalf("%s: not taken", what)
	}
	return nil
}

// TestReaderWaitsForTheWritersRelease: over memnodes on a still clock, a
// reader refused by a writer sleeps until the writer's keys expire,
// attempting nothing meanwhile (the cleanups of its own refused attempts
// announce nothing that would wake it), and takes the key at once when
// the writer's release is announced: its first attempt, one when its
// subscriptions start (a release may have gone unheard before), and the
// one the release wakes.
func TestReaderWaitsForTheWritersRelease(t *testing.T) {
	ctx := testguard.Context(t)
	log := &attemptLog{}
	f := newFixture(t, redlock.Options{Observer: redlock.Observer{Acquire: log.acquired}})
	w, err := f.client.TryWLock(ctx, "k")
	require.NoError(t, err)
	got := taken(t, func() (*redlock.Lock, error) { return f.client.RLock(ctx, "k") })
	until := f.clock.next(t) // the reader sleeps on the clock
	assert.Equal(t, f.clock.Now().Add(ttl+time.Millisecond), until, "the reader does not sleep until the writer's keys expire")
	require.NoError(t, w.Unlock(ctx))
	r := receive(ctx, t, got, "the reader, woken by the writer's release")
	assert.Equal(t, 3, log.last(), "the reader's attempts")
	assert.Equal(t, f.clock.Now().Add(validity), r.Until())

	// Readers share: another takes it beside the first, at once.
	r2, err := f.client.TryRLock(ctx, "k")
	require.NoError(t, err)
	for i := range 3 {
		assert.Len(t, f.nodes.Readers(i, "k"), 2, "node %d", i)
	}
	require.NoError(t, r.Unlock(ctx))
	require.NoError(t, r2.Unlock(ctx))
	for i := range 3 {
		assert.Empty(t, f.nodes.Readers(i, "k"), "node %d", i)
	}
}

// TestWriterWaitsBehindAStreamOfReaders: a writer refused for a reader
// marks the key, which refuses new readers; it sleeps until the reader's
// expiry at the latest, and takes the key then although the reader never
// released it: the stream of new readers kept out by its mark does not
// starve it. A writer woken by the last reader's release takes the key
// at once, without waiting for the expiry.
func TestWriterWaitsBehindAStreamOfReaders(t *testing.T) {
	ctx := testguard.Context(t)
	t.Run("the reader expires", func(t *testing.T) {
		f := newFixture(t, redlock.Options{})
		r, err := f.client.TryRLock(ctx, "k")
		require.NoError(t, err)
		start := f.clock.Now()
		got := taken(t, func() (*redlock.Lock, error) { return f.client.WLock(ctx, "k") })
		renew := f.clock.next(t)
		assert.Equal(t, start.Add(ttl/2), renew, "the writer does not wake to renew its mark")
		for i := range 3 {
			_, _, marked := f.nodes.Mark(i, "k")
			assert.True(t, marked, "node %d: the waiting writer left no mark", i)
		}
		// A stream of new readers is refused meanwhile.
		f.clock.set(renew.Add(-time.Nanosecond))
		_, err = f.client.TryRLock(ctx, "k")
		oneKind(t, err, redlock.ErrTaken)
		f.clock.set(renew)       // refused again, it renews its mark
		until := f.clock.next(t) // renewing again, half a TTL on, when the reader expires
		assert.Equal(t, start.Add(ttl), until, "the writer does not wake at the reader's expiry, or to renew its mark")
		for i := range 3 {
			_, left, marked := f.nodes.Mark(i, "k")
			assert.True(t, marked && left == ttl, "node %d: the mark was not renewed: %v left", i, left)
		}
		f.clock.set(until.Add(-time.Nanosecond))
		_, err = f.client.TryRLock(ctx, "k")
		oneKind(t, err, redlock.ErrTaken) // the renewed mark outlives the reader
		f.clock.set(until)
		w := receive(ctx, t, got, "the writer, at the reader's expiry")
		assert.Equal(t, until.Add(validity), w.Until())
		assert.ErrorIs(t, r.Unlock(ctx), redlock.ErrNotHeld, "the expired reader")
		_, err = f.client.TryRLock(ctx, "k")
		oneKind(t, err, redlock.ErrTaken) // beside the writer
		require.NoError(t, w.Unlock(ctx))
	})
	t.Run("the readers release", func(t *testing.T) {
		log := &attemptLog{}
		f := newFixture(t, redlock.Options{Observer: redlock.Observer{Acquire: log.acquired}})
		r1, err := f.client.TryRLock(ctx, "k")
		require.NoError(t, err)
		r2, err := f.client.TryRLock(ctx, "k")
		require.NoError(t, err)
		got := taken(t, func() (*redlock.Lock, error) { return f.client.WLock(ctx, "k") })
		f.clock.next(t) // asleep
		require.NoError(t, r1.Unlock(ctx))
		require.NoError(t, r2.Unlock(ctx))
		w := receive(ctx, t, got, "the writer, woken by the last reader's release")
		assert.Equal(t, 3, log.last(), "the writer's attempts")
		for i := range 3 {
			_, _, marked := f.nodes.Mark(i, "k")
			assert.False(t, marked, "node %d: the winning writer left its mark", i)
		}
		require.NoError(t, w.Unlock(ctx))
		r3, err := f.client.TryRLock(ctx, "k")
		require.NoError(t, err, "a reader after the writer")
		require.NoError(t, r3.Unlock(ctx))
	})
}

// TestReaderFenceIsTheLastWriters: under Fencing, with every writer's
// attempt won on every node, a reader's fence is the fence of the key's
// last writer, 0 before any, and a reader raises nothing: the next
// writer's fence is one more than the last writer's. (With failed
// attempts it may be higher: TestReaderFenceIsAReading.)
func TestReaderFenceIsTheLastWriters(t *testing.T) {
	ctx := testguard.Context(t)
	f := newFixture(t, redlock.Options{Fencing: true})
	fence := func(l *redlock.Lock) uint64 {
		t.Helper()
		v, err := l.Fence()
		require.NoError(t, err)
		return v
	}
	r, err := f.client.TryRLock(ctx, "k")
	require.NoError(t, err)
	assert.Zero(t, fence(r), "a reader's fence before any writer")
	require.NoError(t, r.Unlock(ctx))
	var last uint64
	for range 3 {
		w, err := f.client.TryWLock(ctx, "k")
		require.NoError(t, err)
		assert.Equal(t, last+1, fence(w))
		last = fence(w)
		require.NoError(t, w.Unlock(ctx))
		for range 2 {
			r, err := f.client.TryRLock(ctx, "k")
			require.NoError(t, err)
			assert.Equal(t, last, fence(r), "a reader's fence is not the last writer's")
			require.NoError(t, r.Unlock(ctx))
		}
	}
	for i := range 3 {
		assert.Equal(t, last, f.nodes.Fence(i, "k"), "node %d: a reader moved the counter", i)
	}
}

// TestReaderUnderALease: a reader's lock is kept by the Client's Lease
// past its TTL, as the mutex's is, and is released at Unlock.
func TestReaderUnderALease(t *testing.T) {
	ctx := testguard.Context(t)
	f := newFixture(t, redlock.Options{Lease: &redlock.Lease{Fraction: 1.0 / 3}})
	r, err := f.client.TryRLock(ctx, "k")
	require.NoError(t, err)
	lctx := r.Context()
	start := f.clock.Now()
	for f.clock.Now().Sub(start) < 2*ttl {
		f.clock.set(f.clock.next(t)) // the lease's next extension
	}
	require.NoError(t, context.Cause(lctx), "the leased reader was lost")
	assert.True(t, r.Until().After(start.Add(2*ttl)), "the reader's validity was not extended")
	for i := range 3 {
		assert.Len(t, f.nodes.Readers(i, "k"), 1, "node %d", i)
	}
	require.NoError(t, r.Unlock(ctx))
	<-lctx.Done()
	assert.ErrorIs(t, context.Cause(lctx), redlock.ErrUnlocked)
	for i := range 3 {
		assert.Empty(t, f.nodes.Readers(i, "k"), "node %d", i)
	}
}

// TestLockAllWaitsForEveryKey: a LockAll refused by holders of two of
// its keys sleeps; one key's release wakes it, to be refused by the
// other; the other's release wakes it to take every key. Meanwhile it
// holds none: a lock of its free key is taken.
func TestLockAllWaitsForEveryKey(t *testing.T) {
	ctx := testguard.Context(t)
	f := newFixture(t, redlock.Options{})
	a, err := f.client.TryLock(ctx, "a")
	require.NoError(t, err)
	b, err := f.client.TryLockAll(ctx, "b")
	require.NoError(t, err)
	got := taken(t, func() (*redlock.Lock, error) { return f.client.LockAll(ctx, "a", "b", "c") })
	f.clock.next(t) // asleep
	c, err := f.client.TryLock(ctx, "c")
	require.NoError(t, err, "a waiting LockAll holds its free key")
	require.NoError(t, c.Unlock(ctx))
	require.NoError(t, a.Unlock(ctx))
	f.clock.next(t) // woken, refused by b, asleep again
	select {
	case <-got:
		t.Fatal("LockAll took its keys while one was held")
	default:
	}
	require.NoError(t, b.Unlock(ctx))
	all := receive(ctx, t, got, "LockAll, woken by the last release")
	assert.Equal(t, "a", all.Key())
	for _, key := range []string{"a", "b", "c"} {
		assert.Equal(t, 3, f.nodes.Holders(key, all.Token()), "key %s", key)
		_, err := f.client.TryLock(ctx, key)
		oneKind(t, err, redlock.ErrTaken)
	}
	require.NoError(t, all.Extend(ctx))
	require.NoError(t, all.Unlock(ctx))
	for _, key := range []string{"a", "b", "c"} {
		assert.Zero(t, f.nodes.Holders(key, all.Token()), "key %s", key)
	}
}

// TestLockAllIntersectingSetsExclude: of two multi-key locks whose key
// sets intersect, one holds; the other is refused and leaves none of its
// keys, the free ones included.
func TestLockAllIntersectingSetsExclude(t *testing.T) {
	ctx := testguard.Context(t)
	f := newFixture(t, redlock.Options{})
	l, err := f.client.TryLockAll(ctx, "a", "b")
	require.NoError(t, err)
	_, err = f.client.TryLockAll(ctx, "c", "d", "b")
	oneKind(t, err, redlock.ErrTaken)
	for _, key := range []string{"c", "d"} {
		for i := range 3 {
			_, _, ok := f.nodes.Get(i, key)
			assert.False(t, ok, "node %d: key %s left by a refused LockAll", i, key)
		}
	}
	other, err := f.client.TryLockAll(ctx, "c", "d")
	require.NoError(t, err, "disjoint sets")
	require.NoError(t, other.Unlock(ctx))
	require.NoError(t, l.Unlock(ctx))
}

// TestPrimitivesPoll: with Options.Poll (or a driver that announces
// nothing) the other kinds' waiters sleep the Backoff's delays, as Lock
// does, and take the key once it is free: no announcement is needed.
func TestPrimitivesPoll(t *testing.T) {
	ctx := testguard.Context(t)
	f := newFixture(t, redlock.Options{Poll: true, Backoff: redlock.RandomDelay(100*time.Millisecond, 100*time.Millisecond)})
	for _, tc := range []struct {
		name string
		hold func() (*redlock.Lock, error)
		wait func() (*redlock.Lock, error)
	}{
		{"reader behind a writer", func() (*redlock.Lock, error) { return f.client.TryWLock(ctx, "rw") },
			func() (*redlock.Lock, error) { return f.client.RLock(ctx, "rw") }},
		{"writer behind a reader", func() (*redlock.Lock, error) { return f.client.TryRLock(ctx, "wr") },
			func() (*redlock.Lock, error) { return f.client.WLock(ctx, "wr") }},
		{"multi-key behind a key", func() (*redlock.Lock, error) { return f.client.TryLock(ctx, "b") },
			func() (*redlock.Lock, error) { return f.client.LockAll(ctx, "a", "b") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := tc.hold()
			require.NoError(t, err)
			got := taken(t, tc.wait)
			until := f.clock.next(t)
			assert.Equal(t, f.clock.Now().Add(100*time.Millisecond), until, "the waiter does not sleep the Backoff's delay")
			require.NoError(t, h.Unlock(ctx))
			f.clock.set(until)
			l := receive(ctx, t, got, "the polling waiter")
			require.NoError(t, l.Unlock(ctx))
		})
	}
}

// TestWriterNotStarvedByReadersAtItsWake: a stream of new readers, one
// arriving just before each of a waiting writer's wake-ups, does not
// starve it: it holds the key within two TTLs of its first refused
// attempt. Its mark, a TTL long, must not lapse before its next attempt:
// were that attempt due only at the readers' expiry, a reader admitted
// just before the mark was set would expire with it, and each reader
// arriving in between would refuse the writer for another TTL.
func TestWriterNotStarvedByReadersAtItsWake(t *testing.T) {
	ctx := testguard.Context(t)
	f := newFixture(t, redlock.Options{})
	start := f.clock.Now()
	_, err := f.client.TryRLock(ctx, "k") // admitted the instant the writer is refused
	require.NoError(t, err)
	got := taken(t, func() (*redlock.Lock, error) { return f.client.WLock(ctx, "k") })
	until := f.clock.next(t)
	admitted := 0
	for {
		require.False(t, until.After(start.Add(2*ttl)), "the writer waits past two TTLs; %d readers admitted meanwhile", admitted)
		f.clock.set(until.Add(-time.Nanosecond))
		if _, err := f.client.TryRLock(ctx, "k"); err == nil {
			admitted++
		}
		f.clock.set(until)
		select {
		case w := <-got:
			require.NotNil(t, w)
			assert.LessOrEqual(t, admitted, 0, "new readers admitted while the writer waited")
			require.NoError(t, w.Unlock(ctx))
			return
		case until = <-f.clock.asleep:
		case <-ctx.Done():
			t.Fatal("the writer neither took the key nor slept again")
		}
	}
}
