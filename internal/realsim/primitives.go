package realsim

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/core"
)

// The configurations of the primitives beyond the mutex: the
// reader/writer lock, the multi-key lock and the semaphore, each with the
// mutex's faults (base), failover included, and the broken ones whose
// planted defect a checker must report.

// rw is base for readers and writers of 2 keys, two thirds of them
// readers.
func rw(name string, n int) Config {
	c := base("real: rw, "+name, n)
	c.Prim, c.Readers = PrimRW, 2.0/3
	return c
}

// all is base for LockAll of up to 3 keys out of 4, and a fifth of
// single-key Locks.
func all(name string, n int) Config {
	c := base("real: all, "+name, n)
	c.Prim, c.Keys, c.SetSize, c.Mutex = PrimAll, 4, 3, 0.2
	return c
}

// permits is base for a semaphore of k permits on one key, with
// 4 processes of 2 goroutines contending for them.
func permits(name string, n, k int) Config {
	c := base("real: permits, "+name+" K="+strconv.Itoa(k), n)
	c.Prim, c.Keys, c.Permits, c.Procs = PrimPermit, 1, k, 4
	return c
}

// failover makes c's node crashes lose their keys (a failover to a
// replica that missed them), each node back only after a TTL and more,
// as "real: crash without key, restart after TTL" does.
func failover(c Config) Config {
	c.Lease = true
	c.Faults.Crashes, c.Faults.Persistent = 2, false
	c.Faults.RestartDelay = [2]time.Duration{c.TTL * 11 / 10, 2 * c.TTL}
	return c
}

// lossy gives c a network that loses 5 % of the requests and delays
// none past its latency, within the assumptions: nodes whose holders
// differ, from acquires that did not arrive, which the per-node count
// semaphore (DefectCountSemaphore) turns into more than K holders. No
// reply is lost: a lost reply leaves a stray slot for a TTL, which
// stalls the semaphore rather than split it; and no command is late: a
// late command holds up its node's later ones, for up to a TTL. Holders
// work under a quarter of a TTL and half the calls are Try: many
// acquisitions, for 8 TTLs.
func lossy(c Config) Config {
	c.Faults.LostRequest, c.Faults.LostReply, c.Faults.Late = 0.05, 0, 0
	c.Work, c.Length = [2]time.Duration{0, c.TTL / 4}, 8*c.TTL
	c.Try, c.Think = 0.5, [2]time.Duration{0, 10 * ms}
	return c
}

// writerWait makes c a configuration of the writer-wait checker: one key,
// one writer calling WLock (with deadlines of up to 3 TTLs, never
// cancelled early) and 8 readers, each holding under half a TTL and
// coming back at once; announcements arrive (twice, perhaps); no command
// is lost or late, and nodes neither crash nor pause: a writer that
// waits marks the key on a quorum at its first refused attempt, and the
// readers then admitted drain within their work.
func writerWait(c Config) Config {
	c.Keys, c.Goroutines, c.Cancel, c.Extend = 1, 3, 0, 0
	c.Work, c.Think = [2]time.Duration{0, c.TTL / 2}, [2]time.Duration{0, 5 * ms}
	f := &c.Faults
	f.LostRequest, f.LostReply, f.Late = 0, 0, 0
	f.AnnLost, f.AnnLate, f.Spurious, f.Crashes, f.Pauses, f.MaxPause = 0, 0, 0, 0, 0, 0
	c.WriterWait = c.TTL
	return c
}

// Primitives returns the configurations of the reader/writer lock, the
// multi-key lock and the semaphore within the assumptions.
func Primitives() []Config {
	var cs []Config
	c := rw("assumed", 3)
	c.Fencing = true
	cs = append(cs, c)

	c = rw("lease", 5)
	c.Lease, c.Fencing = true, true
	cs = append(cs, c)

	c = rw("one key, many readers and writers", 3)
	c.Keys, c.Goroutines, c.Try = 1, 3, 0.1
	cs = append(cs, c)

	cs = append(cs, failover(rw("crash without key, restart after TTL", 3)))

	cs = append(cs, writerWait(rw("a writer behind a stream of readers", 3)))

	c = all("assumed", 3)
	c.Fencing = true
	cs = append(cs, c)

	c = all("lease", 5)
	c.Lease, c.Fencing = true, true
	cs = append(cs, c)

	c = all("sequential", 3)
	c.Sequential, c.Fencing = true, true
	cs = append(cs, c)

	cs = append(cs, failover(all("crash without key, restart after TTL", 3)))

	c = permits("assumed", 3, 2)
	c.Fencing = true
	cs = append(cs, c)

	c = permits("lease", 5, 3)
	c.Lease = true
	cs = append(cs, c)

	cs = append(cs, failover(permits("crash without key, restart after TTL", 3, 2)))

	// The faults of the broken per-node count semaphore, without its
	// defect: what it reports is the defect's.
	cs = append(cs, lossy(permits("lost requests, brisk", 3, 2)))
	return cs
}

// BrokenPrimitives returns the configurations of the primitives that
// plant a defect in the scripts they run over, or break an assumption;
// each must be reported by its primitive's checker.
func BrokenPrimitives() []Config {
	var cs []Config
	c := rw("", 3)
	c.Name = "broken: rw, a reader admitted beside a writer N=3"
	c.Defect, c.Expect = DefectReaderBesideWriter, "writer overlap"
	cs = append(cs, c)

	c = rw("", 3)
	c.Name = "broken: rw, node clocks twice as fast N=3"
	c.Defect, c.Expect = DefectFastNodeClock, "writer overlap"
	c.Work = [2]time.Duration{c.TTL, 2 * c.TTL}
	cs = append(cs, c)

	c = rw("", 3)
	c.Name = "broken: rw, fence counter never raised N=3"
	c.Defect, c.Fencing, c.Expect = DefectFlatFence, true, "fences"
	cs = append(cs, c)

	c = rw("", 3)
	c.Name = "broken: rw, readers read no fence N=3"
	c.Defect, c.Fencing, c.Expect = DefectReaderNoFence, true, "fences"
	cs = append(cs, c)

	c = writerWait(rw("", 3))
	c.Name = "broken: rw, a writer behind readers that hold past a TTL N=3"
	c.Lease, c.Work, c.Expect = true, [2]time.Duration{c.TTL, 3 * c.TTL}, "writer wait"
	cs = append(cs, c)

	c = all("", 3)
	c.Name = "broken: all, a LockAll that takes a subset of its keys N=3"
	c.Defect, c.Expect = DefectSubsetAll, "key sets"
	cs = append(cs, c)

	c = all("", 3)
	c.Name = "broken: all, node clocks twice as fast N=3"
	c.Defect, c.Expect = DefectFastNodeClock, "key sets"
	c.Work = [2]time.Duration{c.TTL, 2 * c.TTL}
	cs = append(cs, c)

	c = lossy(permits("", 3, 2))
	c.Name = "broken: permits, a per-node count semaphore K=2 N=3"
	c.Defect, c.Expect = DefectCountSemaphore, "permits"
	cs = append(cs, c)

	c = permits("", 3, 2)
	c.Name = "broken: permits, node clocks twice as fast K=2 N=3"
	c.Defect, c.Expect = DefectFastNodeClock, "permits"
	c.Work = [2]time.Duration{c.TTL, 2 * c.TTL}
	cs = append(cs, c)
	return cs
}

// permitKey is the name of slot i of the semaphore key.
func permitKey(key string, i int) string { return core.PermitKey(key, i) }

// slotOf parses a permit slot's name (permitKey): the semaphore's key and
// the slot's number.
func slotOf(name string) (key string, slot int, ok bool) {
	const sep = ":permit:"
	j := strings.LastIndex(name, sep)
	if j < 0 {
		return "", 0, false
	}
	slot, err := strconv.Atoi(name[j+len(sep):])
	if err != nil || slot < 0 {
		return "", 0, false
	}
	key = name[:j]
	if strings.HasPrefix(key, "{") && strings.HasSuffix(key, "}") {
		key = key[1 : len(key)-1]
	}
	return key, slot, true
}

// op is one acquisition a goroutine makes: of what kind, of which key or
// keys.
type op struct {
	kind    string // "mutex", "read", "write", "all" or "permit"
	key     string // the key; an "all" op's first
	keys    []string
	permits int
}

// names returns the keys o takes.
func (o *op) names() []string {
	if o.keys != nil {
		return o.keys
	}
	return []string{o.key}
}

// pick draws the next acquisition of a goroutine, as cfg.Prim says.
func (s *schedule) pick(rng *prng) op {
	cfg := s.cfg
	o := op{kind: "mutex", key: keyName(rng.intn(cfg.Keys))}
	switch cfg.Prim {
	case PrimRW:
		o.kind = "write"
		if rng.chance(cfg.Readers) {
			o.kind = "read"
		}
	case PrimAll:
		if rng.chance(cfg.Mutex) {
			break
		}
		// A random set of 1 to SetSize distinct keys, in a random order:
		// sets overlap, and name their common keys in different orders.
		n := 1 + rng.intn(min(cfg.SetSize, cfg.Keys))
		perm := make([]string, cfg.Keys)
		for i := range perm {
			perm[i] = keyName(i)
		}
		for i := range n {
			j := i + rng.intn(len(perm)-i)
			perm[i], perm[j] = perm[j], perm[i]
		}
		o.kind, o.keys, o.key = "all", perm[:n:n], perm[0]
	case PrimPermit:
		o.kind, o.permits = "permit", cfg.Permits
	}
	return o
}

// take makes o's acquisition with c: the call that waits, or its Try.
func (o *op) take(ctx context.Context, c *redlock.Client, try bool) (*redlock.Lock, error) {
	switch o.kind {
	case "read":
		if try {
			return c.TryRLock(ctx, o.key)
		}
		return c.RLock(ctx, o.key)
	case "write":
		if try {
			return c.TryWLock(ctx, o.key)
		}
		return c.WLock(ctx, o.key)
	case "all":
		if try {
			return c.TryLockAll(ctx, o.keys...)
		}
		return c.LockAll(ctx, o.keys...)
	case "permit":
		if try {
			return c.TryLockPermit(ctx, o.key, o.permits)
		}
		return c.LockPermit(ctx, o.key, o.permits)
	}
	if try {
		return c.TryLock(ctx, o.key)
	}
	return c.Lock(ctx, o.key)
}
