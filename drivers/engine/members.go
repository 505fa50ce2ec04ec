package engine

import (
	"fmt"
	"slices"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers/internal/dialspec"
	"github.com/redlock-go/redlock/drivers/wire"
)

// MembersConfig validates a driver's quorum members and its options
// (wire.CheckMembers with the topologies its client supports,
// wire.CheckDial over every address; a Cluster has only DB 0) and returns
// copies of the members, for the driver to dial from, with the engine
// Config of them: each node named by its Member.String and given its WAIT
// and topology, the dial timeout, Clock and Logger. The driver adds Dial
// and Subscribe.
func MembersConfig(driver string, members []dialspec.Member, opts dialspec.Options, supported ...dialspec.Topology) ([]dialspec.Member, Config, error) {
	if err := wire.CheckMembers(driver, members, supported...); err != nil {
		return nil, Config{}, err
	}
	var all []string
	ms := make([]dialspec.Member, len(members))
	cfg := Config{Names: make([]string, len(members)), Nodes: make([]NodeConfig, len(members)), Clock: opts.Clock, Logger: opts.Logger}
	for i, m := range members {
		if m.Topology == dialspec.ClusterGroup && opts.DB != 0 {
			return nil, Config{}, fmt.Errorf("%w: %s: member %d %s: a Cluster has only DB 0, not %d", core.ErrInvalidConfig, driver, i, m, opts.DB)
		}
		m.Addrs = slices.Clone(m.Addrs)
		ms[i], cfg.Names[i] = m, m.String()
		cfg.Nodes[i] = NodeConfig{Replicas: m.Replicas, WaitTimeout: m.WaitTimeout, Cluster: m.Topology == dialspec.ClusterGroup}
		all = append(all, m.Addrs...)
	}
	_, timeout, err := wire.CheckDial(driver, all, opts)
	if err != nil {
		return nil, Config{}, err
	}
	cfg.DialTimeout = timeout
	return ms, cfg, nil
}
