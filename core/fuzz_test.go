package core

import (
	"errors"
	"testing"
	"time"
)

// FuzzValidity: validity is never negative, never above ttl−drift, zero
// whenever the clock ran backwards, and never grows as elapsed grows.
func FuzzValidity(f *testing.F) {
	f.Add(int64(10e9), int64(1e9), int64(10_000), int64(2e6))
	f.Add(int64(1<<62), int64(-1), int64(999_999), int64(1<<62))
	f.Add(int64(3), int64(3), int64(0), int64(0))
	f.Fuzz(func(t *testing.T, ttl, elapsed, ppmF, fixed int64) {
		if ttl < 0 {
			ttl = -(ttl + 1)
		}
		if fixed < 0 {
			fixed = -(fixed + 1)
		}
		ppmF = ppmF % ppm
		if ppmF < 0 {
			ppmF = -ppmF
		}
		d := drift(time.Duration(ttl), ppmF, time.Duration(fixed))
		if d < time.Duration(fixed) || d < 0 {
			t.Fatalf("drift(%d,%d,%d) = %d below fixed", ttl, ppmF, fixed, d)
		}
		v := Validity(time.Duration(ttl), time.Duration(elapsed), d)
		if v < 0 {
			t.Fatalf("negative validity %d", v)
		}
		if elapsed < 0 && v != 0 {
			t.Fatalf("backwards clock gave validity %d", v)
		}
		if v > 0 && v > time.Duration(ttl)-d {
			t.Fatalf("validity %d above ttl-drift %d", v, time.Duration(ttl)-d)
		}
		if elapsed >= 0 && elapsed < 1<<62 {
			if later := Validity(time.Duration(ttl), time.Duration(elapsed+1), d); later > v {
				t.Fatalf("validity grew with elapsed: %d -> %d", v, later)
			}
		}
	})
}

// FuzzTally: the vote agrees with the counts after every record, a decided
// vote never changes, and a finished tally is always decided.
func FuzzTally(f *testing.F) {
	f.Add(uint8(5), []byte{1, 2, 1, 4, 1})
	f.Add(uint8(3), []byte{2, 2, 2})
	f.Add(uint8(32), []byte{5, 5, 5, 5, 1, 1})
	f.Fuzz(func(t *testing.T, n uint8, answers []byte) {
		nodes := int(n)%MaxNodes + 1
		tl := newTally(nodes)
		q := Quorum(nodes)
		var decided vote
		for i, a := range answers {
			if i >= nodes {
				break
			}
			tl.record(i, Status(a%5+1), nil)
			ok, held, missing, failed := tl.counts()
			if ok+held+missing+failed+tl.pending() != nodes {
				t.Fatalf("counts do not add up to %d", nodes)
			}
			v := tl.vote()
			switch {
			case ok >= q && v != voteWon, ok+tl.pending() < q && v != voteLost:
				t.Fatalf("vote %v with ok=%d pending=%d quorum=%d", v, ok, tl.pending(), q)
			case decided != votePending && v != decided:
				t.Fatalf("decided vote changed from %v to %v", decided, v)
			}
			decided = v
			if v == voteLost {
				if c := tl.cause(); !errors.Is(c, ErrTaken) && !errors.Is(c, ErrNotHeld) && !errors.Is(c, ErrQuorumUnreachable) {
					t.Fatalf("cause %v", c)
				}
			}
		}
		if len(answers) >= nodes && tl.vote() == votePending {
			t.Fatal("a tally with every node recorded is still pending")
		}
	})
}

// FuzzRetry: delays stay in their range and a policy of k tries yields
// exactly k-1 delays.
func FuzzRetry(f *testing.F) {
	f.Add(uint8(3), int64(50e6), int64(250e6), uint64(42), false)
	f.Add(uint8(40), int64(1), int64(1<<62), ^uint64(0), true)
	f.Fuzz(func(t *testing.T, tries uint8, lo, hi int64, random uint64, exp bool) {
		if lo < 0 {
			lo = -(lo + 1)
		}
		if hi < lo {
			lo, hi = hi, lo
		}
		if lo < 0 {
			return
		}
		p := RandomDelay(int(tries)+1, time.Duration(lo), time.Duration(hi))
		if exp {
			p = ExponentialBackoff(int(tries)+1, time.Duration(lo), time.Duration(hi))
		}
		if p.validate() != "" {
			t.Fatalf("valid policy rejected: %s", p.validate())
		}
		r := p.start()
		delays := 0
		for {
			r.attempt()
			d, ok := r.next(random)
			if !ok {
				break
			}
			delays++
			random = random*6364136223846793005 + 1442695040888963407
			switch {
			case d < 0:
				t.Fatalf("negative delay %d", d)
			case !exp && (d < time.Duration(lo) || (hi > lo && d >= time.Duration(hi))):
				t.Fatalf("delay %d outside [%d,%d)", d, lo, hi)
			case exp && hi > 0 && d >= time.Duration(hi):
				t.Fatalf("delay %d at or above cap %d", d, hi)
			}
		}
		if delays != int(tries) {
			t.Fatalf("%d tries gave %d delays", int(tries)+1, delays)
		}
	})
}
