package engine

import (
	"time"

	"github.com/redlock-go/redlock/core"
)

// Clock is the engine's source of time: core's, the one clock of the
// Client and of the deadlines given to Send (redlock.Options.Clock).
type Clock = core.Clock

// Timer is a Clock's timer, as time.AfterFunc's.
type Timer = core.Timer

// SystemClock is core's: time.Now and time.AfterFunc.
type SystemClock = core.SystemClock

// wall returns t, a reading of clock, as a reading of the system clock:
// what a client library takes a context's deadline for (a socket
// deadline, time.Until). With the system clock it is t itself, monotonic
// reading included.
func wall(clock Clock, t time.Time) time.Time {
	if _, ok := clock.(SystemClock); ok {
		return t
	}
	return time.Now().Add(t.Sub(clock.Now()))
}
