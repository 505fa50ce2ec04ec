package redlock

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redlock-go/redlock/core"
)

// Lock is a held lock: a handle to one acquisition of a key, returned by
// Client.TryLock and Client.Lock as a pointer (and by the other kinds'
// RLock, WLock, LockAll and their Try variants), which may be stored and
// shared; its methods are safe for concurrent use. Do not copy the Lock
// it points to (go vet's copylocks check says so).
//
// A Lock without a Lease costs no goroutine and no allocation beyond its
// own until its Context is first asked for or it is first extended: only
// then does it keep state of its own, and only a Context starts a
// goroutine, which watches the validity (and, with a Lease, extends it)
// until Unlock stops it.
//
// A nil *Lock, as TryLock and Lock return with an error, is unlocked, as
// is the zero Lock: Unlock and Extend return ErrUnlocked, Context a done
// context, Key "".
//
// Its times are readings of the Client's clock; with the system clock
// they carry monotonic readings, so a wall-clock step moves nothing.
type Lock struct {
	c        *Client
	ctx      context.Context // the acquiring ctx: its values reach Context
	grant    core.Grant      // as acquired: key, token and fence never change
	at       time.Time       // when it was won: its last round's end, for an Observer
	unlocked atomic.Bool
	leased   *lockState // with a Lease: the state, from the start
	counted  core.Held  // the wait room counts it (core.Ready.Held); zero: not
	// Otherwise st, nil until Context or Extend, stored once under
	// making.
	making sync.Mutex
	st     atomic.Pointer[lockState]
}

// lockState is what a Lock keeps once it is extended or watched.
type lockState struct {
	extending sync.Mutex // serialises extension rounds and Unlock's release

	mu       sync.Mutex
	lease    core.Lease
	values   context.Context // the acquiring ctx's values, without its cancellation
	at       time.Time       // the Lock's at
	key      string
	lost     error // the *LostError, once lost
	unlocked bool
	ctx      context.Context
	cancel   context.CancelCauseFunc
	watching bool          // the watcher was started
	stop     chan struct{} // closed by Unlock: the watcher returns
	poke     chan struct{} // an Extend moved the lease: the watcher looks again
	exited   chan struct{} // closed when the watcher has returned
}

// newState returns the state of a lock on g taken with ctx.
func (c *Client) newState(ctx context.Context, g core.Grant, at time.Time) *lockState {
	st := &lockState{lease: c.spec.Lease(g), values: context.WithoutCancel(ctx), at: at, key: g.Key()}
	st.ctx, st.cancel = context.WithCancelCause(st.values)
	return st
}

// load returns the Lock's state, or nil while it has none.
func (l *Lock) load() *lockState {
	if l.leased != nil {
		return l.leased
	}
	return l.st.Load()
}

// state returns the Lock's state, made at the first call.
func (l *Lock) state() *lockState {
	if st := l.load(); st != nil {
		return st
	}
	l.making.Lock()
	defer l.making.Unlock()
	if st := l.st.Load(); st != nil {
		return st
	}
	st := l.c.newState(l.ctx, l.grant, l.at)
	l.st.Store(st)
	if l.unlocked.Load() { // Unlock ran meanwhile and did not see st
		st.mu.Lock()
		st.unlocked = true
		st.cancel(ErrUnlocked)
		st.mu.Unlock()
	}
	return st
}

// watch starts st's watcher unless it runs, is lost or unlocked.
func (l *Lock) watch(st *lockState) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.watching || st.unlocked || st.lost != nil || l.unlocked.Load() {
		return // l.unlocked: Unlock began, and may have looked for a watcher to stop
	}
	st.start(l.c)
}

// start starts the watcher; st.mu is held, or st is not shared yet.
func (st *lockState) start(c *Client) {
	st.watching = true
	st.stop, st.poke, st.exited = make(chan struct{}), make(chan struct{}, 1), make(chan struct{})
	go c.watch(st)
}

// Key returns the locked key, a multi-key lock's first (LockAll); ""
// for a nil Lock.
func (l *Lock) Key() string {
	if l == nil {
		return ""
	}
	return l.grant.Key()
}

// Token returns the random token the lock's keys hold; the zero Token
// for a nil Lock.
func (l *Lock) Token() Token {
	if l == nil {
		return Token{}
	}
	return l.grant.Token()
}

// Until returns the instant, on the Client's clock, when the lock's
// validity ends unless it is extended: the local deadline for work done
// under it. It is the zero Time once the lock is lost or unlocked, and for
// a nil or zero Lock.
func (l *Lock) Until() time.Time {
	if l == nil || l.unlocked.Load() {
		return time.Time{}
	}
	st := l.load()
	if st == nil {
		return l.grant.ValidUntil()
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.lost != nil || st.unlocked {
		return time.Time{}
	}
	g := st.lease.Grant()
	return g.ValidUntil()
}

// Fence returns the lock's fencing token: strictly greater than the fence
// of every earlier holder of the key, as long as the nodes keep their
// counters (see core's "Fencing"). Pass it with every write to the storage
// the lock protects, and have the storage refuse a fence lower than one it
// has seen. A reader's (RLock) is no write fence, but a reading of the
// key's counters, never raised: at least the fence of every writer that
// held the key before the reader, so that a write fenced above it is a
// later writer's; it may be above the last writer's fence (a writer's
// failed attempts increment counters), and a later writer's fence may be
// equal or lower: do not pass it to a storage that refuses stale fences
// (docs/primitives.md). It returns ErrNoFencing on a
// Client without Options.Fencing, and ErrUnlocked on the nil Lock
// returned with an error.
func (l *Lock) Fence() (uint64, error) {
	if l == nil || l.c == nil {
		return 0, ErrUnlocked // the nil Lock returned with an error, or a zero Lock
	}
	if !l.c.spec.Config().Fencing {
		return 0, ErrNoFencing
	}
	return l.grant.Fence(), nil
}

// Context returns a context that is cancelled the moment the lock is lost
// or unlocked: when an extension proves others hold it, when it cannot be
// extended in time, when its validity is about to run out unextended,
// when the lease's bound is reached, or at Unlock. A loss is declared a
// round's bound (the node timeout; once per node when sequential) before
// Until, so that no extension is still in flight when the validity ends.
// context.Cause then says which: a *LostError (matching ErrLost, and
// through its cause ErrTaken, ErrQuorumUnreachable, ErrNotHeld or
// ErrExtensionLimit), or ErrUnlocked. It carries the values of the ctx the
// lock was taken with, not its cancellation. Do the work the lock protects
// under it. The first call starts the goroutine that watches the lock.
func (l *Lock) Context() context.Context {
	if l == nil || l.c == nil {
		return closedContext
	}
	st := l.state()
	l.watch(st)
	return st.ctx
}

// closedContext is the Context of a nil Lock.
var closedContext = func() context.Context {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(ErrUnlocked)
	return ctx
}()

// Extend resets the lock's keys to the TTL, with a quorum and validity
// counted from this round, through core's Lease. An extension that proves
// the lock lost cancels the Context and returns a *LostError; one that
// proves nothing (ErrQuorumUnreachable, ErrCancelled) leaves the lock as
// it was, valid until Until. It returns ErrUnlocked after Unlock, the
// *LostError after a loss, ErrExtensionLimit at Options.MaxExtensions, and
// ErrNotHeld when too little validity is left for a round to end before
// the loss would be declared; nothing is sent then.
func (l *Lock) Extend(ctx context.Context) error {
	switch {
	case ctx == nil:
		return errNilContext
	case l == nil, l.c == nil:
		return ErrUnlocked
	case l.unlocked.Load():
		return ErrUnlocked
	}
	st := l.state()
	st.extending.Lock()
	defer st.extending.Unlock()
	err := l.c.extend(ctx, st, ctx.Done(), false)
	st.mu.Lock()
	poke := st.poke
	st.mu.Unlock()
	if poke != nil {
		select {
		case poke <- struct{}{}: // the watcher reads the moved lease
		default:
		}
	}
	return err
}

// extend runs one extension of st's lease, which the caller asked for
// (cancel: ctx's Done) or the watcher's Wake started (cancel: the stop
// channel, lease true). st.extending is held.
func (c *Client) extend(ctx context.Context, st *lockState, cancel <-chan struct{}, lease bool) error {
	if !c.timing {
		return c.extendRound(ctx, st, cancel, nil)
	}
	vl := c.newVoteLog(ctx)
	defer vl.free()
	start := c.now(vl)
	err := c.extendRound(ctx, st, cancel, vl)
	if f := c.obs.Extend; f != nil && !errors.Is(err, ErrUnlocked) {
		f(ExtendEvent{Context: ctx, Key: st.key, Lease: lease, Outcome: OutcomeOf(err), Err: err,
			Start: start, Duration: vl.last.Sub(start), Votes: vl.list()})
	}
	return err
}

// extendRound is extend; vl, when not nil, hears the round's answers.
func (c *Client) extendRound(ctx context.Context, st *lockState, cancel <-chan struct{}, vl *voteLog) error {
	st.mu.Lock()
	switch {
	case st.unlocked:
		st.mu.Unlock()
		return ErrUnlocked
	case st.lost != nil:
		st.mu.Unlock()
		return st.lost
	}
	var started time.Time // the reading the round started at, if this call started it
	if st.lease.Phase() != core.PhaseRound {
		started = c.startAt(vl)
		if err := st.lease.Extend(started); err != nil {
			lost := c.settle(st)
			st.mu.Unlock()
			if lost != nil {
				return lost
			}
			return err
		}
	}
	until := st.lease.WakeAt() // in a round: LoseAt, reached only by a pause or a missed deadline
	st.mu.Unlock()
	r := st.lease.Round() // only the holder of st.extending drives it
	if cancelled, _ := c.run(ctx, r, how{started: started, cancel: cancel, until: until, vl: vl, keep: true}); cancelled {
		st.mu.Lock()
		defer st.mu.Unlock()
		st.lease.Wake(c.now(vl)) // past LoseAt, the lease abandons the round and declares the loss
		if lost := c.settle(st); lost != nil {
			return lost
		}
		return st.lease.Cancel(ctx.Err())
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	err := st.lease.RoundDone(c.now(vl))
	if lost := c.settle(st); lost != nil {
		return lost
	}
	return err
}

// settle records a loss the lease has declared, cancelling the Context;
// it returns the *LostError, or nil while the lease goes on. st.mu is
// held.
func (c *Client) settle(st *lockState) error {
	switch {
	case st.lost != nil:
		return st.lost
	case st.lease.Phase() != core.PhaseDone:
		return nil
	}
	g := st.lease.Grant()
	cause := st.lease.Err()
	st.lost = &LostError{Key: g.Key(), Cause: cause}
	if !st.unlocked {
		st.cancel(st.lost)
	}
	if f := c.obs.Loss; f != nil {
		f(LossEvent{Context: st.values, Key: g.Key(), Outcome: OutcomeOf(cause), Cause: cause,
			Held: c.clock.Now().Sub(st.at)})
	}
	return st.lost
}

// Unlock stops the lease and the watcher, waits until neither can send
// anything more, cancels the Context with ErrUnlocked, and releases the
// lock's keys on every node, detached from ctx's cancellation and bounded
// by the node timeout, returning only once every node has answered or
// timed out. No extension is sent after Unlock returns, and no goroutine
// or timer of the Lock is left.
//
// It returns nil once a quorum deleted the keys; the *LostError if the lock
// had been lost (its keys are released all the same); ErrNotHeld,
// ErrTaken or ErrQuorumUnreachable as core's Spec.Released says
// otherwise; ErrUnlocked, sending nothing, if it was unlocked before.
func (l *Lock) Unlock(ctx context.Context) error {
	switch {
	case ctx == nil:
		return errNilContext
	case l == nil, l.c == nil:
		return ErrUnlocked
	case !l.unlocked.CompareAndSwap(false, true):
		return ErrUnlocked
	}
	var lost error
	if st := l.load(); st != nil {
		st.mu.Lock()
		stop, exited := st.stop, st.exited
		st.mu.Unlock()
		if stop != nil {
			close(stop)
			<-exited
		}
		st.extending.Lock()
		defer st.extending.Unlock()
		st.mu.Lock()
		st.unlocked = true
		lost = st.lost
		if !mutUnlockKeepsContext {
			st.cancel(ErrUnlocked)
		}
		st.mu.Unlock()
	}
	c := l.c
	g := l.grant
	// The wait room is the mutex's: another kind's release hands nothing
	// on within the Client, and announces to every waiter.
	room := c.room != nil && g.Target().Kind == core.KindMutex
	var tell roomNews
	if room { // Fair has a room
		// The Room counts l no more (with Fair, before the followers are
		// counted), and says how the release hands the key on.
		tell = c.room.release(g.Key(), l.counted)
		g = tell.rel.Grant(g)
	}
	// This Client's next waiter of the key, if any, tries at once: as soon
	// as the release's commands are on their way, where the driver says
	// when (core.Flusher), its attempt then following them on each node;
	// otherwise once the release is done. A release that hands the key on
	// so announces nothing (Grant.WithHandoff); every MaxChain+1st is
	// open to other processes, and with Fair the nodes hand it to the
	// first waiter.
	var err error
	var early told
	if c.timing {
		early, err = c.releaseObserved(ctx, g, l.at, lost, tell)
	} else {
		early, err = c.release(ctx, g, nil, tell)
	}
	if room && !mutReleasedUntold {
		if early.ok {
			tell.rel = early.rel // told as soon as its commands were on their way
		}
		if handOn, try := c.room.released(g.Key(), tell.rel); handOn || try {
			c.makeHeard(ctx, g.Key(), handOn, try) // its waiters left without the key
		}
	}
	if lost != nil {
		return lost
	}
	return err
}

// release runs g's release round to its end; vl, when not nil, hears
// its answers. It tells the wait room news as soon as the round's
// commands are on their way, if the driver says when (run), and returns
// the early release as told; the zero told: not told.
func (c *Client) release(ctx context.Context, g core.Grant, vl *voteLog, news roomNews) (early told, err error) {
	var now time.Time
	if vl != nil {
		now = c.startAt(vl)
	} else {
		now = c.clock.Now()
	}
	r, err := c.spec.Release(g, now)
	if err != nil {
		return told{}, err
	}
	if t := r.Command().Ticket; t > 0 {
		c.room.queued(g.Key(), t) // Fair, followed: the Client's place in the nodes' queue
	}
	_, early = c.run(ctx, &r, how{started: now, vl: vl, keep: true, news: news})
	return early, c.spec.Released(g, &r)
}

// releaseObserved is release for a Client with an Observer, of a lock
// acquired at at and lost with lost (nil: not lost).
func (c *Client) releaseObserved(ctx context.Context, g core.Grant, at time.Time, lost error, news roomNews) (early told, err error) {
	vl := c.newVoteLog(ctx)
	defer vl.free()
	start := c.now(vl) // the round's start too
	early, err = c.release(ctx, g, vl, news)
	if f := c.obs.Release; f != nil {
		res := err
		if lost != nil {
			res = lost // what Unlock returns
		}
		f(ReleaseEvent{Context: ctx, Key: g.Key(), Outcome: OutcomeOf(res), Err: res,
			Start: start, Duration: vl.last.Sub(start), Held: start.Sub(at), Votes: vl.list()})
	}
	return early, err
}

// watch is a Lock's goroutine: it sleeps on the Client's clock until the
// lease's WakeAt, wakes it, and drives the extension rounds it starts,
// until the lease declares the lock lost or Unlock stops it.
func (c *Client) watch(st *lockState) {
	defer close(st.exited)
	for {
		st.mu.Lock()
		if c.settle(st) != nil {
			st.mu.Unlock()
			return
		}
		at := st.lease.WakeAt()
		st.mu.Unlock()
		d := at.Sub(c.clock.Now())
		if mutWatchFromAcquired {
			d = at.Sub(st.at) // the slip: timed from the acquisition, not from now
		}
		switch c.sleep(max(d, 0), st.poke, st.stop) {
		case cancelled:
			return
		case poked:
			continue
		}
		st.extending.Lock()
		st.mu.Lock()
		if isClosed(st.stop) {
			st.mu.Unlock()
			st.extending.Unlock()
			return
		}
		st.lease.Wake(c.clock.Now())
		extend := st.lease.Phase() == core.PhaseRound
		st.mu.Unlock()
		if extend {
			// A failed extension is in st's lease; the loop's settle
			// declares the loss and the Observer has heard it.
			_ = c.extend(st.values, st, st.stop, true)
		}
		st.extending.Unlock()
	}
}
