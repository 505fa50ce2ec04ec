package core_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redlock-go/redlock/core"
)

func TestHashTag(t *testing.T) {
	for _, tc := range []struct {
		key, tag string
		ok       bool
	}{
		{"{user1}.x", "user1", true},
		{"a{b}c{d}", "b", true},
		{"{{a}}", "{a", true},
		{"{}a", "", false},
		{"a{}{b}", "", false}, // only the first '{' counts
		{"{a", "", false},
		{"a}b", "", false},
		{"plain", "", false},
		{"", "", false},
	} {
		if tag, ok := core.HashTag(tc.key); tag != tc.tag || ok != tc.ok {
			t.Errorf("HashTag(%q) = %q, %v; want %q, %v", tc.key, tag, ok, tc.tag, tc.ok)
		}
	}
}

// TestPermitKeysShareATag: every slot of a semaphore has the same hash
// tag, the key's own when it has one, so that they share a hash slot on
// a Cluster.
func TestPermitKeysShareATag(t *testing.T) {
	for _, tc := range []struct{ key, slot2, tag string }{
		{"jobs", "{jobs}:permit:2", "jobs"},
		{"{tenant}:jobs", "{tenant}:jobs:permit:2", "tenant"},
		{"a}b", "{a}b}:permit:2", "a"},
	} {
		slots, err := core.PermitKeys(tc.key, 3)
		if err != nil {
			t.Fatalf("%q: %v", tc.key, err)
		}
		if slots[2] != tc.slot2 || core.PermitKey(tc.key, 2) != tc.slot2 {
			t.Errorf("%q: slot 2 is %q, want %q", tc.key, slots[2], tc.slot2)
		}
		for _, s := range slots {
			if tag, _ := core.HashTag(s); tag != tc.tag {
				t.Errorf("%q: slot %q has tag %q, want %q", tc.key, s, tag, tc.tag)
			}
		}
	}
}

// TestPermitsRefuseBadInput: bad input is refused with an
// ErrInvalidConfig error before any command.
func TestPermitsRefuseBadInput(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	spec, err := core.NewSpec(names{"a", "b", "c"}, core.Config{Tokens: &seqTokens{}, Jitter: fixedRand(0)})
	if err != nil {
		t.Fatal(err)
	}
	fair, err := core.NewSpec(names{"a", "b", "c"}, core.Config{Fair: true, Tokens: &seqTokens{}, Jitter: fixedRand(0)})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []int{0, -1, core.MaxPermits + 1} {
		if _, err := core.PermitKeys("k", k); !errors.Is(err, core.ErrInvalidConfig) {
			t.Errorf("PermitKeys of %d permits: %v, want ErrInvalidConfig", k, err)
		}
	}
	three, _ := core.PermitKeys("k", 3)
	var many []string
	for i := 0; i <= core.MaxPermits; i++ {
		many = append(many, core.PermitKey("k", i))
	}
	long := strings.Repeat("x", core.MaxKeyLen)
	for name, slots := range map[string][]string{
		"none":             nil,
		"too many":         many,
		"not slots":        {"a", "b"},
		"out of order":     {three[0], three[2], three[1]},
		"twice":            {three[0], three[1], three[1]},
		"another's":        {three[0], core.PermitKey("j", 1)},
		"leading zero":     {three[0], "{k}:permit:01"},
		"untagged base":    {"k:permit:0", "k:permit:1"},
		"too long a slot":  {core.PermitKey(long, 0)},
		"not from slot 0":  three[1:],
		"a slot past many": append(append([]string{}, three...), "{k}:permit:99999999999999999999"),
	} {
		if _, err := spec.AcquirePermit(slots, core.Token{}, now); !errors.Is(err, core.ErrInvalidConfig) {
			t.Errorf("%s: AcquirePermit: %v, want ErrInvalidConfig", name, err)
		}
		if _, err := spec.TryPermit(slots, core.Token{}, now); !errors.Is(err, core.ErrInvalidConfig) {
			t.Errorf("%s: TryPermit: %v, want ErrInvalidConfig", name, err)
		}
	}
	if _, err := spec.AcquirePermit(three, core.TokenFromUint64s(0, 1), now); !errors.Is(err, core.ErrInvalidConfig) {
		t.Errorf("a token with its first 8 bytes zero: %v, want ErrInvalidConfig", err)
	}
	if _, err := fair.AcquirePermit(three, core.Token{}, now); !errors.Is(err, core.ErrInvalidConfig) {
		t.Errorf("Fair AcquirePermit: %v, want ErrInvalidConfig", err)
	}
	p, err := fair.TryPermit(three, core.Token{}, now)
	if err != nil {
		t.Fatalf("Fair TryPermit: %v, want it to run without Fair", err)
	}
	if cmd := p.Round().Command(); cmd.Fair || cmd.Ticket != 0 || cmd.Probe {
		t.Errorf("Fair TryPermit's attempt %+v: want a plain SET NX", cmd)
	}
	started, err := spec.AcquirePermit(three, core.Token{}, now)
	if err != nil {
		t.Fatal(err)
	}
	if err := spec.AcquirePermitIn(&started, nil, core.Token{}, now); !errors.Is(err, core.ErrInvalidConfig) || started.Phase() != 0 {
		t.Errorf("AcquirePermitIn of no slots over a started Permits: %v, phase %v; want ErrInvalidConfig, the zero Permits", err, started.Phase())
	}
	if err := fair.AcquirePermitIn(&p, three, core.Token{}, now); !errors.Is(err, core.ErrInvalidConfig) || p.Phase() != 0 {
		t.Errorf("Fair AcquirePermitIn: %v, phase %v; want ErrInvalidConfig, the zero Permits", err, p.Phase())
	}
	var zero core.Permits
	if _, err := zero.Result(); !errors.Is(err, core.ErrInvalidConfig) || zero.Phase() != 0 {
		t.Errorf("zero Permits: phase %v, %v; want 0, ErrInvalidConfig", zero.Phase(), err)
	}
}

// permitSpec is a Spec over 3 step-driven nodes with sweeps of tries.
func permitSpec(t *testing.T, tries int) core.Spec {
	t.Helper()
	spec, err := core.NewSpec(names{"a", "b", "c"}, core.Config{TTL: 10 * time.Second, Tokens: &seqTokens{},
		Jitter: fixedRand(0), Retry: core.RandomDelay(tries, 100*ms, 100*ms)})
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// sweep drives p's rounds, answering every attempt with st (held replies
// with ttl left), until p leaves PhaseRound, and returns the keys of
// the attempts in order.
func sweep(t *testing.T, p *core.Permits, now time.Time, st core.Status, ttl func(key string) time.Duration) []string {
	t.Helper()
	var keys []string
	for i := 0; p.Phase() == core.PhaseRound; i++ {
		if i == 10_000 {
			t.Fatal("the sweep never ends")
		}
		r := p.Round()
		cmd := r.Command()
		if cmd.Op == core.OpAcquire {
			if cmd.Probe != (len(keys) > 0 || p.Attempts() > 1) {
				t.Errorf("attempt %d on %q: Probe %v; want it from the second attempt on", p.Attempts(), cmd.Key, cmd.Probe)
			}
			keys = append(keys, cmd.Key)
			if p.Slot() < 0 || cmd.Key != core.PermitKey("k", p.Slot()) {
				t.Fatalf("attempt on %q while Slot() is %d", cmd.Key, p.Slot())
			}
		}
		for {
			node, c, _, ok := r.Next(now)
			if !ok {
				break
			}
			rep := core.Reply{Node: node, Status: st}
			if c.Op == core.OpRelease {
				rep.Status = core.StatusMissing
			} else if st == core.StatusHeld {
				rep.TTL = ttl(c.Key)
			}
			r.Receive(rep)
		}
		p.RoundDone(now)
	}
	return keys
}

// TestPermitsSweepEverySlotOnceThenWait: one slot per round, each slot
// once per sweep, in turn from the slot drawn from the token; then a
// wait for the earliest holder's expiry, or the retry delay if sooner;
// the next sweep starts at the slot whose holder expired first; the
// result, once the sweeps run out, is ErrTaken naming the nodes.
func TestPermitsSweepEverySlotOnceThenWait(t *testing.T) {
	spec := permitSpec(t, 2)
	slots, _ := core.PermitKeys("k", 4)
	now := time.Unix(1_000_000, 0)
	p, err := spec.AcquirePermit(slots, core.Token{}, now)
	if err != nil {
		t.Fatal(err)
	}
	home := p.Slot()
	ttls := map[string]time.Duration{slots[0]: 5 * time.Second, slots[1]: 40 * ms, slots[2]: time.Second, slots[3]: 3 * time.Second}
	got := sweep(t, &p, now, core.StatusHeld, func(k string) time.Duration { return ttls[k] })
	var want []string
	for i := 0; i < 4; i++ {
		want = append(want, slots[(home+i)%4])
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("first sweep tried %v, want %v", got, want)
	}
	if p.Phase() != core.PhaseWait {
		t.Fatalf("phase %v after a refused sweep, want a wait", p.Phase())
	}
	if at := p.WakeAt(); !at.Equal(now.Add(41 * ms)) {
		t.Errorf("wake at +%v, want the earliest expiry, slot 1's 40 ms and 1 ms", at.Sub(now))
	}
	ttls[slots[1]] = 10 * time.Second
	now = now.Add(41 * ms)
	p.Wake(now)
	if p.Slot() != 1 {
		t.Errorf("the second sweep starts at slot %d, want 1, whose holder expired", p.Slot())
	}
	got = sweep(t, &p, now, core.StatusHeld, func(k string) time.Duration { return ttls[k] })
	if len(got) != 4 || p.Phase() != core.PhaseDone {
		t.Fatalf("second sweep: %v, phase %v; want 4 attempts and done (2 tries)", got, p.Phase())
	}
	_, err = p.Result()
	if !errors.Is(err, core.ErrTaken) {
		t.Fatalf("%v, want ErrTaken", err)
	}
	if e := asError(t, err); e.Attempts != 8 || len(e.Failed(core.StatusHeld)) < 2 {
		t.Errorf("error %v: want 8 attempts and a quorum of held nodes named", err)
	}
}

// TestPermitsWaitForTheRetryDelayWhenSooner: the wait ends at the retry
// delay when it comes before every holder's expiry.
func TestPermitsWaitForTheRetryDelayWhenSooner(t *testing.T) {
	spec := permitSpec(t, 3)
	slots, _ := core.PermitKeys("k", 2)
	now := time.Unix(1_000_000, 0)
	p, _ := spec.AcquirePermit(slots, core.Token{}, now)
	sweep(t, &p, now, core.StatusHeld, func(string) time.Duration { return 5 * time.Second })
	if at := p.WakeAt(); !at.Equal(now.Add(100 * ms)) {
		t.Errorf("wake at +%v, want the retry delay 100ms", at.Sub(now))
	}
	// Listening to every node, the wait relies on announcements and
	// lasts until the expiry.
	p.SetListening(0b111)
	if at := p.WakeAt(); !at.Equal(now.Add(5*time.Second + ms)) {
		t.Errorf("listening: wake at +%v, want the expiry", at.Sub(now))
	}
	p.SetListening(0b011)
	if at := p.WakeAt(); !at.Equal(now.Add(100 * ms)) {
		t.Errorf("listening to 2 of 3: wake at +%v, want the retry delay", at.Sub(now))
	}
}

// TestPermitsWakeOnAQuorumOfOneSlot: announcements of one slot from a
// quorum of nodes wake the wait, and the next sweep starts at that slot;
// announcements spread over slots, none from a quorum, do not.
func TestPermitsWakeOnAQuorumOfOneSlot(t *testing.T) {
	spec := permitSpec(t, 3)
	slots, _ := core.PermitKeys("k", 4)
	now := time.Unix(1_000_000, 0)
	p, _ := spec.AcquirePermit(slots, core.Token{}, now)
	p.SetListening(0b111)
	sweep(t, &p, now, core.StatusHeld, func(string) time.Duration { return 5 * time.Second })
	wait := p.WakeAt()
	now = now.Add(ms)
	p.Announce(2, 0, now)
	p.Announce(3, 1, now)
	p.Announce(1, 2, now)
	p.Announce(-1, 0, now)
	p.Announce(9, 0, now)
	p.Announce(2, 7, now)
	if !p.WakeAt().Equal(wait) {
		t.Fatalf("woken at +%v by no slot's quorum", p.WakeAt().Sub(now))
	}
	p.Announce(2, 2, now)
	if !p.WakeAt().Equal(now) {
		t.Fatalf("wake at +%v after slot 2 was announced by 2 of 3 nodes, want now", p.WakeAt().Sub(now))
	}
	p.Wake(now)
	if p.Slot() != 2 || p.Round().Command().Key != slots[2] {
		t.Errorf("woken sweep starts at slot %d, want 2", p.Slot())
	}
}

// TestPermitsAnnouncementsCountFromTheSlotsAttempt: a slot's
// announcements heard before its attempt started are stale: they do not
// wake the wait after the sweep. Announcements heard during the sweep,
// after the slot's attempt, do.
func TestPermitsAnnouncementsCountFromTheSlotsAttempt(t *testing.T) {
	spec := permitSpec(t, 3)
	slots, _ := core.PermitKeys("k", 2)
	now := time.Unix(1_000_000, 0)
	p, _ := spec.AcquirePermit(slots, core.Token{}, now)
	next := (p.Slot() + 1) % 2 // its attempt is to come
	for node := 0; node < 3; node++ {
		p.Announce(next, node, now)
	}
	sweep(t, &p, now, core.StatusHeld, func(string) time.Duration { return 5 * time.Second })
	if !p.WakeAt().Equal(now.Add(100 * ms)) {
		t.Fatalf("woken at +%v by announcements from before the slot's attempt", p.WakeAt().Sub(now))
	}

	q, _ := spec.AcquirePermit(slots, core.Token{}, now)
	// Drive q's first slot to its end, then hear that slot freed.
	first := q.Slot()
	for q.Slot() == first && q.Phase() == core.PhaseRound {
		r := q.Round()
		for {
			node, c, _, ok := r.Next(now)
			if !ok {
				break
			}
			rep := core.Reply{Node: node, Status: core.StatusHeld, TTL: 5 * time.Second}
			if c.Op == core.OpRelease {
				rep.Status = core.StatusMissing
			}
			r.Receive(rep)
		}
		q.RoundDone(now)
	}
	for node := 0; node < 2; node++ {
		q.Announce(first, node, now)
	}
	sweep(t, &q, now, core.StatusHeld, func(string) time.Duration { return 5 * time.Second })
	if !q.WakeAt().Equal(now) {
		t.Errorf("wake at +%v, want now: slot %d was freed during the sweep", q.WakeAt().Sub(now), first)
	}
}

// TestPermitsFailAsTakenOnlyIfEverySlotWas: a sweep with one slot
// unreachable and the others taken fails with ErrQuorumUnreachable: it
// cannot tell that every permit is taken.
func TestPermitsFailAsTakenOnlyIfEverySlotWas(t *testing.T) {
	spec := permitSpec(t, 1)
	slots, _ := core.PermitKeys("k", 3)
	now := time.Unix(1_000_000, 0)
	p, _ := spec.TryPermit(slots, core.Token{}, now)
	for p.Phase() == core.PhaseRound {
		r := p.Round()
		down := r.Command().Key == slots[1]
		for {
			node, c, _, ok := r.Next(now)
			if !ok {
				break
			}
			rep := core.Reply{Node: node, Status: core.StatusHeld, TTL: time.Second}
			switch {
			case c.Op == core.OpRelease:
				rep = core.Reply{Node: node, Status: core.StatusMissing}
			case down:
				rep = core.Reply{Node: node, Status: core.StatusError, Err: errors.New("down")}
			}
			r.Receive(rep)
		}
		p.RoundDone(now)
	}
	if p.Phase() != core.PhaseDone {
		t.Fatalf("phase %v: TryPermit makes one sweep and never waits", p.Phase())
	}
	_, err := p.Result()
	if !errors.Is(err, core.ErrQuorumUnreachable) || errors.Is(err, core.ErrTaken) {
		t.Fatalf("%v, want ErrQuorumUnreachable alone", err)
	}
	if e := asError(t, err); e.Key != slots[1] || len(e.Failed(core.StatusError)) < 2 {
		t.Errorf("%v: want slot 1's key and a quorum of failed nodes", err)
	}
}

// TestPermitsCancel: a cancel during an attempt runs its cleanup, then
// ends with ErrCancelled; during a wait it ends at once; GiveUp in a
// wait ends with the last sweep's error.
func TestPermitsCancel(t *testing.T) {
	spec := permitSpec(t, 5)
	slots, _ := core.PermitKeys("k", 2)
	now := time.Unix(1_000_000, 0)
	p, _ := spec.AcquirePermit(slots, core.Token{}, now)
	r := p.Round()
	node, _, _, _ := r.Next(now)
	r.Receive(core.Reply{Node: node, Status: core.StatusOK})
	p.Cancel(now, context.Canceled)
	if p.Phase() != core.PhaseRound || p.Round().Command().Op != core.OpRelease {
		t.Fatalf("phase %v, op %v after a cancel mid-attempt: want its cleanup", p.Phase(), p.Round().Command().Op)
	}
	sweep(t, &p, now, core.StatusOK, nil)
	if _, err := p.Result(); !errors.Is(err, core.ErrCancelled) || !errors.Is(err, context.Canceled) {
		t.Errorf("%v, want ErrCancelled with its cause", err)
	}

	p, _ = spec.AcquirePermit(slots, core.Token{}, now)
	sweep(t, &p, now, core.StatusHeld, func(string) time.Duration { return time.Second })
	p.Cancel(now, context.Canceled)
	if _, err := p.Result(); p.Phase() != core.PhaseDone || !errors.Is(err, core.ErrCancelled) {
		t.Errorf("cancelled in a wait: phase %v, %v; want done, ErrCancelled", p.Phase(), err)
	}

	p, _ = spec.AcquirePermit(slots, core.Token{}, now)
	sweep(t, &p, now, core.StatusHeld, func(string) time.Duration { return time.Second })
	p.GiveUp(now)
	if _, err := p.Result(); p.Phase() != core.PhaseDone || !errors.Is(err, core.ErrTaken) {
		t.Errorf("given up in a wait: phase %v, %v; want done, ErrTaken", p.Phase(), err)
	}
}

// TestPermitsTokens: every attempt holds a token of its own; a given
// token is attempt 1's, and derived for the next ones.
func TestPermitsTokens(t *testing.T) {
	spec := permitSpec(t, 2)
	slots, _ := core.PermitKeys("k", 3)
	now := time.Unix(1_000_000, 0)
	tok := core.TokenFromUint64s(7, 7)
	for _, given := range []core.Token{tok, {}} {
		p, _ := spec.AcquirePermit(slots, given, now)
		seen := map[core.Token]bool{}
		for i := 0; p.Phase() == core.PhaseRound; i++ {
			r := p.Round()
			c := r.Command()
			if c.Op == core.OpAcquire {
				if seen[c.Token] {
					t.Fatalf("token %v held by two attempts", c.Token)
				}
				if given != (core.Token{}) && len(seen) == 0 && c.Token != given {
					t.Errorf("attempt 1 holds %v, want the given token", c.Token)
				}
				seen[c.Token] = true
			}
			sweep1(r, now)
			p.RoundDone(now)
			if p.Phase() == core.PhaseWait {
				p.Wake(now)
			}
		}
		if len(seen) != 6 {
			t.Errorf("given %v: %d tokens for 6 attempts", given, len(seen))
		}
	}
}

// sweep1 answers every command of r as held (acquire) or missing.
func sweep1(r *core.Round, now time.Time) {
	for {
		node, c, _, ok := r.Next(now)
		if !ok {
			return
		}
		st := core.StatusHeld
		if c.Op == core.OpRelease {
			st = core.StatusMissing
		}
		r.Receive(core.Reply{Node: node, Status: st, TTL: time.Second})
	}
}

// TestPermitsAtMostKHolders: over memnode, K+2 acquisitions of K permits
// with one sweep each: K of them hold distinct slots, the others fail
// with ErrTaken; once a holder releases, one more holds its slot.
func TestPermitsAtMostKHolders(t *testing.T) {
	forModes(t, func(t *testing.T, mode core.FanOut) {
		const k = 3
		e := newEnv(t, 5, mode, core.Config{})
		ctx := context.Background()
		slots, _ := core.PermitKeys("sem", k)
		held := map[int]core.Grant{}
		var p core.Permits
		for i := 0; i < k+2; i++ {
			g, slot, err := e.l.AcquirePermit(ctx, &p, slots)
			switch {
			case i < k && err != nil:
				t.Fatalf("acquisition %d: %v, want a permit", i, err)
			case i >= k && !errors.Is(err, core.ErrTaken):
				t.Fatalf("acquisition %d: %v, %v; want ErrTaken", i, g.Key(), err)
			case err == nil:
				if _, dup := held[slot]; dup || g.Key() != slots[slot] {
					t.Fatalf("acquisition %d holds %q as slot %d, held already: %v", i, g.Key(), slot, dup)
				}
				held[slot] = g
			}
		}
		for slot, g := range held {
			if err := e.l.Release(ctx, g); err != nil {
				t.Fatal(err)
			}
			g2, slot2, err := e.l.AcquirePermit(ctx, &p, slots)
			if err != nil || slot2 != slot {
				t.Fatalf("after slot %d's release: slot %d, %v; want slot %d", slot, slot2, err, slot)
			}
			held[slot] = g2
			break
		}
	})
}

// TestPermitsWokenSweepTriesTheSlotReleased: a sweep woken by one slot's
// announcements tries that slot alone, then waits again, keeping what
// the last whole sweep learnt of the others' expiries; a wake by more
// slots' announcements than are kept track of sweeps every slot.
func TestPermitsWokenSweepTriesTheSlotReleased(t *testing.T) {
	spec := permitSpec(t, 10)
	slots, _ := core.PermitKeys("k", 12)
	now := time.Unix(1_000_000, 0)
	p, _ := spec.AcquirePermit(slots, core.Token{}, now)
	p.SetListening(0b111)
	ttls := func(k string) time.Duration {
		if k == slots[5] {
			return 2 * time.Second
		}
		return 9 * time.Second
	}
	if got := sweep(t, &p, now, core.StatusHeld, ttls); len(got) != 12 {
		t.Fatalf("first sweep: %d attempts, want 12", len(got))
	}
	for node := 0; node < 2; node++ {
		p.Announce(7, node, now)
	}
	p.Wake(now)
	got := sweep(t, &p, now, core.StatusHeld, func(string) time.Duration { return 9 * time.Second })
	if strings.Join(got, " ") != slots[7] || p.Phase() != core.PhaseWait {
		t.Fatalf("woken sweep tried %v, phase %v; want slot 7 alone, then a wait", got, p.Phase())
	}
	if at := p.WakeAt(); !at.Equal(now.Add(2*time.Second + ms)) {
		t.Errorf("wake at +%v, want slot 5's expiry, learnt by the whole sweep", at.Sub(now))
	}
	for slot := 0; slot < 12; slot++ {
		p.Announce(slot, 0, now)
	}
	if !p.WakeAt().Equal(now) {
		t.Fatalf("wake at +%v after 12 slots announced, want now", p.WakeAt().Sub(now))
	}
	p.Wake(now)
	if got := sweep(t, &p, now, core.StatusHeld, ttls); len(got) != 12 {
		t.Errorf("a sweep woken by many slots: %d attempts, want 12", len(got))
	}
}
