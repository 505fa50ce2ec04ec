package measure

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestLedgerWriterBesideReader(t *testing.T) {
	l := NewLedger()
	w := l.Enter([]Claim{{Resource: "k", Limit: 1}})
	r := l.Enter([]Claim{{Resource: "k", Shared: true}})
	r.Leave()
	w.Leave()
	// Readers share with one another: two at once are no violation.
	r1 := l.Enter([]Claim{{Resource: "k", Shared: true}})
	r2 := l.Enter([]Claim{{Resource: "k", Shared: true}})
	r1.Leave()
	r2.Leave()
	e := l.Check()
	if e.Violations != 1 || e.LostUpdates != 0 || e.MaxShared != 2 || e.Sections != 4 || e.Ok() {
		t.Errorf("a reader beside a writer, then two readers: %+v", e)
	}
	// And the other way round: a writer beside a reader.
	l = NewLedger()
	r = l.Enter([]Claim{{Resource: "k", Shared: true}})
	w = l.Enter([]Claim{{Resource: "k", Limit: 1}})
	w.Leave()
	r.Leave()
	if e := l.Check(); e.Violations != 1 {
		t.Errorf("a writer beside a reader: %+v", e)
	}
}

func TestLedgerOverlapLosesAnUpdate(t *testing.T) {
	l := NewLedger()
	a := l.Enter([]Claim{{Resource: "x", Limit: 1}, {Resource: "y", Limit: 1}})
	b := l.Enter([]Claim{{Resource: "y", Limit: 1}, {Resource: "z", Limit: 1}})
	a.Leave()
	b.Leave()
	c := l.Enter([]Claim{{Resource: "z"}}) // Limit 0 is 1
	c.Leave()
	e := l.Check()
	// y was entered twice from the same counter value: one update lost.
	if e.Violations != 1 || e.LostUpdates != 1 || e.MaxHolders != 2 || e.Limit != 1 || e.Ok() {
		t.Errorf("two holders of y: %+v", e)
	}
}

func TestLedgerPermits(t *testing.T) {
	l := NewLedger()
	var ss []*Section
	for range 3 {
		ss = append(ss, l.Enter([]Claim{{Resource: "sem", Limit: 3}}))
	}
	if e := l.Check(); !e.Ok() || e.MaxHolders != 3 || e.Limit != 3 {
		t.Errorf("3 holders of 3 permits: %+v", e)
	}
	ss = append(ss, l.Enter([]Claim{{Resource: "sem", Limit: 3}}))
	for _, s := range ss {
		s.Leave()
	}
	// A semaphore's counter is not read-modify-written: K holders share it.
	if e := l.Check(); e.Violations != 1 || e.LostUpdates != 0 || e.MaxHolders != 4 {
		t.Errorf("4 holders of 3 permits: %+v", e)
	}
}

// sectionLock is a SectionContender over an in-process lock (or none):
// its Until is where a test holds a section open.
type sectionLock struct {
	lock   *chanLock // nil: excludes nothing
	claims []Claim
	inside func() // called inside each section
	timed  bool
	rounds *lockCount
}

// lockCount counts Lock calls as a driver counts its rounds.
type lockCount struct{ n atomic.Uint64 }

func (c *lockCount) Rounds() uint64 { return c.n.Load() }

func (s *sectionLock) Lock(ctx context.Context) error {
	if s.rounds != nil {
		s.rounds.n.Add(1)
	}
	if s.lock == nil {
		return ctx.Err()
	}
	return s.lock.Lock(ctx)
}

func (s *sectionLock) Unlock(ctx context.Context) error {
	if s.lock == nil {
		return nil
	}
	return s.lock.Unlock(ctx)
}

func (s *sectionLock) Claims() []Claim { return s.claims }

func (s *sectionLock) Until() time.Time {
	if s.inside != nil {
		s.inside()
	}
	return time.Now().Add(time.Hour)
}

func (s *sectionLock) Hold() time.Duration  { return 0 }
func (s *sectionLock) Pause() time.Duration { return 0 }
func (s *sectionLock) Timed() bool          { return s.timed }

func TestRunSectionsExclusive(t *testing.T) {
	const sections = 200
	l := newChanLock()
	var cs []SectionContender
	var rounds lockCount
	for range 4 {
		cs = append(cs, &sectionLock{lock: l, claims: []Claim{{Resource: "k", Limit: 1}}, timed: true, rounds: &rounds})
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, e := RunSections(ctx, cs, SectionsSpec{Sections: sections, Rounds: &rounds})
	if ctx.Err() != nil {
		t.Fatal("the sections did not end")
	}
	if r.Ops != sections || r.Errors != 0 {
		t.Fatalf("ops %d errors %d (%s), want %d sections", r.Ops, r.Errors, r.FirstError, sections)
	}
	if !e.Ok() || e.Sections < sections || e.MaxHolders != 1 || e.Expired != 0 {
		t.Errorf("exclusion: %+v", e)
	}
	// One "round" per Lock call: every section's, and at most one more
	// per contender, whose last Lock the window's end interrupted.
	if r.RoundsPerOp < 1 || r.RoundsPerOp > float64(sections+4)/sections {
		t.Errorf("rounds per section %v, want one", r.RoundsPerOp)
	}
	// Every contender is timed: every counted section's wait is one.
	if e.Waits != sections || e.WaitP50Us > e.WaitP99Us || e.WaitP99Us > e.WaitMaxUs || e.OtherWaitP99Us != 0 {
		t.Errorf("the timed contenders' waits: %+v", e)
	}
}

// TestRunSectionsCatchesOverlap: with a lock that excludes nothing, the
// first section of each of two contenders waits inside until the other
// is inside too, and the check reports it.
func TestRunSectionsCatchesOverlap(t *testing.T) {
	var both sync.WaitGroup
	both.Add(2)
	var cs []SectionContender
	for range 2 {
		var once sync.Once
		cs = append(cs, &sectionLock{claims: []Claim{{Resource: "k", Limit: 1}}, inside: func() {
			once.Do(func() { both.Done(); both.Wait() })
		}})
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, e := RunSections(ctx, cs, SectionsSpec{Sections: 20})
	if ctx.Err() != nil {
		t.Fatal("the sections did not end")
	}
	if e.Ok() || e.Violations < 1 || e.LostUpdates < 1 {
		t.Errorf("two sections inside at once not caught: %+v", e)
	}
}
