package redlock

import (
	"context"
	"errors"
	"time"

	"github.com/redlock-go/redlock/core"
)

// LockPermit takes one of permits permits of the semaphore key: at most
// permits holders hold one at a time, within the mutex's assumptions.
// Each permit is a slot, a mutex key of its own (core.PermitKey: key's
// hash tag, or key in braces, then ":permit:" and the slot's number, so
// that every slot shares one hash slot on a Cluster), and the Lock
// returned is an ordinary Lock of the slot won: Key names it, and Unlock,
// Extend, Until, Context, Fence and the Client's Lease work as for Lock.
// Every client of a semaphore must give it the same number of permits.
//
// Each round tries one slot, named by the client: a sweep tries every
// slot once, in turn from a slot drawn from the first attempt's token,
// so that contenders start apart (core.Permits). Once a whole sweep was
// refused, LockPermit waits for a release announced on any slot, then
// tries that slot; or for the earliest holder's expiry, or, where a
// node's announcements are not heard or with Options.Poll, at most
// Options.Backoff's delay, then sweeps every slot again; until it holds
// a permit or ctx ends.
//
// When ctx's deadline ends a wait, LockPermit returns the last sweep's
// error: ErrTaken when every slot was taken, or else the failure of a
// slot that was not (ErrQuorumUnreachable, ErrNotHeld), which names that
// slot's key and nodes. ctx cancelled, or ending during an attempt, gives
// ErrCancelled. permits below 1 or above core.MaxPermits, Options.Fair
// (whose queues are the mutex's), a nil ctx and a bad key give
// ErrInvalidConfig, before anything is sent.
func (c *Client) LockPermit(ctx context.Context, key string, permits int) (*Lock, error) {
	return c.lockPermit(ctx, key, permits, false)
}

// TryLockPermit is LockPermit with one sweep: one attempt on each slot,
// and no wait. A Fair Client's TryLockPermit runs without Fair, as its
// TryLock does.
func (c *Client) TryLockPermit(ctx context.Context, key string, permits int) (*Lock, error) {
	return c.lockPermit(ctx, key, permits, true)
}

// lockPermit is the pump of core.Permits: it drives the slots' rounds
// over the driver, does its waits while watching every slot's
// announcements, and turns ctx's end into Cancel or GiveUp.
func (c *Client) lockPermit(ctx context.Context, key string, permits int, once bool) (*Lock, error) {
	if ctx == nil {
		return nil, errNilContext
	}
	slots, err := core.PermitKeys(key, permits)
	if err != nil {
		return nil, err
	}
	start := c.clock.Now()
	var p core.Permits
	if once {
		p, err = c.spec.TryPermit(slots, core.Token{}, start)
	} else {
		p, err = c.spec.AcquirePermit(slots, core.Token{}, start)
	}
	if err != nil {
		return nil, err
	}
	var l *listener // every slot's, started at the first wait
	started, at := start, start
	for p.Phase() != core.PhaseDone {
		switch p.Phase() {
		case core.PhaseRound:
			at = c.permitRound(ctx, &p, started)
			started = at // a round that follows starts at at
		case core.PhaseWait:
			started = time.Time{} // the wait reads the clock: a round after it reads it again
			if l == nil && c.room != nil {
				l = c.room.listenKeys(slots)
			}
			c.permitWait(ctx, &p, l)
		}
	}
	if l != nil {
		l.stop()
	}
	g, err := p.Result()
	if f := c.obs.Acquire; f != nil {
		f(AcquireEvent{Context: ctx, Key: key, Try: once, Outcome: OutcomeOf(err), Err: err,
			Attempts: p.Attempts(), Start: start, Duration: at.Sub(start), Fence: g.Fence()})
	}
	if err != nil {
		return nil, err
	}
	c.fenced(ctx, key, g)
	return c.locked(ctx, g, at, core.Held{}), nil
}

// permitRound drives p's round over the driver and moves it on
// (RoundDone), as advance does an Acquisition's: ctx ending during an
// attempt cancels it, and a cleanup runs detached from ctx's
// cancellation. It returns the reading it moved p on at.
func (c *Client) permitRound(ctx context.Context, p *core.Permits, started time.Time) time.Time {
	switch op := p.Round().Command().Op; {
	case op == core.OpRelease: // the cleanup of a failed attempt
		c.run(ctx, p.Round(), how{started: started})
	case ctx.Err() != nil:
		now := c.clock.Now()
		p.Cancel(now, ctx.Err())
		return now
	default:
		if cancelled, _ := c.run(ctx, p.Round(), how{started: started, cancel: ctx.Done()}); cancelled {
			now := c.clock.Now()
			p.Cancel(now, ctx.Err())
			return now
		}
	}
	now := c.nowAfter(nil, started)
	p.RoundDone(now)
	return now
}

// permitWait is one wait of PhaseWait: until WakeAt, an announcement of
// a slot, or ctx's end (l nil: it polls). What was heard since the last
// wait is told to p first (core's Permits.SetListening and Announce),
// which may bring WakeAt forward.
func (c *Client) permitWait(ctx context.Context, p *core.Permits, l *listener) {
	var poke <-chan struct{}
	if l != nil {
		p.SetListening(l.listening()) // before the heard nodes: a change after it is heard
		now := c.clock.Now()
		poke = l.arm(func(slot int, nodes uint32) {
			for i := 0; nodes != 0; i, nodes = i+1, nodes>>1 {
				if nodes&1 != 0 {
					p.Announce(slot, i, now)
				}
			}
		})
	}
	switch c.sleep(max(p.WakeAt().Sub(c.clock.Now()), 0), poke, ctx.Done()) {
	case slept:
		p.Wake(c.clock.Now())
	case cancelled:
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			p.GiveUp(c.clock.Now()) // every slot was still taken: the last sweep's error
		} else {
			p.Cancel(c.clock.Now(), ctx.Err())
		}
	}
	// poked: hear what came
}
