package measure

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// The primitives' hot cells (the reader/writer lock, the semaphore, the
// multi-key lock): contenders of one process loop acquire (waiting as
// long as it takes), a critical section, release, and a Ledger checks,
// inside every section, that the lock held excludes what it must:
//
//   - a writer (or a mutex, or a multi-key holder on each of its keys) is
//     alone in its resource: no other holder and no reader;
//   - a reader is never beside a writer;
//   - a semaphore of K permits has at most K holders.
//
// Each resource that admits one holder at a time also has a counter
// that its sections read at their entry and write, plus one, at their
// exit: two overlapping sections lose an update, so the counter falls
// short of the sections entered. Violations and lost updates are
// reported, never hidden.

// Claim is one resource a held lock covers, as the Ledger checks it.
type Claim struct {
	// Resource names what is held: a key, a semaphore, a permit's slot.
	Resource string
	// Shared is a reader's claim: readers share the resource with one
	// another, never with a holder of a Shared=false claim.
	Shared bool
	// Limit is the most holders (Shared=false) the resource admits at
	// once: 1 for a mutex, a writer or a multi-key lock's key (also 0),
	// K for a semaphore of K permits.
	Limit int
}

// Ledger is the exclusion check of a hot cell: every section enters it
// with its lock's claims and leaves it before the lock is released. Its
// methods are safe for concurrent use.
type Ledger struct {
	mu         sync.Mutex
	res        map[string]*resource
	violations atomic.Int64
	sections   atomic.Int64
	expired    atomic.Int64
}

// resource is one resource's holders, readers and counter.
type resource struct {
	holders, shared       atomic.Int64
	maxHolders, maxShared atomic.Int64
	counter, entered      atomic.Int64
	limit                 int64
}

// NewLedger returns an empty Ledger.
func NewLedger() *Ledger { return &Ledger{res: make(map[string]*resource)} }

func (l *Ledger) resource(c Claim) *resource {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.res[c.Resource]
	if r == nil {
		r = &resource{limit: int64(max(c.Limit, 1))}
		l.res[c.Resource] = r
	}
	return r
}

func storeMax(m *atomic.Int64, v int64) {
	for {
		old := m.Load()
		if v <= old || m.CompareAndSwap(old, v) {
			return
		}
	}
}

// Section is a section inside the Ledger: Leave ends it.
type Section struct {
	l      *Ledger
	claims []Claim
	rs     []*resource
	seen   []int64 // each one-holder resource's counter at the entry
}

// Enter records a section of a lock that covers claims, and counts a
// violation for each claim that its resource's other holders exclude.
// The check is two-sided: of a reader and a writer entering at once,
// each adds itself before it looks at the other side, so one of them
// sees the other.
func (l *Ledger) Enter(claims []Claim) *Section {
	s := &Section{l: l, claims: claims, rs: make([]*resource, len(claims)), seen: make([]int64, len(claims))}
	l.sections.Add(1)
	for i, c := range claims {
		r := l.resource(c)
		s.rs[i] = r
		if c.Shared {
			storeMax(&r.maxShared, r.shared.Add(1))
			if r.holders.Load() > 0 {
				l.violations.Add(1)
			}
			continue
		}
		n := r.holders.Add(1)
		storeMax(&r.maxHolders, n)
		if n > r.limit || r.shared.Load() > 0 {
			l.violations.Add(1)
		}
		if r.limit == 1 {
			r.entered.Add(1)
			s.seen[i] = r.counter.Load()
		}
	}
	return s
}

// Leave ends the section: each one-holder resource's counter is written
// back one more than it was read at the entry.
func (s *Section) Leave() {
	for i, c := range s.claims {
		r := s.rs[i]
		if c.Shared {
			r.shared.Add(-1)
			continue
		}
		if r.limit == 1 {
			r.counter.Store(s.seen[i] + 1)
		}
		r.holders.Add(-1)
	}
}

// Expired counts a section that ended after its lock's validity: what
// it did then is outside the lock's assumptions, and a violation beside
// it is not the lock's.
func (l *Ledger) Expired() { l.expired.Add(1) }

// Exclusion is what a hot cell's Ledger found, and the waits of its
// timed contenders (a writer behind readers).
type Exclusion struct {
	// Sections is every section entered, warm-up included.
	Sections int64 `json:"sections"`
	// Violations counts the entries that a resource's other holders
	// excluded: beyond its limit, or a holder beside a reader.
	Violations int64 `json:"violations"`
	// LostUpdates is the one-holder resources' counters' shortfall
	// against their sections entered.
	LostUpdates int64 `json:"lost_updates"`
	// Refused counts readers refused where no writer ever was: a share
	// that did not happen (pair cells of readers alone).
	Refused int64 `json:"refused,omitempty"`
	// Expired counts the sections that ended after their lock's
	// validity (Ledger.Expired).
	Expired int64 `json:"expired,omitempty"`
	// MaxHolders is the most holders one resource had at once, and
	// MaxShared the most readers.
	MaxHolders int64 `json:"max_holders"`
	MaxShared  int64 `json:"max_shared,omitempty"`
	// Limit is the largest limit of a resource claimed: K for a
	// semaphore, else 1.
	Limit int64 `json:"limit,omitempty"`
	// Waits counts the timed contenders' acquisitions in the window
	// (RunSections: a writer's), with their waits in µs, from the acquire
	// call to its return.
	Waits     int64   `json:"waits,omitempty"`
	WaitP50Us float64 `json:"wait_p50_us,omitempty"`
	WaitP99Us float64 `json:"wait_p99_us,omitempty"`
	WaitMaxUs float64 `json:"wait_max_us,omitempty"`
	// OtherWaitP50Us and OtherWaitP99Us are the other contenders' waits
	// in a cell with a timed one (the readers' beside a writer), in µs.
	OtherWaitP50Us float64 `json:"other_wait_p50_us,omitempty"`
	OtherWaitP99Us float64 `json:"other_wait_p99_us,omitempty"`
	// TTLMs is the TTL of the cell's locks, in ms, when it is the cell's
	// own (a writer's wait is bounded in TTLs).
	TTLMs int64 `json:"ttl_ms,omitempty"`
}

// Ok reports whether the check found nothing: no violation, no lost
// update, no reader refused.
func (e Exclusion) Ok() bool { return e.Violations == 0 && e.LostUpdates == 0 && e.Refused == 0 }

// Add counts what another check of the same cell found (another round
// of it) in e: its sections, violations, lost updates, refusals and
// expiries, and the most holders either saw. The waits stay e's.
func (e *Exclusion) Add(x Exclusion) {
	e.Sections += x.Sections
	e.Violations += x.Violations
	e.LostUpdates += x.LostUpdates
	e.Refused += x.Refused
	e.Expired += x.Expired
	e.MaxHolders = max(e.MaxHolders, x.MaxHolders)
	e.MaxShared = max(e.MaxShared, x.MaxShared)
	e.Limit = max(e.Limit, x.Limit)
}

// Check returns what the Ledger found so far.
func (l *Ledger) Check() Exclusion {
	e := Exclusion{Sections: l.sections.Load(), Violations: l.violations.Load(), Expired: l.expired.Load()}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range l.res {
		if r.limit == 1 {
			e.LostUpdates += r.entered.Load() - r.counter.Load()
		}
		e.MaxHolders = max(e.MaxHolders, r.maxHolders.Load())
		e.MaxShared = max(e.MaxShared, r.maxShared.Load())
		e.Limit = max(e.Limit, r.limit)
	}
	return e
}

// SectionContender is one contender of a hot cell (RunSections): a
// Contender whose held lock names its claims, and which says how its
// sections run.
type SectionContender interface {
	Contender
	// Claims returns what the lock Lock returned covers.
	Claims() []Claim
	// Until returns the end of the held lock's validity.
	Until() time.Time
	// Hold returns how long more than the spin the next section holds
	// the lock (0: the spin alone), and Pause how long the contender
	// waits after a release before its next acquire.
	Hold() time.Duration
	Pause() time.Duration
	// Timed reports whether the contender's waits are the cell's figure
	// (Exclusion.Waits: a writer's behind readers).
	Timed() bool
}

// SectionsSpec describes one hot cell of the primitives.
type SectionsSpec struct {
	Warmup, Duration time.Duration
	// Sections bounds the window by a count of sections instead, when
	// positive (go test's b.N); a failed acquire spends one too.
	Sections int64
	// Servers, when set, is read at the window's edges: the servers' CPU
	// per section.
	Servers UsageReader
	// Ledger is the check the sections enter; nil: a new one.
	Ledger *Ledger
	// Rounds, when set, is read at the window's edges: the rounds per
	// section, in Result.RoundsPerOp.
	Rounds RoundCounter
}

// RunSections runs contenders, each looping acquire (waiting as long as
// it takes), a section (the Ledger's check, a spin, the contender's
// Hold), release, its Pause, and returns the sections completed in the
// window (Ops, Throughput), every acquire's wait (the latency fields),
// and the Ledger's findings with the timed contenders' waits.
func RunSections(ctx context.Context, contenders []SectionContender, spec SectionsSpec) (Result, Exclusion) {
	ledger := spec.Ledger
	if ledger == nil {
		ledger = NewLedger()
	}
	var (
		waitCtx, stopWaits = context.WithCancel(ctx)
		stopped            atomic.Bool
		budget             atomic.Int64
		windowStart        atomic.Int64
		stats              = make([]workerStats, len(contenders))
		hists              = make([]*waitHists, len(contenders))
		ready, done        sync.WaitGroup
		start              = make(chan struct{})
		base               = time.Now()
	)
	defer stopWaits()
	counted := spec.Sections > 0
	budget.Store(spec.Sections)
	windowStart.Store(math.MaxInt64)
	if spec.Warmup <= 0 {
		windowStart.Store(0)
	}
	stop := func() {
		stopped.Store(true)
		stopWaits()
	}
	release := context.WithoutCancel(ctx)
	for i, c := range contenders {
		st := &stats[i]
		wh := &waitHists{all: NewHistogram(), timed: NewHistogram(), other: NewHistogram()}
		hists[i] = wh
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			ready.Done()
			<-start
			for !stopped.Load() {
				t0 := int64(time.Since(base))
				err := c.Lock(waitCtx)
				t := int64(time.Since(base))
				if err != nil {
					if waitCtx.Err() != nil {
						return
					}
					st.failed(err)
					if counted && budget.Add(-1) <= 0 {
						stop()
					}
					continue
				}
				in := t >= windowStart.Load() && !stopped.Load()
				if in && counted && budget.Add(-1) < 0 {
					in = false
				}
				sec := ledger.Enter(c.Claims())
				Spin(DefaultSpin)
				if h := c.Hold(); h > 0 {
					time.Sleep(h)
				}
				if time.Now().After(c.Until()) {
					ledger.Expired()
				}
				sec.Leave()
				if in {
					st.ops++
					_ = wh.all.RecordValue(t - t0) // up to 60 s: see NewHistogram
					if c.Timed() {
						_ = wh.timed.RecordValue(t - t0)
					} else {
						_ = wh.other.RecordValue(t - t0)
					}
				}
				if err := c.Unlock(release); err != nil {
					st.failed(err)
				}
				if counted && in && budget.Load() <= 0 {
					stop()
				}
				if p := c.Pause(); p > 0 && !stopped.Load() {
					sleep(waitCtx, p)
				}
			}
		}()
	}
	ready.Wait()
	var cpu cpuWindow
	var roundsBefore, roundsAfter uint64
	rounds := func() uint64 {
		if spec.Rounds == nil {
			return 0
		}
		return spec.Rounds.Rounds()
	}
	if spec.Warmup <= 0 {
		cpu.open(spec.Servers)
		roundsBefore = rounds()
	}
	close(start)
	if spec.Warmup > 0 {
		sleep(ctx, spec.Warmup)
		cpu.open(spec.Servers)
		roundsBefore = rounds()
		windowStart.Store(int64(time.Since(base)))
	}
	var end int64
	if !counted {
		sleep(ctx, spec.Duration)
		end = int64(time.Since(base))
		cpu.close(spec.Servers)
		roundsAfter = rounds()
		stop()
		done.Wait()
	} else {
		unhook := context.AfterFunc(ctx, stop)
		done.Wait()
		unhook()
		end = int64(time.Since(base))
		cpu.close(spec.Servers)
		roundsAfter = rounds()
	}
	var r Result
	all, timed, other := NewHistogram(), NewHistogram(), NewHistogram()
	for i := range stats {
		st := &stats[i]
		r.Ops += st.ops
		r.Errors += st.errors
		if st.firstErr != nil && r.FirstError == "" {
			r.FirstError = st.firstErr.Error()
		}
		all.Merge(hists[i].all)
		timed.Merge(hists[i].timed)
		other.Merge(hists[i].other)
	}
	r.Acquired = r.Ops
	r.Seconds = time.Duration(end - min(windowStart.Load(), end)).Seconds()
	if r.Seconds > 0 {
		r.Throughput = float64(r.Ops) / r.Seconds
	}
	if all.TotalCount() > 0 {
		r.FromHistogram(all)
	}
	cpu.perSection(&r, spec.Servers != nil)
	if spec.Rounds != nil && r.Ops > 0 {
		r.RoundsPerOp = float64(roundsAfter-roundsBefore) / float64(r.Ops)
	}
	e := ledger.Check()
	if n := timed.TotalCount(); n > 0 {
		us := func(ns int64) float64 { return float64(ns) / 1e3 }
		e.Waits = n
		e.WaitP50Us = us(timed.ValueAtQuantile(50))
		e.WaitP99Us = us(timed.ValueAtQuantile(99))
		e.WaitMaxUs = us(timed.Max())
		if other.TotalCount() > 0 {
			e.OtherWaitP50Us = us(other.ValueAtQuantile(50))
			e.OtherWaitP99Us = us(other.ValueAtQuantile(99))
		}
	}
	return r, e
}

// waitHists are one contender's acquire waits: all of them, and those
// of a timed contender or of another.
type waitHists struct {
	all, timed, other *hdrhistogram.Histogram
}
