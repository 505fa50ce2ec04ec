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
			// 441 ms of validity, above the loss margin (two round
			// bounds) of a 200 ms (sequential: 3×60 ms) bound: a grant.
			timeout, lat := 200*ms, 151*ms
			if mode == core.Sequential {
				timeout, lat = 60*ms, 50*ms // three nodes one after another: 150 ms, plus the third's 1 ms below
			}
			e := newEnv(t, 3, mode, core.Config{TTL: 600 * ms, NodeTimeout: timeout})
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
			if got := core.RemainingAt(lock, e.clock.Now()); got != 441*ms {
				t.Errorf("remaining after acquire %v, want 441ms", got)
			}
			if got := core.GrantValidity(lock); got != 441*ms {
				t.Errorf("validity %v, want 441ms", got)
			}
			if want := start.Add(600*ms - 8*ms); !lock.ValidUntil().Equal(want) {
				t.Errorf("valid until %v, want start + TTL − drift = %v", lock.ValidUntil(), want)
			}
		})
		t.Run("extend at once", func(t *testing.T) {
			// The acquisition takes 221 ms (222 sequential) of an 800 ms TTL,
			// just under a round bound of 222 ms (225): 569 ms (568) are left,
			// room for an extension round that ends a round bound before the
			// validity does. Counting the elapsed time twice would leave
			// 348 ms (346): too little, and the extension would be refused.
			lat, timeout := 221*ms, 222*ms
			if mode == core.Sequential {
				lat, timeout = 74*ms, 75*ms
			}
			e := newEnv(t, 3, mode, core.Config{TTL: 800 * ms, NodeTimeout: timeout})
			for i := range 3 {
				e.c.SetLatency(i, lat)
			}
			lock, err := e.l.Acquire(context.Background(), "k")
			if err != nil {
				t.Fatal(err)
			}
			if core.RemainingAt(lock, e.clock.Now()) <= 0 {
				t.Fatalf("lock born expired: validity %v", core.GrantValidity(lock))
			}
			for i := range 3 {
				e.c.SetLatency(i, 0)
			}
			if _, err := e.l.extend(context.Background(), lock); err != nil {
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
			l, err := newLocker(d, clock, core.Config{TTL: time.Second, NodeTimeout: 50 * ms, FanOut: mode,
				Tokens: &seqTokens{}, Jitter: fixedRand(0), Retry: core.RandomDelay(4, 100*ms, 100*ms)})
			if err != nil {
				t.Fatal(err)
			}
			base := core.TokenFromUint64s(0xca11e7, 0xba5e)
			var lock core.Grant
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
			if caller {
				// Attempt k holds the caller's token with its last four
				// bytes XORed with k−1.
				for k, tok := range d.toks {
					want := base
					want[15] ^= byte(k)
					if tok != want {
						t.Errorf("attempt %d sent %v, want %v", k+1, tok, want)
					}
				}
			}
		}
	})
}

// Bug 3: an extension's validity takes the drift of the grant's TTL, not
// of the TTL of the Spec whose Lease extends it.
func TestExtendUsesTheLocksDrift(t *testing.T) {
	forModes(t, func(t *testing.T, mode core.FanOut) {
		short, lock := shortExtender(t, mode)
		ext, err := short.extend(context.Background(), lock)
		if err != nil {
			t.Fatal(err)
		}
		// 10 s − 0 elapsed − (100 ms + 2 ms).
		if got := core.GrantValidity(ext); got != 9898*ms {
			t.Fatalf("validity after extend %v, want 9.898s", got)
		}
	})
}

// shortExtender returns a 10 s lock of a 3-node cluster and a locker of
// 100 ms locks on the same nodes, to extend it with.
func shortExtender(t *testing.T, mode core.FanOut) (*locker, core.Grant) {
	t.Helper()
	e := newEnv(t, 3, mode, core.Config{TTL: 10 * time.Second})
	short, err := newLocker(e.c, e.clock, core.Config{TTL: 100 * ms, FanOut: mode,
		Tokens: &seqTokens{}, Jitter: fixedRand(0), Retry: core.RandomDelay(1, 0, 0)})
	if err != nil {
		t.Fatal(err)
	}
	lock, err := e.l.Acquire(context.Background(), "k")
	if err != nil {
		t.Fatal(err)
	}
	return short, lock
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
				ls := e.l.Lease(lock)
				err = e.l.Extend(context.Background(), &ls)
				if !errors.Is(err, tc.kind) {
					t.Fatalf("err = %v, want %v", err, tc.kind)
				}
				if lost := ls.Phase() == core.PhaseDone; lost != tc.lost {
					t.Fatalf("after a failed extend (%v), lease phase %v; want lost %v", err, ls.Phase(), tc.lost)
				}
				if !ls.Grant().ValidUntil().Equal(lock.ValidUntil()) {
					t.Fatalf("a failed extend changed the deadline")
				}
				if tc.lost {
					if !errors.Is(ls.Err(), tc.kind) {
						t.Fatalf("lost lease's Err %v, want %v", ls.Err(), tc.kind)
					}
					calls := e.c.Calls(2)
					if err := e.l.Extend(context.Background(), &ls); !errors.Is(err, tc.kind) || e.c.Calls(2) != calls {
						t.Fatalf("extend of a lost lock: %v, %d commands sent", err, e.c.Calls(2)-calls)
					}
				} else if ls.Err() != nil {
					t.Fatalf("an extend that proved nothing ended the lease: %v", ls.Err())
				}
			})
		}
	})
}
