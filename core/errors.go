package core

import (
	"errors"
	"strconv"
	"time"
)

// The conditions core reports. Every error it returns matches exactly
// one of them with errors.Is; most are an *Error with the per-node detail.
var (
	// ErrTaken: other tokens hold the key on enough nodes to deny a quorum.
	ErrTaken = errors.New("redlock: lock taken by others")
	// ErrQuorumUnreachable: errors or timeouts on enough nodes denied a
	// quorum; whether the lock is free is unknown.
	ErrQuorumUnreachable = errors.New("redlock: quorum unreachable")
	// ErrCancelled: the caller's context ended first. The error also wraps
	// ctx.Err(), so errors.Is(err, context.Canceled) or
	// context.DeadlineExceeded holds as well. It is never returned because
	// retries ran out.
	ErrCancelled = errors.New("redlock: context cancelled")
	// ErrNotHeld: the lock expired, was released, or was lost (missing keys),
	// or it was won with less validity than the loss margin (two round
	// bounds: see Lease), too late to be kept.
	ErrNotHeld = errors.New("redlock: lock expired or not held")
	// ErrInvalidConfig: bad configuration or argument, found before anything
	// was sent to a node.
	ErrInvalidConfig = errors.New("redlock: invalid configuration")
	// ErrExtensionLimit: the lock was extended Config.MaxExtensions times.
	ErrExtensionLimit = errors.New("redlock: extension limit reached")
	// ErrClosed: a command went to a Driver that was closed. It is not a
	// Kind: it is the cause in a node's Err, so an operation on a closed
	// driver fails with ErrQuorumUnreachable and errors.Is(err, ErrClosed).
	ErrClosed = errors.New("redlock: driver closed")
)

// NodeResult is one node's answer in a failed round.
type NodeResult struct {
	Node   int
	Name   string
	Status Status
	Err    error
}

// Error is a failed acquire, release or extend. errors.Is matches its Kind;
// errors.As and errors.Is also see Cause and every node's Err.
type Error struct {
	Op   Op
	Kind error // one of the package's Err* sentinels
	Key  string
	// Attempts is the number of acquire attempts made (1 for release and
	// extend).
	Attempts int
	// Nodes lists every node that answered anything but OK, or never
	// answered (Status 0), in node order.
	Nodes []NodeResult
	// Cause is ctx.Err() for ErrCancelled; otherwise it may say more, for
	// instance that validity ran out.
	Cause error
}

// Error names the operation, key, condition and the nodes involved.
func (e *Error) Error() string {
	b := make([]byte, 0, 128)
	b = append(b, e.Kind.Error()...)
	b = append(b, ": "...)
	b = append(b, e.Op.String()...)
	b = append(b, ' ')
	b = appendQuotedKey(b, e.Key)
	if e.Attempts > 1 {
		b = append(b, " after "...)
		b = strconv.AppendInt(b, int64(e.Attempts), 10)
		b = append(b, " attempts"...)
	}
	if e.Cause != nil {
		b = append(b, ": "...)
		b = append(b, e.Cause.Error()...)
	}
	for _, s := range []Status{StatusHeld, StatusMissing, StatusError, StatusTimeout, 0} {
		b = appendNodes(b, e.Nodes, s)
	}
	return string(b)
}

func appendNodes(b []byte, nodes []NodeResult, s Status) []byte {
	first := true
	for _, n := range nodes {
		if n.Status != s {
			continue
		}
		if first {
			b = append(b, "; "...)
			if s == 0 {
				b = append(b, "not consulted"...)
			} else {
				b = append(b, s.String()...)
			}
			b = append(b, " on"...)
			first = false
		} else {
			b = append(b, ',')
		}
		b = append(b, " node "...)
		b = strconv.AppendInt(b, int64(n.Node), 10)
		b = append(b, " ("...)
		b = append(b, n.Name...)
		b = append(b, ')')
		if n.Err != nil {
			b = append(b, ": "...)
			b = append(b, n.Err.Error()...)
		}
	}
	return b
}

// Is reports whether target is e's Kind.
func (e *Error) Is(target error) bool { return target == e.Kind }

// Unwrap returns Cause and the nodes' errors.
func (e *Error) Unwrap() []error {
	errs := make([]error, 0, 1+len(e.Nodes))
	if e.Cause != nil {
		errs = append(errs, e.Cause)
	}
	for _, n := range e.Nodes {
		if n.Err != nil {
			errs = append(errs, n.Err)
		}
	}
	return errs
}

// Failed returns the indices of the nodes whose status is s.
func (e *Error) Failed(s Status) []int {
	var out []int
	for _, n := range e.Nodes {
		if n.Status == s {
			out = append(out, n.Node)
		}
	}
	return out
}

// errRaise is the Cause of a fenced attempt whose acquire round won but
// whose fence raise round did not.
var errRaise = errors.New("the fence counters could not be raised on a quorum")

// configError is an ErrInvalidConfig with a reason.
type configError struct{ reason string }

func (e *configError) Error() string        { return ErrInvalidConfig.Error() + ": " + e.reason }
func (e *configError) Is(target error) bool { return target == ErrInvalidConfig }

func invalid(reason string) error { return &configError{reason} }

// validityError explains a round that won its quorum too late: with no
// validity left, or, for an acquisition, less than the loss margin
// (margin, zero for an extension).
type validityError struct{ ttl, elapsed, drift, margin time.Duration }

func (e *validityError) Error() string {
	s := "validity exhausted: round took " + e.elapsed.String() + " of TTL " + e.ttl.String() +
		" with drift allowance " + e.drift.String()
	if e.margin > 0 {
		s += ", leaving " + Validity(e.ttl, e.elapsed, e.drift).String() +
			" of validity, less than the loss margin " + e.margin.String()
	}
	return s
}
