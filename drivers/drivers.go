// Package drivers holds what the Redlock drivers for Redis clients share:
// the Options that each driver's Dial takes, the Members it dials, the
// one Driver type every client package returns, and the validation and
// configuration every Dial, DialMembers and New go through (DialConfig,
// MembersConfig, NewConfig, Start). The drivers are its subpackages, one
// per client: redigo, radix, rueidis, goredis and valkeygo. Each adapts
// its client to the engine (a dial, a pipelined exchange and a
// subscription); the rest (deadlines, order, scripts, replies, errors,
// WAIT, announcements) is the one engine they all share.
package drivers

import "github.com/redlock-go/redlock/drivers/internal/dialspec"

// The names below are those of package dialspec, which holds them so that the
// engine can use them without importing this package, which imports the
// engine.

// DefaultDialTimeout applies when Options.DialTimeout is 0.
const DefaultDialTimeout = dialspec.DefaultDialTimeout

// Options configure a driver's Dial. The zero value connects over plain
// TCP, without authentication, to database 0, with DefaultDialTimeout, on
// the system clock.
type Options = dialspec.Options

// Member is one failure domain, one vote: a standalone master, a Sentinel
// group or a whole Cluster.
type Member = dialspec.Member

// Topology says what kind of failure domain a Member is.
type Topology = dialspec.Topology

// The kinds of Member.
const (
	// Standalone is one Redis or Valkey master at one address.
	Standalone = dialspec.Standalone
	// SentinelGroup is a master and its replicas, managed by Sentinels.
	SentinelGroup = dialspec.SentinelGroup
	// ClusterGroup is a whole Redis Cluster, one vote.
	ClusterGroup = dialspec.ClusterGroup
)

// ErrNotReplicated is the cause of a member's failed vote when fewer of
// its replicas than Member.Replicas acknowledged the write.
var ErrNotReplicated = dialspec.ErrNotReplicated

// ErrMisconfigured is the cause of a member's failed vote when the member
// is not what it was given as, or cannot take the key.
var ErrMisconfigured = dialspec.ErrMisconfigured

// NewStandalone returns the Member of one master at addr.
func NewStandalone(addr string) Member { return dialspec.NewStandalone(addr) }

// NewSentinel returns the Member of the master the Sentinels at addrs
// name masterName.
func NewSentinel(masterName string, addrs ...string) Member {
	return dialspec.NewSentinel(masterName, addrs...)
}

// NewCluster returns the Member of the Cluster that the seeds at addrs
// belong to.
func NewCluster(addrs ...string) Member { return dialspec.NewCluster(addrs...) }

// Members returns one standalone Member per address.
func Members(addrs ...string) []Member { return dialspec.Members(addrs...) }
