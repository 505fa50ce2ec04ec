package engine

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers/wire"
)

// The release script publishes on wire.ReleaseChannel(key) after its
// compare-and-delete. Watch relays those announcements: each node gets one
// subscription connection, dialled at the first Watch and shared by every
// watched key, over which the engine subscribes to a key's channel while
// some Watch of it runs. A node's connection is redialled after any
// failure and its channels subscribed again; each confirmation, and each
// loss of the connection, notifies the key's watches, since a release may
// have gone unannounced meanwhile. A node whose server refuses to
// subscribe (an ACL without channel rights, a proxy without pub/sub) is
// not listened to, and the engine says so once, through Config.Logger:
// its waiters poll. A Cluster node with sharded pub/sub announces and
// listens under the channels' shard names instead (shard.go); its
// Subscription translates them, so the watcher deals in the channels'
// own names whatever the node.

// Redial delays of a node's subscription connection: doubling from
// redialMin up to redialMax after failures, refusedRetry after a refusal.
const (
	redialMin    = 10 * time.Millisecond
	redialMax    = time.Second
	refusedRetry = 30 * time.Second
)

// watcher is the engine's subscription side.
type watcher struct {
	e       *Engine
	dial    SubscribeDialer
	timeout time.Duration // bounds a dial and a write

	mu     sync.Mutex
	keys   map[string][]*watchHandle // each channel's watches
	subs   []*subscriber             // per node; nil until the first Watch
	closed bool
	warned bool // the one warning that waiters poll was given
	wg     sync.WaitGroup
}

// subscriber is one node's subscription connection.
type subscriber struct {
	w    *watcher
	i    int
	kick chan struct{} // the channels to subscribe changed
	stop chan struct{} // closed by Close

	// Under w.mu.
	dirty     map[string]struct{} // channels whose subscription may be out of date
	sent      map[string]bool     // channels subscribed on the connection (SUBSCRIBE sent)
	confirmed map[string]bool     // channels whose subscription the server confirmed
}

// Watch relays the release announcements of key (core.Announcer): see
// watcher. A Watch of a key that other Watches already hear is notified
// at once, from within Watch, of each node whose subscription is
// confirmed. Once the engine has been given a Fair command (core.Config.Fair), it
// hears this engine's turn channel for the key too, on which a Fair
// release tells the engine's waiter alone that the key was handed to it,
// and it listens to a node once both subscriptions are confirmed there.
// Without a Config.Subscribe, or after Close, it never listens.
func (e *Engine) Watch(key string, notify func(node int)) core.Watch {
	h := e.watch(wire.ReleaseChannel(key), notify)
	if !e.fair.Load() {
		return h
	}
	return watchPair{h, e.watch(wire.TurnChannel(e.waiter, key), notify)}
}

// watchPair is a Watch of a key's two channels.
type watchPair struct{ release, turn *watchHandle }

func (p watchPair) Listening() uint32 { return p.release.Listening() & p.turn.Listening() }

func (p watchPair) Stop() {
	p.release.Stop()
	p.turn.Stop()
}

// watch relays the messages of channel, and its subscriptions' changes.
func (e *Engine) watch(channel string, notify func(node int)) *watchHandle {
	w := &e.watcher
	h := &watchHandle{w: w, channel: channel, notify: notify}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.dial == nil && !w.warned {
		w.warned = true
		e.log.Warn("redlock: release notifications are unavailable: waiters poll instead",
			"err", "the driver's client cannot open a subscription connection")
	}
	if w.dial == nil || w.closed {
		h.stopped = true
		return h
	}
	if w.subs == nil {
		w.start()
	}
	if w.keys[h.channel] == nil {
		w.touch(h.channel)
	}
	w.keys[h.channel] = append(w.keys[h.channel], h)
	// A Watch that joins a subscription other Watches of the channel
	// started hears no confirmation of its own: it is notified of each
	// node already confirmed, as the confirmation notified those, since
	// a release there may have been announced before it began. Under
	// w.mu, as fire's notifications, one at a time.
	for nodes, i := w.listening(h.channel), 0; nodes != 0; nodes, i = nodes>>1, i+1 {
		if nodes&1 != 0 {
			h.notify(i)
		}
	}
	return h
}

// listening returns the nodes whose subscription to channel is
// confirmed; w.mu is held.
func (w *watcher) listening(channel string) uint32 {
	var nodes uint32
	for _, s := range w.subs {
		if s.confirmed[channel] {
			nodes |= 1 << s.i
		}
	}
	return nodes
}

// start starts one subscriber per node; w.mu is held.
func (w *watcher) start() {
	w.keys = make(map[string][]*watchHandle)
	w.subs = make([]*subscriber, len(w.e.names))
	for i := range w.subs {
		s := &subscriber{w: w, i: i, kick: make(chan struct{}, 1), stop: make(chan struct{}),
			dirty: make(map[string]struct{}), sent: make(map[string]bool), confirmed: make(map[string]bool)}
		w.subs[i] = s
		w.wg.Add(1)
		go s.loop()
	}
}

// touch marks channel for every node's subscriber to bring up to date;
// w.mu is held.
func (w *watcher) touch(channel string) {
	for _, s := range w.subs {
		s.dirty[channel] = struct{}{}
		select {
		case s.kick <- struct{}{}:
		default:
		}
	}
}

// close stops the subscribers and waits for them.
func (w *watcher) close() {
	w.mu.Lock()
	w.closed = true
	for _, s := range w.subs {
		close(s.stop)
	}
	w.mu.Unlock()
	w.wg.Wait()
}

// fire notifies the watches of channel that node i may have released it;
// w.mu is held, so that Stop waits for a notification in progress.
func (w *watcher) fire(channel string, i int) {
	for _, h := range w.keys[channel] {
		h.notify(i)
	}
}

// loop keeps node s.i's subscription connection up, and its channels
// subscribed, until Close.
func (s *subscriber) loop() {
	defer s.w.wg.Done()
	delay := redialMin
	for {
		refused, connected := s.session()
		delay = nextRedial(delay, connected)
		wait := delay
		if refused {
			wait = refusedRetry
		}
		// On the engine's clock (Config.Clock), as every other delay
		// of the engine, so that a test's manual clock decides when
		// the node is dialled again.
		fired := make(chan struct{})
		t := s.w.e.clock.AfterFunc(wait, func() { close(fired) })
		select {
		case <-s.stop:
			t.Stop()
			return
		case <-fired:
		}
	}
}

// nextRedial returns the delay before the next dial: redialMin after a
// session that connected, otherwise twice the last delay, up to redialMax.
func nextRedial(last time.Duration, connected bool) time.Duration {
	if connected {
		return redialMin
	}
	return min(2*last, redialMax)
}

// session dials the node and runs its connection until it fails or Close;
// it reports whether the server refused to subscribe, and whether the
// dial succeeded.
func (s *subscriber) session() (refused, connected bool) {
	w := s.w
	ctx, cancel := context.WithTimeout(context.Background(), w.timeout)
	conn, err := w.dial(ctx, s.i)
	cancel()
	if err != nil {
		return false, false
	}
	w.mu.Lock()
	clear(s.sent)
	for ch := range w.keys {
		s.dirty[ch] = struct{}{}
	}
	w.mu.Unlock()
	read := make(chan bool, 1)
	go func() { read <- s.read(conn) }()
	defer func() {
		_ = conn.Close() // the session is over, whatever ended it; the next dials anew
		w.mu.Lock()
		for ch := range s.confirmed {
			w.fire(ch, s.i) // listened to no more: poll
		}
		clear(s.confirmed)
		w.mu.Unlock()
	}()
	for {
		if err := s.write(conn); err != nil {
			_ = conn.Close() // to end read; the write's failure ends the session
			return <-read, true
		}
		select {
		case <-s.kick:
		case refused = <-read:
			return refused, true
		case <-s.stop:
			_ = conn.Close() // to end read: the watcher is closing
			<-read
			return false, true
		}
	}
}

// write subscribes to the channels watched and not yet subscribed, and
// unsubscribes from those no longer watched.
func (s *subscriber) write(conn Subscription) error {
	w := s.w
	var sub, unsub []string
	w.mu.Lock()
	for ch := range s.dirty {
		want := w.keys[ch] != nil
		switch {
		case want && !s.sent[ch]:
			sub = append(sub, ch)
			s.sent[ch] = true
		case !want && s.sent[ch]:
			unsub = append(unsub, ch)
			delete(s.sent, ch)
		}
	}
	clear(s.dirty)
	w.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), w.timeout)
	defer cancel()
	if len(sub) > 0 {
		if err := conn.Subscribe(ctx, sub...); err != nil {
			return err
		}
	}
	if len(unsub) > 0 {
		return conn.Unsubscribe(ctx, unsub...)
	}
	return nil
}

// read dispatches the connection's events until it fails; it reports
// whether the server refused a command.
func (s *subscriber) read(conn Subscription) (refused bool) {
	w := s.w
	for {
		ev, err := conn.Receive(context.Background())
		if err != nil {
			return false
		}
		w.mu.Lock()
		switch ev.Kind {
		case EventMessage:
			w.fire(ev.Channel, s.i)
		case EventSubscribed:
			s.confirmed[ev.Channel] = true
			w.fire(ev.Channel, s.i)
		case EventUnsubscribed: // a SUBSCRIBE sent since is confirmed next
			delete(s.confirmed, ev.Channel)
			w.fire(ev.Channel, s.i)
		case EventRefused:
			if !w.warned {
				w.warned = true
				w.e.log.Warn("redlock: release notifications are unavailable: waiters poll instead",
					"node", s.i, "addr", w.e.names[s.i], "err", ev.Err)
			}
		}
		w.mu.Unlock()
		if ev.Kind == EventRefused {
			_ = conn.Close() // refused: waiters poll instead, as logged above
			return true
		}
	}
}

// watchHandle is one Watch: core.Watch.
type watchHandle struct {
	w       *watcher
	channel string
	notify  func(int)
	stopped bool // under w.mu
}

// Listening returns the nodes whose subscription to the key is confirmed.
func (h *watchHandle) Listening() uint32 {
	h.w.mu.Lock()
	defer h.w.mu.Unlock()
	if h.stopped {
		return 0
	}
	return h.w.listening(h.channel)
}

// Stop ends the watch; the key's channel is unsubscribed once no watch of
// it is left. It is idempotent.
func (h *watchHandle) Stop() {
	w := h.w
	w.mu.Lock()
	defer w.mu.Unlock()
	if h.stopped {
		return
	}
	h.stopped = true
	hs := slices.DeleteFunc(w.keys[h.channel], func(x *watchHandle) bool { return x == h })
	w.keys[h.channel] = hs
	if len(hs) == 0 {
		delete(w.keys, h.channel)
		if !w.closed {
			w.touch(h.channel)
		}
	}
}
