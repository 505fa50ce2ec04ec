package rueidis

import (
	"context"

	rd "github.com/redis/rueidis"

	"github.com/redlock-go/redlock/drivers"
	"github.com/redlock-go/redlock/drivers/engine"
)

// Subscriber returns the subscription dialer that Dial gives the engine.
func Subscriber(addrs []string, opts Options) engine.SubscribeDialer {
	return subscriber(dialConfig(addrs, opts))
}

// ClientSubscriber returns the one that New gives it.
func ClientSubscriber(clients []rd.Client) engine.SubscribeDialer {
	return subscriber(newConfig(clients, nil))
}

// dialConfig and membersConfig are the engine configurations of Dial and
// DialMembers.
func dialConfig(addrs []string, opts Options) (engine.Config, error) {
	return drivers.DialConfig("rueidis", addrs, opts, adapter(opts))
}

func membersConfig(members []drivers.Member, opts Options) (engine.Config, error) {
	return drivers.MembersConfig("rueidis", members, opts, adapter(opts), drivers.Standalone, drivers.SentinelGroup, drivers.ClusterGroup)
}

func subscriber(cfg engine.Config, err error) engine.SubscribeDialer {
	if err != nil {
		panic(err)
	}
	return cfg.Subscribe
}

// MembersSubscriber returns the subscription dialer that DialMembers
// gives the engine.
func MembersSubscriber(members []drivers.Member, opts Options) engine.SubscribeDialer {
	return subscriber(membersConfig(members, opts))
}

// MemberConn dials m as DialMembers dials a member: the engine's Conn.
func MemberConn(ctx context.Context, m drivers.Member) (engine.Conn, error) {
	cfg, err := membersConfig([]drivers.Member{m}, Options{})
	if err != nil {
		return nil, err
	}
	return cfg.Dial(ctx, 0)
}

// MemberOption is the client option DialMembers uses for m.
var MemberOption = memberOption
