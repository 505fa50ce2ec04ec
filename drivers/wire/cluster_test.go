package wire

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers/internal/dialspec"
)

// slot is Redis Cluster's key hash slot (CRC16/XMODEM of the hash tag, or
// the key, modulo 16384), written out here so that the test does not take
// the naming's own reading of hash tags on trust.
func slot(key string) uint16 {
	s := key
	for i := 0; i < len(key); i++ {
		if key[i] == '{' {
			for j := i + 1; j < len(key); j++ {
				if key[j] == '}' {
					if j > i+1 {
						s = key[i+1 : j]
					}
					break
				}
			}
			break
		}
	}
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc % 16384
}

func TestSlotReference(t *testing.T) {
	// From the Redis Cluster specification: CRC16 of "123456789" is 0x31C3.
	assert.Equal(t, uint16(0x31C3%16384), slot("123456789"))
	assert.Equal(t, slot("user1000"), slot("{user1000}.following"))
}

func TestClusterNamesShareTheKeysSlot(t *testing.T) {
	for _, key := range []string{"k", "orders:42", "{user}:a", "a{b}c", "x{y", "a}{b}", "{{a}}", "a{", "{", "lock{ }"} {
		for _, prefix := range []string{core.FenceKeyPrefix, QueuePrefix, QueueDuePrefix} {
			name, err := ClusterName(prefix, key)
			require.NoError(t, err, key)
			assert.Equal(t, slot(key), slot(name), "%q: %q", key, name)
			assert.NotEqual(t, name, key)
		}
	}
}

func TestClusterNamesKeepTaggedNames(t *testing.T) {
	name, err := ClusterName(core.FenceKeyPrefix, "{user}:a")
	require.NoError(t, err)
	assert.Equal(t, core.FenceKeyPrefix+"{user}:a", name, "a tagged key keeps the standalone name")
	name, err = ClusterName(core.FenceKeyPrefix, "k")
	require.NoError(t, err)
	assert.Equal(t, core.FenceKeyPrefix+"{k}", name)
	// Two keys with one tag keep two counters.
	a, _ := ClusterName(core.FenceKeyPrefix, "{t}a")
	b, _ := ClusterName(core.FenceKeyPrefix, "{t}b")
	assert.NotEqual(t, a, b)
}

func TestUntaggableKeysAreRefused(t *testing.T) {
	for _, key := range []string{"a}b", "{}a}", "}", "{}z"} {
		_, err := ClusterName(core.FenceKeyPrefix, key)
		require.Error(t, err, key)
		assert.True(t, errors.Is(err, ErrUntaggable), key)
		assert.True(t, errors.Is(err, dialspec.ErrMisconfigured), key)
		assert.False(t, errors.Is(err, core.ErrInvalidConfig), key)
	}
}

func TestInfoField(t *testing.T) {
	assert.Equal(t, "abc", InfoField("# Server\r\nredis_version:7\r\nrun_id:abc\r\ntcp_port:1\r\n", "run_id"))
	assert.Equal(t, "abc", InfoField("run_id:abc", "run_id"))
	assert.Equal(t, "", InfoField("# Server\r\nredis_version:7\r\n", "run_id"))
	assert.Equal(t, "", InfoField("", "run_id"))
	assert.Equal(t, "", InfoField("master_run_id:abc\r\n", "run_id"), "a field whose name ends with the name is another")
}

func TestInfoCount(t *testing.T) {
	assert.Equal(t, 2, InfoCount("# Replication\r\nrole:master\r\nconnected_slaves:2\r\nslave0:ip=x\r\n", "connected_slaves"))
	assert.Equal(t, -1, InfoCount("# Replication\r\nrole:slave\r\n", "connected_slaves"))
	assert.Equal(t, -1, InfoCount("", "connected_slaves"))
}

func TestClusterMasters(t *testing.T) {
	m := NewClusterMasters()
	assert.Equal(t, -1, m.Fewest)
	assert.True(t, m.Sharded, "no master says otherwise")
	m.Add("redis_version:7.0.15\r\nrun_id:a\r\n", "role:master\r\nconnected_slaves:2\r\n")
	m.Add("redis_version:7.2.4\r\nrun_id:r\r\n", "role:slave\r\n") // a replica: left out
	m.Add("redis_version:7.0.15\r\nrun_id:b\r\n", "role:master\r\nconnected_slaves:1\r\n")
	assert.Equal(t, []string{"a", "b"}, m.IDs)
	assert.Equal(t, 1, m.Fewest)
	assert.True(t, m.Sharded)
	m.Add("redis_version:6.2.14\r\nrun_id:c\r\n", "role:master\r\nconnected_slaves:3\r\n")
	assert.False(t, m.Sharded, "a master before 7.0")
	assert.Equal(t, 1, m.Fewest)
}

// TestKeySlot: the hash slots Redis documents for CLUSTER KEYSLOT, and
// those of the test's own reading (slot).
func TestKeySlot(t *testing.T) {
	assert.Equal(t, 11058, KeySlot("somekey"))
	assert.Equal(t, 2515, KeySlot("foo{hash_tag}"))
	assert.Equal(t, KeySlot("hash_tag"), KeySlot("{hash_tag}:bar"))
	for _, k := range []string{"", "k", "orders:42", "{user}:a", "a{b}c", "x{y", "a}{b}", "lock{}x", "{}{b}"} {
		assert.Equal(t, int(slot(k)), KeySlot(k), "%q", k)
	}
}

// TestCheckClusterKeys: keys of one slot pass, named by their tag or by
// chance; keys across slots, and a key that cannot be named, are refused
// with the keys named.
func TestCheckClusterKeys(t *testing.T) {
	require.NoError(t, CheckClusterKeys([]string{"{o}:a", "{o}:b", "x{o}"}))
	require.NoError(t, CheckClusterKeys([]string{"alone"}))
	err := CheckClusterKeys([]string{"somekey", "foo{hash_tag}"})
	require.ErrorContains(t, err, `keys "somekey" and "foo{hash_tag}" are in different hash slots (11058 and 2515)`)
	err = CheckClusterKeys([]string{"{o}:a", "a}b"})
	require.ErrorContains(t, err, `key "a}b"`)
	require.NotErrorIs(t, err, ErrUntaggable, "a refusal before I/O, not a failed vote")
}
