package core

import (
	"errors"
	"strconv"
	"time"
)

// Spec is a validated, immutable Redlock configuration over N nodes: the
// Config with its defaults filled in, the quorum and the drift allowance.
// It is a small value; the step values it starts (Acquisition, Round,
// Lease) copy what they need of it and point back to nothing. It does no
// I/O: the caller drives the step values over a Driver, as the root
// package's Client does.
type Spec struct {
	names  namer // the Driver, for node names in errors only
	cfg    Config
	n      int
	quorum int
	drift  time.Duration
}

// namer is what a Spec needs of a Driver.
type namer interface{ NodeName(i int) string }

// NewSpec checks cfg against the driver and returns the Spec in force, or an
// error that matches ErrInvalidConfig: a nil driver, a node given twice or
// without a name, every Config rule, and a configuration under which no
// grant could be kept: TTL − drift below the loss margin (two round
// bounds; a round bound is NodeTimeout, N of them when Sequential), or a
// LeaseFraction after which less than the loss margin is left of TTL −
// drift, so that the lease would never extend.
func NewSpec(d Driver, cfg Config) (Spec, error) {
	if d == nil {
		return Spec{}, invalid("driver is nil")
	}
	n := d.Nodes()
	c, err := cfg.withDefaults(n)
	if err != nil {
		return Spec{}, err
	}
	if err := checkNodeNames(d, n); err != nil {
		return Spec{}, err
	}
	s := Spec{names: d, cfg: c, n: n, quorum: Quorum(n), drift: drift(c.TTL, c.DriftPPM, c.DriftFixed)}
	if err := s.checkKeepable(); err != nil {
		return Spec{}, err
	}
	return s, nil
}

// checkKeepable refuses a configuration under which no grant could be
// kept, by the rules a grant meets in use: the best grant there is, won
// by a round that took no time, with validity TTL − drift, must be
// keepable (at least the loss margin, two round bounds); and with
// LeaseFraction, a Lease of it must extend on its own (its extension,
// due once LeaseFraction of the validity has passed, must be keepable
// then: (TTL − drift)×(1 − LeaseFraction) at least the loss margin).
// Otherwise every acquisition would fail, won too late, or every lease
// would lose its lock unextended.
func (s *Spec) checkKeepable() error {
	var at time.Time // any instant: the rules compare durations from it
	best := Grant{key: "k", ttl: s.cfg.TTL, drift: s.drift, end: at, validity: Validity(s.cfg.TTL, 0, s.drift)}
	bound := "the node timeout " + s.cfg.NodeTimeout.String()
	if s.cfg.FanOut == Sequential {
		bound = itoa(s.n) + " sequential node timeouts of " + s.cfg.NodeTimeout.String()
	}
	if !s.keepable(best, at) {
		return invalid("TTL " + s.cfg.TTL.String() + " less the drift allowance " + s.drift.String() +
			" leaves no lock the loss margin " + s.lossMargin().String() + " (two round bounds, a round bound being " + bound + ")")
	}
	if at, ok := s.fractionAt(best, time.Time{}); ok && !s.keepable(best, at) {
		return invalid("LeaseFraction " + strconv.FormatFloat(s.cfg.LeaseFraction, 'g', -1, 64) +
			" extends no lock: TTL " + s.cfg.TTL.String() + " less the drift allowance " + s.drift.String() +
			" leaves less than the loss margin " + s.lossMargin().String() + " after it (two round bounds, a round bound being " + bound + ")")
	}
	return nil
}

// Try begins an acquisition of key at now that makes one attempt and never
// waits: as Acquire, but it ends after the attempt (with its cleanup, if
// it failed), whatever Config.Retry's tries. With Config.Fair, the
// attempt and its cleanup are those of a Spec without Fair: a caller that
// will not wait must not join the nodes' waiter queues, where a waiter
// that never comes would be handed a release for nothing, nor take a key
// the nodes hand to a waiter. Keys are checked with the Spec's own rules,
// Fair's included.
func (s Spec) Try(key string, tok Token, now time.Time) (Acquisition, error) {
	if err := s.checkKey(key); err != nil {
		return Acquisition{}, err
	}
	s.cfg.Fair, s.cfg.Retry.tries = false, 1
	return s.acquire(key, tok, now, KindMutex, nil) // the key is checked once, under Fair's rules too
}

// fairRelease returns cmd, a release, as a Fair one. A key it frees is
// handed to the first waiter for two round bounds, for the announcement to
// reach the waiter and its attempt to take the key, and at least 10 ms; a
// key handed to a waiter that has gone expires unannounced after it, and
// the others take it at their next timed attempt (Acquisition.WakeAt). A
// queue entry it makes lasts two TTLs and a handoff: a waiter renews its
// entry at each failed attempt's cleanup, and attempts at the latest once
// the holder's key has expired, a TTL after the last attempt learnt it, so
// that a live waiter never loses its place.
func (s *Spec) fairRelease(cmd Command) Command {
	handoff := s.fairHandoff()
	cmd.Fair, cmd.Handoff, cmd.TTL = true, handoff, 2*s.cfg.TTL+handoff
	return cmd
}

// fairHandoff is how long a Fair release keeps a key it hands to the
// first waiter (fairRelease).
func (s *Spec) fairHandoff() time.Duration { return max(2*s.roundBound(), 10*time.Millisecond) }

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
func (s Spec) Config() Config { return s.cfg }

// roundBound returns the longest a round can take: the node timeout, once
// per node when sequential. A Lease starts no extension that could still
// be in flight at the end of the validity, and so declares a lock lost a
// round bound before it.
func (s Spec) roundBound() time.Duration {
	if s.cfg.FanOut == Sequential {
		return s.cfg.NodeTimeout * time.Duration(s.n)
	}
	return s.cfg.NodeTimeout
}

// loseAt returns when g is declared lost unless an extension moves it
// (Lease.LoseAt): a round bound before the end of its validity, so that
// the holder is told before the lock stops being valid.
func (s *Spec) loseAt(g Grant) time.Time {
	if mutLeaseLosesAtValidity {
		return g.ValidUntil()
	}
	return g.ValidUntil().Add(-s.roundBound())
}

// lossMargin returns the loss margin: the least validity a grant needs
// to be kept (keepable) at the end of the round that won it. Two round
// bounds: the loss is declared one before the validity ends (loseAt),
// and an extension round must end by then.
func (s *Spec) lossMargin() time.Duration { return 2 * s.roundBound() }

// keepable reports whether g can still be kept at now: whether an
// extension round started at now ends, at its bound, by loseAt(g). It is
// the one rule of a grant's use. A Lease starts no extension that fails
// it (Lease.Extend, Lease.Wake); a grant that fails it at its birth is
// lost, unextendable, within a round bound, and so is no grant: an
// acquisition whose round wins with validity v is a grant only if v is
// at least the loss margin, two round bounds (one before the validity's
// end, where the loss is declared, one for the extension before it), and
// NewSpec refuses a configuration whose every grant would fail it.
func (s *Spec) keepable(g Grant, now time.Time) bool {
	return g.validity > 0 && !now.Add(s.roundBound()).After(s.loseAt(g))
}

// initRound makes *r a round of cmd to every node, starting at start. It
// works in place: a Round is close to 1 KiB, and building one to copy it
// (twice, with the Acquisition that holds it) was a good part of a
// round's cost. A Round that was never initialised (tally.n is 0: only
// the zero Round has it) is zero already, as in a new Acquisition or
// Spec.Release's result, and is not cleared again.
func (s *Spec) initRound(r *Round, cmd Command, start time.Time) {
	if r.tally.n != 0 {
		*r = Round{}
	}
	r.cmd, r.fanOut, r.timeout, r.end = cmd, s.cfg.FanOut, s.cfg.NodeTimeout, start.Add(s.cfg.NodeTimeout)
	r.tally.init(s.n)
}

// Release returns the round that releases g, starting at now: a
// compare-and-delete of g's token on every node, those that refused it at
// acquisition included. Drive it to its end: it is done only once every
// node has answered or timed out, so that no delete is still in flight
// when it returns. The zero Grant is refused with ErrInvalidConfig.
func (s Spec) Release(g Grant, now time.Time) (r Round, err error) {
	if g.key == "" {
		return Round{}, invalid("release of the zero Grant")
	}
	cmd := Command{Op: OpRelease, Kind: g.kind, Key: g.key, Keys: g.keys, Token: g.token}
	switch {
	case g.handoff:
		cmd.Quiet = true // the follower's attempt comes right behind: no announcement, no queue
	case s.cfg.Fair && g.kind == KindMutex: // the waiter queues are the mutex's alone
		cmd = s.fairRelease(cmd)
		if g.followed {
			cmd.Ticket = TicketAt(now) // others of the process follow: back of the queue
		}
	}
	s.initRound(&r, cmd, now)
	return r, nil
}

// HandOn returns the round that hands key, where it is free, to the
// first process in each node's waiter queue (Config.Fair; Room.Released):
// a Fair release of a token no lock holds, which a node answers as for a
// key gone, or as the caller's own for a key it handed to the caller's
// process, and which, the key then free, hands it on as every release
// there does. Its answers decide nothing: drive it to its end. Without
// Fair, or for a bad key, it returns an ErrInvalidConfig error.
func (s Spec) HandOn(key string, now time.Time) (r Round, err error) {
	if !s.cfg.Fair {
		return Round{}, invalid("HandOn without Config.Fair")
	}
	if err := s.checkKey(key); err != nil {
		return Round{}, err
	}
	s.initRound(&r, s.fairRelease(Command{Op: OpRelease, Key: key}), now)
	return r, nil
}

// Released returns the result of g's release round r, once r.Done(): nil
// once a quorum deleted the key; ErrNotHeld when the key had expired or
// was lost on too many nodes, ErrTaken when other tokens hold it,
// ErrQuorumUnreachable when errors decided. In every case no key with g's
// token remains on a node that answered.
func (s Spec) Released(g Grant, r *Round) error {
	if r.tally.vote() == voteWon {
		return nil
	}
	return s.failure(OpRelease, g.key, &r.tally)
}

// extended returns g after its extend round r, done and ended at now:
// the grant extended, with validity counted from the round's start and
// the drift of g's own TTL; or g unchanged and the error, with lost set
// when the answers prove that too few nodes hold g (missing keys,
// ErrNotHeld; other tokens, ErrTaken).
func (s *Spec) extended(g Grant, r *Round, now time.Time) (_ Grant, lost bool, _ *Error) {
	elapsed := now.Sub(r.started())
	drift := g.drift
	if mutExtendWithSpecDrift {
		drift = s.drift
	}
	if mutValidityWithoutDrift {
		drift = 0
	}
	validity := Validity(g.ttl, elapsed, drift)
	switch {
	case r.tally.vote() != voteWon:
		e := s.failure(OpExtend, g.key, &r.tally)
		return g, (errors.Is(e.Kind, ErrNotHeld) || errors.Is(e.Kind, ErrTaken)) && !mutExtendKeepsLostLock, e
	case validity <= 0:
		return g, false, &Error{Op: OpExtend, Kind: ErrNotHeld, Key: g.key, Attempts: 1,
			Cause: &validityError{ttl: g.ttl, elapsed: elapsed, drift: drift}}
	}
	g.end, g.validity = now, validity
	g.extensions++
	return g, false, nil
}

// failure builds the error of a round that was not won.
func (s *Spec) failure(op Op, key string, t *tally) *Error {
	return &Error{Op: op, Kind: t.cause(), Key: key, Attempts: 1, Nodes: s.results(t)}
}

// results lists the nodes that did not answer OK.
func (s *Spec) results(t *tally) []NodeResult {
	var out []NodeResult
	for i := 0; i < t.nodes(); i++ {
		st, err := t.statusOf(i)
		if st != StatusOK {
			out = append(out, NodeResult{Node: i, Name: s.names.NodeName(i), Status: st, Err: err})
		}
	}
	return out
}
