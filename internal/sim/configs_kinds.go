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
// and with every announcement fault (WaitersFaulty); and callers that
// give a third of their acquisitions up (WithCancels), N=3 and 5
// multiplexed.
func KindConfigs(kind func(Config) Config) []Config {
	var out []Config
	for _, n := range []int{3, 5} {
		for _, fo := range []core.FanOut{core.Multiplexed, core.Sequential} {
			out = append(out, kind(Assumed(n, fo)), kind(AssumedPersistent(n, fo)), kind(AssumedWorstClocks(n, fo)),
				kind(AssumedFenced(n, fo)), kind(Failover(n, fo)), kind(FailoverFenced(n, fo)))
		}
		out = append(out, kind(FailoverPersistent(n, core.Multiplexed)), kind(FailoverPersistentFenced(n, core.Multiplexed)),
			kind(WaitersAnnounced(n)), kind(WaitersFaulty(n, core.Multiplexed)))
		a := Assumed(n, core.Multiplexed)
		out = append(out, kind(WithCancels(a, a.TTL/2)))
	}
	return out
}

// RWConfigs returns the reader/writer lock's configurations: KindConfigs,
// liveness after a holder crash (RWLiveness) N=3 multiplexed and N=5
// sequential, and the writer's wait behind a stream of readers, checked
// and, with loss and late commands, measured.
func RWConfigs() []Config {
	return append(KindConfigs(rwKind), RWLiveness(3, core.Multiplexed), RWLiveness(5, core.Sequential),
		WriterWait(3), WriterWait(5), WriterWaitFaulty(3), WriterWaitFaulty(5))
}

// AllConfigs returns the multi-key lock's configurations: KindConfigs,
// and liveness after a holder crash (Liveness) N=3 multiplexed and N=5
// sequential.
func AllConfigs() []Config {
	return append(KindConfigs(allKind), liveness(allKind, 3, core.Multiplexed), liveness(allKind, 5, core.Sequential))
}

// PermitConfigs returns the semaphore's configurations: KindConfigs, and
// liveness after a holder crash (Liveness) N=3 multiplexed and N=5
// sequential.
func PermitConfigs() []Config {
	return append(KindConfigs(permitKind), liveness(permitKind, 3, core.Multiplexed), liveness(permitKind, 5, core.Sequential))
}

// RWLiveness is the reader/writer lock's liveness after a holder crash
// (Liveness), with its three clients.
func RWLiveness(n int, fo core.FanOut) Config { return liveness(rwKind, n, fo) }

// liveness is Liveness of kind, with its three clients (its bound allows
// one split vote, not the many of five contenders). The liveness checker
// counts its bound from the crashed holder's expiry or from the end of
// the last hold that was under way beside it, whichever is later: a
// reader beside a crashed reader, the holder of another slot, or of a
// key set disjoint from the crashed one's, holds the others up as any
// holder does (a writer, a contender for its keys), and is theirs to
// wait for (crashHolder).
func liveness(kind func(Config) Config, n int, fo core.FanOut) Config {
	c := kind(Liveness(n, fo))
	c.Clients = 3
	return c
}

// WriterWait is one writer among five readers that come back at once,
// each holding under a TTL (up to 90% of it) and never leasing: a stream
// of new readers, over Assumed's latency and clocks 1% apart, with
// retries enough for the whole schedule. As the mutex's Liveness, it
// injects no loss, no late command, no pause and no crash: each holds
// up any waiter (a reader's acquire applied after its own cleanup, or
// whose release is lost, leaves an entry nobody releases, for up to a
// TTL), so no time bound survives them; the campaign measures what they
// cost (docs/safety.md). The writer must win within its bound: two
// TTLs, plus a retry delay and three rounds. The first refused attempt
// marks the nodes it reaches, which then admit no new reader; the
// readers there before are gone within a TTL (their entries expire, on
// the node's clock, within 1% of it); a node the writer's failed
// attempt took while others still held readers, freed again by its
// cleanup, may admit readers again until the next refused attempt marks
// it, a retry delay and a cleanup later, and is free a TTL after that.
// The second TTL covers that second marking; the rounds are the attempt
// that marks, its cleanup and the winning attempt.
func WriterWait(n int) Config {
	c := rwKind(Assumed(n, core.Multiplexed))
	c.Name = "rw: writer wait behind readers N=" + strconv.Itoa(n)
	c.Clients = 6
	c.RW = RWConfig{Writers: 1, ReaderWork: [2]time.Duration{0, c.TTL * 9 / 10}}
	c.Think = [2]time.Duration{0, 2 * ms}
	c.Retry = core.RandomDelay(waitersTries, 2*ms, 20*ms)
	c.Faults = Faults{ClientPPM: c.Faults.ClientPPM, NodePPM: c.Faults.NodePPM}
	c.RW.WriterBound = 2*c.TTL*101/100 + 20*ms + 3*c.NodeTimeout
	return c
}

// WriterWaitFaulty is WriterWait with Assumed's loss and late commands
// and no bound: what they cost a writer, measured, not checked.
func WriterWaitFaulty(n int) Config {
	c := WriterWait(n)
	c.Name = "rw: writer wait behind readers, lossy N=" + strconv.Itoa(n)
	a := Assumed(n, core.Multiplexed).Faults
	c.Faults.Loss, c.Faults.Late, c.Faults.LateBy = a.Loss, a.Late, a.LateBy
	c.RW.WriterBound = 0
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
