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
// stays valid. It is a small value; the zero Lock holds nothing.
type Lock struct {
	key        string
	token      Token
	ttl        time.Duration
	start      time.Time // start of the round that set validity
	validity   time.Duration
	extensions int
}

// Key returns the locked key. Token returns the holder's token.
func (k Lock) Key() string  { return k.key }
func (k Lock) Token() Token { return k.token }

// TTL returns the expiry the keys were set with.
func (k Lock) TTL() time.Duration { return k.ttl }

// Extensions returns how many times the lock was extended.
func (k Lock) Extensions() int { return k.extensions }

// Validity returns the validity won by the last acquire or extend round,
// counted from that round's start.
func (k Lock) Validity() time.Duration { return k.validity }

// ValidUntil returns the instant, on the Locker's clock, after which the
// lock must be taken as lost. With the system clock it carries a monotonic
// reading.
func (k Lock) ValidUntil() time.Time { return k.start.Add(k.validity) }

// RemainingAt returns how long the lock stays valid after now, never
// negative. A now before the round's start means the clock ran backwards:
// the remaining time is then unknown and RemainingAt returns 0.
func (k Lock) RemainingAt(now time.Time) time.Duration {
	elapsed := now.Sub(k.start)
	if k.validity <= 0 || elapsed < 0 || elapsed >= k.validity {
		return 0
	}
	return k.validity - elapsed
}

// Remaining is RemainingAt(time.Now()). Use RemainingAt with the Locker's
// clock when that is not the system clock.
func (k Lock) Remaining() time.Duration { return k.RemainingAt(time.Now()) }

// Valid reports whether the lock is still valid at now.
func (k Lock) ValidAt(now time.Time) bool { return k.RemainingAt(now) > 0 }

// Acquire takes the lock on key with a fresh token from Config.Tokens,
// retrying under Config.Retry. See AcquireToken.
func (l *Locker) Acquire(ctx context.Context, key string) (Lock, error) {
	return l.AcquireToken(ctx, key, l.cfg.Tokens.NewToken())
}

// AcquireToken takes the lock on key, holding it with tok. Each attempt
// sets the key on every node; it wins with a quorum of nodes and positive
// validity, counted from the start of that attempt. A failed attempt is
// released on every node before the next one, on a context detached from
// ctx, so a cancelled caller leaves no keys behind.
//
// Errors: ErrTaken or ErrQuorumUnreachable (or ErrNotHeld when the validity
// ran out) from the last attempt once the tries are used up, or once ctx's
// deadline leaves no time for the next attempt's delay; ErrCancelled when ctx
// ends during an attempt or a delay; ErrInvalidConfig for an empty key or
// the zero token.
func (l *Locker) AcquireToken(ctx context.Context, key string, tok Token) (Lock, error) {
	if key == "" {
		return Lock{}, invalid("key is empty")
	}
	if tok == (Token{}) {
		return Lock{}, invalid("token is zero")
	}
	retry := l.cfg.Retry.Start()
	for {
		attempt := retry.Attempt()
		lock, err := l.acquireOnce(ctx, key, tok)
		if err == nil {
			return lock, nil
		}
		err.Attempts = attempt
		if err.Kind == ErrCancelled {
			return Lock{}, err
		}
		delay, ok := retry.Next(l.cfg.Jitter.Uint64())
		if !ok {
			return Lock{}, err
		}
		if dl, has := ctx.Deadline(); has && !l.cfg.Clock.Now().Add(delay).Before(dl) {
			// The deadline would cut the next attempt: report why this one
			// failed rather than the deadline (bsm/redislock #74).
			return Lock{}, err
		}
		if !l.cfg.Clock.Sleep(delay, ctx.Done()) {
			return Lock{}, l.cancelled(OpAcquire, key, ctx, attempt)
		}
	}
}

func (l *Locker) cancelled(op Op, key string, ctx context.Context, attempts int) *Error {
	return &Error{Op: op, Kind: ErrCancelled, Key: key, Attempts: attempts, Cause: ctx.Err()}
}

// acquireOnce is one attempt. On failure every node is released.
func (l *Locker) acquireOnce(ctx context.Context, key string, tok Token) (Lock, *Error) {
	if ctx.Err() != nil {
		return Lock{}, l.cancelled(OpAcquire, key, ctx, 1)
	}
	cmd := Command{Op: OpAcquire, Key: key, Token: tok, TTL: l.cfg.TTL}
	t := NewTally(l.n)
	start := l.cfg.Clock.Now()
	cancelled := l.round(ctx, &t, cmd, ctx.Done(), start)
	elapsed := l.cfg.Clock.Now().Sub(start)
	validity := Validity(l.cfg.TTL, elapsed, l.drift)
	if !cancelled && t.Vote() == VoteWon && validity > 0 {
		return Lock{key: key, token: tok, ttl: l.cfg.TTL, start: start, validity: validity}, nil
	}
	l.cleanup(ctx, key, tok)
	switch {
	case cancelled:
		e := l.cancelled(OpAcquire, key, ctx, 1)
		e.Nodes = l.results(&t)
		return Lock{}, e
	case t.Vote() == VoteWon:
		return Lock{}, &Error{Op: OpAcquire, Kind: ErrNotHeld, Key: key,
			Cause: &validityError{ttl: l.cfg.TTL, elapsed: elapsed, drift: l.drift}}
	}
	return Lock{}, l.failure(OpAcquire, key, &t)
}

// cleanup releases key on every node after a failed attempt, detached from
// the caller's cancellation and bounded by the node timeout.
func (l *Locker) cleanup(ctx context.Context, key string, tok Token) {
	t := NewTally(l.n)
	l.round(ctx, &t, Command{Op: OpRelease, Key: key, Token: tok}, nil, l.cfg.Clock.Now())
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
// the zero Lock. In every case no key with this token remains on a node
// that answered.
func (l *Locker) Release(ctx context.Context, lock Lock) error {
	if lock.key == "" {
		return invalid("release of the zero Lock")
	}
	t := NewTally(l.n)
	l.round(ctx, &t, Command{Op: OpRelease, Key: lock.key, Token: lock.token}, nil, l.cfg.Clock.Now())
	if t.Vote() == VoteWon {
		return nil
	}
	return l.failure(OpRelease, lock.key, &t)
}

// Extend resets the expiry of the lock's keys to its TTL on every node where
// the key still holds the lock's token. It never re-creates a key that
// expired or was lost. It succeeds with a quorum and positive validity,
// counted from the start of this round, and returns the extended Lock. On
// failure it returns lock unchanged: its old validity still bounds it.
//
// Errors: ErrNotHeld when the lock's validity is already over (nothing is
// sent) or keys are missing, ErrTaken when other tokens hold them,
// ErrQuorumUnreachable, ErrCancelled, ErrExtensionLimit after
// Config.MaxExtensions extensions (nothing is sent).
func (l *Locker) Extend(ctx context.Context, lock Lock) (Lock, error) {
	switch {
	case lock.key == "":
		return lock, invalid("extend of the zero Lock")
	case lock.extensions >= l.cfg.MaxExtensions:
		return lock, &Error{Op: OpExtend, Kind: ErrExtensionLimit, Key: lock.key, Attempts: 1}
	case ctx.Err() != nil:
		return lock, l.cancelled(OpExtend, lock.key, ctx, 1)
	}
	start := l.cfg.Clock.Now()
	if lock.RemainingAt(start) <= 0 {
		return lock, &Error{Op: OpExtend, Kind: ErrNotHeld, Key: lock.key, Attempts: 1}
	}
	t := NewTally(l.n)
	cancelled := l.round(ctx, &t, Command{Op: OpExtend, Key: lock.key, Token: lock.token, TTL: lock.ttl}, ctx.Done(), start)
	elapsed := l.cfg.Clock.Now().Sub(start)
	validity := Validity(lock.ttl, elapsed, l.drift)
	switch {
	case cancelled:
		return lock, l.cancelled(OpExtend, lock.key, ctx, 1)
	case t.Vote() != VoteWon:
		return lock, l.failure(OpExtend, lock.key, &t)
	case validity <= 0:
		return lock, &Error{Op: OpExtend, Kind: ErrNotHeld, Key: lock.key, Attempts: 1,
			Cause: &validityError{ttl: lock.ttl, elapsed: elapsed, drift: l.drift}}
	}
	lock.start, lock.validity = start, validity
	lock.extensions++
	return lock, nil
}

// round sends cmd to the nodes and records their answers in t. It returns
// true if cancel closed before the round was decided.
//
// Sequential rounds visit every node in order, even after the quorum is
// won, so that one later restart cannot hand a majority to another client
// (redsync #186); acquire and extend stop early once the quorum is lost.
// Multiplexed rounds send to every node; acquire and extend stop receiving
// as soon as the tally is decided (the driver discards the stragglers'
// replies), release receives every reply or its node timeout.
func (l *Locker) round(ctx context.Context, t *Tally, cmd Command, cancel <-chan struct{}, start time.Time) (cancelled bool) {
	b := l.drv.Begin(ctx)
	defer b.Close()
	timeout := l.cfg.NodeTimeout
	if l.cfg.FanOut == Sequential {
		for i := 0; i < l.n; i++ {
			if cmd.Op != OpRelease && t.Vote() == VoteLost {
				return false
			}
			if isClosed(cancel) {
				return true
			}
			b.Send(i, cmd, l.cfg.Clock.Now().Add(timeout))
			r, ok := b.Receive(cancel)
			if !ok {
				return true
			}
			t.Record(r.Node, r.Status, r.Err)
		}
		return false
	}
	deadline := start.Add(timeout)
	for i := 0; i < l.n; i++ {
		b.Send(i, cmd, deadline)
	}
	// A release awaits every node: a delete whose reply is not awaited may
	// still be in flight when Release returns, and the driver's Close or
	// the process's exit would drop it, leaving the key until its TTL.
	all := cmd.Op == OpRelease
	for received := 0; received < l.n && (all || t.Vote() == VotePending); received++ {
		r, ok := b.Receive(cancel)
		if !ok {
			return true
		}
		t.Record(r.Node, r.Status, r.Err)
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
