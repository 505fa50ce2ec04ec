package core

import "time"

// ExtendWithSpecDrift re-introduces the bug of an extension validity
// computed with the drift of the extending Spec's TTL instead of the
// grant's own, and returns the function that fixes it again. Tests only:
// it is not safe for concurrent use with running step values.
func ExtendWithSpecDrift() (restore func()) {
	mutations.extendWithSpecDrift = true
	return func() { mutations.extendWithSpecDrift = false }
}

// ExtendKeepsLostLock re-introduces the bug of a lock left valid by an
// extension that proved it lost, and returns the function that fixes it.
func ExtendKeepsLostLock() (restore func()) {
	mutations.extendKeepsLostLock = true
	return func() { mutations.extendKeepsLostLock = false }
}

// SkipFenceRaise re-introduces a fenced acquisition without its raise
// round, and returns the function that puts the round back.
func SkipFenceRaise() (restore func()) {
	mutations.skipFenceRaise = true
	return func() { mutations.skipFenceRaise = false }
}

// HolderExpiry returns when, as a's last failed attempt learnt, enough of
// the other holder's keys expire for an attempt to win; zero: unknown.
func HolderExpiry(a *Acquisition) time.Time { return a.holderExpiry() }

// LeaseLosesAtValidity re-introduces a lease that declares the loss at
// the end of the validity, and returns the function that fixes it.
func LeaseLosesAtValidity() (restore func()) {
	mutations.leaseLosesAtValidity = true
	return func() { mutations.leaseLosesAtValidity = false }
}

// ValidityWithoutDrift leaves the drift allowance out of validity, and
// returns the function that puts it back.
func ValidityWithoutDrift() (restore func()) {
	mutations.validityWithoutDrift = true
	return func() { mutations.validityWithoutDrift = false }
}

// ChainNeverOpens makes Queue.Follow hand every release on within the
// process, and returns the function that fixes it.
func ChainNeverOpens() (restore func()) {
	mutations.chainNeverOpens = true
	return func() { mutations.chainNeverOpens = false }
}

// PlaceIgnored makes a head ignore its place (Queue.Look), and returns the function
// that fixes it.
func PlaceIgnored() (restore func()) {
	mutations.placeIgnored = true
	return func() { mutations.placeIgnored = false }
}

// NeededOverstates makes Round.Needed ask for one reply too many, and
// returns the function that fixes it.
func NeededOverstates() (restore func()) {
	mutations.neededOverstates = true
	return func() { mutations.neededOverstates = false }
}

// CancelStaysQueued re-introduces a Fair waiter that a cancel ends
// still queued, and returns the function that fixes it.
func CancelStaysQueued() (restore func()) {
	mutations.cancelStaysQueued = true
	return func() { mutations.cancelStaysQueued = false }
}

// PlaceOutlivesHead re-introduces a process's place recorded from a
// head that nobody follows, and returns the function that fixes it.
func PlaceOutlivesHead() (restore func()) {
	mutations.placeOutlivesHead = true
	return func() { mutations.placeOutlivesHead = false }
}

// GrantUntil returns a grant of key k whose round ended a second before
// until, valid until until.
func GrantUntil(until time.Time) Grant {
	return Grant{key: "k", end: until.Add(-time.Second), validity: time.Second}
}

// BehindKeepsTicket makes Queue.Behind keep the waiter's own ticket, and
// returns the function that fixes it.
func BehindKeepsTicket() (restore func()) {
	mutations.behindKeepsTicket = true
	return func() { mutations.behindKeepsTicket = false }
}

// Place returns the place q recorded (Queue.Queued); 0: none.
func Place(q *Queue) int64 { return q.place }

// NodeStatus returns node i's answer recorded in r; 0 means none yet.
func NodeStatus(r *Round, i int) Status {
	s, _ := r.tally.statusOf(i)
	return s
}

// Attempts returns how many attempts a has started.
func Attempts(a *Acquisition) int { return a.retry.attempts }

// Extensions returns how many times g was extended.
func Extensions(g Grant) int { return g.extensions }

// Validity returns the validity won by g's last acquire or extend round.
func GrantValidity(g Grant) time.Duration { return g.validity }

// RoundBound returns the longest a round of s can take.
func RoundBound(s Spec) time.Duration { return s.roundBound() }

// DefaultTTL is the TTL of a zero Config.
const DefaultTTL = defaultTTL

// Cleaning reports whether a's round is the cleanup of a failed attempt.
func Cleaning(a *Acquisition) bool { return a.cleaningRound() }

// RemainingAt returns how long g stays valid after now.
func RemainingAt(g Grant, now time.Time) time.Duration { return g.remainingAt(now) }

// Drift is the drift allowance of a TTL.
func Drift(ttl time.Duration, factorPPM int64, fixed time.Duration) time.Duration {
	return drift(ttl, factorPPM, fixed)
}

// MaxKeyLen is the longest key a Spec accepts.
const MaxKeyLen = maxKeyLen

// WakeOnHeldOnly re-introduces a wait that counts only announcements
// from nodes the failed attempt found held, and returns the function
// that fixes it.
func WakeOnHeldOnly() (restore func()) {
	mutations.wakeOnHeldOnly = true
	return func() { mutations.wakeOnHeldOnly = false }
}

// NeverReannounce makes Queue.Reannounce say no; the returned function
// restores it.
func NeverReannounce() (restore func()) {
	mutations.neverReannounce = true
	return func() { mutations.neverReannounce = false }
}

// NeverReannounceAtLeave makes Queue.Left say no; the returned function
// restores it.
func NeverReannounceAtLeave() (restore func()) {
	mutations.neverReannounceAtLeave = true
	return func() { mutations.neverReannounceAtLeave = false }
}

// FreedUnheard makes Queue.Freed say no; the returned function restores
// it.
func FreedUnheard() (restore func()) {
	mutations.freedUnheard = true
	return func() { mutations.freedUnheard = false }
}
