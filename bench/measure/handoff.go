package measure

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// The hot-key measurement: C contenders of one process share one lock
// client and loop on one key: acquire (waiting as long as it takes),
// a critical section of fixed tiny work, release. It measures two
// things:
//
//   - handoff latency: from a holder's release call to the next holder's
//     acquire call returning, whichever contender that is, and the same
//     from the release call's return (which counts a waiter whose
//     attempt was on the wire before the release returned as nothing);
//   - critical sections per second, completed within the window.
//
// Every handoff goes to a contender that was waiting, as on a hot key
// whose clients each want it now and then, more often than it is free:
//
//   - a contender that released waits, before it tries again, until
//     another has acquired. Without that wait the releaser of a polling
//     lock takes the lock back at once (its first attempt comes before
//     any sleeping waiter's retry) and the others starve: the figures
//     would measure one client re-locking;
//   - the holder keeps the lock until every other contender is in its
//     acquire call (and HandoffSpec.Hold more, zero by default). Otherwise
//     the first attempt of the contender that came back races the release
//     of a tiny critical section, and a polling lock's "handoff" is that
//     race won, a round trip, rather than a waiter's wait. With the
//     gate, that attempt has been sent before the release: measured at
//     N=5 on loopback, polling's handoffs with a Hold of 0 and of 200 µs
//     were alike (about 150 ms with 2 contenders).
//
// And it checks exclusion: each critical section marks itself inside and
// does a read-modify-write of a shared counter (a load, the work, a
// store) that loses an update if two sections overlap. Overlaps and lost
// updates are reported, never hidden.

// HotSubject is a blocking lock implementation bound to its servers, one
// client shared by all the contenders of the process.
type HotSubject interface {
	// Contender returns the state of one contender goroutine that locks
	// key. Contenders are created before the run starts.
	Contender(key string) Contender
}

// Contender is one goroutine's view of a HotSubject; it is used by one
// goroutine only, which alternates Lock and Unlock.
type Contender interface {
	// Lock waits until it holds the lock, or until ctx ends (an error).
	// ctx bounds the wait only: a lock Lock returned stays held until
	// Unlock, whatever ctx does afterwards.
	Lock(ctx context.Context) error
	// Unlock releases the lock Lock returned.
	Unlock(ctx context.Context) error
}

// HandoffSpec describes one hot-key measurement.
type HandoffSpec struct {
	// Contenders is the number of goroutines looping on the key (at
	// least 1; a handoff needs 2).
	Contenders int
	// Key is the one key every contender locks.
	Key string
	// Warmup runs the loop, unrecorded, for this long first: connections
	// dialled, subscriptions made, scripts loaded. The window opens
	// without stopping the loop, so the waiters are in their steady
	// state when it does.
	Warmup time.Duration
	// Duration is the measured window; Sections bounds it by a count of
	// critical sections instead when it is positive (go test's b.N): a
	// failed acquire spends one of them too.
	Duration time.Duration
	Sections int64
	// Work is the critical section's work, between the counter's load and
	// its store; nil is Spin(DefaultSpin).
	Work func()
	// Hold keeps the lock at least this long more (a sleep, after Work),
	// once every other contender is in its acquire call: to make sure
	// the one that came back last has made its first attempt, and
	// failed, by the release. Zero: no more than Work.
	Hold time.Duration
	// Servers, when set, is read at the window's edges, as Spec.Servers
	// is: the servers' CPU per critical section, which names what bounds
	// a hot key's sections per second when the servers' scripts do.
	Servers UsageReader
}

// DefaultSpin is the default critical section's spin: about a
// microsecond of arithmetic.
const DefaultSpin = 1000

var spinSink atomic.Uint64

// Spin does n rounds of arithmetic the compiler cannot drop: the fixed
// tiny work of a critical section.
func Spin(n int) {
	x := uint64(n) //nolint:gosec // G115: any bits of n do as the seed
	for i := 0; i < n; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	spinSink.Store(x)
}

// Handoff is the hot-key part of a result: the handoff latencies and the
// exclusion check. Result.Ops (and Acquired) count the critical sections
// completed in the window, Result.Throughput is sections per second.
type Handoff struct {
	// Handoffs is the number of handoffs measured: a release returned and
	// the next acquire returned, both counted in the window's order.
	Handoffs int64 `json:"handoffs"`
	// Early counts the handoffs in which the next holder's acquire
	// returned before the previous holder's release call did (the keys
	// were already deleted on a quorum); they are recorded as 0.
	Early  int64   `json:"early,omitempty"`
	MeanUs float64 `json:"mean_us"`
	P50Us  float64 `json:"p50_us"`
	P90Us  float64 `json:"p90_us"`
	P99Us  float64 `json:"p99_us"`
	MaxUs  float64 `json:"max_us"`
	// FromCallP50Us and FromCallP99Us measure the same handoffs from the
	// release call's start instead of its return: never negative, they
	// show what the early handoffs were.
	FromCallP50Us float64 `json:"from_call_p50_us"`
	FromCallP99Us float64 `json:"from_call_p99_us"`
	// Entered is every critical section entered, warm-up and drain
	// included; Counter is the shared counter at the end. They are equal
	// when no two sections overlapped.
	Entered int64 `json:"entered"`
	Counter int64 `json:"counter"`
	// Overlaps counts the sections entered while another was inside.
	Overlaps int64 `json:"overlaps"`
}

// LostUpdates is the counter's shortfall: updates that overlapping
// sections overwrote.
func (h Handoff) LostUpdates() int64 { return h.Entered - h.Counter }

// Exclusive reports whether no two critical sections overlapped.
func (h Handoff) Exclusive() bool { return h.Overlaps == 0 && h.LostUpdates() == 0 }

// handoffs pairs each holder's release with the next holder's acquire.
// Holders are numbered in the order they entered; a handoff is the pair
// (release of holder g, acquire of holder g+1), whichever of the two
// timestamps is reported first.
type handoffs struct {
	mu      sync.Mutex
	h, call *hdrhistogram.Histogram // from the release's return, from its call
	n       int64
	early   int64
	relGen  int64 // holder whose release is waiting for its successor, or 0
	relCall int64
	relAt   int64
	acqGen  int64 // holder whose acquire is waiting for its predecessor, or 0
	acqAt   int64
	acqIn   bool
}

// record records one handoff from a release called at call and returned
// at rel to an acquire returned at acq (ns since the run's start), if the
// acquire fell in the window.
func (p *handoffs) record(call, rel, acq int64, inWindow bool) {
	if !inWindow {
		return
	}
	d := acq - rel
	if d < 0 {
		p.early++
		d = 0
	}
	// NewHistogram tracks up to 60 s, beyond any cell: a longer value
	// would be dropped, which RecordValue's error reports.
	_ = p.h.RecordValue(d)
	_ = p.call.RecordValue(max(acq-call, 0))
	p.n++
}

// acquired reports that holder g's acquire returned at t.
func (p *handoffs) acquired(g, t int64, inWindow bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.relGen == g-1 && p.relGen != 0 {
		p.record(p.relCall, p.relAt, t, inWindow)
		p.relGen = 0
		return
	}
	p.acqGen, p.acqAt, p.acqIn = g, t, inWindow
}

// released reports that holder g's release was called at call and
// returned at t.
func (p *handoffs) released(g, call, t int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.acqGen == g+1 {
		p.record(call, t, p.acqAt, p.acqIn)
		p.acqGen = 0
		return
	}
	p.relGen, p.relCall, p.relAt = g, call, t
}

// RunHandoff runs the hot-key loop of spec on subject and returns the
// sections (Ops, Acquired, Throughput, Errors) and the handoffs.
// Allocations and goroutines are not counted: reading the counters stops
// the world, which would stall a handoff in the middle of the window.
func RunHandoff(ctx context.Context, subject HotSubject, spec HandoffSpec) (Result, Handoff) {
	if spec.Contenders < 1 {
		spec.Contenders = 1
	}
	work := spec.Work
	if work == nil {
		work = func() { Spin(DefaultSpin) }
	}
	contenders := make([]Contender, spec.Contenders)
	for i := range contenders {
		contenders[i] = subject.Contender(spec.Key)
	}
	var (
		// waitCtx ends every wait when the window closes (or ctx ends);
		// releases use a context of their own, so that a holder always
		// releases.
		waitCtx, stopWaits = context.WithCancel(ctx)
		stopped            atomic.Bool
		budget             atomic.Int64
		inside             atomic.Int32
		counter            atomic.Int64
		entered            atomic.Int64
		overlaps           atomic.Int64
		gen                atomic.Int64
		windowStart        atomic.Int64 // ns since base; math.MaxInt64 until the window opens
		pairs              = handoffs{h: NewHistogram(), call: NewHistogram()}
		stats              = make([]workerStats, spec.Contenders)
		turn               = newTurns()
		inLock             atomic.Int32 // contenders in Lock
		ready, done        sync.WaitGroup
		start              = make(chan struct{})
		base               = time.Now()
	)
	others := int32(spec.Contenders - 1) //nolint:gosec // G115: a count of goroutines, far below 2^31
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
		turn.next()
	}
	release := context.WithoutCancel(ctx)
	for i, c := range contenders {
		st := &stats[i]
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			ready.Done()
			<-start
			for !stopped.Load() {
				inLock.Add(1)
				turn.next() // a holder may be waiting for every other contender to wait
				err := c.Lock(waitCtx)
				t := int64(time.Since(base))
				inLock.Add(-1)
				if err != nil {
					if waitCtx.Err() != nil {
						return
					}
					st.failed(err)
					// With a budget, a failed acquire spends a ticket, so
					// that a lock that always fails cannot loop forever.
					if counted && budget.Add(-1) <= 0 {
						stop()
					}
					continue
				}
				// A section counts if its acquire returned in the window
				// and, with a budget, if it got one of the budget's
				// tickets; a section acquired after the window closed
				// runs all the same, uncounted, and releases.
				in := t >= windowStart.Load() && !stopped.Load()
				if in && counted && budget.Add(-1) < 0 {
					in = false
				}
				if inside.Add(1) != 1 {
					overlaps.Add(1)
				}
				entered.Add(1)
				g := gen.Add(1)
				turn.next() // the previous holder may come back
				if others > 0 {
					// Hold until every other contender waits (or holds,
					// with a broken lock), then for spec.Hold.
					turn.await(func() bool { return inLock.Load()+inside.Load()-1 >= others || stopped.Load() })
				}
				v := counter.Load()
				work()
				if spec.Hold > 0 {
					time.Sleep(spec.Hold)
				}
				counter.Store(v + 1)
				inside.Add(-1)
				pairs.acquired(g, t, in)
				if in {
					st.ops++
				}
				t0 := int64(time.Since(base))
				err = c.Unlock(release)
				t = int64(time.Since(base))
				if err != nil {
					st.failed(err)
				} else {
					pairs.released(g, t0, t)
				}
				if counted && in && budget.Load() <= 0 {
					stop()
				}
				if others > 0 {
					turn.await(func() bool { return gen.Load() > g || stopped.Load() })
				}
			}
		}()
	}
	ready.Wait()
	// The CPU the client and the servers spent in the window, read at its
	// edges without stopping the world (getrusage, INFO).
	var cpu cpuWindow
	if spec.Warmup <= 0 {
		cpu.open(spec.Servers)
	}
	close(start)
	if spec.Warmup > 0 {
		sleep(ctx, spec.Warmup)
		cpu.open(spec.Servers)
		windowStart.Store(int64(time.Since(base)))
	}
	var end int64
	if !counted {
		sleep(ctx, spec.Duration)
		end = int64(time.Since(base))
		cpu.close(spec.Servers)
		stop()
		done.Wait()
	} else {
		unhook := context.AfterFunc(ctx, stop)
		done.Wait()
		unhook()
		end = int64(time.Since(base))
		cpu.close(spec.Servers)
	}
	var r Result
	for i := range stats {
		st := &stats[i]
		r.Ops += st.ops
		r.Errors += st.errors
		if st.firstErr != nil && r.FirstError == "" {
			r.FirstError = st.firstErr.Error()
		}
	}
	r.Acquired = r.Ops
	r.Seconds = time.Duration(end - windowStart.Load()).Seconds()
	if r.Seconds > 0 {
		r.Throughput = float64(r.Ops) / r.Seconds
	}
	cpu.perSection(&r, spec.Servers != nil)
	h := Handoff{Handoffs: pairs.n, Early: pairs.early, Entered: entered.Load(), Counter: counter.Load(), Overlaps: overlaps.Load()}
	if pairs.n > 0 {
		us := func(ns int64) float64 { return float64(ns) / 1e3 }
		h.MeanUs = pairs.h.Mean() / 1e3
		h.P50Us = us(pairs.h.ValueAtQuantile(50))
		h.P90Us = us(pairs.h.ValueAtQuantile(90))
		h.P99Us = us(pairs.h.ValueAtQuantile(99))
		h.MaxUs = us(pairs.h.Max())
		h.FromCallP50Us = us(pairs.call.ValueAtQuantile(50))
		h.FromCallP99Us = us(pairs.call.ValueAtQuantile(99))
	}
	return r, h
}

// cpuWindow holds the process's and the servers' CPU at a hot-key
// window's edges.
type cpuWindow struct {
	before, after       time.Duration
	hasBefore, hasAfter bool
	srvBefore, srvAfter Usage
	srvErr              error
}

func (w *cpuWindow) open(srv UsageReader) {
	w.before, w.hasBefore = ProcessCPU()
	if srv != nil {
		w.srvBefore, w.srvErr = srv.Usage()
	}
}

func (w *cpuWindow) close(srv UsageReader) {
	w.after, w.hasAfter = ProcessCPU()
	if srv != nil && w.srvErr == nil {
		w.srvAfter, w.srvErr = srv.Usage()
	}
}

// perSection sets r's client and, if read, servers' CPU per critical
// section.
func (w *cpuWindow) perSection(r *Result, servers bool) {
	if w.hasBefore && w.hasAfter {
		r.ClientCPUUsPerOp = CPUPerOpUs(w.before, w.after, r.Ops)
	}
	if !servers {
		return
	}
	if w.srvErr != nil {
		r.ServersCPUError = w.srvErr.Error()
		return
	}
	used := w.srvAfter.Sub(w.srvBefore)
	r.ServersCPUUsPerOp = CPUPerOpUs(0, used.CPU, r.Ops)
	if used.Reads >= 0 && r.Ops > 0 {
		r.ServersReadsPerOp = float64(used.Reads) / float64(r.Ops)
	}
}

// turns lets a contender that released wait for the next acquire.
type turns struct {
	mu   sync.Mutex
	cond *sync.Cond
}

func newTurns() *turns {
	t := &turns{}
	t.cond = sync.NewCond(&t.mu)
	return t
}

// next wakes the waiters: a contender acquired, or the run stops.
func (t *turns) next() {
	t.mu.Lock()
	t.cond.Broadcast()
	t.mu.Unlock()
}

// await returns once done reports true, checked at each next.
func (t *turns) await(done func() bool) {
	t.mu.Lock()
	for !done() {
		t.cond.Wait()
	}
	t.mu.Unlock()
}

// sleep waits for d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
