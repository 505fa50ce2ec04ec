package redlock

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/redlock-go/redlock/core"
)

// Lock is a held lock: a handle to one acquisition of a key. It is safe
// for concurrent use. Every Lock has a goroutine that watches its
// validity (and, with a Lease, extends it) until Unlock, which stops it
// before returning.
//
// Its times are readings of the Client's Config.Clock; with the system
// clock they carry monotonic readings, so a wall-clock step moves nothing.
type Lock struct {
	c      *Client
	ctx    context.Context
	cancel context.CancelCauseFunc
	stop   context.CancelFunc // stops the watcher and its extension
	exited chan struct{}      // closed when the watcher has returned
	hold   time.Time          // the lease's MaxHold deadline; zero: none
	key    string             // lock's key, token and fence, which extensions keep
	token  Token
	fence  uint64

	extending sync.Mutex // serialises extensions and Unlock's release

	mu       sync.Mutex
	lock     core.Lock
	lost     error // the *LostError, once lost
	unlocked bool
}

// hold wraps a new core.Lock in a handle and starts its watcher. ctx's
// values, not its cancellation, reach the handle's Context.
func (c *Client) hold(ctx context.Context, lock core.Lock) *Lock {
	h := &Lock{c: c, lock: lock, exited: make(chan struct{}), key: lock.Key(), token: lock.Token(), fence: lock.Fence()}
	h.ctx, h.cancel = context.WithCancelCause(context.WithoutCancel(ctx))
	if c.lease != nil && c.lease.MaxHold > 0 {
		h.hold = acquiredAt(lock).Add(c.lease.MaxHold)
	}
	stopCtx, stop := context.WithCancel(context.Background())
	h.stop = stop
	go h.watch(stopCtx)
	return h
}

// acquiredAt returns the clock reading at the end of the round that set
// lock's validity.
func acquiredAt(lock core.Lock) time.Time { return lock.ValidUntil().Add(-lock.Validity()) }

// Key returns the locked key.
func (h *Lock) Key() string { return h.key }

// Token returns the random token the lock's keys hold.
func (h *Lock) Token() Token { return h.token }

// Until returns the instant, on the Client's clock, when the lock's
// validity ends unless it is extended: the local deadline for work done
// under it. It is the zero Time once the lock is lost or unlocked.
func (h *Lock) Until() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.lost != nil || h.unlocked {
		return time.Time{}
	}
	return h.lock.ValidUntil()
}

// Fence returns the lock's fencing token: strictly greater than the fence
// of every earlier holder of the key, as long as the nodes keep their
// counters (see core's "Fencing"). Pass it with every write to the storage
// the lock protects, and have the storage refuse a fence lower than one it
// has seen. It returns ErrNoFencing on a Client without Config.Fencing.
func (h *Lock) Fence() (uint64, error) {
	if !h.c.retry.Config().Fencing {
		return 0, ErrNoFencing
	}
	return h.fence, nil
}

// Context returns a context that is cancelled the moment the lock is lost
// or unlocked: when an extension proves others hold it, when it cannot be
// extended in time, when its validity runs out unextended, when the
// lease's bound is reached, or at Unlock. context.Cause then says which:
// a *LostError (matching ErrLost, and through its cause ErrTaken,
// ErrQuorumUnreachable, ErrNotHeld or ErrExtensionLimit), or ErrUnlocked.
// It carries the values of the ctx the lock was taken with, not its
// cancellation. Do the work the lock protects under it.
func (h *Lock) Context() context.Context { return h.ctx }

// Extend resets the lock's keys to the TTL, with a quorum and validity
// counted from this round, as core's Locker.Extend does. An extension that
// proves the lock lost cancels the Context and returns a *LostError; one
// that proves nothing (ErrQuorumUnreachable, ErrCancelled) leaves the lock
// as it was, valid until Until. It returns ErrUnlocked after Unlock, the
// *LostError after a loss, and ErrExtensionLimit at Config.MaxExtensions;
// nothing is sent then.
func (h *Lock) Extend(ctx context.Context) error {
	if ctx == nil {
		return invalid("context is nil (use context.Background())")
	}
	h.extending.Lock()
	defer h.extending.Unlock()
	return h.extend(ctx)
}

// extend runs one extension; h.extending is held.
func (h *Lock) extend(ctx context.Context) error {
	h.mu.Lock()
	lock, lost, unlocked := h.lock, h.lost, h.unlocked
	h.mu.Unlock()
	switch {
	case unlocked:
		return ErrUnlocked
	case lost != nil:
		return lost
	}
	ext, err := h.c.retry.Extend(ctx, lock)
	if err == nil {
		h.mu.Lock()
		h.lock = ext
		h.mu.Unlock()
		return nil
	}
	if ext.Lost() || !ext.ValidAt(h.c.clock.Now()) {
		return h.lose(err)
	}
	return err
}

// lose records the loss of the lock with cause and cancels its Context,
// unless it was lost or unlocked already; it returns the *LostError.
func (h *Lock) lose(cause error) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.lost != nil:
		return h.lost
	case h.unlocked:
		return ErrUnlocked
	}
	h.lost = &LostError{Key: h.key, Cause: cause}
	h.cancel(h.lost)
	return h.lost
}

// Unlock stops the lease and the watcher, waits until neither can send
// anything more, cancels the Context with ErrUnlocked, and releases the
// lock's keys on every node, as core's Locker.Release does (detached from
// ctx's cancellation, bounded by the node timeout). No extension is sent
// after Unlock returns, and no goroutine or timer of the Lock is left.
//
// It returns nil once a quorum deleted the keys; the *LostError if the lock
// had been lost (its keys are released all the same); Release's errors
// otherwise; ErrUnlocked, sending nothing, if it was unlocked before.
func (h *Lock) Unlock(ctx context.Context) error {
	if ctx == nil {
		return invalid("context is nil (use context.Background())")
	}
	h.stop()
	<-h.exited
	h.extending.Lock()
	defer h.extending.Unlock()
	h.mu.Lock()
	if h.unlocked {
		h.mu.Unlock()
		return ErrUnlocked
	}
	h.unlocked = true
	lock, lost := h.lock, h.lost
	h.cancel(ErrUnlocked)
	h.mu.Unlock()
	err := h.c.retry.Release(ctx, lock)
	if h.c.room != nil {
		h.c.room.released(h.key) // this Client's next waiter tries at once
	}
	if lost != nil {
		return lost
	}
	return err
}

// watch is the Lock's goroutine: it sleeps on the Client's clock until the
// next extension is due (with a Lease), the lease's bound, or the end of
// the validity, whichever comes first, and acts then. stop ends it.
func (h *Lock) watch(stop context.Context) {
	defer close(h.exited)
	clock, lease := h.c.clock, h.c.lease
	var retryAt time.Time // after an extension that proved nothing
	for {
		lock, done := h.snapshot()
		if done {
			return
		}
		wake := lock.ValidUntil()
		if lease != nil {
			wake = earliest(wake, h.extendAt(lock, retryAt))
			if !h.hold.IsZero() {
				wake = earliest(wake, h.hold)
			}
		}
		if d := wake.Sub(clock.Now()); d > 0 && !clock.Sleep(d, stop.Done()) {
			return
		}
		now := clock.Now()
		if lock, done = h.snapshot(); done || stop.Err() != nil {
			return
		}
		switch {
		case !lock.ValidAt(now):
			h.lose(errExpired)
			return
		case lease == nil:
			continue
		case !h.hold.IsZero() && !now.Before(h.hold):
			h.lose(&kindError{"redlock: the lease reached its MaxHold of " + lease.MaxHold.String(), ErrExtensionLimit})
			return
		case now.Before(h.extendAt(lock, retryAt)):
			continue // woken early, or an Extend moved the lock
		}
		h.extending.Lock()
		err := h.extend(stop)
		h.extending.Unlock()
		switch {
		case err == nil:
			retryAt = time.Time{}
			continue
		case stop.Err() != nil || errors.Is(err, ErrLost) || err == ErrUnlocked:
			return
		case errors.Is(err, ErrExtensionLimit):
			h.lose(err)
			return
		}
		// The extension proved nothing: try again after a retry delay
		// while the validity leaves room for a round; give up otherwise.
		lock, _ = h.snapshot()
		now = clock.Now()
		left, round := lock.RemainingAt(now), h.c.roundBound()
		if left <= round {
			h.lose(err)
			return
		}
		cfg := h.c.retry.Config()
		retryAt = now.Add(min(cfg.Retry.Delay(1, cfg.Jitter.Uint64()), left-round))
	}
}

// snapshot returns the current core.Lock, and whether the handle is done
// (lost or unlocked).
func (h *Lock) snapshot() (core.Lock, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lock, h.lost != nil || h.unlocked
}

// extendAt returns when the lease extends lock: once Fraction of its
// validity has passed, and not before retryAt.
func (h *Lock) extendAt(lock core.Lock, retryAt time.Time) time.Time {
	v := lock.Validity()
	at := lock.ValidUntil().Add(-v + time.Duration(float64(v)*h.c.lease.Fraction))
	if retryAt.After(at) {
		return retryAt
	}
	return at
}

func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
