package core_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/core/memnode"
)

// Bug 1: validity is a duration counted from the end of the round that won
// it; the lock's deadline is start + TTL − drift. Subtracting the elapsed
// time again shortened every lock by its acquisition time.
func TestValidityCountsFromTheRoundsEnd(t *testing.T) {
	forModes(t, func(t *testing.T, mode core.FanOut) {
		t.Run("remaining", func(t *testing.T) {
			e := newEnv(t, 3, mode, core.Config{TTL: 600 * ms, NodeTimeout: 500 * ms})
			lat := 151 * ms
			if mode == core.Sequential {
				lat = 50 * ms // three nodes one after another: 150 ms, plus the third's 1 ms below
			}
			for i := range 3 {
				e.c.SetLatency(i, lat)
			}
			if mode == core.Sequential {
				e.c.SetLatency(2, 51*ms)
			}
			start := e.clock.Now()
			lock, err := e.l.Acquire(context.Background(), "k")
			if err != nil {
				t.Fatal(err)
			}
			if got := e.clock.Now().Sub(start); got != 151*ms {
				t.Fatalf("acquire took %v on the manual clock, want 151ms", got)
			}
			// 600 − 151 − (6 + 2) = 441 ms left when Acquire returns.
			if got := lock.RemainingAt(e.clock.Now()); got != 441*ms {
				t.Errorf("remaining after acquire %v, want 441ms", got)
			}
			if got := lock.Validity(); got != 441*ms {
				t.Errorf("validity %v, want 441ms", got)
			}
			if want := start.Add(600*ms - 8*ms); !lock.ValidUntil().Equal(want) {
				t.Errorf("valid until %v, want start + TTL − drift = %v", lock.ValidUntil(), want)
			}
		})
		t.Run("extend at once", func(t *testing.T) {
			e := newEnv(t, 3, mode, core.Config{TTL: 400 * ms, NodeTimeout: 300 * ms})
			for i := range 3 {
				e.c.SetLatency(i, 221*ms/time.Duration(map[core.FanOut]int{core.Multiplexed: 1, core.Sequential: 3}[mode]))
			}
			lock, err := e.l.Acquire(context.Background(), "k")
			if err != nil {
				t.Fatal(err)
			}
			if !lock.ValidAt(e.clock.Now()) {
				t.Fatalf("lock born expired: validity %v", lock.Validity())
			}
			for i := range 3 {
				e.c.SetLatency(i, 0)
			}
			if _, err := e.l.Extend(context.Background(), lock); err != nil {
				t.Fatalf("extend right after acquire: %v", err)
			}
		})
	})
}

// tokenRecorder wraps a driver and records the token of every acquire
// command, in order.
type tokenRecorder struct {
	core.Driver
	mu   sync.Mutex
	toks []core.Token
}

func (d *tokenRecorder) Begin(ctx context.Context) core.Batch {
	return &recordingBatch{Batch: d.Driver.Begin(ctx), d: d}
}

type recordingBatch struct {
	core.Batch
	d *tokenRecorder
}

func (b *recordingBatch) Send(node int, cmd core.Command, deadline time.Time) {
	if cmd.Op == core.OpAcquire && node == 0 {
		b.d.mu.Lock()
		b.d.toks = append(b.d.toks, cmd.Token)
		b.d.mu.Unlock()
	}
	b.Batch.Send(node, cmd, deadline)
}

// Bug 2: a failed attempt's cleanup may land late, after the next attempt
// set the key; if both attempts share a token it deletes the winner's key.
// No two attempts may share a token.
func TestEveryAttemptHasItsOwnToken(t *testing.T) {
	forModes(t, func(t *testing.T, mode core.FanOut) {
		for _, caller := range []bool{false, true} {
			clock := memnode.NewManualClock(epoch)
			c := memnode.New(3, clock)
			for i := range 3 {
				c.Set(i, "k", core.TokenFromUint64s(9, 9), 150*ms) // refuses two attempts
			}
			d := &tokenRecorder{Driver: c}
			l, err := core.New(d, core.Config{TTL: time.Second, NodeTimeout: 50 * ms, FanOut: mode, Clock: clock,
				Tokens: &seqTokens{}, Jitter: fixedRand(0), Retry: core.RandomDelay(4, 100*ms, 100*ms)})
			if err != nil {
				t.Fatal(err)
			}
			base := core.TokenFromUint64s(0xca11e7, 0xba5e)
			var lock core.Lock
			if caller {
				lock, err = l.AcquireToken(context.Background(), "k", base)
			} else {
				lock, err = l.Acquire(context.Background(), "k")
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(d.toks) != 3 {
				t.Fatalf("%d attempts, want 3", len(d.toks))
			}
			seen := map[core.Token]bool{}
			for i, tok := range d.toks {
				if seen[tok] {
					t.Fatalf("caller token %v: attempt %d reuses token %v", caller, i+1, tok)
				}
				seen[tok] = true
			}
			if lock.Token() != d.toks[2] {
				t.Errorf("lock holds %v, the winning attempt sent %v", lock.Token(), d.toks[2])
			}
			if caller && d.toks[0] != base {
				t.Errorf("first attempt sent %v, not the caller's token", d.toks[0])
			}
		}
	})
}

// Bug 3: an extension's validity takes the drift of the lock's TTL, not of
// the TTL of the Locker that extends it.
func TestExtendUsesTheLocksDrift(t *testing.T) {
	forModes(t, func(t *testing.T, mode core.FanOut) {
		e := newEnv(t, 3, mode, core.Config{TTL: 10 * time.Second})
		short, err := core.New(e.c, core.Config{TTL: 100 * ms, FanOut: mode, Clock: e.clock,
			Tokens: &seqTokens{}, Jitter: fixedRand(0), Retry: core.NoRetry()})
		if err != nil {
			t.Fatal(err)
		}
		lock, err := e.l.Acquire(context.Background(), "k")
		if err != nil {
			t.Fatal(err)
		}
		ext, err := short.Extend(context.Background(), lock)
		if err != nil {
			t.Fatal(err)
		}
		// 10 s − 0 elapsed − (100 ms + 2 ms).
		if got := ext.Validity(); got != 9898*ms {
			t.Fatalf("validity after extend %v, want 9.898s", got)
		}
	})
}

// Bug 4: an extend round that proves a majority no longer holds the key
// leaves the lock lost, not valid until its old deadline. One that could
// not reach a quorum proves nothing and leaves it as it was.
func TestFailedExtendReportsTheLockLost(t *testing.T) {
	forModes(t, func(t *testing.T, mode core.FanOut) {
		for _, tc := range []struct {
			name  string
			fault func(c *memnode.Cluster, i int)
			kind  error
			lost  bool
		}{
			{"missing", func(c *memnode.Cluster, i int) { c.Restart(i) }, core.ErrNotHeld, true},
			{"taken", func(c *memnode.Cluster, i int) { c.Set(i, "k", core.TokenFromUint64s(7, 7), time.Minute) }, core.ErrTaken, true},
			{"unreachable", func(c *memnode.Cluster, i int) { c.SetDown(i, true) }, core.ErrQuorumUnreachable, false},
		} {
			t.Run(tc.name, func(t *testing.T) {
				e := newEnv(t, 3, mode, core.Config{})
				lock, err := e.l.Acquire(context.Background(), "k")
				if err != nil {
					t.Fatal(err)
				}
				tc.fault(e.c, 0)
				tc.fault(e.c, 1)
				ext, err := e.l.Extend(context.Background(), lock)
				if !errors.Is(err, tc.kind) {
					t.Fatalf("err = %v, want %v", err, tc.kind)
				}
				now := e.clock.Now()
				if got := ext.ValidAt(now); got == tc.lost {
					t.Fatalf("after a failed extend (%v), ValidAt = %v; want %v", err, got, !tc.lost)
				}
				if tc.lost {
					if ext.RemainingAt(now) != 0 || ext.Lost() != true {
						t.Fatalf("lost lock: remaining %v, Lost() %v", ext.RemainingAt(now), ext.Lost())
					}
					if _, err := e.l.Extend(context.Background(), ext); !errors.Is(err, core.ErrNotHeld) {
						t.Fatalf("extend of a lost lock: %v", err)
					}
				} else if ext.ValidUntil() != lock.ValidUntil() {
					t.Fatalf("unreachable extend changed the deadline")
				}
			})
		}
	})
}
