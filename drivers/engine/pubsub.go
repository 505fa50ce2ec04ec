package engine

import (
	"cmp"
	"context"
	"errors"
	"sync"
)

// Subscription is one connection in subscribe mode to one node, as its
// client provides it: the only pub/sub code a driver writes. The engine
// (Watcher) decides what to subscribe to, matches confirmations, redials
// and resubscribes.
type Subscription interface {
	// Subscribe and Unsubscribe send SUBSCRIBE or UNSUBSCRIBE for
	// channels (at least one) and return once the command is written,
	// without waiting for the server's confirmations: Receive returns
	// those. They are called from one goroutine at a time, possibly while
	// another goroutine waits in Receive. An error means the connection
	// failed.
	Subscribe(ctx context.Context, channels ...string) error
	Unsubscribe(ctx context.Context, channels ...string) error
	// Receive waits for the next message, confirmation or error reply,
	// from one goroutine. It returns an error when the connection failed
	// or was closed, and must then return at once on every later call.
	// The client's pings and their pongs, if it sends any, are its own
	// and are not returned.
	Receive(ctx context.Context) (Event, error)
	// Close closes the connection, ending a Receive in progress. It may be
	// called at any time, more than once.
	Close() error
}

// SubscribeDialer opens a subscription connection to node i, within ctx's
// deadline.
type SubscribeDialer func(ctx context.Context, node int) (Subscription, error)

// EventKind is what a Subscription received.
type EventKind uint8

const (
	// EventMessage means a message was published on Event.Channel.
	EventMessage EventKind = iota + 1
	// EventSubscribed means the server confirmed the subscription to
	// Event.Channel.
	EventSubscribed
	// EventUnsubscribed means the server confirmed the end of the
	// subscription to Event.Channel.
	EventUnsubscribed
	// EventRefused means the server answered a command with an error reply,
	// in Event.Err (an ACL's NOPERM, a proxy without pub/sub).
	EventRefused
)

// Event is one thing a Subscription received.
type Event struct {
	Kind    EventKind
	Channel string
	Err     error
}

// ReadEvent reads one pub/sub reply in RESP2 (an array) or RESP3 (a push)
// for clients that read replies themselves (radix): a message, a
// (un)subscribe confirmation, or an error reply. A pong, or a pattern
// message, returns ok == false, read and skipped. Anything else is
// ErrProtocol.
func ReadEvent(r RESPReader) (e Event, ok bool, err error) {
	line, err := r.ReadSlice('\n')
	if err != nil {
		return Event{}, false, err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return Event{}, false, ErrProtocol
	}
	switch line[0] {
	case '-':
		return Event{Kind: EventRefused, Err: errors.New(string(line[1 : len(line)-2]))}, true, nil
	case '+': // RESP2 PONG outside subscribe mode
		return Event{}, false, nil
	case '*', '>':
	default:
		return Event{}, false, ErrProtocol
	}
	n, valid := parseInt(line[1 : len(line)-2])
	if !valid || n < 1 || n > 4 {
		return Event{}, false, ErrProtocol
	}
	var words [4]string
	for i := 0; i < int(n); i++ {
		rep, err := ReadReply(r)
		if err != nil {
			return Event{}, false, err
		}
		words[i] = rep.Text
	}
	e, ok = EventOf(words[0], words[1]) // not a pong, pmessage, psubscribe
	return e, ok, nil
}

// EventOf returns the Event of a pub/sub reply of kind ("message",
// "subscribe" or "unsubscribe", or their sharded pub/sub counterparts
// "smessage", "ssubscribe" and "sunsubscribe") on channel, as a client
// decoded it; ok == false for the kinds that are not the engine's
// (pattern messages, pongs).
func EventOf(kind, channel string) (e Event, ok bool) {
	switch kind {
	case "message", "smessage":
		return Event{Kind: EventMessage, Channel: channel}, true
	case "subscribe", "ssubscribe":
		return Event{Kind: EventSubscribed, Channel: channel}, true
	case "unsubscribe", "sunsubscribe":
		return Event{Kind: EventUnsubscribed, Channel: channel}, true
	}
	return Event{}, false
}

// Inbox is the Receive of a client that hands pub/sub events to callbacks
// (rueidis's hooks), which must not block: Push queues an event, Receive
// takes them in order.
type Inbox struct {
	mu    sync.Mutex
	queue []Event
	wake  chan struct{} // one token: queue may hold events
	done  chan struct{} // closed by Close
	once  sync.Once
	err   error // the end Receive saw
}

// NewInbox returns an empty Inbox.
func NewInbox() *Inbox {
	return &Inbox{wake: make(chan struct{}, 1), done: make(chan struct{})}
}

// Push queues e for Receive, without blocking.
func (b *Inbox) Push(e Event) {
	b.mu.Lock()
	b.queue = append(b.queue, e)
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// Receive returns the next event queued, waiting for one; it fails once
// the client's connection ended (an error, or nil, on ended), once Close
// was called, and for good after either.
func (b *Inbox) Receive(ctx context.Context, ended <-chan error) (Event, error) {
	for {
		select {
		case <-b.done:
			return Event{}, errClosed
		default:
		}
		if b.err != nil {
			return Event{}, b.err
		}
		b.mu.Lock()
		if len(b.queue) > 0 {
			e := b.queue[0]
			b.queue = b.queue[1:]
			b.mu.Unlock()
			return e, nil
		}
		b.mu.Unlock()
		select {
		case <-b.wake:
		case err := <-ended:
			b.err = cmp.Or(err, errClosed)
		case <-b.done:
		case <-ctx.Done():
			return Event{}, ctx.Err()
		}
	}
}

// Close ends Receive and reports whether it was the first call.
func (b *Inbox) Close() (first bool) {
	b.once.Do(func() {
		close(b.done)
		first = true
	})
	return first
}

// errClosed is the error of a Receive on a closed subscription.
var errClosed = errors.New("subscription closed")
