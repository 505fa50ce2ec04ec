package dialspec

import (
	"errors"
	"strings"
	"time"
)

// ErrNotReplicated is the cause of a member's failed vote when fewer of
// its replicas than Member.Replicas acknowledged the write (WAIT replied
// fewer, its timeout having passed), or when its master has fewer
// replicas connected than that (nothing is sent to it): the vote counts
// as none, and the error names the member. It is a node's cause, not a
// kind: the round fails with core.ErrQuorumUnreachable if too few other
// members voted, never with core.ErrInvalidConfig. The key may be on the
// master: a failed acquisition's cleanup releases it there.
var ErrNotReplicated = errors.New("redlock: too few replicas acknowledged the write")

// ErrMisconfigured is the cause of a member's failed vote when the member
// is not what it was given as, or cannot take the key, which only
// connecting to it or sending to it tells: its Sentinels know no master of
// its MasterName, its Cluster seed is not in cluster mode, its server is
// one that another member reaches too (it would vote twice), or the key
// has '}' and no hash tag for a Cluster member's fence counter or queues.
// The vote counts as none, and the error names the member. It is a
// node's cause, not a kind: the round fails with
// core.ErrQuorumUnreachable when too few members voted, never with
// core.ErrInvalidConfig, which is found before anything is sent; unlike
// a node that is down, it does not pass by trying again.
var ErrMisconfigured = errors.New("redlock: member misconfigured")

// Topology says what kind of failure domain a Member is.
type Topology uint8

const (
	// Standalone is one Redis or Valkey master at one address.
	Standalone Topology = iota + 1
	// SentinelGroup is a master and its replicas, managed by Sentinels: the
	// member's voter is whichever server the Sentinels name as the master.
	SentinelGroup
	// ClusterGroup is a whole Redis or Valkey Cluster: the member's voter
	// for a key is the master that owns the key's hash slot at that moment.
	ClusterGroup
)

// A Member is one voter of a Redlock quorum: one failure domain, which may
// be more than one server. A quorum of N members needs a majority of them;
// a Sentinel group or a Cluster counts once, however many servers it has.
//
// Make one with NewStandalone, NewSentinel or NewCluster. Replication is
// asynchronous: a replica promoted before it received a lock key is a
// member that restarted without its state. WithWait makes each vote wait
// until the member's replicas hold it; without it, a failover is such a
// restart (see the Redlock documentation's "delayed restarts").
//
// What every driver's DialMembers does with members: it validates them
// and its options before anything connects (one to core.MaxNodes members,
// no server address in two of them, a master name for a Sentinel group, a
// positive WaitTimeout with Replicas, DB 0 for a Cluster), keeps its own
// copy, and connects to each in the background; invalid configuration is
// its only error, matching core.ErrInvalidConfig. Each member is one node,
// named by Member.String in errors. A server reached by two members (the
// same group or Cluster given twice, a Cluster's master also given as a
// standalone member) fails the second to connect with ErrMisconfigured.
// On a Cluster a key's fence counter and queues are named in its hash
// slot (a key with '}' and no hash tag is refused there, with
// ErrMisconfigured). With Replicas, each acquisition, extension and fence
// raise (core.Waited) is followed by WAIT on the write's connection, on
// a second connection per member so that a blocked WAIT holds up no
// release; a short count fails the vote with ErrNotReplicated, and a
// master with fewer connected replicas than Replicas is refused, with
// ErrNotReplicated too, before any lock command reaches it. Keep
// WaitTimeout well below the Client's NodeTimeout. Sentinels that do not
// know the master name, or a Cluster seed not in cluster mode, make the
// member's commands fail with ErrMisconfigured. On a Cluster whose
// masters all run Redis 7.0 or later, release announcements use SPUBLISH
// and SSUBSCRIBE on a channel in the key's slot; otherwise PUBLISH, which a
// Cluster broadcasts to every node.
type Member struct {
	// Topology is the member's kind.
	Topology Topology
	// Addrs are host:port addresses: the master's (Standalone, one), the
	// Sentinels' (SentinelGroup) or seed nodes of the Cluster
	// (ClusterGroup).
	Addrs []string
	// MasterName names a SentinelGroup's master, as the Sentinels know it.
	MasterName string
	// Replicas, when positive, is how many replicas must acknowledge each
	// acquisition, extension and fence raise (WAIT) before the member's
	// vote counts: give every replica the member has, so that any
	// promoted replica holds the key and its fence counter. A vote whose WAIT falls short, or times out, counts
	// as no vote.
	Replicas int
	// WaitTimeout bounds each WAIT; it must be positive when Replicas is.
	WaitTimeout time.Duration
}

// NewStandalone returns the member that is the master at addr.
func NewStandalone(addr string) Member {
	return Member{Topology: Standalone, Addrs: []string{addr}}
}

// NewSentinel returns the member that is the Sentinel group whose master
// the Sentinels at addrs know as masterName.
func NewSentinel(masterName string, addrs ...string) Member {
	return Member{Topology: SentinelGroup, MasterName: masterName, Addrs: addrs}
}

// NewCluster returns the member that is the Cluster reached through the
// seed nodes at addrs.
func NewCluster(addrs ...string) Member {
	return Member{Topology: ClusterGroup, Addrs: addrs}
}

// WithWait returns m whose votes count only once replicas replicas have
// acknowledged them, each WAIT bounded by timeout.
func (m Member) WithWait(replicas int, timeout time.Duration) Member {
	m.Replicas, m.WaitTimeout = replicas, timeout
	return m
}

// Members returns one Standalone member per address.
func Members(addrs ...string) []Member {
	ms := make([]Member, len(addrs))
	for i, a := range addrs {
		ms[i] = NewStandalone(a)
	}
	return ms
}

// String names the member in errors: its address when Standalone,
// "sentinel:<master>@<addrs>" or "cluster:<addrs>" otherwise.
func (m Member) String() string {
	switch m.Topology {
	case SentinelGroup:
		return "sentinel:" + m.MasterName + "@" + strings.Join(m.Addrs, ",")
	case ClusterGroup:
		return "cluster:" + strings.Join(m.Addrs, ",")
	}
	return strings.Join(m.Addrs, ",")
}
