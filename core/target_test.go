package core_test

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/redlock-go/redlock/core"
)

// feedRound answers every command of a's round as reply says for its
// node, moves a on at the env's now, and returns the commands sent.
func feedRound(e env, a *core.Acquisition, reply func(node int) core.Reply) []core.Command {
	now := e.clock.Now()
	var sent []core.Command
	r := a.Round()
	for !r.Done() {
		node, cmd, _, ok := r.Next(now)
		if !ok {
			break
		}
		sent = append(sent, cmd)
		rep := reply(node)
		rep.Node = node
		r.Receive(rep)
	}
	a.RoundDone(now)
	return sent
}

// TestReaderFenceIsReadNotRaised: with Fencing, a reader's acquisition
// sends the fenced acquire of KindRead and no raise round after it: its
// grant's fence is the highest counter its quorum replied (the last
// writer's), as read. A writer's, as a mutex's, raises.
func TestReaderFenceIsReadNotRaised(t *testing.T) {
	forModes(t, func(t *testing.T, mode core.FanOut) {
		e := newEnv(t, 3, mode, core.Config{Fencing: true})
		a, err := e.l.spec.AcquireTarget(core.Target{Kind: core.KindRead, Key: "k"}, core.Token{}, e.clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		fences := []uint64{4, 9, 7}
		sent := feedRound(e, &a, func(node int) core.Reply {
			return core.Reply{Status: core.StatusOK, Fence: fences[node]}
		})
		for _, cmd := range sent {
			if cmd.Op != core.OpAcquireFenced || cmd.Kind != core.KindRead || cmd.Key != "k" || cmd.Keys != nil {
				t.Fatalf("reader sent %+v, want a fenced acquire of KindRead on k", cmd)
			}
		}
		if a.Phase() != core.PhaseDone {
			t.Fatalf("phase %v after the reader's won round (%v): want done, no raise", a.Phase(), a.Round().Command().Op)
		}
		g, err := a.Result()
		if err != nil {
			t.Fatal(err)
		}
		// A multiplexed round is decided by nodes 0 and 1; a sequential one
		// too (its quorum is its first two OKs).
		if g.Fence() != 9 {
			t.Fatalf("reader's fence %d, want 9: the highest of its quorum's replies", g.Fence())
		}
		if tg := g.Target(); tg.Kind != core.KindRead || tg.Key != "k" {
			t.Fatalf("grant's target %+v", tg)
		}

		w, err := e.l.spec.AcquireTarget(core.Target{Kind: core.KindWrite, Key: "k"}, core.Token{}, e.clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		feedRound(e, &w, func(node int) core.Reply { return core.Reply{Status: core.StatusOK, Fence: 10} })
		if cmd := w.Round().Command(); w.Phase() != core.PhaseRound || cmd.Op != core.OpRaiseFence || cmd.Kind != core.KindWrite || cmd.Fence != 10 {
			t.Fatalf("writer's won round: phase %v, next %+v; want a raise of 10 of KindWrite", w.Phase(), cmd)
		}
	})
}

// TestReaderFenceWithoutFencing: without Fencing a reader sends the plain
// acquire, and its fence is 0.
func TestReaderFenceWithoutFencing(t *testing.T) {
	e := newEnv(t, 3, core.Multiplexed, core.Config{})
	a, err := e.l.spec.AcquireTarget(core.Target{Kind: core.KindRead, Key: "k"}, core.Token{}, e.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	sent := feedRound(e, &a, func(int) core.Reply { return core.Reply{Status: core.StatusOK} })
	if sent[0].Op != core.OpAcquire {
		t.Fatalf("sent %v", sent[0].Op)
	}
	g, err := a.Result()
	if err != nil || g.Fence() != 0 {
		t.Fatalf("grant fence %d, err %v", g.Fence(), err)
	}
}

// TestReaderStepsAllocateNothing: a fenced reader's acquisition and its
// release, driven step by step, allocate nothing, as the mutex's do.
func TestReaderStepsAllocateNothing(t *testing.T) {
	e := newEnv(t, 3, core.Multiplexed, core.Config{Fencing: true})
	spec := e.l.spec
	now := e.clock.Now()
	target := core.Target{Kind: core.KindRead, Key: "k"}
	allocs := mallocsPerRun(100, func() {
		a, err := spec.AcquireTarget(target, core.Token{}, now)
		if err != nil {
			panic(err)
		}
		r := a.Round()
		for !r.Done() {
			node, _, _, ok := r.Next(now)
			if !ok {
				break
			}
			r.Receive(core.Reply{Node: node, Status: core.StatusOK, Fence: 3})
		}
		a.RoundDone(now)
		g, err := a.Result()
		if err != nil {
			panic(err)
		}
		rel, err := spec.Release(g, now)
		if err != nil {
			panic(err)
		}
		for !rel.Done() {
			node, _, _, ok := rel.Next(now)
			if !ok {
				break
			}
			rel.Receive(core.Reply{Node: node, Status: core.StatusOK})
		}
	})
	if allocs != 0 {
		t.Fatalf("%d allocations per reader acquire+release, want 0", allocs)
	}
}

// TestTargetsRefusedBeforeIO: bad targets are ErrInvalidConfig errors
// from AcquireTarget and TryTarget, and nothing is sent.
func TestTargetsRefusedBeforeIO(t *testing.T) {
	many := make([]string, core.MaxKeys+1)
	for i := range many {
		many[i] = "k" + strconv.Itoa(i)
	}
	for _, tc := range []struct {
		name string
		t    core.Target
		fair bool // refused only when the acquisition waits, under Fair
	}{
		{"no keys", core.Target{Kind: core.KindAll}, false},
		{"empty key list", core.Target{Kind: core.KindAll, Keys: []string{}}, false},
		{"a key twice", core.Target{Kind: core.KindAll, Keys: []string{"a", "b", "a"}}, false},
		{"an empty key", core.Target{Kind: core.KindAll, Keys: []string{"a", ""}}, false},
		{"too many keys", core.Target{Kind: core.KindAll, Keys: many}, false},
		{"Key not Keys[0]", core.Target{Kind: core.KindAll, Key: "b", Keys: []string{"a", "b"}}, false},
		{"Keys for a reader", core.Target{Kind: core.KindRead, Key: "a", Keys: []string{"a"}}, false},
		{"an empty reader key", core.Target{Kind: core.KindRead}, false},
		{"an unknown kind", core.Target{Kind: core.Kind(9), Key: "a"}, false},
		{"Fair reader", core.Target{Kind: core.KindRead, Key: "a"}, true},
		{"Fair writer", core.Target{Kind: core.KindWrite, Key: "a"}, true},
		{"Fair multi-key", core.Target{Kind: core.KindAll, Keys: []string{"a", "b"}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 3, core.Multiplexed, core.Config{Fair: tc.fair})
			_, err := e.l.spec.AcquireTarget(tc.t, core.Token{}, e.clock.Now())
			if !errors.Is(err, core.ErrInvalidConfig) {
				t.Fatalf("AcquireTarget: err = %v, want ErrInvalidConfig", err)
			}
			_, err = e.l.spec.TryTarget(tc.t, core.Token{}, e.clock.Now())
			if tc.fair {
				if err != nil {
					t.Fatalf("TryTarget under Fair: %v; it never waits, so it runs without Fair", err)
				}
			} else if !errors.Is(err, core.ErrInvalidConfig) {
				t.Fatalf("TryTarget: err = %v, want ErrInvalidConfig", err)
			}
			for i := 0; i < 3; i++ {
				if e.c.Calls(i) != 0 {
					t.Fatalf("node %d was sent %d commands", i, e.c.Calls(i))
				}
			}
		})
	}
}

// TestAllTargetKeyIsTheFirst: a multi-key target's Key is its first key,
// and every command carries the keys.
func TestAllTargetKeyIsTheFirst(t *testing.T) {
	e := newEnv(t, 3, core.Multiplexed, core.Config{})
	keys := []string{"b", "a", "c"}
	a, err := e.l.spec.TryTarget(core.Target{Kind: core.KindAll, Keys: keys}, core.Token{}, e.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	cmd := a.Round().Command()
	if all := cmd.Keys.All(); cmd.Kind != core.KindAll || cmd.Key != "b" || len(all) != 3 || &all[0] != &keys[0] {
		t.Fatalf("command %+v: want KindAll, Key b, the keys given", cmd)
	}
}

// TestFairReleasesOnlyTheMutex: a Fair Spec's TryTarget of another kind
// runs without Fair, and so does its grant's release: the nodes' waiter
// queues are the mutex's alone, and no release of a reader, a writer or
// a multi-key lock hands a key to a queued waiter.
func TestFairReleasesOnlyTheMutex(t *testing.T) {
	for _, target := range []core.Target{
		{Kind: core.KindRead, Key: "k"},
		{Kind: core.KindWrite, Key: "k"},
		{Kind: core.KindAll, Keys: []string{"k", "l"}},
		{Kind: core.KindMutex, Key: "k"},
	} {
		t.Run(target.Kind.String(), func(t *testing.T) {
			e := newEnv(t, 3, core.Multiplexed, core.Config{Fair: true})
			a, err := e.l.spec.TryTarget(target, core.Token{}, e.clock.Now())
			if err != nil {
				t.Fatal(err)
			}
			if cmd := a.Round().Command(); cmd.Fair || cmd.Ticket != 0 {
				t.Fatalf("a try's attempt is Fair: %+v", cmd)
			}
			feedRound(e, &a, func(int) core.Reply { return core.Reply{Status: core.StatusOK} })
			g, err := a.Result()
			if err != nil {
				t.Fatal(err)
			}
			r, err := e.l.spec.Release(g, e.clock.Now())
			if err != nil {
				t.Fatal(err)
			}
			cmd := r.Command()
			if cmd.Kind != target.Kind {
				t.Fatalf("release of kind %v", cmd.Kind)
			}
			if want := target.Kind == core.KindMutex; cmd.Fair != want {
				t.Fatalf("release of a %v grant: Fair %v, want %v", target.Kind, cmd.Fair, want)
			}
		})
	}
}

// TestWriterAttemptsShareAToken: a writer's attempts, drawn from
// Config.Tokens, hold tokens that differ (each attempt its own) in their
// last four bytes only, so that its script knows its own mark
// (SameAcquisition); other kinds draw each attempt's token afresh, and
// tokens that were drawn apart are not of the same acquisition.
func TestWriterAttemptsShareAToken(t *testing.T) {
	tokens := func(kind core.Kind) []core.Token {
		e := newEnv(t, 3, core.Multiplexed, core.Config{})
		// Tokens that differ in their first bytes, as random ones do.
		spec, err := core.NewSpec(e.c, core.Config{TTL: time.Second, NodeTimeout: 50 * ms,
			Retry: core.RandomDelay(3, 0, 0), Tokens: &spreadTokens{}, Jitter: fixedRand(1 << 62)})
		if err != nil {
			t.Fatal(err)
		}
		tgt := core.Target{Kind: kind, Key: "k"}
		if kind == core.KindAll {
			tgt = core.Target{Kind: kind, Keys: []string{"k"}}
		}
		a, err := spec.AcquireTarget(tgt, core.Token{}, e.clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		var out []core.Token
		for a.Phase() != core.PhaseDone {
			switch a.Phase() {
			case core.PhaseRound:
				if cmd := a.Round().Command(); cmd.Op == core.OpAcquire {
					out = append(out, cmd.Token)
				}
				feedRound(e, &a, func(int) core.Reply { return core.Reply{Status: core.StatusHeld, TTL: time.Second} })
			case core.PhaseWait:
				a.Wake(a.WakeAt())
			}
		}
		if len(out) != 3 {
			t.Fatalf("%v: %d attempts, want 3", kind, len(out))
		}
		return out
	}
	w := tokens(core.KindWrite)
	for i := 1; i < len(w); i++ {
		if w[i] == w[0] || !core.SameAcquisition(w[0], w[i]) {
			t.Fatalf("writer's attempt %d token %v, first %v: want distinct, of the same acquisition", i+1, w[i], w[0])
		}
	}
	if core.SameAcquisition(core.TokenFromUint64s(1, 1), core.TokenFromUint64s(2, 1)) {
		t.Fatal("tokens of different first bytes are of the same acquisition")
	}
	for _, kind := range []core.Kind{core.KindRead, core.KindAll, core.KindMutex} {
		ts := tokens(kind)
		if ts[0] == ts[1] || ts[1] == ts[2] {
			t.Fatalf("%v: attempts share a token", kind)
		}
	}
}

// spreadTokens issues distinct tokens that differ in their first bytes.
type spreadTokens struct{ n uint64 }

func (s *spreadTokens) NewToken() core.Token {
	s.n++
	return core.TokenFromUint64s(s.n<<40|0x5eed, s.n)
}

// TestRefusedWriterRenewsItsMark: a writer refused on held nodes, whose
// holders' expiry is a TTL away, wakes half a TTL after its attempt
// began, even while it relies on announcements, so that its next attempt
// renews its mark before the mark's TTL is out; a reader refused so
// sleeps until the expiry.
func TestRefusedWriterRenewsItsMark(t *testing.T) {
	for _, kind := range []core.Kind{core.KindWrite, core.KindRead} {
		t.Run(kind.String(), func(t *testing.T) {
			e := newEnv(t, 3, core.Multiplexed, core.Config{Retry: core.RandomDelay(3, 10*time.Second, 10*time.Second)})
			start := e.clock.Now()
			a, err := e.l.spec.AcquireTarget(core.Target{Kind: kind, Key: "k"}, core.Token{}, start)
			if err != nil {
				t.Fatal(err)
			}
			feedRound(e, &a, func(int) core.Reply { return core.Reply{Status: core.StatusHeld, TTL: time.Second} })
			feedRound(e, &a, func(int) core.Reply { return core.Reply{Status: core.StatusMissing} }) // the cleanup
			if a.Phase() != core.PhaseWait {
				t.Fatalf("phase %v, want a wait", a.Phase())
			}
			a.SetListening(0b111)
			want := start.Add(time.Second + time.Millisecond) // the holders' expiry
			if kind == core.KindWrite {
				want = start.Add(time.Second / 2)
			}
			if got := a.WakeAt(); !got.Equal(want) {
				t.Fatalf("WakeAt %v after the attempt, want %v", got.Sub(start), want.Sub(start))
			}
		})
	}
}
