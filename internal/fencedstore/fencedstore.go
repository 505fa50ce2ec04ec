// Package fencedstore is the smallest storage service that fences the
// holders of a lock, as Kleppmann's "How to do distributed locking"
// describes: every write carries the writer's fence (core.Grant.Fence,
// with core.Config.Fencing), and the store refuses a write whose fence is
// lower than the highest it has accepted. A holder paused past its lock's
// validity (GC, SIGSTOP, a slow network) that writes after a later holder
// did is then refused, where a store that only sees the writes would let
// the stale one land.
//
// A Store lives in one process; Serve puts it on a listener for writers
// in other processes (Dial), with a one-line text protocol. Tests use it
// as the resource behind the lock; it is also the example of what the
// storage side of fencing has to do: compare, and keep the highest fence,
// atomically with the write itself.
package fencedstore

import (
	"errors"
	"strconv"
	"sync"
)

// ErrStale is the error of a write whose fence is lower than one the store
// has accepted: its writer's lock was taken over by a later holder.
var ErrStale = errors.New("fencedstore: stale fence")

// Writer is what a lock holder writes through: a Store, or a Client of
// one in another process.
type Writer interface {
	// Write stores value under fence, or returns an error matching
	// ErrStale if the store has accepted a higher fence.
	Write(fence uint64, value string) error
}

// Write is one write a Store saw.
type Write struct {
	Fence uint64
	Value string
}

// Store keeps the writes it accepts, in order, and the highest fence among
// them. It accepts a write whose fence is at least that highest fence:
// equal is accepted, since one holder may write several times under one
// lock, and two holders never get the same fence. The zero value is not
// usable: call New or Unfenced. A Store is safe for concurrent use.
type Store struct {
	fenced bool

	mu       sync.Mutex
	highest  uint64
	accepted []Write
	rejected []Write
}

var _ Writer = (*Store)(nil)

// New returns an empty fenced store.
func New() *Store { return &Store{fenced: true} }

// Unfenced returns a store that accepts every write whatever its fence:
// the storage behind a lock without fencing, which cannot tell a stale
// holder's write from the current holder's.
func Unfenced() *Store { return &Store{} }

// Write accepts value, as the store's latest, if fence is at least the
// highest fence accepted so far (any fence, for an Unfenced store), and
// otherwise returns an error matching ErrStale that names both fences.
func (s *Store) Write(fence uint64, value string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fenced && fence < s.highest {
		s.rejected = append(s.rejected, Write{fence, value})
		return &staleError{fence: fence, highest: s.highest}
	}
	s.highest = max(s.highest, fence)
	s.accepted = append(s.accepted, Write{fence, value})
	return nil
}

// Accepted returns the writes accepted so far, in the order they were
// made: with a fenced store their fences never decrease.
func (s *Store) Accepted() []Write {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Write(nil), s.accepted...)
}

// Rejected returns the writes refused so far, in order.
func (s *Store) Rejected() []Write {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Write(nil), s.rejected...)
}

// Latest returns the last accepted write's value, or false if there is
// none: what a reader of the store sees.
func (s *Store) Latest() (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.accepted) == 0 {
		return "", false
	}
	return s.accepted[len(s.accepted)-1].Value, true
}

// Highest returns the highest fence accepted so far.
func (s *Store) Highest() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.highest
}

// staleError is ErrStale with the fences involved.
type staleError struct{ fence, highest uint64 }

func (e *staleError) Error() string {
	return ErrStale.Error() + ": " + strconv.FormatUint(e.fence, 10) +
		" is lower than " + strconv.FormatUint(e.highest, 10) + ", already accepted"
}

func (e *staleError) Is(target error) bool { return target == ErrStale }
