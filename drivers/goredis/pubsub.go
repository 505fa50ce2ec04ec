package goredis

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-go/redlock/drivers/engine"
)

// sub is a go-redis PubSub: the engine's Subscription. go-redis redials a
// failed PubSub and subscribes again by itself; Receive closes it instead,
// so that the engine sees the failure, and a closed PubSub fails at once.
type sub struct {
	ps    *redis.PubSub
	close func() error // closes the client Dial made
}

// subscribe connects ps, a client's new PubSub, with a PING (go-redis
// connects lazily), so that a node down or refused credentials fail here.
func subscribe(ctx context.Context, ps *redis.PubSub, closeClient func() error) (engine.Subscription, error) {
	s := sub{ps, closeClient}
	if err := s.ps.Ping(ctx); err != nil {
		_ = s.Close() // the ping's error is the one to report
		return nil, err
	}
	return s, nil
}

func (s sub) Subscribe(ctx context.Context, chs ...string) error {
	return s.ps.Subscribe(ctx, chs...)
}

func (s sub) Unsubscribe(ctx context.Context, chs ...string) error {
	return s.ps.Unsubscribe(ctx, chs...)
}

func (s sub) Close() error {
	_ = s.ps.Close() // pool.ErrClosed once Receive closed it; the client's Close is reported
	return s.close()
}

func (s sub) Receive(ctx context.Context) (engine.Event, error) {
	for {
		v, err := s.ps.Receive(ctx)
		if err != nil {
			var rerr redis.Error
			if errors.As(err, &rerr) { // an error reply, such as an ACL's NOPERM
				return engine.Event{Kind: engine.EventRefused, Err: err}, nil
			}
			_ = s.ps.Close() // so that go-redis does not redial; err is the failure to report
			return engine.Event{}, err
		}
		var e engine.Event
		ok := false
		switch v := v.(type) {
		case *redis.Message:
			e, ok = engine.EventOf("message", v.Channel)
			ok = ok && v.Pattern == ""
		case *redis.Subscription:
			e, ok = engine.EventOf(v.Kind, v.Channel)
		}
		if ok {
			return e, nil
		}
	}
}
