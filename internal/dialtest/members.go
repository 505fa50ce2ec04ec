package dialtest

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers"
	"github.com/redlock-go/redlock/drivers/conformance"
	"github.com/redlock-go/redlock/drivers/wire"
	"github.com/redlock-go/redlock/internal/contract"
	"github.com/redlock-go/redlock/internal/redistest"
)

// MembersDialer opens a driver over members (drivers.Member) with its
// default options and a dial timeout of about a second. RunMembers closes
// it.
type MembersDialer func(members []drivers.Member) (conformance.Closer, error)

// MembersOf adapts a driver's DialMembers, such as goredis.DialMembers, to
// a MembersDialer: zero Options but a one-second DialTimeout.
func MembersOf[D conformance.Closer](dial func([]drivers.Member, drivers.Options) (D, error)) MembersDialer {
	return func(members []drivers.Member) (conformance.Closer, error) {
		d, err := dial(members, drivers.Options{DialTimeout: time.Second})
		if err != nil {
			return nil, err // not a typed nil in an interface
		}
		return d, nil
	}
}

// RunMembers runs conformance.RunDriver's cases that have a meaning on
// members over a mixed quorum that it starts once: a standalone master,
// a Sentinel group (a master, a replica, a Sentinel), a Cluster (three
// masters with a replica each), a second Sentinel group (three
// Sentinels) and a second standalone master, in that order. Against each member in turn it checks
// the commands and their replies through a Batch, and the key's value on
// the member's master at that moment (the Sentinels' master, or the
// Cluster master owning the key's slot, its fence counter named in that
// slot); the scripts after SCRIPT FLUSH on that master; the member's
// masters SIGSTOPped, so that it times out, alone and in a batch the
// other members answer, naming the member (NodeName is Member.String); a
// Batch closed early while the member hangs, and the release that still
// goes out once it continues. Last, Close, twice, and a round after it
// failing on every member.
//
// It needs redis-server for Sentinel and Cluster, and skips without it
// (fails with REDLOCK_REQUIRE_REDIS=1). No failover happens during the
// cases: internal/systest covers failovers.
func RunMembers(t *testing.T, dial MembersDialer) {
	q := startMixedQuorum(t)
	open := func(t *testing.T, prefix string, i int) contract.Target {
		t.Helper()
		d, err := dial(q.members)
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, d.Close()) })
		names := make([]string, len(q.members))
		for j, m := range q.members {
			names[j] = m.String()
		}
		return contract.Target{D: d, I: i, Names: names, Prefix: prefix, At: q}
	}
	for _, c := range []struct {
		name string
		body func(*testing.T, contract.Target)
	}{
		{"commands", contract.Commands},
		{"script-flush", contract.ScriptFlush},
		{"stopped-member-times-out", contract.StoppedNodeTimesOut},
		{"batch-close-early", contract.BatchCloseEarly},
	} {
		t.Run(c.name, func(t *testing.T) {
			for i, m := range q.members {
				// A prefix per case and member: the members' servers are
				// shared, and a case writes to every member.
				prefix := c.name + "-" + strconv.Itoa(i) + ":"
				t.Run(strconv.Itoa(i)+"-"+topologyName(m.Topology), func(t *testing.T) {
					c.body(t, open(t, prefix, i))
				})
			}
		})
	}
	t.Run("kinds-with-wait", func(t *testing.T) {
		// The kinds' writes on the Sentinel members wait for their
		// replica (WAIT): the engine's lane carries them.
		members := slices.Clone(q.members)
		for i, m := range members {
			if m.Topology == drivers.SentinelGroup {
				members[i] = m.WithWait(1, 2*time.Second)
			}
		}
		d, err := dial(members)
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, d.Close()) })
		names := make([]string, len(members))
		for j, m := range members {
			names[j] = m.String()
		}
		for i, m := range members {
			t.Run(strconv.Itoa(i)+"-"+topologyName(m.Topology), func(t *testing.T) {
				contract.Kinds(t, contract.Target{D: d, I: i, Names: names, Prefix: "kinds-" + strconv.Itoa(i) + ":", At: q})
			})
		}
		cluster := slices.IndexFunc(members, func(m drivers.Member) bool { return m.Topology == drivers.ClusterGroup })
		testKeysChecker(t, d, names[cluster])
	})
	t.Run("close", func(t *testing.T) { contract.Close(t, open(t, "close:", 0)) })
}

// testKeysChecker: the driver, a core.KeysChecker, refuses the keys of a
// multi-key lock across hash slots, naming the Cluster member, and
// takes keys of one hash tag.
func testKeysChecker(t *testing.T, d conformance.Closer, cluster string) {
	kc, ok := d.(core.KeysChecker)
	require.True(t, ok, "the driver is a core.KeysChecker")
	require.NotEqual(t, wire.KeySlot("x"), wire.KeySlot("y"))
	err := kc.CheckKeys([]string{"x", "y"})
	require.Error(t, err)
	assert.ErrorContains(t, err, cluster, "the Cluster member is named")
	assert.ErrorContains(t, err, "hash slots")
	assert.NoError(t, kc.CheckKeys([]string{"{t}x", "{t}y", "t"}))
}

// quorum is the layout of RunMembers: member i is one of standalone,
// group or cluster, whichever is set at i.
type quorum struct {
	members    []drivers.Member
	standalone []*redistest.Server
	group      []*redistest.SentinelGroup
	cluster    []*redistest.Cluster
}

// startMixedQuorum starts RunMembers' members, the Sentinel groups first:
// it skips the test without redis-server.
func startMixedQuorum(t *testing.T) quorum {
	// Sentinels slow to deem a paused master down: a failover would move
	// the keys the cases look at.
	g1 := redistest.StartSentinelGroup(t, redistest.SentinelOptions{
		Replicas: 1, Sentinels: 1, DownAfter: time.Minute,
	})
	g2 := redistest.StartSentinelGroup(t, redistest.SentinelOptions{
		Replicas: 1, Sentinels: 3, DownAfter: time.Minute,
	})
	// The default cluster-node-timeout, 2 s: a longer one slows the
	// Cluster's start (its gossip), and the cases pause its masters for
	// far less, all of them at once, leaving no majority to fail one over.
	c := redistest.StartCluster(t, redistest.ClusterOptions{})
	s := redistest.StartN(t, 2, redistest.Options{})
	return quorum{
		members: []drivers.Member{
			drivers.NewStandalone(s[0].Addr),
			drivers.NewSentinel(g1.Name, g1.SentinelAddrs()...),
			drivers.NewCluster(c.Addrs()...),
			drivers.NewSentinel(g2.Name, g2.SentinelAddrs()...),
			drivers.NewStandalone(s[1].Addr),
		},
		standalone: []*redistest.Server{s[0], nil, nil, nil, s[1]},
		group:      []*redistest.SentinelGroup{nil, g1, nil, g2, nil},
		cluster:    []*redistest.Cluster{nil, nil, c, nil, nil},
	}
}

func topologyName(k drivers.Topology) string {
	switch k {
	case drivers.SentinelGroup:
		return "sentinel"
	case drivers.ClusterGroup:
		return "cluster"
	}
	return "standalone"
}

// Master: the standalone server, the Sentinel group's master, or the
// Cluster master that owns key's slot.
func (q quorum) Master(_ *testing.T, i int, key string) *redistest.Server {
	switch {
	case q.group[i] != nil:
		return q.group[i].Master()
	case q.cluster[i] != nil:
		return q.cluster[i].MasterForKey(key)
	}
	return q.standalone[i]
}

// AuxName: prefix+key, in key's slot on a Cluster.
func (q quorum) AuxName(t *testing.T, i int, prefix, key string) string {
	if q.cluster[i] == nil {
		return prefix + key
	}
	name, err := wire.ClusterName(prefix, key)
	require.NoError(t, err)
	return name
}

// Pausable: a standalone server, a Sentinel group's master, or every
// master of a Cluster, each slot's owner.
func (q quorum) Pausable(_ *testing.T, i int) []*redistest.Server {
	switch {
	case q.group[i] != nil:
		return []*redistest.Server{q.group[i].Master()}
	case q.cluster[i] != nil:
		return q.cluster[i].Masters()
	}
	return q.standalone[i : i+1]
}
