package core

import "time"

// MaxNodes is the largest N a Spec accepts. Every per-round array is sized
// by it, so a round over up to MaxNodes nodes never touches the heap.
const MaxNodes = 32

// ppm is one million: drift factors are parts per million of the TTL.
const ppm = 1_000_000

// Quorum returns the number of nodes that must agree out of n: n/2+1. For an
// even n this is a strict majority too (3 of 4), so two clients can never
// both win; an even n tolerates no more failures than n-1 nodes would.
func Quorum(n int) int { return n/2 + 1 }

// Drift returns the clock-drift allowance for a lock of the given TTL:
// ttl×factorPPM/1e6 + fixed, rounded up to the nanosecond, computed in
// integers so that it neither loses precision nor overflows for any TTL.
// factorPPM must be in [0, 1e6) and fixed non-negative; the result saturates
// at the largest Duration.
func drift(ttl time.Duration, factorPPM int64, fixed time.Duration) time.Duration {
	if ttl <= 0 {
		return fixed
	}
	t := int64(ttl)
	// Split ttl so neither product can overflow: (t/1e6)*f < t and
	// (t%1e6)*f < 1e12.
	d := (t/ppm)*factorPPM + ((t%ppm)*factorPPM+ppm-1)/ppm
	if int64(fixed) > maxDuration-d {
		return maxDuration
	}
	return time.Duration(d) + fixed
}

// Validity returns how long a lock stays safely held after the start of the
// round that won it: ttl − elapsed − drift, never negative. A negative
// elapsed means the clock ran backwards; the time spent is then unknown, so
// Validity fails safe and returns 0.
func Validity(ttl, elapsed, drift time.Duration) time.Duration {
	if elapsed < 0 || elapsed >= ttl {
		return 0
	}
	v := ttl - elapsed // > 0, so subtracting drift (>= 0) cannot overflow
	if drift >= v {
		return 0
	}
	return v - drift
}

const maxDuration = 1<<63 - 1

// vote is a round's verdict so far.
type vote uint8

const (
	// votePending: a quorum can still be won or lost.
	votePending vote = iota
	// voteWon: a quorum of nodes answered StatusOK.
	voteWon
	// voteLost: too few nodes are left to reach a quorum.
	voteLost
)

// String returns "pending", "won" or "lost".
func (v vote) String() string {
	switch v {
	case voteWon:
		return "won"
	case voteLost:
		return "lost"
	}
	return "pending"
}

// tally counts the answers of one round and decides it as early as the
// answers allow. The zero tally has no nodes; use newTally. A tally is a
// value of fixed size, meant to live on the stack.
type tally struct {
	n, quorum int
	ok, held  int
	missing   int
	failed    int // StatusError and StatusTimeout
	status    [MaxNodes]Status
	errs      [MaxNodes]error
	ttl       [MaxNodes]uint32 // holders' remaining TTLs (Reply.TTL), ms: small for TinyGo's stack
}

// newTally returns an empty tally for n nodes, 1 <= n <= MaxNodes; n is
// clamped into that range.
func newTally(n int) tally {
	var t tally
	t.init(n)
	return t
}

// init sets the node count of a zero tally, as newTally does.
func (t *tally) init(n int) {
	if n < 1 {
		n = 1
	}
	if n > MaxNodes {
		n = MaxNodes
	}
	t.n, t.quorum = n, Quorum(n)
}

// record notes node's answer. It reports false, and changes nothing, for a
// node out of range, a node already recorded, or a zero Status.
func (t *tally) record(node int, s Status, err error) bool {
	if node < 0 || node >= t.n || t.status[node] != 0 || s == 0 || s > StatusTimeout {
		return false
	}
	t.status[node] = s
	t.errs[node] = err
	switch s {
	case StatusOK:
		t.ok++
	case StatusHeld:
		t.held++
	case StatusMissing:
		t.missing++
	default:
		t.failed++
	}
	return true
}

// vote decides the round: won once a quorum said OK, lost once the nodes
// that have not said OK can no longer make a quorum.
func (t *tally) vote() vote {
	if t.ok >= t.quorum {
		return voteWon
	}
	if t.ok+t.pending() < t.quorum {
		return voteLost
	}
	return votePending
}

// nodes returns n.
func (t *tally) nodes() int { return t.n }

// oks returns the nodes that answered StatusOK, bit i for node i.
func (t *tally) oks() uint32 {
	var b uint32
	for i := 0; i < t.n; i++ {
		if t.status[i] == StatusOK {
			b |= 1 << i
		}
	}
	return b
}

// pending returns how many nodes have not answered.
func (t *tally) pending() int { return t.n - t.ok - t.held - t.missing - t.failed }

// Counts returns how many nodes answered OK, held (another token), missing
// (no key), and failed (error or timeout).
func (t *tally) counts() (ok, held, missing, failed int) {
	return t.ok, t.held, t.missing, t.failed
}

// holderTTL returns the remaining TTL of the other holder's key on node,
// as its StatusHeld reply reported it (Reply.TTL), or 0 when unknown.
func (t *tally) holderTTL(node int) time.Duration {
	if node < 0 || node >= t.n || t.status[node] != StatusHeld {
		return 0
	}
	return time.Duration(t.ttl[node]) * time.Millisecond
}

// Status returns node's recorded answer and error; Status 0 means none yet.
func (t *tally) statusOf(node int) (Status, error) {
	if node < 0 || node >= t.n {
		return 0, nil
	}
	return t.status[node], t.errs[node]
}

// cause classifies a round that did not win. Failures (errors, timeouts,
// and nodes that never answered) are decisive when, had they all said OK,
// a quorum would have been won: then the quorum was unreachable. Otherwise
// the answers alone denied the quorum: taken by others when the held keys
// alone deny it, else expired / not held.
func (t *tally) cause() error {
	if t.ok+t.failed+t.pending() >= t.quorum {
		return ErrQuorumUnreachable
	}
	if t.missing == 0 || t.ok+t.failed+t.pending()+t.missing < t.quorum {
		return ErrTaken
	}
	return ErrNotHeld
}
