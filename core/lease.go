package core

import (
	"errors"
	"time"
)

// Lease keeps one Grant, step by step: it says when to extend it, when to
// try again after an extension that proved nothing, and when to declare
// it lost, with the cause. The root package's Lock handle runs it in a
// goroutine of its own; the simulation drives the same value.
//
// The loss is declared a the round bound (the node timeout; N of them when sequential) before the grant's validity ends
// (LoseAt), and no extension starts that could end after LoseAt: so no
// extension round is in flight when the validity ends, and a caller told
// of the loss is told before the lock stops being valid, whatever the
// nodes do. With Config.LeaseFraction zero the Lease never extends on its
// own: it only watches the validity, and extends when asked (Extend).
//
// Drive it as the Acquisition: in PhaseWait, call Wake at WakeAt; in
// PhaseRound, drive Round to its end and call RoundDone; in PhaseDone the
// grant is lost and Err says why. Every now is a reading of the caller's
// clock.
type Lease struct {
	spec    Spec
	grant   Grant
	hold    time.Time // Config.MaxHold's end; zero: none
	retryAt time.Time // no extension of its own before it
	last    *Error    // the last extension's failure, when it proved nothing
	phase   Phase
	round   Round
	err     error // why the grant was lost, in PhaseDone
}

// errMaxHold is the cause of a lease that reached Config.MaxHold.
var errMaxHold = errors.New("the lease reached its MaxHold")

// errValidityOver is the cause of a grant whose validity ran out, less
// the round bound, without an extension.
var errValidityOver = errors.New("the validity ran out unextended")

// Lease starts keeping g, a Grant of this Spec's key space (an
// Acquisition's result), under Config.LeaseFraction and Config.MaxHold.
func (s Spec) Lease(g Grant) Lease {
	l := Lease{spec: s, grant: g, phase: PhaseWait}
	if s.cfg.MaxHold > 0 {
		l.hold = g.end.Add(s.cfg.MaxHold)
	}
	if g.key == "" {
		l.lose(invalid("lease of the zero Grant"))
	}
	return l
}

// Phase returns what the lease waits for.
func (l *Lease) Phase() Phase { return l.phase }

// Grant returns the grant as the last extension left it.
func (l *Lease) Grant() Grant { return l.grant }

// Err returns why the grant was lost, in PhaseDone; nil before. It is an
// *Error whose Kind is ErrTaken or ErrNotHeld (an extension proved the
// keys gone or held by others, or the validity ran out),
// ErrQuorumUnreachable (extensions failed until no time was left for one
// more), or ErrExtensionLimit (Config.MaxExtensions or Config.MaxHold).
func (l *Lease) Err() error { return l.err }

// Round returns the extension round to drive in PhaseRound.
func (l *Lease) Round() *Round { return &l.round }

// LoseAt returns when the grant is declared lost unless an extension moves
// it: a round bound before the end of its validity.
func (l *Lease) LoseAt() time.Time {
	return l.spec.loseAt(l.grant)
}

// extendAt returns when the lease extends on its own, and whether it will:
// once LeaseFraction of the validity has passed and not before a retry's
// delay, if a round started then still ends by LoseAt; or else, for a
// grant won or last extended by a slow round, with too little validity
// left after the fraction, at the latest instant a round still ends by
// LoseAt: a lock that a caller's own Extend could keep does not lapse
// unextended under its lease.
func (l *Lease) extendAt() (time.Time, bool) {
	at, ok := l.spec.fractionAt(l.grant, l.retryAt)
	if !ok || l.spec.keepable(l.grant, at) {
		return at, ok
	}
	latest := l.LoseAt().Add(-l.spec.roundBound())
	if latest.Before(l.retryAt) || latest.Before(l.grant.end) {
		return at, false // a retry, or the grant, comes after it: nothing fits
	}
	return latest, l.spec.keepable(l.grant, latest)
}

// fractionAt returns when LeaseFraction of g's validity has passed, not
// before retryAt (a retry's delay; zero: none); false without a
// LeaseFraction. NewSpec asks it of the best grant, a Lease of its own.
func (s *Spec) fractionAt(g Grant, retryAt time.Time) (time.Time, bool) {
	f := s.cfg.LeaseFraction
	if f <= 0 {
		return time.Time{}, false
	}
	at := g.end.Add(time.Duration(float64(g.validity) * f))
	if retryAt.After(at) {
		at = retryAt
	}
	return at, true
}

// WakeAt returns when Wake must next be called: in PhaseWait, the next
// extension, the MaxHold bound or LoseAt, whichever comes first; in
// PhaseRound, LoseAt, which a round can reach only when its process was
// paused or its driver missed a deadline.
func (l *Lease) WakeAt() time.Time {
	at := l.LoseAt()
	if l.phase == PhaseRound {
		return at
	}
	if !l.hold.IsZero() && l.hold.Before(at) {
		at = l.hold
	}
	if ext, ok := l.extendAt(); ok && ext.Before(at) {
		at = ext
	}
	return at
}

// Wake acts at now, in PhaseWait: it declares the grant lost at LoseAt or
// at MaxHold, starts an extension round once one is due (PhaseRound), and
// otherwise does nothing (a wake before WakeAt is harmless). In
// PhaseRound it declares the grant lost once LoseAt has passed, the
// round abandoned.
func (l *Lease) Wake(now time.Time) {
	if l.phase == PhaseRound && !now.Before(l.LoseAt()) {
		l.expire() // the round in flight is abandoned: its replies come too late
		return
	}
	if l.phase != PhaseWait {
		return
	}
	switch ext, ok := l.extendAt(); {
	case !now.Before(l.LoseAt()):
		l.expire()
	case !l.hold.IsZero() && !now.Before(l.hold):
		l.lose(&Error{Op: OpExtend, Kind: ErrExtensionLimit, Key: l.grant.key, Attempts: 1, Cause: errMaxHold})
	case ok && !now.Before(ext):
		if !l.spec.keepable(l.grant, now) {
			l.retryAt = l.LoseAt() // woken too late for a round: wait for the loss
			return
		}
		if err := l.start(now); err != nil {
			l.lose(err) // the extension limit: the lease cannot go on
		}
	}
}

// Extend starts an extension round at now that the caller asked for
// (PhaseRound), or returns the error of one that must not be sent: the
// grant lost (Err), an extension already in flight (ErrInvalidConfig),
// Config.MaxExtensions reached (ErrExtensionLimit), or too little validity
// left for a round to end before LoseAt (ErrNotHeld; past LoseAt the grant
// is lost).
func (l *Lease) Extend(now time.Time) error {
	switch {
	case l.phase == PhaseDone:
		return l.err
	case l.phase == PhaseRound:
		return invalid("an extension of " + QuoteKey(l.grant.key) + " is in flight")
	case !now.Before(l.LoseAt()):
		l.expire()
		return l.err
	case !l.spec.keepable(l.grant, now):
		return &Error{Op: OpExtend, Kind: ErrNotHeld, Key: l.grant.key, Attempts: 1, Cause: errTooLate}
	}
	return l.start(now)
}

// errTooLate is the cause of an extension refused because its round could
// still be in flight when the grant is declared lost.
var errTooLate = errors.New("too little validity left for an extension round")

// start begins an extension round at now.
func (l *Lease) start(now time.Time) error {
	g := &l.grant
	if g.extensions >= l.spec.cfg.MaxExtensions {
		return &Error{Op: OpExtend, Kind: ErrExtensionLimit, Key: g.key, Attempts: 1}
	}
	l.phase = PhaseRound
	l.spec.initRound(&l.round, Command{Op: OpExtend, Kind: g.kind, Key: g.key, Keys: g.keys, Token: g.token, TTL: g.ttl}, now)
	return nil
}

// RoundDone ends the extension round at now, once Round().Done(), and
// returns its error: nil when it extended the grant (validity counted
// from the round's start, with the drift of the grant's own TTL). A round
// whose answers prove the grant lost (keys missing or held by others)
// ends the lease (PhaseDone). One that proved nothing (errors, timeouts,
// or a quorum won too late for any validity) leaves the grant as it was,
// and the lease tries again after a retry delay if a round started then
// still ends by LoseAt.
func (l *Lease) RoundDone(now time.Time) error {
	if l.phase != PhaseRound || !l.round.Done() {
		return nil
	}
	g, lost, e := l.spec.extended(l.grant, &l.round, now)
	l.phase = PhaseWait
	if e == nil {
		l.grant, l.retryAt, l.last = g, time.Time{}, nil
		return nil
	}
	if lost {
		l.lose(e)
		return e
	}
	l.last = e
	// A retry waits a retry delay, and at least a node timeout: a majority
	// that refuses at once must not be asked again back to back.
	delay := max(l.spec.cfg.Retry.Delay(1, l.spec.cfg.Jitter.Uint64()), l.spec.cfg.NodeTimeout)
	l.retryAt = now.Add(delay)
	// The last retry that still ends by LoseAt, with half a round bound to
	// spare: a timer that fires a little late must not lose it.
	b := l.spec.roundBound()
	if latest := l.LoseAt().Add(-b - b/2); l.retryAt.After(latest) && latest.After(now) {
		l.retryAt = latest
	}
	if !now.Before(l.LoseAt()) {
		l.expire()
	}
	return e
}

// Cancel abandons the extension round in flight, whose caller gave up
// with cause, and returns the extension's ErrCancelled error; the lease
// waits again, the grant as it was. The nodes may still apply the
// extension: that moves the keys' expiry, never the grant's validity.
func (l *Lease) Cancel(cause error) error {
	if l.phase == PhaseRound {
		l.phase = PhaseWait
	}
	return &Error{Op: OpExtend, Kind: ErrCancelled, Key: l.grant.key, Attempts: 1, Cause: cause}
}

// expire declares the grant lost at LoseAt: with the last failed
// extension's error when one proved nothing, else because the validity
// ran out.
func (l *Lease) expire() {
	if l.last != nil {
		l.lose(l.last)
		return
	}
	l.lose(&Error{Op: OpExtend, Kind: ErrNotHeld, Key: l.grant.key, Attempts: 1, Cause: errValidityOver})
}

func (l *Lease) lose(err error) {
	l.phase, l.err = PhaseDone, err
}
