// Package measure is the benchmark loop shared by every library under test:
// C workers run acquire+release pairs, each pair timed into an HDR
// histogram, while the process's allocations and goroutine creations are
// counted around the measured window. The redlock command, its peer
// command (bench/peers) and the go test benchmarks all use it, so every
// figure comes from the same loop and the same histogram.
package measure

import (
	"context"
	"math"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Subject is a lock implementation bound to its servers.
type Subject interface {
	// Worker returns the state of one client goroutine that locks key.
	// Workers are created before the measured window starts.
	Worker(key string) Worker
}

// Worker is one client goroutine's view of a Subject. It is used by one
// goroutine only.
type Worker interface {
	// Pair acquires the lock once (no retries) and, if it won, releases it.
	// acquired is false when the lock was held by someone else, which is not
	// an error; err reports a failure of either step.
	Pair(ctx context.Context) (acquired bool, err error)
}

// Spec describes one measurement.
type Spec struct {
	// Clients is the number of worker goroutines (at least 1).
	Clients int
	// SharedKey makes every worker lock the same key (the contended case);
	// otherwise each worker has its own key.
	SharedKey bool
	// KeyPrefix prefixes the keys, so that cells do not share keys.
	KeyPrefix string
	// Duration bounds the measured window; Ops bounds the number of pairs
	// instead when it is positive (the go test benchmarks use b.N).
	Duration time.Duration
	Ops      int64
	// Warmup runs the loop, unmeasured, for this long first (connections
	// dialled, scripts loaded, pools filled).
	Warmup time.Duration
	// Servers, when set, is read at the measured window's edges: the
	// servers' CPU time (INFO cpu) and reads (INFO stats), reported per
	// pair in Result.ServersCPUUsPerOp and ServersReadsPerOp.
	Servers UsageReader
}

// UsageReader reads what some servers have spent (Servers does).
type UsageReader interface {
	Usage() (Usage, error)
}

// Histogram bounds: 100 ns to 60 s at 3 significant digits.
const (
	lowestNs  = 100
	highestNs = int64(60 * time.Second)
	sigFigs   = 3
)

// NewHistogram returns an empty latency histogram in nanoseconds with the
// bounds every Result uses.
func NewHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(lowestNs, highestNs, sigFigs)
}

// Result is one measurement. Latencies are in microseconds.
type Result struct {
	Ops      int64 `json:"ops"`
	Acquired int64 `json:"acquired"`
	Errors   int64 `json:"errors"`
	// FirstError is the text of the first error seen, if any.
	FirstError string  `json:"first_error,omitempty"`
	Seconds    float64 `json:"seconds"`
	// Throughput is pairs per second, contended failures included.
	Throughput float64 `json:"ops_per_sec"`
	MeanUs     float64 `json:"mean_us"`
	P50Us      float64 `json:"p50_us"`
	P90Us      float64 `json:"p90_us"`
	P99Us      float64 `json:"p99_us"`
	P999Us     float64 `json:"p999_us"`
	MaxUs      float64 `json:"max_us"`
	// AllocsPerOp and BytesPerOp are heap allocations per pair in the whole
	// process (runtime.MemStats), in-process servers and proxies included.
	AllocsPerOp float64 `json:"allocs_per_op"`
	BytesPerOp  float64 `json:"bytes_per_op"`
	// GoroutinesPerOp is goroutines created per pair in the whole process,
	// from runtime/metrics /sched/goroutines-created:goroutines.
	GoroutinesPerOp float64 `json:"goroutines_per_op"`
	// RoundsPerOp is the rounds (core.Driver.Begin calls) per pair, counted
	// exactly, for a Subject that is a RoundCounter; 0 otherwise.
	RoundsPerOp float64 `json:"rounds_per_op,omitempty"`
	// ClientCPUUsPerOp is the CPU time, user and system, of the process
	// that runs the loop (getrusage RUSAGE_SELF) over the measured window,
	// per pair, in µs; 0 where the platform does not say.
	ClientCPUUsPerOp float64 `json:"client_cpu_us_per_op,omitempty"`
	// ServersCPUUsPerOp is the CPU time of the cell's servers
	// (used_cpu_sys + used_cpu_user of INFO cpu, summed over the servers)
	// over the measured window, per pair, in µs; 0 when not measured
	// (Spec.Servers unset, or a server that does not report it).
	ServersCPUUsPerOp float64 `json:"servers_cpu_us_per_op,omitempty"`
	// ServersReadsPerOp is the reads of their clients' input the cell's
	// servers made over the measured window (total_reads_processed, summed
	// over the servers), per pair; 0 when not measured (Spec.Servers unset,
	// or a server that does not count them). With the
	// commands a pair sends, it says how many commands a read carried.
	ServersReadsPerOp float64 `json:"servers_reads_per_op,omitempty"`
	// ServersCPUError says why ServersCPUUsPerOp is 0 when reading it
	// failed.
	ServersCPUError string `json:"servers_cpu_error,omitempty"`
	// RepeatP50Us holds the p50 of every repeat of a cell measured more
	// than once (see Median), in run order; the other fields are the
	// median repeat's.
	RepeatP50Us []float64 `json:"repeat_p50_us,omitempty"`
	// RepeatThroughput holds the throughput of every round of a cell
	// measured in interleaved rounds (see MedianThroughput), in run
	// order; the other fields are the median round's.
	RepeatThroughput []float64 `json:"repeat_ops_per_sec,omitempty"`
	// RoundP50Us holds the p50 of every round of a repeated cell measured
	// in interleaved rounds (see MedianLatency), each its repeats'
	// median, in run order; the other fields are the median round's.
	RoundP50Us []float64 `json:"round_p50_us,omitempty"`
}

// RoundCounter is implemented by a Subject that counts the rounds its
// driver runs (bench/target's Variant). A measurement reads it at the
// edges of its window and reports the difference per pair in
// Result.RoundsPerOp.
type RoundCounter interface {
	Rounds() uint64
}

// FromHistogram fills the latency fields of r from h (nanoseconds).
func (r *Result) FromHistogram(h *hdrhistogram.Histogram) {
	us := func(ns int64) float64 { return float64(ns) / 1e3 }
	r.MeanUs = h.Mean() / 1e3
	r.P50Us = us(h.ValueAtQuantile(50))
	r.P90Us = us(h.ValueAtQuantile(90))
	r.P99Us = us(h.ValueAtQuantile(99))
	r.P999Us = us(h.ValueAtQuantile(99.9))
	r.MaxUs = us(h.Max())
}

// Counters is a snapshot of the process-wide counters a Result divides by
// its operations.
type Counters struct {
	Mallocs, Bytes, Goroutines uint64
	// CPU is the process's user+system CPU time (ProcessCPU); HasCPU is
	// false where the platform does not report it.
	CPU    time.Duration
	HasCPU bool
}

const goroutinesCreated = "/sched/goroutines-created:goroutines"

// samples is ReadCounters' metrics.Sample, kept so that reading the
// counters allocates nothing: at a window's edge, that allocation would
// count as the pairs'.
var (
	samplesMu sync.Mutex
	samples   = [1]metrics.Sample{{Name: goroutinesCreated}}
)

// ReadCounters reads the allocation and goroutine-creation counters. It
// stops the world briefly (runtime.ReadMemStats), so call it outside the
// timed window. The allocation count is read last, so that what the
// reading allocates does not count: the process's first metrics.Read
// sets up the runtime's metrics table (some fifty allocations); later
// readings allocate nothing.
func ReadCounters() Counters {
	var c Counters
	samplesMu.Lock()
	metrics.Read(samples[:])
	if v := samples[0].Value; v.Kind() == metrics.KindUint64 {
		c.Goroutines = v.Uint64()
	}
	samplesMu.Unlock()
	c.CPU, c.HasCPU = ProcessCPU()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	c.Mallocs, c.Bytes = ms.Mallocs, ms.TotalAlloc
	return c
}

// PerOp sets the per-pair counter fields of r from the counters before and
// after ops pairs.
func (r *Result) PerOp(before, after Counters, ops int64) {
	if ops <= 0 {
		return
	}
	n := float64(ops)
	r.AllocsPerOp = float64(after.Mallocs-before.Mallocs) / n
	r.BytesPerOp = float64(after.Bytes-before.Bytes) / n
	r.GoroutinesPerOp = float64(after.Goroutines-before.Goroutines) / n
	if before.HasCPU && after.HasCPU {
		r.ClientCPUUsPerOp = CPUPerOpUs(before.CPU, after.CPU, ops)
	}
}

// Key returns the key of worker i under spec.
func (s Spec) Key(i int) string {
	if s.SharedKey {
		return s.KeyPrefix + "shared"
	}
	return s.KeyPrefix + strconv.Itoa(i)
}

// Run measures subject under spec and returns the result.
func Run(ctx context.Context, subject Subject, spec Spec) Result {
	l := Prepare(subject, spec)
	if spec.Warmup > 0 {
		l.Warmup(ctx, spec.Warmup)
	}
	l.Go(ctx)
	return l.Result()
}

// Loop is a prepared measurement: its workers and histograms exist, so
// that starting it allocates nothing per pair. The go test benchmarks
// drive it directly to keep testing.B's own counters exact.
type Loop struct {
	spec    Spec
	rounds  RoundCounter // nil unless the subject counts rounds
	workers []Worker
	hists   []*hdrhistogram.Histogram
	stats   []workerStats
	elapsed time.Duration
	// before and after are the process counters around the window, read
	// once the workers exist, so their own creation is not counted.
	before, after Counters
	// roundsBefore and roundsAfter are the subject's round count at the
	// window's edges, when it has one.
	roundsBefore, roundsAfter uint64
	// serversBefore and serversAfter are the servers' Usage at the
	// window's edges, when Spec.Servers is set; serversErr the first
	// error reading it.
	serversBefore, serversAfter Usage
	serversErr                  error
}

type workerStats struct {
	ops, acquired, errors int64
	firstErr              error
	_                     [32]byte // keep workers' counters on separate cache lines
}

// failed counts a failed call with err, keeping the first error.
func (s *workerStats) failed(err error) {
	s.errors++
	if s.firstErr == nil {
		s.firstErr = err
	}
}

// Prepare creates the workers and histograms of a measurement.
func Prepare(subject Subject, spec Spec) *Loop {
	if spec.Clients < 1 {
		spec.Clients = 1
	}
	l := &Loop{spec: spec}
	l.rounds, _ = subject.(RoundCounter)
	for i := 0; i < spec.Clients; i++ {
		l.workers = append(l.workers, subject.Worker(spec.Key(i)))
		l.hists = append(l.hists, NewHistogram())
	}
	l.stats = make([]workerStats, spec.Clients)
	return l
}

// Warmup runs the loop for d without recording anything.
func (l *Loop) Warmup(ctx context.Context, d time.Duration) {
	var stop atomic.Bool
	var wg sync.WaitGroup
	for _, w := range l.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() && ctx.Err() == nil {
				_, _ = w.Pair(ctx) // warm-up: nothing is recorded
			}
		}()
	}
	t := time.NewTimer(d)
	select {
	case <-t.C:
	case <-ctx.Done():
		t.Stop()
	}
	stop.Store(true)
	wg.Wait()
}

// Go runs the measured window: until Spec.Ops pairs are done when it is
// positive, else for Spec.Duration. The worker goroutines are started, and
// wait, before the window opens and the counters are read.
func (l *Loop) Go(ctx context.Context) {
	var (
		stop   atomic.Bool
		budget atomic.Int64
		ready  sync.WaitGroup
		done   sync.WaitGroup
		start  = make(chan struct{})
	)
	counted := l.spec.Ops > 0
	budget.Store(l.spec.Ops)
	for i, w := range l.workers {
		h, st := l.hists[i], &l.stats[i]
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			ready.Done()
			<-start
			for ctx.Err() == nil {
				if counted {
					if budget.Add(-1) < 0 {
						return
					}
				} else if stop.Load() {
					return
				}
				t0 := time.Now()
				ok, err := w.Pair(ctx)
				_ = h.RecordValue(int64(time.Since(t0))) // up to 60 s, beyond any cell: see NewHistogram
				st.ops++
				if ok {
					st.acquired++
				}
				if err != nil {
					st.failed(err)
				}
			}
		}()
	}
	ready.Wait()
	if l.spec.Servers != nil {
		l.serversBefore, l.serversErr = l.spec.Servers.Usage()
	}
	// The window's timer is made before the counters are read: making it
	// allocates, and those allocations are not the pairs'.
	var t *time.Timer
	if !counted {
		t = time.NewTimer(time.Hour)
		t.Stop()
	}
	l.before = ReadCounters()
	if l.rounds != nil {
		l.roundsBefore = l.rounds.Rounds()
	}
	t0 := time.Now()
	close(start)
	if !counted {
		t.Reset(l.spec.Duration)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
		stop.Store(true)
	}
	done.Wait()
	l.elapsed = time.Since(t0)
	if l.rounds != nil {
		l.roundsAfter = l.rounds.Rounds()
	}
	l.after = ReadCounters()
	if l.spec.Servers != nil && l.serversErr == nil {
		l.serversAfter, l.serversErr = l.spec.Servers.Usage()
	}
}

// Result merges the workers' histograms and counts, and divides the
// process counters by the pairs done.
func (l *Loop) Result() Result {
	h := NewHistogram()
	var r Result
	for i, wh := range l.hists {
		h.Merge(wh)
		st := &l.stats[i]
		r.Ops += st.ops
		r.Acquired += st.acquired
		r.Errors += st.errors
		if st.firstErr != nil && r.FirstError == "" {
			r.FirstError = st.firstErr.Error()
		}
	}
	r.Seconds = l.elapsed.Seconds()
	if r.Seconds > 0 {
		r.Throughput = float64(r.Ops) / r.Seconds
	}
	r.FromHistogram(h)
	r.PerOp(l.before, l.after, r.Ops)
	if l.rounds != nil && r.Ops > 0 {
		r.RoundsPerOp = float64(l.roundsAfter-l.roundsBefore) / float64(r.Ops)
	}
	if l.spec.Servers != nil {
		if l.serversErr != nil {
			r.ServersCPUError = l.serversErr.Error()
		} else {
			used := l.serversAfter.Sub(l.serversBefore)
			r.ServersCPUUsPerOp = CPUPerOpUs(0, used.CPU, r.Ops)
			if used.Reads >= 0 && r.Ops > 0 {
				r.ServersReadsPerOp = float64(used.Reads) / float64(r.Ops)
			}
		}
	}
	if math.IsNaN(r.MeanUs) {
		r.MeanUs = 0
	}
	return r
}
