// Package wire holds what every Redis driver sends and checks: the
// embedded Lua scripts with their SHA1, the TTL encoding, the scripts'
// replies, the validation of addresses, options and clients, and the
// node-naming error type.
package wire

import (
	"context"
	"crypto/sha1" //nolint:gosec // G505: Redis names scripts by their SHA-1; no security rests on it
	_ "embed"
	"encoding/hex"
	"errors"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/redlock-go/redlock/core"
)

// Script is a Lua script with its SHA1, computed in-process once.
type Script struct {
	Src  string
	SHA1 string
}

func newScript(src string) Script {
	sum := sha1.Sum([]byte(src)) //nolint:gosec // G401: the script's name for EVALSHA, as Redis computes it
	return Script{Src: src, SHA1: hex.EncodeToString(sum[:])}
}

var (
	//go:embed release.lua
	releaseSrc string
	//go:embed extend.lua
	extendSrc string
	//go:embed acquire_fenced.lua
	acquireFencedSrc string
	//go:embed raise_fence.lua
	raiseFenceSrc string
	//go:embed acquire_probe.lua
	acquireProbeSrc string
	//go:embed read_acquire.lua
	readAcquireSrc string
	//go:embed read_release.lua
	readReleaseSrc string
	//go:embed read_extend.lua
	readExtendSrc string
	//go:embed write_acquire.lua
	writeAcquireSrc string
	//go:embed write_release.lua
	writeReleaseSrc string
	//go:embed all_acquire.lua
	allAcquireSrc string
	//go:embed all_release.lua
	allReleaseSrc string
	//go:embed all_extend.lua
	allExtendSrc string
	//go:embed all_raise_fence.lua
	allRaiseFenceSrc string

	// Release is the compare-and-delete script: KEYS[1] key, ARGV[1] token.
	// It announces a release with PUBLISH (ReleaseChannel, TurnChannel).
	Release = newScript(releaseSrc)
	// ReleaseSharded is Release announcing with SPUBLISH (Redis 7.0's
	// sharded pub/sub) on the channels of ShardChannel, which share the
	// key's hash slot: on a Cluster, the announcement reaches the key's
	// master and its replicas only, where PUBLISH reaches every node.
	ReleaseSharded = newScript(strings.Replace(releaseSrc, plainChannels, shardedChannels, 1))
	// Extend is the compare-and-PEXPIRE script: KEYS[1] key, ARGV[1] token,
	// ARGV[2] TTL in milliseconds.
	Extend = newScript(extendSrc)
	// AcquireFenced is the fenced SET NX (core.OpAcquireFenced): KEYS[1]
	// key, KEYS[2] its fence counter (core.FenceKey), ARGV[1] token,
	// ARGV[2] TTL in milliseconds. When the key exists it replies minus
	// the key's remaining TTL in ms, or 0 (see HeldTTL); otherwise the
	// incremented counter: an integer below 2^53, a decimal string from
	// 2^53 up (see FenceString).
	AcquireFenced = newScript(acquireFencedSrc)
	// AcquireProbe is SET NX PX that reports the other holder's remaining
	// TTL (core.Command.Probe): KEYS[1] key, ARGV[1] token, ARGV[2] TTL in
	// milliseconds. It replies OK, or as AcquireFenced when the key
	// exists.
	AcquireProbe = newScript(acquireProbeSrc)
	// RaiseFence is the conditional raise of a fence counter
	// (core.OpRaiseFence): KEYS[1] key, KEYS[2] its fence counter, ARGV[1]
	// token, ARGV[2] the fence in decimal. It replies as Release and Extend
	// do (ScriptStatus).
	RaiseFence = newScript(raiseFenceSrc)

	// ReadAcquire is a reader's acquire, plain or fenced (core.KindRead):
	// KEYS[1] key, KEYS[2] its reader set (core.ReadersPrefix), KEYS[3]
	// its writer's mark (core.WriterWaitPrefix), and for
	// core.OpAcquireFenced KEYS[4] its fence counter; ARGV[1] token,
	// ARGV[2] TTL in milliseconds. It replies OK, or fenced the counter's
	// value as a decimal string (ReadFence), or as AcquireProbe when the
	// key or the mark exists (the longer of their TTLs).
	ReadAcquire = newScript(readAcquireSrc)
	// ReadRelease removes a reader (KEYS[1] key, KEYS[2] its reader set,
	// ARGV[1] token): 1 if its entry was unexpired, 0 otherwise. It
	// announces with PUBLISH on the key's ReleaseChannel once no
	// unexpired reader is left.
	ReadRelease = newScript(readReleaseSrc)
	// ReadReleaseSharded is ReadRelease announcing with SPUBLISH, as
	// ReleaseSharded.
	ReadReleaseSharded = newScript(strings.Replace(readReleaseSrc, plainChannels, shardedChannels, 1))
	// ReadExtend extends a reader (KEYS[1] key, KEYS[2] its reader set,
	// ARGV[1] token, ARGV[2] TTL in milliseconds): 1, or 0 if its entry
	// is gone or expired.
	ReadExtend = newScript(readExtendSrc)
	// WriteAcquire is a writer's acquire, plain or fenced
	// (core.KindWrite): the keys of ReadAcquire, ARGV[1] token, ARGV[2]
	// TTL in milliseconds. It replies as AcquireProbe, or fenced as
	// AcquireFenced; refused for readers, it marks the key as waited for
	// and replies minus the time until the last reader's expiry. A
	// writer's extension and fence raise are the mutex's.
	WriteAcquire = newScript(writeAcquireSrc)
	// WriteRelease is a writer's release (core.KindWrite): KEYS[1] key,
	// KEYS[2] its writer's mark, ARGV[1] token, and ARGV[2] "w" for the
	// cleanup of a failed attempt whose writer waits on
	// (core.Command.Ticket > 0). It is Release's compare-and-delete, and
	// but for "w" deletes the mark too where it is the caller's own
	// (core.SameAcquisition); it announces either deletion with PUBLISH
	// on the key's ReleaseChannel, and replies as Release.
	WriteRelease = newScript(writeReleaseSrc)
	// WriteReleaseSharded is WriteRelease announcing with SPUBLISH, as
	// ReleaseSharded.
	WriteReleaseSharded = newScript(strings.Replace(writeReleaseSrc, plainChannels, shardedChannels, 1))
	// AllAcquire takes every key of a multi-key lock or none
	// (core.KindAll): KEYS[1..n] the keys, and for core.OpAcquireFenced
	// KEYS[n+1..2n] their fence counters; ARGV[1] token, ARGV[2] TTL in
	// milliseconds, ARGV[3] n. It replies as AcquireProbe (the longest
	// TTL of the keys that exist), or fenced as AcquireFenced.
	AllAcquire = newScript(allAcquireSrc)
	// AllRelease deletes every key (KEYS) that holds the token (ARGV[1]),
	// announcing each on its ReleaseChannel; it replies as Release: 1 if
	// it deleted any, else -1 if a key holds another token, else 0.
	AllRelease = newScript(allReleaseSrc)
	// AllReleaseSharded is AllRelease announcing with SPUBLISH, as
	// ReleaseSharded.
	AllReleaseSharded = newScript(strings.Replace(allReleaseSrc, plainChannels, shardedChannels, 1))
	// AllExtend extends every key (KEYS) if every one holds the token
	// (ARGV[1]) to ARGV[2] ms; it replies as Extend.
	AllExtend = newScript(allExtendSrc)
	// AllRaiseFence raises the fence counters (KEYS[n+1..2n]) of the keys
	// (KEYS[1..n]) to ARGV[2] if every key holds the token (ARGV[1]); it
	// replies as RaiseFence.
	AllRaiseFence = newScript(allRaiseFenceSrc)
)

// ScriptOf returns the script of a command of kind k and op, on a
// connection that announces with SPUBLISH if sharded; ok == false for a
// command no script runs (a reader's fence raise, an unknown kind). A
// mutex's OpAcquire without Probe is a plain SET NX, not ScriptOf's.
func ScriptOf(k core.Kind, op core.Op, sharded bool) (s Script, ok bool) {
	switch {
	case k == core.KindWrite && op == core.OpRelease:
		if sharded {
			return WriteReleaseSharded, true
		}
		return WriteRelease, true
	case k == core.KindMutex || k == core.KindWrite && op != core.OpAcquire && op != core.OpAcquireFenced:
		if op == core.OpRelease && sharded {
			return ReleaseSharded, true
		}
		return ScriptFor(op), true
	case k == core.KindWrite:
		return WriteAcquire, true
	case k == core.KindRead:
		switch op {
		case core.OpAcquire, core.OpAcquireFenced:
			return ReadAcquire, true
		case core.OpRelease:
			if sharded {
				return ReadReleaseSharded, true
			}
			return ReadRelease, true
		case core.OpExtend:
			return ReadExtend, true
		}
	case k == core.KindAll:
		switch op {
		case core.OpAcquire, core.OpAcquireFenced:
			return AllAcquire, true
		case core.OpRelease:
			if sharded {
				return AllReleaseSharded, true
			}
			return AllRelease, true
		case core.OpExtend:
			return AllExtend, true
		case core.OpRaiseFence:
			return AllRaiseFence, true
		}
	}
	return Script{}, false
}

// ReadFence returns the fence of a fenced ReadAcquire's reply: the
// counter's decimal value, 0 (no writer yet) to 2^63-1.
func ReadFence(s string) (uint64, error) {
	if s == "0" {
		return 0, nil
	}
	return FenceString(s)
}

// plainChannels are the lines of release.lua that name its announcements'
// command and channels; shardedChannels replace them in ReleaseSharded,
// naming channels as ShardChannel does.
const (
	plainChannels = `local publish = "PUBLISH"
local function channel(prefix, key) return prefix .. key end
`
	shardedChannels = `local publish = "SPUBLISH"
local function channel(prefix, key)
  local o = string.find(key, "{", 1, true)
  local c = o and string.find(key, "}", o + 1, true)
  if c and c > o + 1 then return prefix .. key end
  return prefix .. "{" .. key .. "}"
end
`
)

// ReleasePrefix starts the name of the channel on which the release
// script announces that it deleted a key: the key follows it.
const ReleasePrefix = "redlock:release:"

// ReleaseChannel returns the channel on which releases of key are
// announced.
func ReleaseChannel(key string) string { return ReleasePrefix + key }

// TurnPrefix starts the name of the channel on which a release with a
// waiter queue (core.Config.Fair) tells one waiter that the key was
// handed to it: TurnChannel.
const TurnPrefix = "redlock:turn:"

// TurnChannel returns the channel on which the waiter id hears that key
// was handed to it.
func TurnChannel(id, key string) string { return TurnPrefix + id + ":" + key }

// ShardChannel returns the name under which ReleaseSharded announces on
// channel, a ReleaseChannel or TurnChannel: with the key k it is for,
// prefix + k for a key with a hash tag, prefix + "{" + k + "}" otherwise
// (as ClusterName names keys), so that it hashes to k's slot. ok == false
// for another channel, or a key that cannot be tagged (ErrUntaggable), on
// which no command goes.
func ShardChannel(channel string) (name string, ok bool) {
	prefix := ReleasePrefix
	key, found := strings.CutPrefix(channel, ReleasePrefix)
	if !found {
		rest, found := strings.CutPrefix(channel, TurnPrefix)
		id, k, cut := strings.Cut(rest, ":") // a waiter id has no ':'
		if !found || !cut {
			return "", false
		}
		prefix, key = TurnPrefix+id+":", k
	}
	name, err := ClusterName(prefix, key)
	return name, err == nil
}

// QueuePrefix and QueueDuePrefix start the names of a key's waiter queue
// (a sorted set of waiter ids by ticket) and of its entries' deadlines (a
// sorted set of waiter ids by the server's time in ms), which the scripts
// take after their other keys when the command is core.Command.Fair. core
// refuses keys under them with Config.Fair (TestQueueKeysAreRefused).
const (
	QueuePrefix    = "redlock:queue:"
	QueueDuePrefix = "redlock:queue-due:"
)

// Resent is the last argument of a Fair release sent again on a new
// connection after its first send's broke, which may or may not have run:
// release.lua then changes nothing a first run did not (see there).
const Resent = "r"

// QueueKeys returns the names of key's waiter queue and its deadlines.
func QueueKeys(key string) (queue, due string) { return QueuePrefix + key, QueueDuePrefix + key }

// ScriptFor returns the script of a command other than core.OpAcquire
// without Probe (a plain SET NX).
func ScriptFor(op core.Op) Script {
	switch op {
	case core.OpAcquire:
		return AcquireProbe
	case core.OpExtend:
		return Extend
	case core.OpAcquireFenced:
		return AcquireFenced
	case core.OpRaiseFence:
		return RaiseFence
	}
	return Release
}

// Keys returns how many keys op's script takes: 2 for the fenced ones,
// whose second key is the fence counter, 1 otherwise.
func Keys(op core.Op) int {
	if op == core.OpAcquireFenced || op == core.OpRaiseFence {
		return 2
	}
	return 1
}

// HeldTTL returns the other holder's remaining TTL from the reply n <= 0
// of AcquireProbe or AcquireFenced to a key that exists: -n ms, 0 when
// the key has no expiry.
func HeldTTL(n int64) time.Duration { return time.Duration(-n) * time.Millisecond }

// FenceInt returns the fence of an AcquireFenced integer reply: at least
// 1.
func FenceInt(n int64) (uint64, error) {
	if n < 1 {
		return 0, errors.New("unexpected fence " + strconv.FormatInt(n, 10))
	}
	return uint64(n), nil
}

// FenceString returns the fence of an AcquireFenced string reply: the
// counter's decimal value, 1 to 2^63-1, without sign or leading zeros. It
// does not allocate for a valid reply.
func FenceString(s string) (uint64, error) {
	n, err := strconv.ParseUint(s, 10, 63) // Redis integers are signed 64-bit
	if err != nil || s[0] == '0' {
		return 0, errors.New("unexpected fence " + strconv.Quote(s))
	}
	return n, nil
}

// Millis returns ttl in whole milliseconds, as PX and PEXPIRE take it.
func Millis(ttl time.Duration) int64 { return int64(ttl / time.Millisecond) }

// ScriptStatus maps a release or extend script's integer reply.
func ScriptStatus(n int64) (core.Status, error) {
	switch n {
	case 1:
		return core.StatusOK, nil
	case 0:
		return core.StatusMissing, nil
	case -1:
		return core.StatusHeld, nil
	}
	return core.StatusError, errors.New("unexpected script reply " + strconv.FormatInt(n, 10))
}

// IsNoScript reports whether err is Redis's NOSCRIPT error, after which
// the driver must fall back to EVAL.
func IsNoScript(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT")
}

// IsLoading reports whether err is Redis's LOADING error: a server
// restarted over its data takes connections at once, and answers every
// command with it, running none, until the data is loaded.
func IsLoading(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "LOADING")
}

// IsTimeout reports whether err is a deadline being reached: a context
// deadline, or a network timeout.
func IsTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// NodeError is a failure on one node; it names the node by index and
// address and unwraps to the client's error.
type NodeError struct {
	Node int
	Addr string
	Op   core.Op
	Err  error
}

func (e *NodeError) Error() string {
	return "node " + strconv.Itoa(e.Node) + " (" + e.Addr + "): " + e.Op.String() + ": " + e.Err.Error()
}

func (e *NodeError) Unwrap() error { return e.Err }

// Fail returns the reply for a failed command: StatusTimeout when err is a
// deadline, StatusError otherwise, with a NodeError either way.
func Fail(node int, addr string, op core.Op, err error) core.Reply {
	s := core.StatusError
	if IsTimeout(err) {
		s = core.StatusTimeout
	}
	return core.Reply{Node: node, Status: s, Err: &NodeError{Node: node, Addr: addr, Op: op, Err: err}}
}
