package redlock

import (
	"math"
	"time"

	"github.com/redlock-go/redlock/core"
)

// Backoff is the delay between two attempts of Client.Lock where it
// polls (Options.Poll, or a node whose releases it does not hear), and
// before a Lease retries an extension that proved nothing. It counts no
// tries: TryLock makes one attempt, and Lock tries until its ctx ends.
// The zero Backoff is RandomDelay(50*time.Millisecond,
// 250*time.Millisecond).
type Backoff struct{ p core.RetryPolicy }

// lockTries is the count of tries a Client gives core: Lock's end is its
// ctx's, never a count.
const lockTries = math.MaxInt32

// RandomDelay waits a delay drawn uniformly from [min, max) between
// attempts, as on the distlock page: a random delay desynchronises
// clients that split a vote. With min equal to max it waits min exactly.
func RandomDelay(min, max time.Duration) Backoff {
	return Backoff{core.RandomDelay(lockTries, min, max)}
}

// ExponentialBackoff waits, before retry k (k = 1, 2, ...), a delay
// uniform in [0, min(cap, base×2^(k-1))): exponential backoff with "full
// jitter".
func ExponentialBackoff(base, cap time.Duration) Backoff {
	return Backoff{core.ExponentialBackoff(lockTries, base, cap)}
}

// policy is b as core's retry policy, with Lock's count of tries.
func (b Backoff) policy() core.RetryPolicy { return b.p.WithTries(lockTries) }
