package sim

import (
	"strconv"
	"time"

	"github.com/redlock-go/redlock/core"
)

// The configurations of the kinds beyond the mutex (kinds.go): each
// primitive with the mutex's faults (Assumed's, AssumedPersistent's,
// AssumedWorstClocks', and Failover's, WAIT included), then the broken
// ones, whose checkers must fire.

// rwKind, allKind and permitKind turn a mutex configuration into one of
// readers and writers (three in five acquisitions read), of multi-key
// locks over four keys, or of a semaphore of two permits ("sem:"), with five
// clients.
func rwKind(c Config) Config {
	c.Name = "rw: " + c.Name
	c.Primitive, c.Clients = PrimRW, 5
	c.RW = RWConfig{ReadShare: 0.6}
	return c
}

func allKind(c Config) Config {
	c.Name = "all: " + c.Name
	c.Primitive, c.Clients, c.Keys = PrimAll, 5, 4
	return c
}

func permitKind(c Config) Config {
	c.Name = "sem: " + c.Name
	c.Primitive, c.Clients, c.Permits = PrimPermits, 5, 2
	return c
}

// KindConfigs returns, for primitive kind (via rwKind, allKind or
// permitKind), its configurations within the assumptions: Assumed,
// AssumedPersistent, AssumedWorstClocks and AssumedFenced for N=3 and 5
// and both fan-outs, Failover (WAIT) and FailoverFenced too, and
// FailoverPersistent and FailoverPersistentFenced multiplexed, and
// waiters woken by release announcements, lossless (WaitersAnnounced)
// and with every announcement fault (WaitersFaulty).
func KindConfigs(kind func(Config) Config) []Config {
	var out []Config
	for _, n := range []int{3, 5} {
		for _, fo := range []core.FanOut{core.Multiplexed, core.Sequential} {
			out = append(out, kind(Assumed(n, fo)), kind(AssumedPersistent(n, fo)), kind(AssumedWorstClocks(n, fo)),
				kind(AssumedFenced(n, fo)), kind(Failover(n, fo)), kind(FailoverFenced(n, fo)))
		}
		out = append(out, kind(FailoverPersistent(n, core.Multiplexed)), kind(FailoverPersistentFenced(n, core.Multiplexed)),
			kind(WaitersAnnounced(n)), kind(WaitersFaulty(n, core.Multiplexed)))
	}
	return out
}

// RWConfigs returns the reader/writer lock's configurations: KindConfigs,
// and the writer's wait behind a stream of readers.
func RWConfigs() []Config {
	return append(KindConfigs(rwKind), WriterWait(3), WriterWait(5))
}

// AllConfigs returns the multi-key lock's configurations.
func AllConfigs() []Config { return KindConfigs(allKind) }

// PermitConfigs returns the semaphore's configurations.
func PermitConfigs() []Config { return KindConfigs(permitKind) }

// WriterWait is one writer among five readers that come back at once,
// each holding under a TTL (up to 90% of it) and never leasing: a stream
// of new readers, over Assumed's network, loss, late commands and clocks,
// without pauses or node crashes (which hold up any waiter, behind
// readers or not) and with retries enough for the whole schedule. The
// writer must win within its bound: two TTLs, plus a retry delay and
// three rounds. The first refused attempt marks the nodes it reaches, which
// then admit no new reader; the readers there before are gone within a
// TTL (their entries expire, on the node's clock, within 1% of it); a
// node the mark missed, or took by the writer while others still held
// readers and freed again by its cleanup, is marked by the next refused
// attempt, a retry delay and a cleanup later, and is free a TTL after
// that. The second TTL covers that second marking; the rounds are the
// attempt that marks, its cleanup and the winning attempt.
func WriterWait(n int) Config {
	c := rwKind(Assumed(n, core.Multiplexed))
	c.Name = "rw: writer wait behind readers N=" + strconv.Itoa(n)
	c.Clients = 6
	c.RW = RWConfig{Writers: 1, ReaderWork: [2]time.Duration{0, c.TTL * 9 / 10}}
	c.Think = [2]time.Duration{0, 2 * ms}
	c.Retry = core.RandomDelay(waitersTries, 2*ms, 20*ms)
	c.Faults.NodeCrashes, c.Faults.Pauses, c.Faults.PauseAfterAcquire = 0, 0, 0
	c.RW.WriterBound = 2*c.TTL*101/100 + 20*ms + 3*c.NodeTimeout
	return c
}

// ReaderBesideWriter is the reader/writer lock over nodes whose script
// admits a reader while the writer's key is set (a planted defect): the
// writer checker must fire.
func ReaderBesideWriter(n int) Config {
	c := rwKind(Assumed(n, core.Multiplexed))
	c.Name = "broken: reader admitted beside a writer N=" + strconv.Itoa(n)
	c.Faults.ReaderBesideWriter = true
	return c
}

// SubsetTaken is the multi-key lock over nodes whose script checks and
// takes the first key alone (a planted defect): the key-set checker
// must fire.
func SubsetTaken(n int) Config {
	c := allKind(Assumed(n, core.Multiplexed))
	c.Name = "broken: multi-key take of a subset N=" + strconv.Itoa(n)
	c.Faults.TakeSubset = true
	return c
}

// CountSemaphore is the unsound semaphore: each node admits a holder
// while it counts fewer than K, and a client holds with a quorum of
// admissions. With 3 nodes and K=2, holders of AB, BC and AC are three;
// the permits checker must fire.
func CountSemaphore(n int) Config {
	c := permitKind(Assumed(n, core.Multiplexed))
	c.Name = "broken: per-node count semaphore K=2 N=" + strconv.Itoa(n)
	c.Faults.CountSemaphore = true
	c.Clients = 6
	return c
}

// UnmarkedWriter is WriterWait over nodes whose writer, refused for
// readers, marks nothing (a planted defect): new readers keep coming in,
// and the writer's wait checker must fire.
func UnmarkedWriter(n int) Config {
	c := WriterWait(n)
	c.Name = "broken: writer waits unmarked N=" + strconv.Itoa(n)
	c.Faults.NoWriterMark = true
	return c
}

// BrokenKinds returns the broken configurations of the kinds beyond the
// mutex.
func BrokenKinds() []Config {
	return []Config{ReaderBesideWriter(3), ReaderBesideWriter(5), SubsetTaken(3), SubsetTaken(5), CountSemaphore(3), CountSemaphore(5),
		UnmarkedWriter(3), UnmarkedWriter(5)}
}
