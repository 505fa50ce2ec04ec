package redlock

import "context"

// The reader/writer lock, the semaphore and the multi-key lock. Each
// returns a *Lock with the mutex's handle: Context, Unlock, Extend,
// Until, Fence, and the Client's Lease.

// RLock takes a reader's share of key's reader/writer lock, waiting as
// Lock does while a writer holds it or waits for it.
func (c *Client) RLock(ctx context.Context, key string) (*Lock, error) {
	return nil, invalid("RLock is not built yet")
}

// TryRLock is RLock with one attempt.
func (c *Client) TryRLock(ctx context.Context, key string) (*Lock, error) {
	return nil, invalid("TryRLock is not built yet")
}

// WLock takes key's reader/writer lock as its writer, waiting as Lock
// does while readers or a writer hold it.
func (c *Client) WLock(ctx context.Context, key string) (*Lock, error) {
	return nil, invalid("WLock is not built yet")
}

// TryWLock is WLock with one attempt.
func (c *Client) TryWLock(ctx context.Context, key string) (*Lock, error) {
	return nil, invalid("TryWLock is not built yet")
}

// LockAll locks every key of keys, all or none on each node.
func (c *Client) LockAll(ctx context.Context, keys ...string) (*Lock, error) {
	return nil, invalid("LockAll is not built yet")
}

// TryLockAll is LockAll with one attempt.
func (c *Client) TryLockAll(ctx context.Context, keys ...string) (*Lock, error) {
	return nil, invalid("TryLockAll is not built yet")
}
