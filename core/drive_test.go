package core_test

import (
	"context"
	"errors"
	"time"

	"github.com/redlock-go/redlock/core"
)

// This file is the tests' one driver loop over core's step values. Core
// does no I/O and never sleeps; the root package's redlock.Client is the
// production runner, and package core's tests cannot import it. locker
// drives core.Acquisition, core.Round and core.Lease over a core.Driver
// the way Client does (client.go's acquire, wait, advance and run; lock.go's
// extend and watch), on a clock the test controls, so that the tests of the
// algorithm read as they did when core had blocking methods.

// testClock is the clock locker reads and sleeps on: memnode.ManualClock
// (whose Sleep advances at once), a wrapper of it, or sysClock.
type testClock interface {
	Now() time.Time
	// Sleep waits d, or returns false at once if cancel is closed first.
	Sleep(d time.Duration, cancel <-chan struct{}) bool
}

// sysClock is the system clock with a Sleep.
type sysClock struct{ core.SystemClock }

func (sysClock) Sleep(d time.Duration, cancel <-chan struct{}) bool {
	if d <= 0 {
		select {
		case <-cancel:
			return false
		default:
			return true
		}
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-cancel:
		return false
	}
}

// locker runs a Spec's step values over a Driver on a clock.
type locker struct {
	spec  core.Spec
	drv   core.Driver
	clock testClock
	seq   bool // sequential rounds: read once, not a Config copy per round
}

// newLocker checks cfg against d, as core.NewSpec does.
func newLocker(d core.Driver, clock testClock, cfg core.Config) (*locker, error) {
	spec, err := core.NewSpec(d, cfg)
	if err != nil {
		return nil, err
	}
	return &locker{spec: spec, drv: d, clock: clock, seq: spec.Config().FanOut == core.Sequential}, nil
}

// Config returns the Spec's configuration in force.
func (l *locker) Config() core.Config { return l.spec.Config() }

// Acquire takes key with tokens from Config.Tokens, retrying under
// Config.Retry; AcquireToken holds tok (attempt k: tok with its last four
// bytes XORed with k−1).
func (l *locker) Acquire(ctx context.Context, key string) (core.Grant, error) {
	return l.acquire(ctx, key, core.Token{})
}

func (l *locker) AcquireToken(ctx context.Context, key string, tok core.Token) (core.Grant, error) {
	return l.acquire(ctx, key, tok)
}

// acquire is Client.acquire without the wait room: it drives an
// Acquisition to its end.
func (l *locker) acquire(ctx context.Context, key string, tok core.Token) (core.Grant, error) {
	a, err := l.spec.Acquire(key, tok, l.clock.Now())
	if err != nil {
		return core.Grant{}, err
	}
	for {
		switch a.Phase() {
		case core.PhaseRound:
			l.advance(ctx, &a)
		case core.PhaseWait:
			l.wait(ctx, &a)
		default:
			return a.Result()
		}
	}
}

// wait is Client.wait for a poller: it sleeps until WakeAt. ctx's deadline
// ending the wait gives up with the last attempt's error, as it does in
// Client; here the wait is not even started when the deadline would end
// it (the deadline is on the real clock, the wake on the test's).
func (l *locker) wait(ctx context.Context, a *core.Acquisition) {
	at := a.WakeAt()
	if dl, ok := ctx.Deadline(); ok && !at.Before(dl) {
		a.GiveUp(l.clock.Now())
		return
	}
	if !l.clock.Sleep(at.Sub(l.clock.Now()), ctx.Done()) {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			a.GiveUp(l.clock.Now())
		} else {
			a.Cancel(l.clock.Now(), ctx.Err())
		}
		return
	}
	a.Wake(l.clock.Now())
}

// advance is Client.advance: it drives a's round and moves it on; ctx
// ending during an attempt cancels it, and a cleanup runs detached.
func (l *locker) advance(ctx context.Context, a *core.Acquisition) {
	if core.Cleaning(a) {
		l.run(ctx, a.Round(), nil)
	} else if ctx.Err() != nil || l.run(ctx, a.Round(), ctx.Done()) {
		a.Cancel(l.clock.Now(), ctx.Err())
		return
	}
	a.RoundDone(l.clock.Now())
}

// run is Client.run: it drives r over one batch until it is done, and
// reports whether cancel closed first.
func (l *locker) run(ctx context.Context, r *core.Round, cancel <-chan struct{}) (cancelled bool) {
	b := l.drv.Begin(ctx)
	defer b.Close()
	sequential := l.seq
	var now time.Time
	// Every command of a round is the round's Command, copied once
	// here rather than out of each Next's result: Command is 72 bytes,
	// never in registers, and a copy read back straight after it was
	// written stalls the CPU. The reply is received into a variable of
	// the loop's for the same reason.
	cmd := r.Command()
	var rep core.Reply
	var got bool
	for !r.Done() {
		if cancel != nil && isClosed(cancel) {
			return true
		}
		if sequential {
			now = l.clock.Now() // each node's deadline counts from its send
		}
		for {
			node, _, deadline, ok := r.Next(now)
			if !ok {
				break
			}
			b.Send(node, cmd, deadline)
		}
		if r.Done() { // a cleanup that awaits nobody
			break
		}
		if rep, got = b.Receive(cancel); !got {
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

// Release is Client.release: g's release round, run to its end detached
// from ctx's cancellation.
func (l *locker) Release(ctx context.Context, g core.Grant) error {
	r, err := l.spec.Release(g, l.clock.Now())
	if err != nil {
		return err
	}
	l.run(ctx, &r, nil)
	return l.spec.Released(g, &r)
}

// Lease starts keeping g under this locker's Spec.
func (l *locker) Lease(g core.Grant) core.Lease { return l.spec.Lease(g) }

// Extend is Client.extend: one extension of ls that the caller asked for,
// or the round its Wake started (PhaseRound). ls.Grant() is the grant
// after it; ls.Phase() is core.PhaseDone once ls proved it lost.
func (l *locker) Extend(ctx context.Context, ls *core.Lease) error {
	if ls.Phase() != core.PhaseRound {
		if err := ls.Extend(l.clock.Now()); err != nil {
			return err
		}
	}
	if ctx.Err() != nil || l.run(ctx, ls.Round(), ctx.Done()) {
		return ls.Cancel(ctx.Err())
	}
	return ls.RoundDone(l.clock.Now())
}

// extend extends g once through a fresh Lease: for tests of one
// extension (or a chain of them), where the lease's state between
// extensions does not matter.
func (l *locker) extend(ctx context.Context, g core.Grant) (core.Grant, error) {
	ls := l.spec.Lease(g)
	err := l.Extend(ctx, &ls)
	return ls.Grant(), err
}

// leaseRound is one extension round a kept lease ran.
type leaseRound struct {
	start, end time.Time
	err        error
}

// keep is Client.watch on the test's clock: it sleeps until ls's WakeAt,
// wakes it and runs the extension rounds it starts, until ls declares the
// grant lost or the next wake is after until. It returns the rounds run.
func (l *locker) keep(ctx context.Context, ls *core.Lease, until time.Time) []leaseRound {
	var rounds []leaseRound
	for wakes := 0; ls.Phase() != core.PhaseDone; wakes++ {
		if wakes == 100_000 {
			panic("keep: the lease neither ends nor moves on")
		}
		at := ls.WakeAt()
		if at.After(until) {
			break
		}
		l.clock.Sleep(at.Sub(l.clock.Now()), nil)
		ls.Wake(l.clock.Now())
		if ls.Phase() != core.PhaseRound {
			continue
		}
		start := l.clock.Now()
		err := l.Extend(ctx, ls)
		rounds = append(rounds, leaseRound{start: start, end: l.clock.Now(), err: err})
	}
	return rounds
}

// AcquirePermit is Client.LockPermit without the watches: it drives a
// Permits of slots to its end, started in *p (AcquirePermitIn: a
// Permits is larger than TinyGo keeps on the stack), and returns the
// grant and its slot.
func (l *locker) AcquirePermit(ctx context.Context, p *core.Permits, slots []string) (core.Grant, int, error) {
	if err := l.spec.AcquirePermitIn(p, slots, core.Token{}, l.clock.Now()); err != nil {
		return core.Grant{}, -1, err
	}
	for {
		switch p.Phase() {
		case core.PhaseRound:
			if p.Round().Command().Op == core.OpRelease { // a failed attempt's cleanup
				l.run(ctx, p.Round(), nil)
			} else if ctx.Err() != nil || l.run(ctx, p.Round(), ctx.Done()) {
				p.Cancel(l.clock.Now(), ctx.Err())
				continue
			}
			p.RoundDone(l.clock.Now())
		case core.PhaseWait:
			at := p.WakeAt()
			if dl, ok := ctx.Deadline(); ok && !at.Before(dl) {
				p.GiveUp(l.clock.Now())
				continue
			}
			if !l.clock.Sleep(at.Sub(l.clock.Now()), ctx.Done()) {
				p.Cancel(l.clock.Now(), ctx.Err())
				continue
			}
			p.Wake(l.clock.Now())
		default:
			g, err := p.Result()
			return g, p.Slot(), err
		}
	}
}
