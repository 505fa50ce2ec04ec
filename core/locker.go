package core

import (
	"context"
	"time"
)

// Locker runs Redlock rounds against a Driver. It is immutable after New and
// safe for concurrent use; many Lockers (say, one per TTL) may share one
// Driver. It starts no goroutines and allocates nothing on the success
// paths of Acquire, Release and Extend; any I/O is the Driver's.
type Locker struct {
	drv    Driver
	cfg    Config
	n      int
	quorum int
	drift  time.Duration
}

// New checks cfg against the driver and returns a Locker, or an error that
// matches ErrInvalidConfig.
func New(d Driver, cfg Config) (*Locker, error) {
	if d == nil {
		return nil, invalid("driver is nil")
	}
	n := d.Nodes()
	c, err := cfg.withDefaults(n)
	if err != nil {
		return nil, err
	}
	if err := checkNodeNames(d, n); err != nil {
		return nil, err
	}
	return &Locker{
		drv:    d,
		cfg:    c,
		n:      n,
		quorum: Quorum(n),
		drift:  Drift(c.TTL, c.DriftPPM, c.DriftFixed),
	}, nil
}

// checkNodeNames rejects a nil node (an empty name) and the same node given
// twice: either would let fewer real masters than N make a "quorum".
func checkNodeNames(d Driver, n int) error {
	var names [MaxNodes]string
	for i := 0; i < n; i++ {
		names[i] = d.NodeName(i)
		if names[i] == "" {
			return invalid("node " + itoa(i) + " is nil (empty name)")
		}
		for j := 0; j < i; j++ {
			if names[j] == names[i] {
				return invalid("nodes " + itoa(j) + " and " + itoa(i) + " are the same node " + names[i])
			}
		}
	}
	return nil
}

// Config returns the configuration in force, defaults filled in.
func (l *Locker) Config() Config { return l.cfg }

// Nodes returns N and Quorum returns N/2+1.
func (l *Locker) Nodes() int  { return l.n }
func (l *Locker) Quorum() int { return l.quorum }

// Lock is a held lock: the key, the token that holds it, and how long it
// stays valid. It is a small value; the zero Lock holds nothing. Extend
// returns a new Lock: keep using the one it returns, which also tells
// when an extension proved the lock lost.
type Lock struct {
	key        string
	token      Token
	ttl        time.Duration
	drift      time.Duration // the drift allowance of ttl, fixed at acquisition
	end        time.Time     // clock reading at the end of the round that set validity
	validity   time.Duration // ttl − elapsed − drift of that round, from end
	extensions int
	lost       bool
	fence      uint64
}

// Key returns the locked key. Token returns the holder's token.
func (k Lock) Key() string  { return k.key }
func (k Lock) Token() Token { return k.token }

// TTL returns the expiry the keys were set with.
func (k Lock) TTL() time.Duration { return k.ttl }

// Fence returns the lock's fence when it was acquired by a Locker with
// Config.Fencing, and 0 otherwise. Fences of one key only grow: see the
// package documentation's "Fencing" for what that rests on. Extend keeps
// the fence.
func (k Lock) Fence() uint64 { return k.fence }

// Extensions returns how many times the lock was extended.
func (k Lock) Extensions() int { return k.extensions }

// Validity returns the validity won by the last acquire or extend round:
// TTL − the round's duration − drift, counted from the round's end.
func (k Lock) Validity() time.Duration { return k.validity }

// Lost reports whether an extend round proved that a majority of nodes no
// longer hold the lock (its keys are missing or hold other tokens). A lost
// lock is never valid again.
func (k Lock) Lost() bool { return k.lost }

// ValidUntil returns the instant, on the Locker's clock, after which the
// lock must be taken as lost: the start of the round that set validity
// plus TTL minus drift. With the system clock it carries a monotonic
// reading. It is the zero Time for a lost or zero Lock.
func (k Lock) ValidUntil() time.Time {
	if k.lost || k.validity <= 0 {
		return time.Time{}
	}
	return k.end.Add(k.validity)
}

// RemainingAt returns how long the lock stays valid after now, never
// negative. A now before the end of the round that set validity means the
// clock ran backwards: the remaining time is then unknown and RemainingAt
// returns 0. A lost lock has 0 left.
func (k Lock) RemainingAt(now time.Time) time.Duration {
	if k.lost || k.validity <= 0 {
		return 0
	}
	elapsed := now.Sub(k.end)
	if elapsed < 0 || elapsed >= k.validity {
		return 0
	}
	return k.validity - elapsed
}

// Remaining is RemainingAt(time.Now()). Use RemainingAt with the Locker's
// clock when that is not the system clock.
func (k Lock) Remaining() time.Duration { return k.RemainingAt(time.Now()) }

// ValidAt reports whether the lock is still valid at now.
func (k Lock) ValidAt(now time.Time) bool { return k.RemainingAt(now) > 0 }

// Acquire takes the lock on key, each attempt with a fresh token from
// Config.Tokens, retrying under Config.Retry. See AcquireToken.
func (l *Locker) Acquire(ctx context.Context, key string) (Lock, error) {
	if ctx == nil {
		return Lock{}, errNilContext
	}
	return l.acquire(ctx, key, Token{})
}

// AcquireToken takes the lock on key, holding it with tok on the first
// attempt and with DeriveToken(tok, k) on attempt k, so that no two
// attempts share a token. Each attempt sets the key on every node; it wins
// with a quorum of nodes and positive validity, counted from the end of
// that attempt. A failed attempt is released on every node before the next
// one, detached from ctx's cancellation, so a cancelled caller leaves no
// keys behind.
//
// Errors: ErrTaken or ErrQuorumUnreachable (or ErrNotHeld when the validity
// ran out) from the last attempt once the tries are used up, or once ctx's
// deadline leaves no time for the next attempt's delay; ErrCancelled when ctx
// ends during an attempt or a delay; ErrInvalidConfig, before anything is
// sent, for a nil ctx, an empty key or one longer than MaxKeyLen, and the
// zero token or one whose first 8 bytes are zero. (StartAcquireToken, the
// step-wise form, takes a zero token to mean Config.Tokens.)
func (l *Locker) AcquireToken(ctx context.Context, key string, tok Token) (Lock, error) {
	switch {
	case ctx == nil:
		return Lock{}, errNilContext
	case tok == (Token{}):
		return Lock{}, invalid("token is zero")
	}
	return l.acquire(ctx, key, tok)
}

// acquire drives an Acquisition over the driver: a thin loop that does the
// I/O and the waiting, and turns ctx's end into Cancel.
func (l *Locker) acquire(ctx context.Context, key string, tok Token) (Lock, error) {
	clock := l.cfg.Clock
	a, err := l.StartAcquireToken(key, tok, clock.Now())
	if err != nil {
		return Lock{}, err
	}
	if dl, ok := ctx.Deadline(); ok {
		a.SetDeadline(dl)
	}
	done := ctx.Done()
	for {
		switch a.Phase() {
		case PhaseRound:
			l.Advance(ctx, &a)
		case PhaseWait:
			if !clock.Sleep(a.WakeAt().Sub(clock.Now()), done) {
				a.Cancel(clock.Now(), ctx.Err())
				continue
			}
			a.Wake(clock.Now())
		default:
			return a.Result()
		}
	}
}

// Release deletes the lock's key on every node where it still holds the
// lock's token, including nodes that refused it at acquisition. It runs
// detached from ctx's cancellation (ctx's values still reach the driver),
// bounded by the node timeout, and does not retry.
//
// Release returns only once every node has answered or its node timeout
// has passed, in both fan-outs, so that no delete is still in flight when
// it returns: closing the driver or exiting the process right after
// Release loses nothing.
//
// Errors: nil once a quorum of nodes deleted the key. ErrNotHeld when the
// key had expired or was lost on too many nodes, ErrTaken when other tokens
// hold it, ErrQuorumUnreachable when errors decided; ErrInvalidConfig for
// a nil ctx or the zero Lock. In every case no key with this token remains
// on a node that answered.
func (l *Locker) Release(ctx context.Context, lock Lock) error {
	if ctx == nil {
		return errNilContext
	}
	r, err := l.StartRelease(lock, l.cfg.Clock.Now())
	if err != nil {
		return err
	}
	l.run(ctx, &r, nil)
	return l.Released(lock, &r)
}

// StartRelease returns the round that releases lock, starting at now on
// the Locker's clock: a compare-and-delete of the lock's token on every
// node. It refuses the zero Lock with ErrInvalidConfig.
func (l *Locker) StartRelease(lock Lock, now time.Time) (Round, error) {
	if lock.key == "" {
		return Round{}, invalid("release of the zero Lock")
	}
	return l.newRound(Command{Op: OpRelease, Key: lock.key, Token: lock.token}, now), nil
}

// Released returns Release's result for lock's release round r, which
// must be done (r.Done()): nil once a quorum deleted the key, otherwise
// Release's errors. On a round not yet done it reports the answers so far.
func (l *Locker) Released(lock Lock, r *Round) error {
	if r.tally.Vote() == VoteWon {
		return nil
	}
	return l.failure(OpRelease, lock.key, &r.tally)
}

// Extend resets the expiry of the lock's keys to its TTL on every node where
// the key still holds the lock's token. It never re-creates a key that
// expired or was lost. It succeeds with a quorum and positive validity,
// counted from the end of this round, with the drift allowance of the
// lock's own TTL, and returns the extended Lock.
//
// On failure the returned Lock says what is known. When the round proved
// that too few nodes hold the key (ErrNotHeld from missing keys, ErrTaken
// from other tokens) it is Lost and never valid again. When it proved
// nothing (ErrQuorumUnreachable, ErrCancelled, or a quorum won too late
// for any validity) it is lock unchanged: its old validity still bounds
// it, and the caller may try again within it.
//
// Errors: ErrNotHeld when the lock's validity is already over or it is
// lost (nothing is sent) or keys are missing, ErrTaken when other tokens
// hold them, ErrQuorumUnreachable, ErrCancelled, ErrExtensionLimit after
// Config.MaxExtensions extensions (nothing is sent), ErrInvalidConfig for
// a nil ctx or the zero Lock.
func (l *Locker) Extend(ctx context.Context, lock Lock) (Lock, error) {
	if ctx == nil {
		return lock, errNilContext
	}
	start := l.cfg.Clock.Now()
	r, err := l.StartExtend(lock, start)
	if err != nil {
		return lock, err
	}
	if ctx.Err() != nil || l.run(ctx, &r, ctx.Done()) {
		return lock, &Error{Op: OpExtend, Kind: ErrCancelled, Key: lock.key, Attempts: 1, Cause: ctx.Err()}
	}
	return l.Extended(lock, &r, l.cfg.Clock.Now())
}

// StartExtend returns the round that extends lock, starting at now on the
// Locker's clock, or the error of an extension that must not be sent: the
// zero Lock (ErrInvalidConfig), the extension limit (ErrExtensionLimit), or
// a lock lost or no longer valid at now (ErrNotHeld).
func (l *Locker) StartExtend(lock Lock, now time.Time) (Round, error) {
	switch {
	case lock.key == "":
		return Round{}, invalid("extend of the zero Lock")
	case lock.extensions >= l.cfg.MaxExtensions:
		return Round{}, &Error{Op: OpExtend, Kind: ErrExtensionLimit, Key: lock.key, Attempts: 1}
	case lock.RemainingAt(now) <= 0:
		return Round{}, &Error{Op: OpExtend, Kind: ErrNotHeld, Key: lock.key, Attempts: 1}
	}
	return l.newRound(Command{Op: OpExtend, Key: lock.key, Token: lock.token, TTL: lock.ttl}, now), nil
}

// Extended returns Extend's result for lock's extend round r, which must
// be done (r.Done()) and ended at now on the Locker's clock: see Extend for
// the Lock it returns on success and on failure.
func (l *Locker) Extended(lock Lock, r *Round, now time.Time) (Lock, error) {
	elapsed := now.Sub(r.start)
	drift := lock.drift
	if mutations.extendWithLockerDrift {
		drift = l.drift
	}
	validity := Validity(lock.ttl, elapsed, drift)
	switch {
	case r.tally.Vote() != VoteWon:
		e := l.failure(OpExtend, lock.key, &r.tally)
		if (e.Kind == ErrNotHeld || e.Kind == ErrTaken) && !mutations.extendKeepsLostLock {
			lock.lost = true
		}
		return lock, e
	case validity <= 0:
		return lock, &Error{Op: OpExtend, Kind: ErrNotHeld, Key: lock.key, Attempts: 1,
			Cause: &validityError{ttl: lock.ttl, elapsed: elapsed, drift: drift}}
	}
	lock.end, lock.validity = now, validity
	lock.extensions++
	return lock, nil
}

// Advance drives a, an Acquisition of this Locker's in PhaseRound, through
// its current round over the Driver and moves it on (RoundDone); ctx
// ending during an attempt cancels it (Cancel), and a cleanup round runs
// detached from ctx's cancellation, bounded by the node timeout only. A
// caller with its own wait (PhaseWait) loops over it, as Acquire does.
func (l *Locker) Advance(ctx context.Context, a *Acquisition) {
	clock := l.cfg.Clock
	if a.Cleaning() {
		l.run(ctx, a.Round(), nil)
	} else if ctx.Err() != nil || l.run(ctx, a.Round(), ctx.Done()) {
		a.Cancel(clock.Now(), ctx.Err())
		return
	}
	a.RoundDone(clock.Now())
}

// run drives r over one driver batch until it is done. It returns true if
// cancel closed first; cancel may be nil.
func (l *Locker) run(ctx context.Context, r *Round, cancel <-chan struct{}) (cancelled bool) {
	b := l.drv.Begin(ctx)
	defer b.Close()
	var now time.Time
	for !r.Done() {
		if cancel != nil && isClosed(cancel) {
			return true
		}
		if l.cfg.FanOut == Sequential {
			now = l.cfg.Clock.Now() // each node's deadline counts from its send
		}
		for {
			node, cmd, deadline, ok := r.Next(now)
			if !ok {
				break
			}
			b.Send(node, cmd, deadline)
		}
		if r.Done() { // a cleanup that awaits nobody
			break
		}
		rep, ok := b.Receive(cancel)
		if !ok {
			return true
		}
		r.Receive(rep)
	}
	return false
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// failure builds the error of a round that was not won.
func (l *Locker) failure(op Op, key string, t *Tally) *Error {
	return &Error{Op: op, Kind: t.cause(), Key: key, Attempts: 1, Nodes: l.results(t)}
}

// results lists the nodes that did not answer OK.
func (l *Locker) results(t *Tally) []NodeResult {
	var out []NodeResult
	for i := 0; i < t.Nodes(); i++ {
		s, err := t.Status(i)
		if s != StatusOK {
			out = append(out, NodeResult{Node: i, Name: l.drv.NodeName(i), Status: s, Err: err})
		}
	}
	return out
}
