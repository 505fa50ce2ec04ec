package goredis

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-go/redlock/drivers/internal/engine"
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
		s.Close()
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
	s.ps.Close() // pool.ErrClosed the second time
	return s.close()
}

func (s sub) Receive(ctx context.Context) (engine.Event, error) {
	for {
		v, err := s.ps.Receive(ctx)
		if _, ok := err.(redis.Error); ok { // an error reply, such as an ACL's NOPERM
			return engine.Event{Kind: engine.EventRefused, Err: err}, nil
		} else if err != nil {
			s.ps.Close()
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
