package redigo

import (
	"github.com/gomodule/redigo/redis"

	"github.com/redlock-go/redlock/drivers/internal/engine"
)

// Subscriber returns the subscription dialer that Dial gives the engine.
func Subscriber(addrs []string, opts Options) engine.SubscribeDialer {
	return subscriber(dialConfig(addrs, opts))
}

// PoolSubscriber returns the one that New gives it.
func PoolSubscriber(pools []*redis.Pool) engine.SubscribeDialer {
	return subscriber(newConfig(pools, nil))
}

func subscriber(cfg engine.Config, err error) engine.SubscribeDialer {
	if err != nil {
		panic(err)
	}
	return cfg.Subscribe
}
