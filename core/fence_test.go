package core_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/core/memnode"
)

// roundCounter counts the rounds (Begin calls) run over it.
type roundCounter struct {
	*memnode.Cluster
	rounds int
}

func (r *roundCounter) Begin(ctx context.Context) core.Batch { r.rounds++; return r.Cluster.Begin(ctx) }

// raising reports whether a's round raises the attempt's fence counters.
func raising(a *core.Acquisition) bool { return a.Round().Command().Op == core.OpRaiseFence }

func TestFencesGrowAcrossHolders(t *testing.T) {
	forModes(t, func(t *testing.T, mode core.FanOut) {
		e := newEnv(t, 5, mode, core.Config{Fencing: true})
		ctx := context.Background()
		var last uint64
		for i := 0; i < 5; i++ {
			lock, err := e.l.Acquire(ctx, "k")
			if err != nil {
				t.Fatal(err)
			}
			if lock.Fence() <= last {
				t.Fatalf("holder %d got fence %d after %d", i, lock.Fence(), last)
			}
			last = lock.Fence()
			ext, err := e.l.extend(ctx, lock)
			if err != nil || ext.Fence() != lock.Fence() {
				t.Fatalf("extend: %v, fence %d, want %d", err, ext.Fence(), lock.Fence())
			}
			if err := e.l.Release(ctx, ext); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// TestFenceIsTheLargestCounterAndIsRaised: nodes' counters differ (one
// node saw acquisitions the others missed); the lock's fence is the
// largest counter, and afterwards a majority holds it, so that the next
// holder's fence is larger even if its quorum leaves out the node that
// had the largest counter.
func TestFenceIsTheLargestCounterAndIsRaised(t *testing.T) {
	forModes(t, func(t *testing.T, mode core.FanOut) {
		e := newEnv(t, 5, mode, core.Config{Fencing: true})
		ctx := context.Background()
		// Node 0 alone takes 9 acquisitions that fail: its counter is 9.
		for i := 1; i < 5; i++ {
			e.c.SetDown(i, true)
		}
		for i := 0; i < 9; i++ {
			if _, err := e.l.Acquire(ctx, "k"); err == nil { // fails: one node of five
				t.Fatalf("acquisition %d won with one node of five", i)
			}
		}
		for i := 1; i < 5; i++ {
			e.c.SetDown(i, false)
		}
		if f := e.c.Fence(0, "k"); f != 9 {
			t.Fatalf("node 0's counter = %d, want 9", f)
		}
		lock, err := e.l.Acquire(ctx, "k")
		if err != nil {
			t.Fatal(err)
		}
		if lock.Fence() != 10 {
			t.Fatalf("fence %d, want 10 (node 0's 9 + 1)", lock.Fence())
		}
		raised := 0
		for i := 0; i < 5; i++ {
			if e.c.Fence(i, "k") >= lock.Fence() {
				raised++
			}
		}
		if raised < 3 {
			t.Fatalf("%d nodes hold a counter >= %d, want a majority", raised, lock.Fence())
		}
		if err := e.l.Release(ctx, lock); err != nil {
			t.Fatal(err)
		}
		// The next holder reaches only nodes 2..4: it must still go past 10.
		e.c.SetDown(0, true)
		e.c.SetDown(1, true)
		next, err := e.l.Acquire(ctx, "k")
		if err != nil {
			t.Fatal(err)
		}
		if next.Fence() <= lock.Fence() {
			t.Fatalf("next holder's fence %d is not above %d", next.Fence(), lock.Fence())
		}
	})
}

func TestFencingAddsOneRound(t *testing.T) {
	forModes(t, func(t *testing.T, mode core.FanOut) {
		for _, fencing := range []bool{false, true} {
			clock := memnode.NewManualClock(epoch)
			d := &roundCounter{Cluster: memnode.New(3, clock)}
			l, err := newLocker(d, clock, core.Config{TTL: time.Second, FanOut: mode, Fencing: fencing,
				Tokens: &seqTokens{}, Jitter: fixedRand(0)})
			if err != nil {
				t.Fatal(err)
			}
			lock, err := l.Acquire(context.Background(), "k")
			if err != nil {
				t.Fatal(err)
			}
			want := map[bool]int{false: 1, true: 2}[fencing]
			if d.rounds != want {
				t.Fatalf("fencing=%v: acquire took %d rounds, want %d", fencing, d.rounds, want)
			}
			if (lock.Fence() != 0) != fencing {
				t.Fatalf("fencing=%v: fence %d", fencing, lock.Fence())
			}
			if err := l.Release(context.Background(), lock); err != nil {
				t.Fatalf("fencing=%v: release: %v", fencing, err)
			}
			if d.rounds != want+1 {
				t.Fatalf("fencing=%v: release took %d rounds", fencing, d.rounds-want)
			}
		}
	})
}

// TestFailedRaiseFailsTheAttempt drives an acquisition step by step: the
// acquire round wins, but the raise finds the keys gone on a majority (a
// holder paused past its TTL between the rounds). The attempt fails with
// ErrNotHeld, cleans up, and hands out no lock.
func TestFailedRaiseFailsTheAttempt(t *testing.T) {
	forModes(t, func(t *testing.T, mode core.FanOut) {
		e := newEnv(t, 3, mode, core.Config{Fencing: true})
		now := e.clock.Now()
		a, err := e.l.spec.Acquire("k", core.Token{}, now)
		if err != nil {
			t.Fatal(err)
		}
		feed := func(status core.Status, fence uint64) []core.Command {
			var sent []core.Command
			r := a.Round()
			for !r.Done() {
				for {
					node, cmd, _, ok := r.Next(now)
					if !ok {
						break
					}
					sent = append(sent, cmd)
					r.Receive(core.Reply{Node: node, Status: status, Fence: fence + uint64(node)}) //nolint:gosec // G115: node is an index from Next, >= 0
				}
			}
			a.RoundDone(now)
			return sent
		}
		if cmds := feed(core.StatusOK, 7); cmds[0].Op != core.OpAcquireFenced {
			t.Fatalf("attempt sent %v", cmds[0].Op)
		}
		if !raising(&a) || a.Phase() != core.PhaseRound {
			t.Fatalf("no raise round after a won attempt: phase %v", a.Phase())
		}
		want := uint64(7 + 2) // node 2's counter, the largest
		if mode == core.Multiplexed {
			want = 7 + 1 // decided once nodes 0 and 1 granted
		}
		if cmd := a.Round().Command(); cmd.Op != core.OpRaiseFence || cmd.Fence != want {
			t.Fatalf("raise round sends %v fence %d, want %d", cmd.Op, cmd.Fence, want)
		}
		feed(core.StatusMissing, 0)
		if !core.Cleaning(&a) || raising(&a) {
			t.Fatal("a failed raise did not start the cleanup")
		}
		if cmd := a.Round().Command(); cmd.Op != core.OpRelease {
			t.Fatalf("cleanup sends %v", cmd.Op)
		}
		feed(core.StatusOK, 0)
		_, err = a.Result()
		if !errors.Is(err, core.ErrNotHeld) || !strings.Contains(err.Error(), "fence") {
			t.Fatalf("err = %v, want ErrNotHeld naming the fence raise", err)
		}
	})
}

// TestCancelBeforeTheRaiseCleansUp: a caller that gives up between the
// won acquire round and the raise leaves no keys.
func TestCancelBeforeTheRaiseCleansUp(t *testing.T) {
	e := newEnv(t, 3, core.Multiplexed, core.Config{Fencing: true})
	now := e.clock.Now()
	a, _ := e.l.spec.Acquire("k", core.Token{}, now)
	r := a.Round()
	for node := 0; node < 3; node++ {
		r.Next(now)
		r.Receive(core.Reply{Node: node, Status: core.StatusOK, Fence: 1})
	}
	a.RoundDone(now)
	if !raising(&a) {
		t.Fatal("no raise round")
	}
	a.Cancel(now, context.Canceled)
	if a.Phase() != core.PhaseRound || !core.Cleaning(&a) {
		t.Fatalf("cancel before the raise was sent skipped the cleanup: phase %v", a.Phase())
	}
}

func TestFencingRefusesCounterKeys(t *testing.T) {
	e := newEnv(t, 3, core.Multiplexed, core.Config{Fencing: true})
	ctx := context.Background()
	for _, key := range []string{core.FenceKeyPrefix + "k", strings.Repeat("x", core.MaxKeyLen-len(core.FenceKeyPrefix)+1)} {
		if _, err := e.l.Acquire(ctx, key); !errors.Is(err, core.ErrInvalidConfig) {
			t.Fatalf("key %.30q: err = %v, want ErrInvalidConfig", key, err)
		}
	}
	if e.c.Calls(0) != 0 {
		t.Fatal("a refused key was sent")
	}
	plain := newEnv(t, 3, core.Multiplexed, core.Config{})
	if _, err := plain.l.Acquire(ctx, core.FenceKeyPrefix+"k"); err != nil {
		t.Fatalf("without fencing the prefix is an ordinary key: %v", err)
	}
}
