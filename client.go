package redlock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strconv"
	"time"

	"github.com/redlock-go/redlock/core"
)

// Options configure a Client: what it honours, and nothing else. The
// zero value is safe: a 10 s TTL, the distlock page's drift allowance,
// multiplexed rounds, Lock woken by release announcements (or paced by
// random delays of 50–250 ms), no fencing, no lease, the driver's clock.
type Options struct {
	// TTL is the keys' expiry on the nodes, a whole number of
	// milliseconds (Redis PX). Zero: 10 s, long against a round trip
	// and the node timeout, short enough that a crashed holder frees the
	// lock soon. A lock's validity is the TTL less its acquisition's
	// time and the drift allowance.
	TTL time.Duration
	// NodeTimeout bounds every command to every node, release and
	// cleanup included. Zero: TTL/200 within [5 ms, 1 s]. The TTL less
	// the drift allowance must leave the loss margin, two round bounds (a
	// round bound is the node timeout, N of them when Sequential), or no
	// lock could be kept: NewClient refuses it.
	NodeTimeout time.Duration
	// DriftPPM and DriftFixed are the clock-drift allowance taken off
	// every validity: DriftPPM parts per million of the TTL, in
	// [0, 1000000), plus DriftFixed. Zero: 10000 (1%) and 2 ms, the
	// distlock page's, for clock-rate error and Redis's 1 ms expiry
	// granularity.
	DriftPPM   int64
	DriftFixed time.Duration
	// FanOut is how a round reaches its nodes: Multiplexed (the zero
	// value: one round trip for all) or Sequential.
	FanOut FanOut
	// Backoff is the delay between Lock's attempts where it polls, and
	// before a Lease's retry of an extension: see Backoff. Zero:
	// RandomDelay(50*time.Millisecond, 250*time.Millisecond).
	Backoff Backoff
	// MaxExtensions bounds how often one lock is extended, by Extend or
	// a Lease (the distlock page's liveness rule): ErrExtensionLimit
	// past it. Zero: 10, or no bound but Lease.MaxHold where that is
	// set. Negative forbids extension, and a Lease with it.
	MaxExtensions int
	// Fencing makes every acquisition raise a fence (Lock.Fence)
	// strictly greater than the fences of every earlier holder of the
	// key, for storage that refuses stale writers: see core's
	// "Fencing". It costs one more round per acquisition, and one
	// counter key per locked key on every node.
	Fencing bool
	// Fair queues the waiters of a key on the nodes, so that a release
	// hands the key to one waiter, first come first served across
	// processes, rather than wake them all to race for it: see core's
	// "Fair handoff". Every client of a key must agree on it; the nodes
	// must run Redis 5 or later, and the driver announce releases
	// (every driver of this module does), without Poll. TryLock never
	// queues.
	Fair bool
	// Lease, when set, keeps every lock alive in the background until
	// Unlock, within its bounds. Nil: a lock lives until its validity
	// runs out unless Extend is called.
	Lease *Lease
	// Poll makes Lock sleep Backoff's delays between attempts, as the
	// distlock page and redsync do. By default, over a driver that
	// announces releases (core.Announcer: every driver of this module),
	// Lock waits for a release to be announced, or for the holder's keys
	// to expire, and then tries again at once; see Client.Lock.
	Poll bool
	// Clock is the one clock of the Client and of its Driver's deadlines.
	// Nil: the driver's own (every driver of this module has one: the
	// system clock unless its Options.Clock set another). A Clock set here
	// must be the driver's; NewClient refuses any other, and a driver that
	// does not say which clock it reads (no Clock method).
	Clock Clock
	// Observer receives typed events of what the Client does: see
	// Observer. The zero Observer costs nothing.
	Observer Observer
	// Logger gets the Client's warnings (one: that the driver does not
	// announce releases, so Lock polls). Nil logs nothing. A driver of
	// this module takes its own, drivers.Options.Logger, at Dial.
	Logger *slog.Logger
}

// Lease is the automatic extension of a Client's locks: each lock is
// extended once Fraction of its validity has passed (a lock won late,
// with too little validity left after that, at the latest instant an
// extension round can still end in time), through core's
// Lease (a quorum, and validity counted from the round; a lost key is
// never re-created), until Unlock, until an extension proves the lock lost
// or none can end in time, or until the bound is reached. Either way the
// lock's Context is cancelled with the cause, a round's bound before the
// validity ends.
type Lease struct {
	// Fraction of the validity after which the lease extends, in (0, 1):
	// 1.0/3 extends a 10 s lock every 3.3 s, leaving two thirds of its
	// validity for the extension and its retries. What is left after it,
	// (1 − Fraction) of the TTL less the drift allowance, must cover the
	// loss margin (see NodeTimeout), or NewClient refuses it.
	Fraction float64
	// MaxHold bounds how long the lease keeps one lock, from its
	// acquisition: at MaxHold the lock's Context is cancelled with a cause
	// that matches ErrExtensionLimit. It must be at least the TTL. Zero:
	// Options.MaxExtensions alone bounds the lease; a MaxHold set with
	// Options.MaxExtensions zero lifts its default of 10 extensions.
	MaxHold time.Duration
}

// Client takes locks on a Driver's nodes and returns handles to them. It
// is safe for concurrent use. It is the one runner of core's step values:
// it does the I/O, the waiting and the goroutines that core decides on.
// The Driver stays the caller's: close it after every lock is unlocked.
type Client struct {
	drv   Driver
	spec  core.Spec
	clock Clock
	lease bool      // Options.Lease: every lock has a watcher that extends it
	room  *waitRoom // Lock's waiters; nil: Lock polls
	fair  bool      // Options.Fair: the nodes queue the waiters
	seq   bool      // Options.FanOut is Sequential: read once, not per round
	// monotonic: a reading within an operation may be its start's plus
	// the monotonic time since (nowAfter): the system clock, not Fair.
	monotonic bool

	obs    Observer
	timing bool // obs has a function whose event carries times and votes
}

// clockedDriver is a Driver that says which clock its deadlines read.
type clockedDriver interface{ Clock() core.Clock }

// NewClient checks opts against d and returns a Client, or an error that
// matches ErrInvalidConfig, before anything is sent: a nil driver (typed
// or not), no nodes or more than core.MaxNodes, a node given twice, a
// field out of its documented range, a TTL that leaves no lock the loss
// margin (Options.NodeTimeout), a Lease whose Fraction is not in (0, 1)
// or leaves less than the loss margin after it, whose MaxHold is negative
// or below the TTL, or that comes with
// extension forbidden (negative MaxExtensions), Fair with Poll or over a
// driver that does not announce releases, and a Clock that is not the
// driver's.
func NewClient(d Driver, opts Options) (*Client, error) {
	if isNil(d) {
		return nil, invalid("driver is nil")
	}
	cfg := core.Config{TTL: opts.TTL, NodeTimeout: opts.NodeTimeout, DriftPPM: opts.DriftPPM, DriftFixed: opts.DriftFixed,
		FanOut: opts.FanOut, Retry: opts.Backoff.policy(), MaxExtensions: opts.MaxExtensions,
		Fencing: opts.Fencing, Fair: opts.Fair, Tokens: CryptoTokens(), Jitter: NewJitter()}
	if l := opts.Lease; l != nil {
		switch {
		case !(l.Fraction > 0 && l.Fraction < 1): // NaN too
			return nil, invalid("Lease.Fraction " + strconv.FormatFloat(l.Fraction, 'g', -1, 64) + " is not in (0, 1)")
		case l.MaxHold < 0:
			return nil, invalid("Lease.MaxHold " + l.MaxHold.String() + " is negative")
		case cfg.MaxExtensions < 0:
			return nil, invalid("a Lease with MaxExtensions " + strconv.Itoa(cfg.MaxExtensions) + ": extension is forbidden")
		}
		cfg.LeaseFraction, cfg.MaxHold = l.Fraction, l.MaxHold
	}
	clock, err := clockOf(d, opts.Clock)
	if err != nil {
		return nil, err
	}
	spec, err := core.NewSpec(d, cfg)
	if err != nil {
		return nil, err
	}
	c := &Client{drv: d, spec: spec, clock: clock, lease: cfg.LeaseFraction > 0, fair: cfg.Fair,
		seq: spec.Config().FanOut == core.Sequential,
		obs: opts.Observer, timing: opts.Observer.timed()}
	_, system := clock.(core.SystemClock)
	c.monotonic = system && !cfg.Fair
	ann, announces := d.(core.Announcer)
	switch {
	case c.fair && (opts.Poll || !announces):
		// A waiter would not hear that the key was handed to it, which
		// then waits out the handoff at every turn.
		return nil, invalid("Fair needs a driver that announces releases (core.Announcer), and no Poll")
	case opts.Poll:
	case announces:
		c.room = newWaitRoom(ann, spec, clock, c.obs.Waiters)
	default:
		log := opts.Logger
		if log == nil {
			log = slog.New(slog.DiscardHandler)
		}
		log.Warn("redlock: the driver does not announce releases: Lock polls", "driver", fmt.Sprintf("%T", d))
	}
	return c, nil
}

// isNil reports whether d is nil or a nil pointer, map, slice, channel or
// function in an interface: calling it would panic.
func isNil(d Driver) bool {
	if d == nil {
		return true
	}
	switch v := reflect.ValueOf(d); v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Chan, reflect.Func, reflect.Interface:
		return v.IsNil()
	}
	return false
}

// clockOf returns the one clock of a Client over d: the driver's, which
// a clock given in Options must be.
func clockOf(d Driver, given Clock) (Clock, error) {
	cd, ok := d.(clockedDriver)
	switch {
	case !ok && given == nil:
		return core.SystemClock{}, nil
	case !ok:
		return nil, invalid(fmt.Sprintf("the driver %T does not say which clock its deadlines read (no Clock method): it cannot honour Options.Clock", d))
	}
	own := cd.Clock()
	switch {
	case own == nil:
		own = core.SystemClock{}
	case isNilClock(own):
		return nil, invalid("the driver's clock is nil")
	}
	if given == nil || sameClock(given, own) {
		return own, nil
	}
	return nil, invalid(fmt.Sprintf("Options.Clock %T is not the driver's clock %T: pass it to the driver's Dial (Options.Clock) so that deadlines and validity read one clock", given, own))
}

func isNilClock(c Clock) bool {
	v := reflect.ValueOf(c)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// sameClock compares two clocks without panicking on incomparable ones.
func sameClock(a, b Clock) bool {
	ta, tb := reflect.TypeOf(a), reflect.TypeOf(b)
	return ta == tb && ta.Comparable() && a == b
}

// TryLock makes one attempt to lock key. It returns ErrTaken when others
// hold it, ErrQuorumUnreachable when too few nodes answered, ErrNotHeld
// when the attempt won too late: with less validity than the loss margin
// (two round bounds), which the lock needs to be extended before its
// loss is declared, ErrCancelled when ctx
// ended first, and ErrInvalidConfig for bad input, sent nowhere. A failed
// attempt leaves no key behind.
func (c *Client) TryLock(ctx context.Context, key string) (*Lock, error) {
	return c.lock(ctx, key, true)
}

// Lock locks key, trying again after each failed attempt until it holds
// the lock or ctx ends.
//
// Between attempts it waits for the key's release: the release script
// announces each deletion on the key's channel, and the driver's one
// subscription connection per node relays it. Lock tries again once a
// quorum of nodes is announced free, or enough of the nodes the holder
// held, or when the holder's keys expire (a crashed holder), as learnt
// from the failed attempt; announcements are hints, and every attempt is
// the usual quorum round. Within the Client, one waiter per key makes the
// attempts and the others queue behind it; a Lock of a key that others of
// the Client wait for, or that a Lock of the Client holds, queues without
// an attempt first. Where a node's announcements are not heard (its
// subscription is down, or refused: said once in the log), Lock waits at
// most Options.Backoff's delay, as with Options.Poll, which always does.
//
// When ctx's deadline ends a wait, Lock returns the last attempt's error
// (ErrTaken, typically), or ErrCancelled with the deadline as its cause
// if it made none (it queued behind others of the Client). ctx
// cancelled, or ending during an attempt, gives ErrCancelled. Errors are
// otherwise TryLock's.
func (c *Client) Lock(ctx context.Context, key string) (*Lock, error) {
	return c.lock(ctx, key, false)
}

func (c *Client) lock(ctx context.Context, key string, once bool) (*Lock, error) {
	return c.take(ctx, core.Target{Key: key}, once)
}

// take is the acquisition of t by every kind of lock: Lock and TryLock
// (the mutex), RLock, WLock, LockAll and their Try variants.
func (c *Client) take(ctx context.Context, t core.Target, once bool) (*Lock, error) {
	if ctx == nil {
		return nil, errNilContext
	}
	if c.timing {
		return c.lockObserved(ctx, t, once)
	}
	g, _, at, counted, err := c.acquire(ctx, t, once, nil)
	if err != nil {
		return nil, err
	}
	if c.obs.Fence != nil {
		c.fenced(ctx, t.Key, g)
	}
	return c.locked(ctx, g, at, counted), nil
}

// fenced tells the Observer the fence g raised, under Options.Fencing.
func (c *Client) fenced(ctx context.Context, key string, g core.Grant) {
	if f := c.obs.Fence; f != nil && c.spec.Config().Fencing {
		f(FenceEvent{Context: ctx, Key: key, Fence: g.Fence()})
	}
}

// locked returns the Lock of g, won at at, that the wait room counts as
// counted (the zero held: not counted).
func (c *Client) locked(ctx context.Context, g core.Grant, at time.Time, counted core.Held) *Lock {
	l := &Lock{c: c, ctx: ctx, grant: g, at: at, counted: counted} // the one allocation of a Lock without a Lease
	if c.lease {
		l.leased = c.newState(ctx, g, at)
		l.leased.start(c)
	}
	return l
}

// makeHeard makes up for a quiet release (Grant.WithHandoff) whose
// waiter left without the key, nobody of this Client left to take it
// (core.Ready.HandOn, core.Ready.Try): other processes' waiters heard nothing,
// and would wait for the old key's expiry. With Fair (handOn), the
// Spec.HandOn round, which hands the nodes' free key to the first process
// in their queue; without (try), a TryLock and its Unlock, which
// announces. Both run detached from ctx's cancellation, as a cleanup
// does; neither's outcome is the caller's: a key found taken is its
// holder's to announce.
func (c *Client) makeHeard(ctx context.Context, key string, handOn, try bool) {
	ctx = context.WithoutCancel(ctx)
	switch {
	case handOn:
		now := c.clock.Now()
		if r, err := c.spec.HandOn(key, now); err == nil {
			c.run(ctx, &r, how{started: now})
		}
	case try:
		if l, err := c.lock(ctx, key, true); err == nil {
			_ = l.Unlock(ctx) // its errors are the next holder's to meet
		}
	}
}

// lockObserved is take for a Client with an Observer that times.
func (c *Client) lockObserved(ctx context.Context, t core.Target, once bool) (*Lock, error) {
	key := t.Key // a multi-key lock's first key
	vl := c.newVoteLog(ctx)
	defer vl.free()
	start := c.now(vl) // the acquisition's start too
	g, attempts, _, counted, err := c.acquire(ctx, t, once, vl)
	end := vl.last // the acquisition's last reading: its end
	if f := c.obs.Acquire; f != nil {
		f(AcquireEvent{Context: ctx, Key: key, Try: once, Outcome: OutcomeOf(err), Err: err,
			Attempts: attempts, Start: start, Duration: end.Sub(start), Fence: g.Fence(), Votes: vl.list()})
	}
	if err != nil {
		return nil, err
	}
	c.fenced(ctx, key, g)
	return c.locked(ctx, g, end, counted), nil
}

var errNilContext = invalid("context is nil (use context.Background())")

// acquire is the one acquisition loop, of every kind of lock: it drives
// a core.Acquisition of t over the driver, does its waits, and turns
// ctx's end into Cancel or GiveUp. A Try's acquisition (core's
// Spec.TryTarget) makes one attempt and never waits; Lock waits on the
// Client's wait room, or polls where nothing is announced. The other
// kinds never enter the wait room, whose queue, handoff and followers
// are the mutex's: readers share a key, and one waiter of a multi-key
// lock must not hold up another whose keys are free. Each of their
// waiters listens to its own keys' announcements instead (listener).
//
// It returns the number of acquire rounds sent too, and the clock's
// reading at the end of the last round (for a grant: when it was won).
// vl, when not nil, keeps the votes of the last acquire round for an
// observer.
func (c *Client) acquire(ctx context.Context, t core.Target, once bool, vl *voteLog) (_ core.Grant, attempts int, at time.Time, counted core.Held, _ error) {
	var now time.Time
	if vl != nil {
		now = c.startAt(vl)
	} else {
		now = c.clock.Now()
	}
	var a core.Acquisition
	var err error
	if once {
		a, err = c.spec.TryTarget(t, core.Token{}, now) // one attempt, which never queues
	} else {
		a, err = c.spec.AcquireTarget(t, core.Token{}, now)
	}
	if err == nil && t.Kind == core.KindAll {
		err = c.checkKeys(t.Keys)
	}
	if err != nil {
		return core.Grant{}, 0, time.Time{}, core.Held{}, err
	}
	key, mutex := t.Key, t.Kind == core.KindMutex
	started := now  // the reading a's round started at; zero: unknown
	var w *waiter   // joined at the first wait: the uncontended path allocates nothing here
	var l *listener // the same, for a kind other than the mutex
	if mutex && !once && c.room != nil && c.room.busy(key, now) {
		// Others of this Client wait for the key, or hold it: wait behind
		// them rather than attempt, for the release this Client hears
		// first, or with Fair for its place in the nodes' queue.
		w = c.room.join(ctx, key)
		a.WaitAgain(c.now(vl))
	}
	for {
		switch a.Phase() {
		case core.PhaseRound:
			attempt, now := c.advance(ctx, &a, started, vl)
			if attempt {
				attempts++
			}
			at, started = now, now // a round that follows starts at now
			if w != nil && a.Phase() == core.PhaseWait {
				w.heardAt = time.Time{} // a new wait: only a release heard in it makes a handoff
			}
		case core.PhaseWait:
			started = time.Time{} // the wait reads the clock: a round after it reads it again
			switch {
			case !mutex:
				if l == nil && c.room != nil {
					l = c.room.listen(t)
				}
				c.waitAlone(ctx, &a, l, vl)
			case w == nil && c.room != nil:
				w = c.room.join(ctx, key)
				fallthrough
			default:
				c.wait(ctx, &a, w, vl)
			}
		default:
			g, err := a.Result()
			if l != nil {
				l.stop()
			}
			if w != nil {
				if f := c.obs.Handoff; f != nil && err == nil && !w.heardAt.IsZero() {
					f(HandoffEvent{Context: ctx, Key: key, Duration: at.Sub(w.heardAt)}) // at: when it was won
				}
				var handOn, try bool
				if counted, handOn, try = c.room.leave(key, w, g); handOn || try {
					c.makeHeard(ctx, key, handOn, try) // it left a quiet release unheard
				}
			} else if c.room != nil && mutex {
				counted = c.room.ended(key, &a) // a Lock counted, or a head woken (core.Room.Ended)
			}
			return g, attempts, at, counted, err
		}
	}
}

// wait is one wait of PhaseWait: until WakeAt, an announcement the head
// hears, its turn for a waiter behind the head, or ctx's end.
func (c *Client) wait(ctx context.Context, a *core.Acquisition, w *waiter, vl *voteLog) {
	var poke <-chan struct{}
	head := true
	if w != nil {
		poke = w.arm()
		now := c.now(vl)
		// The watch's lock comes before the queue's: read it first.
		var heard uint32
		heard, head = w.look(a, now, w.q.watch.Listening())
		if heard != 0 {
			w.heardAt = now // the attempt it starts may win: a handoff
		}
	}
	var d time.Duration = -1 // a waiter behind the head waits for its turn
	if head {
		d = max(a.WakeAt().Sub(c.clock.Now()), 0)
	}
	switch c.sleep(d, poke, ctx.Done()) {
	case slept:
		a.Wake(c.now(vl))
	case cancelled:
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			a.GiveUp(c.now(vl)) // the key was still held: the last attempt's error
		} else {
			a.Cancel(c.now(vl), ctx.Err())
		}
	}
	// poked: hear what came
}

// advance drives a's round over the driver and moves it on (RoundDone);
// ctx ending during an attempt cancels it, and a cleanup round runs
// detached from ctx's cancellation, bounded by the node timeout only.
//
// It reports whether the round was an attempt (an acquire round) that was
// sent, and the reading it moved a on at; vl, when not nil, hears the
// answers, and keeps an attempt's. started is the reading a's round
// started at (zero: unknown), as run takes it.
func (c *Client) advance(ctx context.Context, a *core.Acquisition, started time.Time, vl *voteLog) (attempt bool, now time.Time) {
	switch op := a.Round().Command().Op; {
	case op == core.OpRelease: // the cleanup of a failed attempt
		c.run(ctx, a.Round(), how{started: started, vl: vl})
	case ctx.Err() != nil:
		now = c.now(vl)
		a.Cancel(now, ctx.Err())
		return false, now
	default:
		attempt = op == core.OpAcquire || op == core.OpAcquireFenced
		if cancelled, _ := c.run(ctx, a.Round(), how{started: started, cancel: ctx.Done(), vl: vl, keep: attempt}); cancelled {
			now = c.now(vl)
			a.Cancel(now, ctx.Err())
			return attempt, now
		}
	}
	now = c.nowAfter(vl, started)
	a.RoundDone(now)
	return attempt, now
}

// nowAfter is now(vl) for a reading later in the operation that read
// start (zero: none known). With the system clock it returns start plus
// the monotonic time since: one read of the monotonic clock, where
// time.Now reads the wall clock too. Readings are compared by their
// monotonic parts, so only the wall part differs from time.Now's, by a
// step of the wall clock since start. A Fair Client reads both: its
// tickets are wall-clock readings that other processes compare. Given a
// voteLog, it reads as now(vl) does, which keeps the reading for the
// observer; a sequential round's per-node reads pass none.
func (c *Client) nowAfter(vl *voteLog, start time.Time) time.Time {
	if vl != nil || !c.monotonic || start.IsZero() {
		return c.now(vl)
	}
	return start.Add(time.Since(start))
}

// how is how run drives a round: the runner's inputs of a round, in one
// value. The round itself is run's parameter apart: escape analysis
// treats the pointers of one parameter as one, and cancel, vl and news
// reach the driver's interface calls, which would move every round to
// the heap (and an Acquisition, 1 KiB, with its round).
type how struct {
	// started is the clock reading the round started at, taken just
	// before, or zero when unknown: a sequential round's first node's
	// deadline counts from it rather than from a reading of its own,
	// which would be the same but for the few steps in between (a clock
	// read costs more than a step).
	started time.Time
	// cancel, when closed, ends the round (nil: never); so does the
	// clock reading until or later between two replies (zero: no such
	// bound).
	cancel <-chan struct{}
	until  time.Time
	// vl, when not nil, hears every answer for an observer, and keeps
	// the round's when keep (the votes kept before are dropped).
	vl   *voteLog
	keep bool
	// news, if early, is told to the wait room once every command of a
	// multiplexed round is on its way (core.Flusher), before any reply
	// is awaited: a command sent after that takes effect on each node
	// after the round's. It is not told over a batch that cannot say
	// so, nor for a sequential round.
	news roomNews
}

// run drives r over one driver batch, as h says, until it is done. It
// returns true if h's cancel or until ended it first, and the early
// release as it was told (roomNews.tell), the zero told if it was not.
func (c *Client) run(ctx context.Context, r *core.Round, h how) (cancelled bool, early told) {
	started, cancel, until, vl, news := h.started, h.cancel, h.until, h.vl, h.news
	b := c.drv.Begin(ctx)
	defer b.Close()
	sequential := c.seq
	now := started // a multiplexed round's deadline is its own: now is not used
	// Every command of a round is the round's Command, copied once
	// here rather than out of each Next's result: Command is 72 bytes,
	// never in registers, and a copy read back straight after it was
	// written stalls the CPU. The reply is received into a variable of
	// the loop's for the same reason.
	cmd := r.Command()
	var rep core.Reply
	var got bool
	// A multiplexed round is woken once for the replies it needs
	// (Round.Needed), not once per reply, unless an observer times each.
	g, gather := b.(core.Gatherer)
	gather = gather && !sequential && vl == nil
	if vl != nil {
		vl.begin(r, h.keep)
	}
	for !r.Done() {
		// Replies already in are taken as they came, one at a time
		// before gathering: cancel and until count between waits.
		if !gather || g.Ready() == 0 {
			if cancel != nil && isClosed(cancel) {
				return true, early
			}
			if !until.IsZero() && !c.clock.Now().Before(until) {
				return true, early
			}
		}
		if sequential && now.IsZero() { // each node's deadline counts from its send
			now = c.nowAfter(nil, started)
		}
		for {
			node, _, deadline, ok := r.Next(now)
			if !ok {
				break
			}
			if vl != nil {
				c.sending(vl, node, now)
			}
			b.Send(node, cmd, deadline)
		}
		if sequential {
			now = time.Time{} // read again for the next node
		} else if news.early {
			if f, ok := b.(core.Flusher); ok {
				f.Flush()
				early = news.tell()
			}
			news = roomNews{}
		}
		if r.Done() { // a cleanup that awaits nobody
			break
		}
		if gather {
			rep, got = g.Gather(r.Needed(), cancel)
		} else {
			rep, got = b.Receive(cancel)
		}
		if !got {
			return true, early
		}
		if r.Receive(rep) && vl != nil {
			c.voted(vl, rep)
		}
	}
	return false, early
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// What ended a sleep.
const (
	slept = iota
	poked
	cancelled
)

// sleep waits d on the Client's clock (forever for a negative d), or until
// poke or cancel is closed; either may be nil.
func (c *Client) sleep(d time.Duration, poke, cancel <-chan struct{}) int {
	if d == 0 {
		select {
		case <-cancel:
			return cancelled
		default:
			return slept
		}
	}
	var timeout <-chan struct{}
	if d > 0 {
		done := make(chan struct{})
		t := c.clock.AfterFunc(d, func() { close(done) })
		defer t.Stop()
		timeout = done
	}
	select {
	case <-timeout:
		return slept
	case <-poke:
		return poked
	case <-cancel:
		return cancelled
	}
}
