package redigo

import (
	"github.com/redlock-go/redlock/drivers"
	"github.com/redlock-go/redlock/drivers/engine"
	"github.com/redlock-go/redlock/drivers/wire"
)

// DialMembers is Dial for members given as drivers.Member values: it
// accepts standalone masters only (drivers.NewStandalone, drivers.Members),
// each dialled as Dial dials a node, with or without WAIT
// (Member.WithWait, as drivers.Member states for every driver). redigo has neither a Sentinel nor a Cluster client: a
// Sentinel group or a Cluster member is refused with an error matching
// core.ErrInvalidConfig that names it; use the goredis or radix driver
// for those. Like Dial, it fails only for invalid configuration.
func DialMembers(members []drivers.Member, opts Options) (*Driver, error) {
	cfg, err := membersConfig(members, opts)
	if err != nil {
		return nil, err
	}
	return &Driver{engine.New(cfg)}, nil
}

// membersConfig is DialMembers's engine configuration: Dial's, with each
// member's WAIT.
func membersConfig(members []drivers.Member, opts Options) (engine.Config, error) {
	if err := wire.CheckMembers("redigo", members, drivers.Standalone); err != nil {
		return engine.Config{}, err
	}
	addrs := make([]string, len(members))
	nodes := make([]engine.NodeConfig, len(members))
	for i, m := range members {
		addrs[i] = m.Addrs[0]
		nodes[i] = engine.NodeConfig{Replicas: m.Replicas, WaitTimeout: m.WaitTimeout}
	}
	cfg, err := dialConfig(addrs, opts)
	if err != nil {
		return engine.Config{}, err
	}
	cfg.Nodes = nodes
	return cfg, nil
}
