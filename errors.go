package redlock

import (
	"errors"

	"github.com/redlock-go/redlock/core"
)

var (
	// ErrLost matches every *LostError: the context.Cause of a Lock's
	// Context once the lock is lost, and the error of Extend and Unlock
	// after that.
	ErrLost = errors.New("redlock: lock lost")
	// ErrUnlocked is the error of Extend and Unlock on a Lock already
	// unlocked, and the context.Cause of its Context. It matches
	// ErrNotHeld.
	ErrUnlocked = &kindError{"redlock: lock already unlocked", ErrNotHeld}
	// ErrNoFencing is the error of Lock.Fence on a Client without
	// Options.Fencing. It matches ErrInvalidConfig.
	ErrNoFencing = &kindError{"redlock: fence requested but Options.Fencing is off", ErrInvalidConfig}
)

// kindError is an error of its own that also matches a broader kind.
type kindError struct {
	msg  string
	kind error
}

func (e *kindError) Error() string        { return e.msg }
func (e *kindError) Is(target error) bool { return target == e.kind }

// LostError is why a Lock was lost: its key, and the cause, which matches
// one of ErrTaken (another holder has it), ErrQuorumUnreachable (too few
// nodes answered to extend it in time), ErrNotHeld (its validity ran out,
// or its keys are gone) or ErrExtensionLimit (the lease's bound). It is
// the context.Cause of the Lock's Context, and the error of Extend and
// Unlock after the loss.
type LostError struct {
	Key   string
	Cause error
}

func (e *LostError) Error() string {
	return "redlock: lock " + core.QuoteKey(e.Key) + " lost: " + e.Cause.Error()
}

// Is matches ErrLost; Unwrap lets errors.Is see the cause's kind.
func (e *LostError) Is(target error) bool { return target == ErrLost }

// Unwrap returns the cause.
func (e *LostError) Unwrap() error { return e.Cause }

// configError is an ErrInvalidConfig of the Client's own options.
type configError struct{ reason string }

func (e *configError) Error() string        { return ErrInvalidConfig.Error() + ": " + e.reason }
func (e *configError) Is(target error) bool { return target == ErrInvalidConfig }

func invalid(reason string) error { return &configError{reason} }
