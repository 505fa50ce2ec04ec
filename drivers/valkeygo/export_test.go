package valkeygo

import (
	vk "github.com/valkey-io/valkey-go"

	"github.com/redlock-go/redlock/drivers/internal/engine"
)

// Subscriber returns the subscription dialer that Dial gives the engine.
func Subscriber(addrs []string, opts Options) engine.SubscribeDialer {
	return subscriber(dialConfig(addrs, opts))
}

// ClientSubscriber returns the one that New gives it.
func ClientSubscriber(clients []vk.Client) engine.SubscribeDialer {
	return subscriber(newConfig(clients, nil))
}

func subscriber(cfg engine.Config, err error) engine.SubscribeDialer {
	if err != nil {
		panic(err)
	}
	return cfg.Subscribe
}
