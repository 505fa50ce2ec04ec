package realsim

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redlock-go/redlock"
)

// Violation is one property a schedule broke.
type Violation struct {
	Kind   string // "exclusion", "fences", "late loss", "stuck"
	Detail string
}

// Result is one schedule's outcome.
type Result struct {
	Config     string
	Seed       uint64
	Violations []Violation
	Acquired   int // locks acquired
	Lost       int // locks whose Context was cancelled by a loss
	Attempts   int // TryLock and Lock calls
	Steps      int // commands sent to nodes
	Virtual    time.Duration
}

// RealTimeLimit is how long, in real time, Run waits for a schedule: one
// whose goroutines block where synctest cannot see it (a mutex, a channel
// made outside the bubble) stops virtual time without a deadlock, and
// would hang. Past it, Run reports the schedule stuck and returns, leaving
// its goroutines behind.
var RealTimeLimit = time.Minute

// runs counts the schedules under way, those Run gave up on included: a
// test that unblocks one waits for it before it returns, as the schedule
// still uses its *testing.T.
var runs sync.WaitGroup

// Run runs one schedule of cfg with seed: the real redlock.Client, one per
// process, over a faulty in-memory network, inside a synctest bubble so
// that its time is virtual (t must be a *testing.T: see the package
// documentation). It never hangs on a schedule that cannot end: past the
// horizon or the step bound the schedule is torn down and reported stuck,
// and so is a bubble whose goroutines are left blocked for good, or one
// that takes longer than RealTimeLimit.
func Run(t *testing.T, cfg Config, seed uint64) Result {
	if cfg.RunnerDefect != "" {
		defer plantRunnerDefect(cfg.RunnerDefect)()
	}
	done := make(chan Result, 1)
	runs.Add(1)
	go func() {
		defer runs.Done()
		done <- run(t, cfg, seed)
	}()
	timer := time.NewTimer(RealTimeLimit)
	defer timer.Stop()
	select {
	case r := <-done:
		return r
	case <-timer.C:
		return Result{Config: cfg.Name, Seed: seed, Violations: []Violation{{"stuck",
			fmt.Sprintf("no end after %v of real time: virtual time stopped (goroutines blocked where synctest does not see it)", RealTimeLimit)}}}
	}
}

func run(t *testing.T, cfg Config, seed uint64) (res Result) {
	res = Result{Config: cfg.Name, Seed: seed}
	func() {
		defer func() {
			// A bubble whose goroutines are blocked for good when its main
			// function returns panics in synctest.Test: that is a stuck
			// schedule, not a crash of the campaign.
			if p := recover(); p != nil {
				res.Violations = append(res.Violations, Violation{"stuck", fmt.Sprint("synctest: ", p)})
			}
		}()
		synctest.Test(t, func(*testing.T) {
			s := newSchedule(&cfg, seed)
			s.run()
			s.mu.Lock()
			defer s.mu.Unlock()
			res.Violations = append(res.Violations, s.violations...)
			res.Violations = append(res.Violations, check(&cfg, s.holdings)...)
			res.Violations = append(res.Violations, checkWaits(&cfg, s.calls, s.free)...)
			res.Violations = append(res.Violations, checkWriterWaits(&cfg, s.writes)...)
			res.Acquired, res.Attempts = len(s.holdings), s.attempts
			for _, h := range s.holdings {
				if h.lost {
					res.Lost++
				}
			}
			s.net.mu.Lock()
			res.Steps = s.net.steps
			s.net.mu.Unlock()
			res.Virtual = s.virtual
		})
	}()
	return res
}

// Trace hears, when set, every event of every schedule, with its virtual
// time: for a replay (redlock-realsim -trace).
var Trace func(format string, args ...any)

func trace(format string, args ...any) {
	if Trace != nil {
		Trace("%s "+format+"\n", append([]any{time.Now().Format("05.000000")}, args...)...)
	}
}

// holding is one acquired lock in the history, in virtual time.
type holding struct {
	proc, gor int
	key       string
	// kind is the primitive's side that holds: "mutex", "read", "write",
	// "all" or "permit"; keys are every key of an "all" holding, nil
	// otherwise; permits is a "permit" holding's K.
	kind    string
	keys    []string
	permits int
	lock    *redlock.Lock
	began   time.Time // the call that returned it began
	start   time.Time // Lock or TryLock returned it
	stop    time.Time // the holder stopped working under it
	until   time.Time // the latest validity the holder was told (Until)
	done    time.Time // its Context was cancelled
	lost    bool      // by a loss (a *LostError), not Unlock
	fence   uint64
}

// call is one Lock call.
type call struct {
	key        string
	start, end time.Time
}

// span is an interval of virtual time.
type span struct{ from, to time.Time }

type recBox struct{ h *holding }

type recKey struct{}

type schedule struct {
	cfg   *Config
	seed  uint64
	net   *network
	root  context.Context
	kill  context.CancelFunc
	start time.Time
	bg    group

	blocked    chan struct{} // never closed: DefectBlockedForever
	mu         sync.Mutex
	holdings   []*holding
	calls      []call            // Lock calls, for the long-wait checker
	writes     []call            // WLock calls, for the writer-wait checker
	free       map[string][]span // per key: when a quorum of nodes had it free
	violations []Violation
	attempts   int
	stuck      bool
	virtual    time.Duration
}

func newSchedule(cfg *Config, seed uint64) *schedule {
	s := &schedule{cfg: cfg, seed: seed, start: time.Now(), free: map[string][]span{}, blocked: make(chan struct{})}
	s.root, s.kill = context.WithCancel(context.Background())
	s.net = newNetwork(cfg, seed, s.reportStuck, &s.bg)
	return s
}

func (s *schedule) reportStuck(why string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.stuck {
		s.stuck = true
		s.violations = append(s.violations, Violation{"stuck", why})
	}
}

// tearDown ends a stuck schedule: every command fails at once, every
// caller's ctx is cancelled, every holder unlocks.
func (s *schedule) tearDown() {
	s.net.kill()
	s.kill()
}

func (s *schedule) spawn(f func()) {
	s.bg.add()
	go func() {
		defer s.bg.done()
		f()
	}()
}

// run runs the schedule to its end, in the bubble.
func (s *schedule) run() {
	cfg := s.cfg
	rng := newPRNG(s.seed)
	s.faults(rng)
	var workers group
	for p := range cfg.Procs {
		c, err := redlock.NewClient(front{s.net, p}, options(cfg, s.observer()))
		if err != nil {
			s.violations = append(s.violations, Violation{"config", err.Error()})
			return
		}
		for g := range cfg.Goroutines {
			wr := newPRNG(rng.Uint64())
			workers.add()
			go func() {
				defer workers.done()
				s.worker(c, p, g, wr)
			}()
		}
	}
	ended := make(chan struct{})
	if cfg.LongWait > 0 {
		s.spawn(func() { s.sample(ended) })
	}
	finished := workers.wait(cfg.horizon())
	close(ended)
	if !finished {
		s.reportStuck(fmt.Sprintf("virtual time passed the horizon %v with operations under way", cfg.horizon()))
		s.tearDown()
		if !workers.wait(10 * cfg.TTL) {
			s.violations = append(s.violations, Violation{"stuck", "operations still under way after the tear-down"})
		}
	}
	s.virtual = time.Since(s.start)
	// Let every message and restart in flight land: then the bubble's
	// goroutines have all returned.
	if !s.bg.wait(cfg.horizon()) {
		s.reportStuck("the network's goroutines did not finish")
		s.tearDown()
		s.bg.wait(cfg.horizon())
	}
	s.kill()
}

// sampleEvery is the step at which the long-wait checker looks at the
// nodes.
const sampleEvery = 2 * ms

// sample records, every sampleEvery until ended closes, the spans of time
// during which a quorum of nodes had each key free.
func (s *schedule) sample(ended <-chan struct{}) {
	quorum := s.cfg.Nodes/2 + 1
	from := make([]time.Time, s.cfg.Keys) // zero: not free at the last look
	t := time.NewTicker(sampleEvery)
	defer t.Stop()
	for {
		now := time.Now()
		for k := range from {
			free := s.net.freeOn(keyName(k)) >= quorum
			switch {
			case free && from[k].IsZero():
				from[k] = now
			case !free && !from[k].IsZero():
				trace("%s free on a quorum since %s", keyName(k), from[k].Format("05.000000"))
				s.mu.Lock()
				s.free[keyName(k)] = append(s.free[keyName(k)], span{from[k], now})
				s.mu.Unlock()
				from[k] = time.Time{}
			}
		}
		select {
		case <-t.C:
		case <-ended:
			s.mu.Lock()
			for k, f := range from {
				if !f.IsZero() {
					s.free[keyName(k)] = append(s.free[keyName(k)], span{f, now})
				}
			}
			s.mu.Unlock()
			return
		}
	}
}

// faults schedules the nodes' crashes, pauses and spurious announcements.
func (s *schedule) faults(rng *prng) {
	cfg, f := s.cfg, &s.cfg.Faults
	for range f.Crashes {
		at, node, d := rng.between(0, cfg.Length), rng.intn(cfg.Nodes), rng.between(f.RestartDelay[0], f.RestartDelay[1])
		s.spawn(func() {
			time.Sleep(at)
			if !s.net.setDown(node, true) {
				return // down already
			}
			trace("node %d crashes for %v (persistent: %v)", node, d, f.Persistent)
			time.Sleep(d)
			if !f.Persistent {
				s.net.cl.Restart(node) // keys and fence counters gone
			}
			s.net.setDown(node, false)
			trace("node %d is back", node)
		})
	}
	for range f.Pauses {
		at, node, d := rng.between(0, cfg.Length), rng.intn(cfg.Nodes), rng.between(0, f.MaxPause)
		s.spawn(func() {
			time.Sleep(at)
			trace("node %d pauses for %v", node, d)
			s.net.pause(node, d)
		})
	}
	for range f.Spurious {
		at, node, key := rng.between(0, cfg.Length), rng.intn(cfg.Nodes), keyName(rng.intn(cfg.Keys))
		if cfg.Prim == PrimPermit { // a permit's waiter hears its slots' releases
			key = permitKey(key, rng.intn(cfg.Permits))
		}
		s.spawn(func() {
			time.Sleep(at)
			s.net.cl.Announce(node, key)
		})
	}
}

func keyName(k int) string { return "key" + itoa(k) }

// observer follows the Lease's extensions: each one moves the holder's
// validity, which the late-loss checker compares the loss with.
func (s *schedule) observer() redlock.Observer {
	if !s.cfg.Lease {
		return redlock.Observer{}
	}
	return redlock.Observer{Extend: func(ev redlock.ExtendEvent) {
		box, _ := ev.Context.Value(recKey{}).(*recBox)
		if box == nil || ev.Err != nil {
			return
		}
		s.mu.Lock()
		h := box.h
		s.mu.Unlock()
		if h != nil {
			s.noteUntil(h, h.lock.Until())
		}
	}}
}

func (s *schedule) noteUntil(h *holding, u time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if u.After(h.until) {
		h.until = u
	}
}

// worker is one goroutine of a process: it locks, works, extends and
// unlocks until the schedule's length has passed.
func (s *schedule) worker(c *redlock.Client, p, g int, rng *prng) {
	cfg := s.cfg
	for time.Since(s.start) < cfg.Length && s.root.Err() == nil {
		time.Sleep(rng.between(cfg.Think[0], cfg.Think[1]))
		o := s.pick(rng)
		key := o.key
		try := rng.chance(cfg.Try)
		if cfg.WriterWait > 0 { // one writer, behind a stream of readers
			o.kind, try = "read", try && (p != 0 || g != 0)
			if p == 0 && g == 0 {
				o.kind = "write"
			}
		}
		box := &recBox{}
		base := context.WithValue(s.root, recKey{}, box)
		var ctx context.Context
		var cancel context.CancelFunc
		switch {
		case try:
			ctx, cancel = context.WithTimeout(base, cfg.TTL)
		case cfg.Defect == DefectNoDeadline:
			ctx, cancel = context.WithCancel(base)
		default:
			ctx, cancel = context.WithTimeout(base, rng.between(cfg.TTL/10, 3*cfg.TTL))
			if rng.chance(cfg.Cancel) { // the caller gives up early
				t := time.AfterFunc(rng.between(0, cfg.TTL), cancel)
				c := cancel
				cancel = func() { t.Stop(); c() }
			}
		}
		s.mu.Lock()
		s.attempts++
		s.mu.Unlock()
		var l *redlock.Lock
		var err error
		began := time.Now()
		switch {
		case o.kind != "mutex":
			trace("process %d goroutine %d: %s %v (try: %v)", p, g, o.kind, o.names(), try)
			l, err = o.take(ctx, c, try)
			trace("process %d goroutine %d: %s %v: %v", p, g, o.kind, o.names(), err)
			if o.kind == "write" && !try {
				s.mu.Lock()
				s.writes = append(s.writes, call{key, began, time.Now()})
				s.mu.Unlock()
			}
		case try:
			l, err = c.TryLock(ctx, key)
		default:
			trace("process %d goroutine %d: Lock %s", p, g, key)
			l, err = c.Lock(ctx, key)
			trace("process %d goroutine %d: Lock %s: %v", p, g, key, err)
			s.mu.Lock()
			s.calls = append(s.calls, call{key, began, time.Now()})
			s.mu.Unlock()
		}
		if err != nil {
			cancel()
			continue
		}
		s.hold(l, box, p, g, o, began, rng)
		cancel()
	}
}

// hold works under l, as a holder should: until its Context is cancelled
// or its work is done, extending it on the way if asked to; then unlocks.
func (s *schedule) hold(l *redlock.Lock, box *recBox, p, g int, o op, began time.Time, rng *prng) {
	cfg := s.cfg
	key := o.key
	h := &holding{proc: p, gor: g, key: key, kind: o.kind, keys: o.keys, permits: o.permits,
		lock: l, began: began, start: time.Now(), until: l.Until()}
	if cfg.Fencing {
		h.fence, _ = l.Fence()
	}
	s.mu.Lock()
	box.h = h
	s.holdings = append(s.holdings, h)
	s.mu.Unlock()
	lctx := l.Context()
	s.spawn(func() {
		<-lctx.Done()
		s.mu.Lock()
		h.done = time.Now()
		var lost *redlock.LostError
		h.lost = errors.As(context.Cause(lctx), &lost)
		s.mu.Unlock()
	})
	work := rng.between(cfg.Work[0], cfg.Work[1])
	deadline := time.Now().Add(work)
	if cfg.Defect == DefectNoDeadline {
		<-lctx.Done() // stops working at its loss, but never unlocks until torn down
		s.mu.Lock()
		h.stop = time.Now()
		s.mu.Unlock()
		<-s.root.Done()
		_ = l.Unlock(context.Background())
		return
	}
	if !cfg.Lease && rng.chance(cfg.Extend) && sleepOr(lctx.Done(), work/2) {
		ectx, cancel := context.WithTimeout(s.root, cfg.TTL)
		if l.Extend(ectx) == nil {
			s.noteUntil(h, l.Until())
		}
		cancel()
	}
	done := lctx.Done()
	if cfg.Defect == DefectWorkPastLoss {
		done = nil
	}
	sleepOr(done, time.Until(deadline))
	s.mu.Lock()
	h.stop = time.Now()
	s.mu.Unlock()
	switch cfg.Defect {
	case DefectBlockedForever:
		<-s.blocked
	case DefectBlockedOutside:
		<-blockedOutside
	}
	trace("process %d goroutine %d: Unlock %s", p, g, key)
	err := l.Unlock(context.Background())
	trace("process %d goroutine %d: Unlock %s: %v", p, g, key, err)
}

// blockedOutside is what DefectBlockedOutside waits on: a channel made
// outside every bubble, closed by its test once Run has given up.
var blockedOutside = make(chan struct{})

// sleepOr sleeps d unless done closes first; it reports whether it slept.
func sleepOr(done <-chan struct{}, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-done:
		return false
	}
}

// group counts goroutines, waited for on channels (durably blocking in a
// synctest bubble, where a sync.WaitGroup created outside it is not).
type group struct {
	mu   sync.Mutex
	n    int
	zero chan struct{}
}

func (g *group) add() {
	g.mu.Lock()
	if g.n == 0 {
		g.zero = make(chan struct{})
	}
	g.n++
	g.mu.Unlock()
}

func (g *group) done() {
	g.mu.Lock()
	g.n--
	if g.n == 0 {
		close(g.zero)
	}
	g.mu.Unlock()
}

// wait waits until no goroutine is counted, or d has passed: it reports
// which.
func (g *group) wait(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		g.mu.Lock()
		if g.n == 0 {
			g.mu.Unlock()
			return true
		}
		ch := g.zero
		g.mu.Unlock()
		select {
		case <-ch:
		case <-t.C:
			return false
		}
	}
}
