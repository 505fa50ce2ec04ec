package core

import (
	"math/bits"
	"time"
)

// RetryPolicy says how often and how long apart an Acquisition retries
// after a failed attempt. It is an immutable value; the per-acquisition
// state lives in the Acquisition. The zero RetryPolicy means "use the
// default", which is DefaultRetry.
type RetryPolicy struct {
	tries int
	exp   bool
	// lo, hi: the delay range [lo, hi) for RandomDelay; base and cap for
	// ExponentialBackoff.
	lo, hi time.Duration
}

// DefaultRetry is 3 tries, each retry after a delay drawn uniformly from
// [50ms, 250ms). The random delay desynchronises clients that split the
// vote (the distlock page); the range is wide against a loopback or LAN
// round trip and short against the default 10 s TTL, and 3 tries bound how
// long an acquisition may block when the lock is held.
var DefaultRetry = RandomDelay(3, 50*time.Millisecond, 250*time.Millisecond)

// RandomDelay returns a policy of tries attempts in all, with a delay drawn
// uniformly from [min, max) before each retry, as on the distlock page.
func RandomDelay(tries int, min, max time.Duration) RetryPolicy {
	return RetryPolicy{tries: tries, lo: min, hi: max}
}

// ExponentialBackoff returns a policy of tries attempts in all, with "full
// jitter": before retry k (k = 1, 2, ...) the delay is uniform in
// [0, min(cap, base×2^(k-1))).
func ExponentialBackoff(tries int, base, cap time.Duration) RetryPolicy {
	return RetryPolicy{tries: tries, exp: true, lo: base, hi: cap}
}

// WithTries returns p with tries attempts in all and the same delays; the
// zero policy stands for DefaultRetry.
func (p RetryPolicy) WithTries(tries int) RetryPolicy {
	if p.isZero() {
		p = DefaultRetry
	}
	p.tries = tries
	return p
}

// isZero reports whether p is the zero policy, which means DefaultRetry.
func (p RetryPolicy) isZero() bool { return p == RetryPolicy{} }

// validate reports why p cannot be used, or "" if it can.
func (p RetryPolicy) validate() string {
	switch {
	case p.tries < 1:
		return "retry policy needs at least 1 try, got " + itoa(p.tries)
	case p.lo < 0 || p.hi < 0:
		return "retry delays must not be negative"
	case !p.exp && p.hi < p.lo:
		return "retry delay range is empty: min " + p.lo.String() + " > max " + p.hi.String()
	}
	return ""
}

// Delay returns the delay before retry k (k >= 1: the wait between attempt
// k and attempt k+1), given 64 random bits. It is a pure function.
func (p RetryPolicy) Delay(k int, random uint64) time.Duration {
	if k < 1 {
		k = 1
	}
	if !p.exp {
		return p.lo + uniform(p.hi-p.lo, random)
	}
	window := p.hi
	if p.lo <= 0 {
		return 0
	}
	if k-1 < 63 && p.lo <= p.hi>>(k-1) {
		window = p.lo << (k - 1)
	}
	return uniform(window, random)
}

// uniform maps 64 random bits onto [0, span) by multiply-shift (the high
// word of random×span): no division, no loop, bias below 2^-32 for any span
// a Duration can hold.
func uniform(span time.Duration, random uint64) time.Duration {
	if span <= 0 {
		return 0
	}
	hi, _ := bits.Mul64(random, uint64(span))
	return time.Duration(hi) //nolint:gosec // G115: hi = random×span / 2^64 < span, a positive Duration
}

// start returns the state of a new acquisition under p, before its first
// attempt.
func (p RetryPolicy) start() retrier { return retrier{policy: p} }

// retrier is the retry state of one acquisition. Its zero value has no
// tries left. Call attempt before each attempt and next after each failure.
type retrier struct {
	policy   RetryPolicy
	attempts int
}

// attempt records that an attempt starts and returns its number, from 1.
func (r *retrier) attempt() int {
	r.attempts++
	return r.attempts
}

// next returns the delay before the next attempt, or ok == false when the
// policy's tries are used up.
func (r *retrier) next(random uint64) (delay time.Duration, ok bool) {
	if r.attempts >= r.policy.tries {
		return 0, false
	}
	return r.policy.Delay(r.attempts, random), true
}
