package engine

import "time"

// Clock is the engine's source of time: the Locker's clock, on which the
// deadlines given to Send are read.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine once d has passed.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a Clock's timer, as time.AfterFunc's.
type Timer interface {
	Stop() bool
	Reset(d time.Duration) bool
}

// SystemClock is time.Now and time.AfterFunc.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// AfterFunc is time.AfterFunc.
func (SystemClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }
