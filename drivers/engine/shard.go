package engine

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redlock-go/redlock/drivers/wire"
)

// Sharded pub/sub on a Cluster (Redis 7.0: SPUBLISH, SSUBSCRIBE). A
// Cluster broadcasts a PUBLISH to every node over its bus; an SPUBLISH
// reaches only the master of its channel's slot and that master's
// replicas. On a Cluster member whose masters all have it, the release
// script announces with SPUBLISH (wire.ReleaseSharded) on channels in the
// key's slot (wire.ShardChannel), and the member's subscription listens
// with SSUBSCRIBE on the master of that slot: one client subscription per
// channel, routed by the client's Cluster topology, since one connection
// reaches one master. Redis ends a shard subscription (sunsubscribe) when
// its slot leaves the master, by a migration or a failover; the
// subscription then subscribes again, through the client's routing, on the
// slot's new master.

// ShardedPublisher is a Cluster member's Conn (an Identifier) that says,
// once identified, whether every master has sharded pub/sub: the node's
// releases are then announced with SPUBLISH (wire.ReleaseSharded), and
// otherwise with PUBLISH, which a Cluster broadcasts.
type ShardedPublisher interface {
	ShardedPubSub() bool
}

// ShardRunner subscribes to one channel with SSUBSCRIBE on the master of
// its slot, through the client's Cluster routing, and relays what it
// receives to push: EventSubscribed once the server confirms, EventMessage
// for each message, EventRefused for an error reply that forbids it (an
// ACL's NOPERM), after which it returns. It returns when the server ends
// the subscription (an sunsubscribe: the slot moved), when the connection
// fails, and promptly once ctx is cancelled. The client's pings are its
// own.
type ShardRunner func(ctx context.Context, channel string, push func(Event)) error

// NewShardedSubscription returns the Subscription of a Cluster member with
// sharded pub/sub: Subscribe runs run for each channel's shard name
// (wire.ShardChannel) in a goroutine of its own, again after each return
// (a moved slot, a failed connection: doubling delays from redialMin up to
// redialMax while it fails), until Unsubscribe or Close; Receive reports
// the events under the channels' own names, with EventUnsubscribed when a
// confirmed subscription ended. A channel with no shard name (an
// untaggable key) is never subscribed. closeClient, run by Close, closes
// the client.
func NewShardedSubscription(run ShardRunner, closeClient func() error) Subscription {
	return &shardedSub{Inbox: NewInbox(), run: run, closeClient: closeClient, chans: map[string]*shardLoop{}}
}

// shardedSub is NewShardedSubscription's Subscription.
type shardedSub struct {
	*Inbox
	run         ShardRunner
	closeClient func() error

	mu     sync.Mutex
	chans  map[string]*shardLoop
	closed bool
}

// shardLoop is one channel's goroutine.
type shardLoop struct {
	cancel context.CancelFunc
	done   chan struct{}
}

func (s *shardedSub) Subscribe(_ context.Context, chs ...string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ch := range chs {
		name, ok := wire.ShardChannel(ch)
		if s.closed || !ok || s.chans[ch] != nil {
			continue
		}
		ctx, cancel := context.WithCancel(context.Background())
		l := &shardLoop{cancel: cancel, done: make(chan struct{})}
		s.chans[ch] = l
		go s.loop(ctx, ch, name, l.done)
	}
	return nil
}

func (s *shardedSub) Unsubscribe(_ context.Context, chs ...string) error {
	for _, ch := range chs {
		s.mu.Lock()
		l := s.chans[ch]
		delete(s.chans, ch)
		s.mu.Unlock()
		if l == nil {
			continue
		}
		l.cancel()
		<-l.done
		s.Push(Event{Kind: EventUnsubscribed, Channel: ch})
	}
	return nil
}

func (s *shardedSub) Receive(ctx context.Context) (Event, error) {
	return s.Inbox.Receive(ctx, nil)
}

// Close stops every channel's goroutine, then closes the client.
func (s *shardedSub) Close() error {
	if !s.Inbox.Close() {
		return nil
	}
	s.mu.Lock()
	s.closed = true
	ls := s.chans
	s.chans = nil
	s.mu.Unlock()
	for _, l := range ls {
		l.cancel()
		<-l.done
	}
	return s.closeClient()
}

// loop runs the subscription to channel, under its shard name, until ctx
// is cancelled.
func (s *shardedSub) loop(ctx context.Context, channel, name string, done chan<- struct{}) {
	defer close(done)
	delay := redialMin
	for {
		var confirmed atomic.Bool // push may run on a goroutine of the client's
		// The run's error is dropped: a failure ends the run, and the
		// next run's events tell the watchers.
		_ = s.run(ctx, name, func(e Event) {
			if ctx.Err() != nil {
				return
			}
			if e.Kind == EventSubscribed {
				confirmed.Store(true)
			}
			if e.Kind != EventRefused {
				e.Channel = channel
			}
			s.Push(e)
		})
		if ctx.Err() != nil {
			return
		}
		if confirmed.Load() {
			s.Push(Event{Kind: EventUnsubscribed, Channel: channel}) // listened to no more
		}
		delay = nextRedial(delay, confirmed.Load())
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}
