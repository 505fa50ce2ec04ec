package wire

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers/internal/dialspec"
)

// A Cluster runs a script only if all its keys share one hash slot: the
// slot of the key's hash tag, the text between its first '{' and the first
// '}' after it when that text is not empty, or else of the whole key. The
// auxiliary keys of a lock key on a Cluster member (its fence counter and
// waiter queues) are therefore named so as to hash with it:
//
//   - a key with a hash tag keeps today's names, prefix + key: the prefixes
//     hold no '{', so the key's tag is the name's;
//   - a key without '}' is wrapped: prefix + "{" + key + "}", whose tag is
//     the whole key;
//   - a key with a '}' but no tag cannot be given such a name, and is
//     refused (ErrUntaggable).
//
// Standalone and Sentinel members keep prefix + key whatever the key, so
// that clients of this version and of earlier ones share the counters.

// ErrUntaggable is the cause of a command refused on a Cluster member
// because its key holds a '}' but no hash tag, so that no auxiliary key can
// share its hash slot. It wraps dialspec.ErrMisconfigured: a failed vote
// of the member, not core.ErrInvalidConfig, which the round would
// match besides its own kind.
var ErrUntaggable = fmt.Errorf("%w: a key with '}' and no hash tag cannot be used on a Cluster", dialspec.ErrMisconfigured)

// HashTag returns the text of key's hash tag and true, or "" and false if
// key has none (no '{' followed by a '}' with something between): the
// rule of core.HashTag, which is the one copy.
func HashTag(key string) (string, bool) { return core.HashTag(key) }

// ClusterWrap reports how a Cluster member names key's auxiliary keys:
// wrapped (prefix + "{" + key + "}") or not (prefix + key), or
// ErrUntaggable.
func ClusterWrap(key string) (wrap bool, err error) {
	if _, ok := HashTag(key); ok {
		return false, nil
	}
	if strings.IndexByte(key, '}') >= 0 {
		return false, ErrUntaggable
	}
	return true, nil
}

// ClusterName returns the name, on a Cluster member, of key's auxiliary
// key under prefix (core.FenceKeyPrefix, QueuePrefix, QueueDuePrefix): one
// that hashes to key's slot.
func ClusterName(prefix, key string) (string, error) {
	wrap, err := ClusterWrap(key)
	switch {
	case err != nil:
		return "", err
	case wrap:
		return prefix + "{" + key + "}", nil
	}
	return prefix + key, nil
}

// HasShardedPubSub reports whether info, a server's INFO server reply,
// names a version with sharded pub/sub (SPUBLISH, SSUBSCRIBE): Redis 7.0
// or later in its redis_version field, which Valkey fills with the Redis
// version it is compatible with.
func HasShardedPubSub(info string) bool {
	_, after, ok := strings.Cut(info, "redis_version:")
	if !ok {
		return false
	}
	major, _, _ := strings.Cut(after, ".")
	n, err := strconv.Atoi(strings.TrimSpace(major))
	return err == nil && n >= 7
}

// InfoField returns the value of the field name in an INFO reply, or "".
func InfoField(info, name string) string {
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// InfoCount returns the field name of an INFO reply as a count, or -1
// when it is missing or not a number.
func InfoCount(info, name string) int {
	n, err := strconv.Atoi(InfoField(info, name))
	if err != nil {
		return -1
	}
	return n
}

// ClusterMasters gathers what a Cluster member's Identify reports
// (engine.Identifier) from its servers' INFO server and INFO replication
// replies: the masters' run_ids, the fewest connected replicas a master
// has (-1: one did not say), and whether every master has sharded
// pub/sub. Make it with NewClusterMasters; a replica's replies are left
// out.
type ClusterMasters struct {
	IDs     []string
	Fewest  int
	Sharded bool
}

// NewClusterMasters returns ClusterMasters of no server yet.
func NewClusterMasters() ClusterMasters { return ClusterMasters{Fewest: -1, Sharded: true} }

// Add counts one server, from its INFO server and INFO replication replies.
func (m *ClusterMasters) Add(server, replication string) {
	if role := InfoField(replication, "role"); role != "" && role != "master" {
		return
	}
	if id := InfoField(server, "run_id"); id != "" {
		m.IDs = append(m.IDs, id)
	}
	m.Sharded = m.Sharded && HasShardedPubSub(server)
	if n := InfoCount(replication, "connected_slaves"); m.Fewest < 0 || n < m.Fewest {
		m.Fewest = n
	}
}

// ClusterSlots is the number of a Cluster's hash slots.
const ClusterSlots = 16384

// KeySlot returns key's hash slot as a Cluster computes it: CRC16
// (XMODEM) of its hash tag if it has one, of the whole key otherwise,
// modulo ClusterSlots.
func KeySlot(key string) int {
	if tag, ok := HashTag(key); ok {
		key = tag
	}
	var crc uint16
	for i := 0; i < len(key); i++ {
		crc ^= uint16(key[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % ClusterSlots
}

// CheckClusterKeys returns nil if a Cluster can run one script over keys
// and their auxiliary keys: every key can be named (ClusterWrap) and
// all share one hash slot; otherwise an error naming the first key
// that does not.
func CheckClusterKeys(keys []string) error {
	for i, k := range keys {
		if _, err := ClusterWrap(k); err != nil {
			return fmt.Errorf("key %q: %v", k, err) //nolint:errorlint // the cause is told, not wrapped: a refusal before I/O, not a failed vote (ErrMisconfigured)
		}
		if i > 0 && KeySlot(k) != KeySlot(keys[0]) {
			return fmt.Errorf("keys %q and %q are in different hash slots (%d and %d): a Cluster runs one script over one slot's keys only; give them a common hash tag, such as {tag}",
				keys[0], k, KeySlot(keys[0]), KeySlot(k))
		}
	}
	return nil
}
