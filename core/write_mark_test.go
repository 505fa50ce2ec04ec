package core_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redlock-go/redlock/core"
)

// TestWriterKeepsItsMarkOnlyWhileItWaits: a writer's failed attempt's
// cleanup keeps the mark its refused attempts left (a positive Ticket)
// only while the writer waits on; the cleanup of its last attempt, of an
// attempt cancelled, and its grant's release delete it (no Ticket); a
// writer that gives up or is cancelled while its mark is kept (waiting,
// woken for an attempt not yet sent, or in such a cleanup) first sends
// one more release of its last token without Ticket, which deletes the
// mark. A mutex's cleanups and cancels are as before.
func TestWriterKeepsItsMarkOnlyWhileItWaits(t *testing.T) {
	held := func(int) core.Reply { return core.Reply{Status: core.StatusHeld, TTL: time.Second} }
	missing := func(int) core.Reply { return core.Reply{Status: core.StatusMissing} }
	start := func(t *testing.T, kind core.Kind, tries int) (env, *core.Acquisition, core.Token) {
		e := newEnv(t, 3, core.Multiplexed, core.Config{Retry: core.RandomDelay(tries, 10*time.Second, 10*time.Second)})
		a, err := e.l.spec.AcquireTarget(core.Target{Kind: kind, Key: "k"}, core.Token{}, e.clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		tok := a.Round().Command().Token
		feedRound(e, &a, held) // the first attempt, refused: its cleanup next
		return e, &a, tok
	}
	release := func(t *testing.T, a *core.Acquisition, kind core.Kind, tok core.Token, waitsOn bool, what string) {
		t.Helper()
		cmd := a.Round().Command()
		if a.Phase() != core.PhaseRound || cmd.Op != core.OpRelease || cmd.Kind != kind || !core.SameAcquisition(cmd.Token, tok) {
			t.Fatalf("%s: phase %v, round %+v: want a release of the acquisition's token", what, a.Phase(), cmd)
		}
		if got := cmd.Ticket > 0; got != waitsOn {
			t.Fatalf("%s: release's Ticket %d: want it positive (the mark stays) %v", what, cmd.Ticket, waitsOn)
		}
	}
	done := func(t *testing.T, a *core.Acquisition, want error, what string) {
		t.Helper()
		if a.Phase() != core.PhaseDone {
			t.Fatalf("%s: phase %v, round %+v: want done", what, a.Phase(), a.Round().Command())
		}
		if _, err := a.Result(); !errors.Is(err, want) {
			t.Fatalf("%s: %v, want %v", what, err, want)
		}
	}

	t.Run("cleanups", func(t *testing.T) {
		e, a, tok := start(t, core.KindWrite, 2)
		release(t, a, core.KindWrite, tok, true, "the first attempt's cleanup, the writer waiting on")
		feedRound(e, a, missing)
		a.Wake(a.WakeAt())
		feedRound(e, a, held)
		release(t, a, core.KindWrite, tok, false, "the last attempt's cleanup")
		feedRound(e, a, missing)
		done(t, a, core.ErrTaken, "no try left")
	})
	t.Run("try", func(t *testing.T) {
		_, a, tok := start(t, core.KindWrite, 1)
		release(t, a, core.KindWrite, tok, false, "a single try's cleanup")
	})
	t.Run("cancelled waiting", func(t *testing.T) {
		e, a, tok := start(t, core.KindWrite, 3)
		feedRound(e, a, missing)
		a.Cancel(e.clock.Now(), context.Canceled)
		release(t, a, core.KindWrite, tok, false, "a writer cancelled while it waits")
		feedRound(e, a, missing)
		done(t, a, core.ErrCancelled, "after the mark's release")
	})
	t.Run("gives up waiting", func(t *testing.T) {
		e, a, tok := start(t, core.KindWrite, 3)
		feedRound(e, a, missing)
		a.GiveUp(e.clock.Now())
		release(t, a, core.KindWrite, tok, false, "a writer that gives up")
		feedRound(e, a, missing)
		done(t, a, core.ErrTaken, "after the mark's release: the last attempt's error")
	})
	t.Run("cancelled in its cleanup", func(t *testing.T) {
		e, a, tok := start(t, core.KindWrite, 3)
		a.Cancel(e.clock.Now(), context.Canceled)
		release(t, a, core.KindWrite, tok, true, "the cleanup under way")
		feedRound(e, a, missing)
		release(t, a, core.KindWrite, tok, false, "a writer cancelled in a cleanup that kept its mark")
		feedRound(e, a, missing)
		done(t, a, core.ErrCancelled, "after the mark's release")
	})
	t.Run("cancelled woken", func(t *testing.T) {
		e, a, tok := start(t, core.KindWrite, 3)
		feedRound(e, a, missing)
		a.Wake(a.WakeAt())
		if cmd := a.Round().Command(); cmd.Op != core.OpAcquire {
			t.Fatalf("woken: round %+v, want the next attempt", cmd)
		}
		a.Cancel(e.clock.Now(), context.Canceled)
		release(t, a, core.KindWrite, tok, false, "a writer cancelled before its next attempt went")
		feedRound(e, a, missing)
		done(t, a, core.ErrCancelled, "after the mark's release")
	})
	t.Run("cancelled attempting", func(t *testing.T) {
		e := newEnv(t, 3, core.Multiplexed, core.Config{Retry: core.RandomDelay(3, 0, 0)})
		a, err := e.l.spec.AcquireTarget(core.Target{Kind: core.KindWrite, Key: "k"}, core.Token{}, e.clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		tok := a.Round().Command().Token
		r := a.Round()
		if _, _, _, ok := r.Next(e.clock.Now()); !ok {
			t.Fatal("no command to send")
		}
		a.Cancel(e.clock.Now(), context.Canceled)
		release(t, &a, core.KindWrite, tok, false, "the cleanup of an attempt cancelled")
		feedRound(e, &a, missing)
		done(t, &a, core.ErrCancelled, "after the cleanup, no more")
	})
	t.Run("mutex", func(t *testing.T) {
		e, a, tok := start(t, core.KindMutex, 3)
		release(t, a, core.KindMutex, tok, false, "a mutex's cleanup")
		feedRound(e, a, missing)
		a.Cancel(e.clock.Now(), context.Canceled)
		done(t, a, core.ErrCancelled, "a mutex cancelled while it waits")
	})
}
