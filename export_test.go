package redlock

import (
	"context"
	"time"

	"github.com/redlock-go/redlock/core"
)

// HasState reports whether l keeps state of its own: a Lease makes it at
// once, Context and Extend at their first call. A Lock without it runs no
// goroutine and holds no timer.
func HasState(l *Lock) bool { return l.load() != nil }

// WatcherStarted reports whether l's watcher goroutine was started: only
// Context or a Lease start it.
func WatcherStarted(l *Lock) bool {
	_, ok := exitedOf(l)
	return ok
}

// WatcherExited reports whether l's watcher goroutine was started and has
// finished its work: it closes exited as its last act. Counting goroutines
// instead races with the few instructions the goroutine runs after that
// close.
func WatcherExited(l *Lock) bool {
	exited, ok := exitedOf(l)
	if !ok {
		return false
	}
	select {
	case <-exited:
		return true
	default:
		return false
	}
}

// exitedOf returns the channel the watcher closes as it returns, and
// false while no watcher was started (the channel is nil until then).
func exitedOf(l *Lock) (<-chan struct{}, bool) {
	st := l.load()
	if st == nil {
		return nil, false
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.exited, st.exited != nil
}

// WatcherDone returns the channel l's watcher closes as it returns: nil
// while no watcher was started.
func WatcherDone(l *Lock) <-chan struct{} {
	exited, _ := exitedOf(l)
	return exited
}

// ReadingAfter is c's clock reading later in an operation that read
// start (nowAfter, unobserved).
func ReadingAfter(c *Client, start time.Time) time.Time { return c.nowAfter(nil, start) }

// ReadsMonotonicAfter reports whether c's later readings in an operation
// read the monotonic clock alone (nowAfter).
func ReadsMonotonicAfter(c *Client) bool { return c.monotonic }

// LeaveAfterQuietRelease joins a waiter of key to c's wait room, runs a
// quiet release of the key to its end while it waits (core.Room.Release,
// Released), and has it leave without the key: it returns what the room
// says to do (waitRoom.leave, core.Room.Leave).
func LeaveAfterQuietRelease(c *Client, key string) (handOn, try bool) {
	w := c.room.join(context.Background(), key)
	n := c.room.release(key, core.Held{})
	if !n.rel.Handoff() {
		panic("a release followed by a waiter not handed on")
	}
	if handOn, try = c.room.released(key, n.rel); handOn || try {
		panic("a quiet release made heard while a waiter waits")
	}
	_, handOn, try = c.room.leave(key, w, core.Grant{})
	return handOn, try
}
