// Package subtest checks the subscriptions this module's drivers give
// the engine (engine.SubscribeDialer, engine.Subscription) against real
// servers. A third-party driver cannot name those types: the public
// subscription contract, core.Announcer, is conformance.RunAnnouncer's.
// A driver of this module's test calls it as
//
//	func TestSubscription(t *testing.T) { subtest.RunSubscription(t, mydriver.Subscriber) }
//
// where Subscriber, in the driver's export_test.go, returns the
// subscription dialer its Dial gives the engine.
package subtest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock/drivers"
	"github.com/redlock-go/redlock/drivers/engine"
	"github.com/redlock-go/redlock/internal/contract"
	"github.com/redlock-go/redlock/internal/redistest"
	"github.com/redlock-go/redlock/internal/redistest/embedded"
)

// SubscribeDial returns the subscription dialer a driver gives the engine
// for addrs and opts: the one its Dial makes, or its New's over clients
// made for addrs and opts.
type SubscribeDial func(addrs []string, opts drivers.Options) engine.SubscribeDialer

// eventWait bounds the wait for an event that must come: a failure
// bound, never a synchronisation.
const eventWait = 10 * time.Second

// RunSubscription checks a driver's engine.Subscription against real
// servers: confirmations, messages and unsubscribing, authentication and
// TLS, an ACL that forbids channels (an EventRefused quoting NOPERM, on a
// connection that was dialled without complaint), a server killed, Close
// during Receive, and a node down at the dial. contract.StartServers
// chooses the servers; the ACL case needs redis-server. The test binary's
// goleak check (redistest.Main) catches a goroutine left behind.
func RunSubscription(t *testing.T, dial SubscribeDial) {
	t.Run("subscribe-publish-unsubscribe", func(t *testing.T) {
		srvs := contract.StartServers(t, 2, redistest.Options{})
		s := openSubscription(t, dial(contract.AddrsOf(srvs), drivers.Options{DialTimeout: time.Second}), 1)
		r := receive(t, s)
		ctx := contract.Context(t)
		require.NoError(t, s.Subscribe(ctx, "a", "b"))
		r.expect(t, engine.EventSubscribed, "a")
		r.expect(t, engine.EventSubscribed, "b")
		assert.Equal(t, int64(0), publish(t, srvs[0], "a"), "node 1 was dialled, not node 0")
		assert.Equal(t, int64(1), publish(t, srvs[1], "a"))
		r.expect(t, engine.EventMessage, "a")

		require.NoError(t, s.Unsubscribe(ctx, "a"))
		r.expect(t, engine.EventUnsubscribed, "a")
		assert.Equal(t, int64(0), publish(t, srvs[1], "a"), "unsubscribed")
		assert.Equal(t, int64(1), publish(t, srvs[1], "b"))
		r.expect(t, engine.EventMessage, "b") // and nothing on a before it

		require.NoError(t, s.Subscribe(ctx, "a"))
		r.expect(t, engine.EventSubscribed, "a")
		publish(t, srvs[1], "a")
		r.expect(t, engine.EventMessage, "a")
	})
	t.Run("auth-tls", func(t *testing.T) {
		opts := redistest.Options{TLS: true, User: "watcher", UserPassword: "pw of watcher"}
		srv := embedded.Start(t, opts)
		o := drivers.Options{Username: opts.User, Password: opts.UserPassword, TLS: srv.ClientTLS(), DialTimeout: time.Second}
		_, r := subscribedToC(t, dial, srv, o)
		publish(t, srv, "c")
		r.expect(t, engine.EventMessage, "c")

		o.Password = "wrong"
		_, err := dialPromptly(t, dial([]string{srv.Addr}, o), 0)
		assert.Error(t, err, "a wrong password fails the dial")
	})
	t.Run("acl-refused", func(t *testing.T) {
		// Redis 7 refuses SUBSCRIBE with NOPERM both to a user without
		// channel rights (resetchannels, the default of ACL SETUSER in 7)
		// and to one without the pubsub commands. Both authenticate: the
		// dial succeeds, and the refusal is an event.
		srv := redistest.Start(t, redistest.Options{User: "admin", UserPassword: "pw"})
		for user, rules := range map[string][]any{
			"nochannels": {"resetchannels", "+@all"},
			"nopubsub":   {"&*", "+@all", "-@pubsub"},
		} {
			t.Run(user, func(t *testing.T) {
				_, err := srv.Do(append([]any{"ACL", "SETUSER", user, "on", ">pw", "~*"}, rules...)...)
				require.NoError(t, err)
				o := drivers.Options{Username: user, Password: "pw", DialTimeout: time.Second}
				s := openSubscription(t, dial([]string{srv.Addr}, o), 0)
				r := receive(t, s)
				require.NoError(t, s.Subscribe(contract.Context(t), "c"), "a refusal is not a failed connection")
				ev := r.next(t)
				require.Equal(t, engine.EventRefused, ev.Kind, "%+v", ev)
				assert.ErrorContains(t, ev.Err, "NOPERM")
			})
		}
	})
	t.Run("server-killed", func(t *testing.T) {
		srv := contract.StartServers(t, 1, redistest.Options{})[0]
		s, r := subscribedToC(t, dial, srv, drivers.Options{DialTimeout: time.Second})
		srv.Kill()
		assert.Error(t, r.failure(t))
		requireFailsPromptly(t, s)
		// Back, the server hears from no one: the engine redials, not the
		// client behind its back.
		srv.Restart()
		requireFailsPromptly(t, s)
		assert.Equal(t, int64(0), publish(t, srv, "c"), "resubscribed by the client")
	})
	t.Run("close-during-receive", func(t *testing.T) {
		srv := contract.StartServers(t, 1, redistest.Options{})[0]
		s, r := subscribedToC(t, dial, srv, drivers.Options{DialTimeout: time.Second})
		// Nothing more is coming: the receiver waits in Receive.
		_ = s.Close() // the contract asks that Close end the Receive, not what it returns
		assert.Error(t, r.failure(t))
		requireFailsPromptly(t, s)
		_ = s.Close() // again: no effect, whatever it returns
		publish(t, srv, "c")
		requireFailsPromptly(t, s)
	})
	t.Run("dial-node-down", func(t *testing.T) {
		srv := contract.StartServers(t, 1, redistest.Options{})[0]
		sd := dial([]string{srv.Addr, contract.DeadAddr(t)}, drivers.Options{DialTimeout: time.Second})
		_, err := dialPromptly(t, sd, 1)
		assert.Error(t, err)
	})
}

// subscribedToC opens a subscription to srv with o, subscribes it to
// channel "c" and waits for the confirmation.
func subscribedToC(t *testing.T, dial SubscribeDial, srv *redistest.Server, o drivers.Options) (engine.Subscription, *receiver) {
	t.Helper()
	s := openSubscription(t, dial([]string{srv.Addr}, o), 0)
	r := receive(t, s)
	require.NoError(t, s.Subscribe(contract.Context(t), "c"))
	r.expect(t, engine.EventSubscribed, "c")
	return s, r
}

// openSubscription dials node i with a dial timeout, failing t on error.
func openSubscription(t *testing.T, sd engine.SubscribeDialer, i int) engine.Subscription {
	t.Helper()
	s, err := dialPromptly(t, sd, i)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() }) // the test may have closed it: a second Close may say so
	return s
}

// dialPromptly dials node i within a second's deadline and fails t if
// the dial outlives it by far; a Subscription dialled despite an error
// expected is closed.
func dialPromptly(t *testing.T, sd engine.SubscribeDialer, i int) (engine.Subscription, error) {
	t.Helper()
	require.NotNil(t, sd, "the driver gives the engine no subscription dialer")
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	type result struct {
		s   engine.Subscription
		err error
	}
	done := make(chan result, 1)
	go func() {
		s, err := sd(ctx, i)
		done <- result{s, err}
	}()
	select {
	case r := <-done:
		return r.s, r.err
	case <-time.After(eventWait):
		t.Fatal("the subscription dial outlived its deadline")
		return nil, nil
	}
}

// receiver is the one goroutine that calls a Subscription's Receive, as the
// engine does, while the test subscribes and unsubscribes.
type receiver struct {
	events chan engine.Event
	err    chan error // Receive's first error; the goroutine then returns
}

func receive(t *testing.T, s engine.Subscription) *receiver {
	r := &receiver{events: make(chan engine.Event), err: make(chan error, 1)}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			ev, err := s.Receive(context.Background())
			if err != nil {
				r.err <- err
				return
			}
			select {
			case r.events <- ev:
			case <-stop:
				return
			}
		}
	}()
	// Close ends a pending Receive: the goroutine returns before the test.
	t.Cleanup(func() {
		close(stop)
		_ = s.Close() // the test may have closed it: a second Close may say so
		<-done
	})
	return r
}

// next returns the next event, failing t on an error or none.
func (r *receiver) next(t *testing.T) engine.Event {
	t.Helper()
	select {
	case ev := <-r.events:
		return ev
	case err := <-r.err:
		t.Fatalf("Receive failed: %v", err)
	case <-time.After(eventWait):
		t.Fatal("no event")
	}
	return engine.Event{}
}

// expect checks that the next event is of kind on channel.
func (r *receiver) expect(t *testing.T, kind engine.EventKind, channel string) {
	t.Helper()
	ev := r.next(t)
	require.Equal(t, engine.Event{Kind: kind, Channel: channel}, engine.Event{Kind: ev.Kind, Channel: ev.Channel}, "err: %v", ev.Err)
}

// failure returns Receive's error, failing t on an event or none.
func (r *receiver) failure(t *testing.T) error {
	t.Helper()
	select {
	case ev := <-r.events:
		t.Fatalf("an event instead of a failure: %+v", ev)
	case err := <-r.err:
		return err
	case <-time.After(eventWait):
		t.Fatal("Receive did not fail")
	}
	return nil
}

// requireFailsPromptly checks that Receive, after a failure or Close,
// returns an error at once, twice; t's receiver has returned.
func requireFailsPromptly(t *testing.T, s engine.Subscription) {
	t.Helper()
	for range 2 {
		done := make(chan error, 1)
		go func() {
			_, err := s.Receive(context.Background())
			done <- err
		}()
		select {
		case err := <-done:
			require.Error(t, err)
		case <-time.After(eventWait):
			t.Fatal("Receive after the end did not return")
		}
	}
}

// publish publishes on channel from another connection and returns the
// number of subscribers that got it.
func publish(t *testing.T, srv *redistest.Server, channel string) int64 {
	t.Helper()
	n, err := srv.Do("PUBLISH", channel, "released")
	require.NoError(t, err)
	return n.(int64)
}
