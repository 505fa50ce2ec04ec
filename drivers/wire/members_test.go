package wire

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers"
)

func TestCheckMembers(t *testing.T) {
	all := []drivers.Topology{drivers.Standalone, drivers.SentinelGroup, drivers.ClusterGroup}
	mixed := []drivers.Member{
		drivers.NewStandalone("127.0.0.1:7001"),
		drivers.NewStandalone("127.0.0.1:7002"),
		drivers.NewSentinel("m1", "127.0.0.1:26001", "127.0.0.1:26002").WithWait(1, time.Second),
		drivers.NewSentinel("m2", "127.0.0.1:26101"),
		drivers.NewCluster("127.0.0.1:30001", "127.0.0.1:30002"),
	}
	require.NoError(t, CheckMembers("test", mixed, all...))
	require.NoError(t, CheckMembers("test", drivers.Members("127.0.0.1:1", "127.0.0.1:2"), drivers.Standalone))

	for _, c := range []struct {
		name    string
		members []drivers.Member
		want    string
	}{
		{"none", nil, "no members"},
		{"zero value", []drivers.Member{{}}, "member 0 has no topology"},
		{"unsupported", []drivers.Member{drivers.NewStandalone("127.0.0.1:1"), drivers.NewCluster("127.0.0.1:2")}, "member 1 cluster:127.0.0.1:2: this driver's client has no Cluster client"},
		{"no addrs", []drivers.Member{drivers.NewSentinel("m")}, "member 0 sentinel:m@ has no addresses"},
		{"two addrs standalone", []drivers.Member{{Topology: drivers.Standalone, Addrs: []string{"127.0.0.1:1", "127.0.0.1:2"}}}, "a standalone master has one address, not 2"},
		{"no master name", []drivers.Member{drivers.NewSentinel("", "127.0.0.1:1")}, "needs its master name"},
		{"negative replicas", []drivers.Member{drivers.NewStandalone("127.0.0.1:1").WithWait(-1, time.Second)}, "Replicas -1 is negative"},
		{"no wait timeout", []drivers.Member{drivers.NewStandalone("127.0.0.1:1").WithWait(1, 0)}, "needs a positive WaitTimeout"},
		{"timeout alone", []drivers.Member{{Topology: drivers.Standalone, Addrs: []string{"127.0.0.1:1"}, WaitTimeout: time.Second}}, "WaitTimeout 1s without Replicas"},
		{"bad addr", []drivers.Member{drivers.NewCluster("127.0.0.1")}, "member 0 cluster:127.0.0.1: "},
		{"same sentinel group twice", []drivers.Member{drivers.NewSentinel("m", "127.0.0.1:26001"), drivers.NewSentinel("m", "127.0.0.1:26001")},
			"member 0 sentinel:m@127.0.0.1:26001 and member 1 sentinel:m@127.0.0.1:26001"},
		{"same cluster twice", []drivers.Member{drivers.NewCluster("127.0.0.1:30001", "127.0.0.1:30002"), drivers.NewCluster("127.0.0.1:30003", "localhost:30002")},
			"two members reach one server"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := CheckMembers("test", c.members, drivers.Standalone, drivers.SentinelGroup)
			if c.name == "same cluster twice" {
				err = CheckMembers("test", c.members, all...)
			}
			require.Error(t, err)
			assert.True(t, errors.Is(err, core.ErrInvalidConfig), err)
			assert.Contains(t, err.Error(), c.want)
		})
	}
}
