package redlock

import (
	"context"
	"slices"

	"github.com/redlock-go/redlock/core"
)

// The reader/writer lock, the semaphore and the multi-key lock. Each
// returns a *Lock with the mutex's handle: Context, Unlock, Extend,
// Until, Fence, and the Client's Lease. Each acquisition is the mutex's
// (the same rounds, quorum, validity and cleanup) over scripts of its
// kind (core.Kind); see docs/primitives.md for what each guarantees and
// what it does not.
//
// They wait as Lock does, for the release of what refused them or for
// its expiry, but each waiter alone: none queues behind another waiter of
// the Client, and none is handed a key within the process. Options.Fair
// queues mutex waiters only: RLock, WLock and LockAll refuse it, with an
// ErrInvalidConfig error, and their Try variants run without it, as
// TryLock does.

// RLock takes a reader's share of key's reader/writer lock, waiting as
// Lock does while a writer holds it or waits for it.
//
// Readers share the key; a writer (WLock) excludes readers and writers.
// A node admits a reader while no writer holds the key and no writer
// waits for it; a quorum of nodes must admit it, and its validity is the
// mutex's. The Lock's Unlock, Extend, Lease and Context are the mutex's;
// its Fence, under Options.Fencing, is a reading of the key's fence
// counters, never raised: at least the fence of every writer that held
// the key before the reader (0 if none), so that a write fenced above it
// is a later writer's. It is not a write fence: it may be above the last
// writer's, and a later writer's may be lower (see Lock.Fence). A caller
// must not RLock a key it already reads: while a writer waits, the
// second RLock waits for the writer, which waits for the first.
// Errors are Lock's.
func (c *Client) RLock(ctx context.Context, key string) (*Lock, error) {
	return c.take(ctx, core.Target{Kind: core.KindRead, Key: key}, false)
}

// TryRLock is RLock with one attempt, as TryLock.
func (c *Client) TryRLock(ctx context.Context, key string) (*Lock, error) {
	return c.take(ctx, core.Target{Kind: core.KindRead, Key: key}, true)
}

// WLock takes key's reader/writer lock as its writer, waiting as Lock
// does while readers or a writer hold it.
//
// The writer's key is key itself, taken as the mutex takes it, and only
// on nodes that hold no unexpired reader of key. A writer refused for
// readers marks the key as waited for on those nodes, for a TTL that it
// renews by an attempt every half TTL while it waits, so that they admit
// no new reader meanwhile:
// a stream of new readers, each holding less than a TTL, does not starve
// it (docs/primitives.md says the bound, and what it costs readers). Its
// release, and the cleanup of a writer that gives up (its ctx ended, or
// no try left), delete its mark.
// Under Options.Fencing it raises the key's fence as Lock does. Errors
// are Lock's.
func (c *Client) WLock(ctx context.Context, key string) (*Lock, error) {
	return c.take(ctx, core.Target{Kind: core.KindWrite, Key: key}, false)
}

// TryWLock is WLock with one attempt, as TryLock. A TryWLock refused for
// readers deletes the mark its attempt left, in its cleanup: it does not
// wait, and keeps no reader out.
func (c *Client) TryWLock(ctx context.Context, key string) (*Lock, error) {
	return c.take(ctx, core.Target{Kind: core.KindWrite, Key: key}, true)
}

// LockAll locks every key of keys, all or none on each node, waiting as
// Lock does while any of them is held.
//
// On each node one script takes every key or none; the quorum counts the
// nodes that took them all, and the validity is the mutex's. Two LockAll
// calls whose key sets intersect never both hold: one wins, or both fail
// and try again, as a split vote does. The Lock's Key is keys[0], its
// Unlock and Extend release and extend every key, and under
// Options.Fencing its Fence is above the fence of every earlier holder
// of any of the keys. The keys are copied.
//
// Bad keys are refused with an ErrInvalidConfig error before anything is
// sent: none, more than core.MaxKeys, an empty or duplicated one, and,
// on a driver that can tell (core.KeysChecker), keys that a node cannot
// take in one script (on a Redis cluster member, keys in more than one
// hash slot: give them one hash tag, as "{order:7}:a", "{order:7}:b").
// Errors are otherwise Lock's.
func (c *Client) LockAll(ctx context.Context, keys ...string) (*Lock, error) {
	return c.take(ctx, allTarget(keys), false)
}

// TryLockAll is LockAll with one attempt, as TryLock.
func (c *Client) TryLockAll(ctx context.Context, keys ...string) (*Lock, error) {
	return c.take(ctx, allTarget(keys), true)
}

// allTarget is the multi-key target of keys, a copy of them: the caller
// may reuse its slice, which commands and the grant would share.
func allTarget(keys []string) core.Target {
	t := core.Target{Kind: core.KindAll, Keys: slices.Clone(keys)}
	if len(keys) > 0 {
		t.Key = keys[0]
	}
	return t
}
