package wire

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers/internal/dialspec"
)

func TestCheckMembers(t *testing.T) {
	all := []dialspec.Topology{dialspec.Standalone, dialspec.SentinelGroup, dialspec.ClusterGroup}
	mixed := []dialspec.Member{
		dialspec.NewStandalone("127.0.0.1:7001"),
		dialspec.NewStandalone("127.0.0.1:7002"),
		dialspec.NewSentinel("m1", "127.0.0.1:26001", "127.0.0.1:26002").WithWait(1, time.Second),
		dialspec.NewSentinel("m2", "127.0.0.1:26101"),
		dialspec.NewCluster("127.0.0.1:30001", "127.0.0.1:30002"),
	}
	require.NoError(t, CheckMembers("test", mixed, all...))
	require.NoError(t, CheckMembers("test", dialspec.Members("127.0.0.1:1", "127.0.0.1:2"), dialspec.Standalone))

	for _, c := range []struct {
		name    string
		members []dialspec.Member
		want    string
	}{
		{"none", nil, "no members"},
		{"zero value", []dialspec.Member{{}}, "member 0 has no topology"},
		{"unsupported", []dialspec.Member{dialspec.NewStandalone("127.0.0.1:1"), dialspec.NewCluster("127.0.0.1:2")}, "member 1 cluster:127.0.0.1:2: this driver's client has no Cluster client"},
		{"no addrs", []dialspec.Member{dialspec.NewSentinel("m")}, "member 0 sentinel:m@ has no addresses"},
		{"two addrs standalone", []dialspec.Member{{Topology: dialspec.Standalone, Addrs: []string{"127.0.0.1:1", "127.0.0.1:2"}}}, "a standalone master has one address, not 2"},
		{"no master name", []dialspec.Member{dialspec.NewSentinel("", "127.0.0.1:1")}, "needs its master name"},
		{"negative replicas", []dialspec.Member{dialspec.NewStandalone("127.0.0.1:1").WithWait(-1, time.Second)}, "Replicas -1 is negative"},
		{"no wait timeout", []dialspec.Member{dialspec.NewStandalone("127.0.0.1:1").WithWait(1, 0)}, "needs a positive WaitTimeout"},
		{"timeout alone", []dialspec.Member{{Topology: dialspec.Standalone, Addrs: []string{"127.0.0.1:1"}, WaitTimeout: time.Second}}, "WaitTimeout 1s without Replicas"},
		{"bad addr", []dialspec.Member{dialspec.NewCluster("127.0.0.1")}, "member 0 cluster:127.0.0.1: "},
		{"same sentinel group twice", []dialspec.Member{dialspec.NewSentinel("m", "127.0.0.1:26001"), dialspec.NewSentinel("m", "127.0.0.1:26001")},
			"member 0 sentinel:m@127.0.0.1:26001 and member 1 sentinel:m@127.0.0.1:26001"},
		{"same cluster twice", []dialspec.Member{dialspec.NewCluster("127.0.0.1:30001", "127.0.0.1:30002"), dialspec.NewCluster("127.0.0.1:30003", "localhost:30002")},
			"two members reach one server"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := CheckMembers("test", c.members, dialspec.Standalone, dialspec.SentinelGroup)
			if c.name == "same cluster twice" {
				err = CheckMembers("test", c.members, all...)
			}
			require.Error(t, err)
			assert.True(t, errors.Is(err, core.ErrInvalidConfig), err)
			assert.Contains(t, err.Error(), c.want)
		})
	}
}
