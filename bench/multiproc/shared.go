package multiproc

import "sync/atomic"

// Enter marks a critical section inside and returns its ticket, the
// sections' order of entry (1, 2, ...); overlap is true if another
// section was inside already, which Enter counts.
func (s *Shared) Enter() (ticket int64, overlap bool) {
	if atomic.AddInt64(&s.w[wInside], 1) != 1 {
		atomic.AddInt64(&s.w[wOverlaps], 1)
		overlap = true
	}
	atomic.AddInt64(&s.w[wEntered], 1)
	return atomic.AddInt64(&s.w[wSeq], 1), overlap
}

// Load reads the shared counter, at the start of a section.
func (s *Shared) Load() int64 { return atomic.LoadInt64(&s.w[wCounter]) }

// Store writes the shared counter, at the end of a section: v+1 for the v
// Load read. Two sections that overlap lose an update.
func (s *Shared) Store(v int64) { atomic.StoreInt64(&s.w[wCounter], v) }

// Leave marks the section outside.
func (s *Shared) Leave() { atomic.AddInt64(&s.w[wInside], -1) }

// Exclusion is the shared page's account of every section of a cell.
type Exclusion struct {
	// Entered is every section entered, warm-up included; Counter is the
	// shared counter, which sections increment by a load and a store.
	Entered int64 `json:"entered"`
	Counter int64 `json:"counter"`
	// Overlaps counts the sections entered while another was inside.
	Overlaps int64 `json:"overlaps"`
}

// LostUpdates is the counter's shortfall: updates that overlapping
// sections overwrote.
func (e Exclusion) LostUpdates() int64 { return e.Entered - e.Counter }

// Exclusive reports whether no two sections overlapped.
func (e Exclusion) Exclusive() bool { return e.Overlaps == 0 && e.LostUpdates() == 0 }

// Exclusion reads the page's account.
func (s *Shared) Exclusion() Exclusion {
	return Exclusion{
		Entered:  atomic.LoadInt64(&s.w[wEntered]),
		Counter:  atomic.LoadInt64(&s.w[wCounter]),
		Overlaps: atomic.LoadInt64(&s.w[wOverlaps]),
	}
}
