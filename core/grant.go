package core

import "time"

// Grant is what an acquisition grants: the key, the token that holds it,
// its fence, and how long it stays valid. It is a small value; the zero
// Grant holds nothing. A Lease keeps the Grant it extends: read it there.
type Grant struct {
	key        string
	keys       *KeyList // KindAll: every key, key first
	token      Token
	ttl        time.Duration
	drift      time.Duration // the drift allowance of ttl, fixed at acquisition
	end        time.Time     // clock reading at the end of the round that set validity
	validity   time.Duration // ttl − elapsed − drift of that round, from end
	fence      uint64
	extensions int
	followed   bool // Config.Fair: its release queues the process again (WithFollowers)
	handoff    bool // its release hands the key on within the process (WithHandoff)
	kind       Kind
}

// WithFollowers returns g, whose release, with Config.Fair, queues the
// caller's process again at the back of the nodes' queues before it hands
// the key on, if other waiters of the process follow it on the key: the
// next of them is then served in turn, without a failed attempt first.
// Queued at the release, the process has the same place on every node,
// whichever nodes its attempt took.
func (g Grant) WithFollowers(follow bool) Grant {
	g.followed = follow
	return g
}

// WithHandoff returns g, whose release hands the key on to a waiter of
// the caller's process (Room.Release), whose attempt goes right behind
// the release on each node (Flusher): the release announces nothing
// (Command.Quiet), since every other attempt would be refused, and with
// Config.Fair it is a plain compare-and-delete, outside the nodes'
// queue, which serves the next process at the end of the chain.
func (g Grant) WithHandoff(handoff bool) Grant {
	g.handoff = handoff
	return g
}

// Key returns the locked key.
func (g Grant) Key() string { return g.key }

// Token returns the holder's token.
func (g Grant) Token() Token { return g.token }

// Fence returns the grant's fence under Config.Fencing, and 0 otherwise.
// Fences of one key only grow: see the package documentation's
// "Fencing". Extensions keep the fence.
func (g Grant) Fence() uint64 { return g.fence }

// ValidUntil returns the instant, on the caller's clock, after which the
// grant must be taken as lost: the start of the round that set validity
// plus TTL minus drift. It is the zero Time for the zero Grant.
func (g Grant) ValidUntil() time.Time {
	if g.validity <= 0 {
		return time.Time{}
	}
	return g.end.Add(g.validity)
}

// remainingAt returns how long the grant stays valid after now, never
// negative. A now before the end of the round that set validity means the
// clock ran backwards: the remaining time is then unknown and remainingAt
// returns 0.
func (g Grant) remainingAt(now time.Time) time.Duration {
	if g.validity <= 0 {
		return 0
	}
	elapsed := now.Sub(g.end)
	if elapsed < 0 || elapsed >= g.validity {
		return 0
	}
	return g.validity - elapsed
}
