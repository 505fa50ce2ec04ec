package core

import "time"

// HolderExpiry returns when, as a's last failed attempt learnt, enough of
// the other holder's keys expire for an attempt to win; zero: unknown.
func HolderExpiry(a *Acquisition) time.Time { return a.holderExpiry() }

// GrantUntil returns a grant of key k whose round ended a second before
// until, valid until until.
func GrantUntil(until time.Time) Grant {
	return Grant{key: "k", end: until.Add(-time.Second), validity: time.Second}
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
