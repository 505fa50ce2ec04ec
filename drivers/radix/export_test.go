package radix

import (
	"context"

	radixv4 "github.com/mediocregopher/radix/v4"

	"github.com/redlock-go/redlock/drivers"
	"github.com/redlock-go/redlock/drivers/engine"
)

// Subscriber returns the subscription dialer that Dial gives the engine.
func Subscriber(addrs []string, opts Options) engine.SubscribeDialer {
	return subscriber(dialConfig(addrs, opts))
}

// ClientSubscriber returns the one that New gives it.
func ClientSubscriber(clients []radixv4.Client) engine.SubscribeDialer {
	return subscriber(newConfig(clients, nil))
}

// dialConfig and membersConfig are the engine configurations of Dial and
// DialMembers.
func dialConfig(addrs []string, opts Options) (engine.Config, error) {
	return drivers.DialConfig("radix", addrs, opts, adapter(opts))
}

func membersConfig(members []drivers.Member, opts Options) (engine.Config, error) {
	return drivers.MembersConfig("radix", members, opts, adapter(opts), drivers.Standalone, drivers.SentinelGroup, drivers.ClusterGroup)
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

// NewMemberPool makes the radix Client that a Sentinel's or a Cluster's
// server gets (PoolConfig.CustomPool).
func NewMemberPool(ctx context.Context, d radixv4.Dialer, addr string) (radixv4.Client, error) {
	return newPools(d, false).make(ctx, "tcp", addr)
}
