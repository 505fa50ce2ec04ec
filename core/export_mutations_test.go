//go:build redlock_mutations

package core

// The hooks of the mutation switches (mutations.go): each re-introduces
// one fixed bug and returns the function that fixes it again. Tests only,
// and only with the redlock_mutations tag: they are not safe for
// concurrent use with running step values.

// ExtendWithSpecDrift re-introduces the bug of an extension validity
// computed with the drift of the extending Spec's TTL instead of the
// grant's own, and returns the function that fixes it again. Tests only:
// it is not safe for concurrent use with running step values.
func ExtendWithSpecDrift() (restore func()) {
	mutExtendWithSpecDrift = true
	return func() { mutExtendWithSpecDrift = false }
}

// ExtendKeepsLostLock re-introduces the bug of a lock left valid by an
// extension that proved it lost, and returns the function that fixes it.
func ExtendKeepsLostLock() (restore func()) {
	mutExtendKeepsLostLock = true
	return func() { mutExtendKeepsLostLock = false }
}

// SkipFenceRaise re-introduces a fenced acquisition without its raise
// round, and returns the function that puts the round back.
func SkipFenceRaise() (restore func()) {
	mutSkipFenceRaise = true
	return func() { mutSkipFenceRaise = false }
}

// LeaseLosesAtValidity re-introduces a lease that declares the loss at
// the end of the validity, and returns the function that fixes it.
func LeaseLosesAtValidity() (restore func()) {
	mutLeaseLosesAtValidity = true
	return func() { mutLeaseLosesAtValidity = false }
}

// ValidityWithoutDrift leaves the drift allowance out of validity, and
// returns the function that puts it back.
func ValidityWithoutDrift() (restore func()) {
	mutValidityWithoutDrift = true
	return func() { mutValidityWithoutDrift = false }
}

// ChainNeverOpens makes Queue.Follow hand every release on within the
// process, and returns the function that fixes it.
func ChainNeverOpens() (restore func()) {
	mutChainNeverOpens = true
	return func() { mutChainNeverOpens = false }
}

// PlaceIgnored makes a head ignore its place (Queue.Look), and returns the function
// that fixes it.
func PlaceIgnored() (restore func()) {
	mutPlaceIgnored = true
	return func() { mutPlaceIgnored = false }
}

// NeededOverstates makes Round.Needed ask for one reply too many, and
// returns the function that fixes it.
func NeededOverstates() (restore func()) {
	mutNeededOverstates = true
	return func() { mutNeededOverstates = false }
}

// CancelStaysQueued re-introduces a Fair waiter that a cancel ends
// still queued, and returns the function that fixes it.
func CancelStaysQueued() (restore func()) {
	mutCancelStaysQueued = true
	return func() { mutCancelStaysQueued = false }
}

// PlaceOutlivesHead re-introduces a process's place recorded from a
// head that nobody follows, and returns the function that fixes it.
func PlaceOutlivesHead() (restore func()) {
	mutPlaceOutlivesHead = true
	return func() { mutPlaceOutlivesHead = false }
}

// BehindKeepsTicket makes Queue.Behind keep the waiter's own ticket, and
// returns the function that fixes it.
func BehindKeepsTicket() (restore func()) {
	mutBehindKeepsTicket = true
	return func() { mutBehindKeepsTicket = false }
}

// OutOfTriesKeepsMark makes a writer out of tries keep its mark in its
// last cleanup, and returns the function that fixes it.
func OutOfTriesKeepsMark() (restore func()) {
	mutOutOfTriesKeepsMark = true
	return func() { mutOutOfTriesKeepsMark = false }
}

// MarkLapses re-introduces a writer that sleeps until the readers'
// expiry, past its mark's, and returns the function that fixes it.
func MarkLapses() (restore func()) {
	mutMarkLapses = true
	return func() { mutMarkLapses = false }
}

// WakeOnHeldOnly re-introduces a wait that counts only announcements
// from nodes the failed attempt found held, and returns the function
// that fixes it.
func WakeOnHeldOnly() (restore func()) {
	mutWakeOnHeldOnly = true
	return func() { mutWakeOnHeldOnly = false }
}

// NeverReannounce makes Queue.Reannounce say no; the returned function
// restores it.
func NeverReannounce() (restore func()) {
	mutNeverReannounce = true
	return func() { mutNeverReannounce = false }
}

// NeverReannounceAtLeave makes Queue.Left say no; the returned function
// restores it.
func NeverReannounceAtLeave() (restore func()) {
	mutNeverReannounceAtLeave = true
	return func() { mutNeverReannounceAtLeave = false }
}

// FreedUnheard makes Queue.Freed say no; the returned function restores
// it.
func FreedUnheard() (restore func()) {
	mutFreedUnheard = true
	return func() { mutFreedUnheard = false }
}

// LastAttemptQueues makes a Fair attempt with no try left queue its
// waiter, and returns the function that fixes it.
func LastAttemptQueues() (restore func()) {
	mutLastAttemptQueues = true
	return func() { mutLastAttemptQueues = false }
}
