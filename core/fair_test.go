package core_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock/core"
)

// drive sends every command r has due at now, answers each with st (a
// held key with 5 s left), and returns the commands sent.
func drive(r *core.Round, now time.Time, st core.Status) []core.Command {
	var cmds []core.Command
	for {
		node, cmd, _, ok := r.Next(now)
		if !ok {
			return cmds
		}
		cmds = append(cmds, cmd)
		rep := core.Reply{Node: node, Status: st}
		if st == core.StatusHeld && cmd.Op != core.OpRelease {
			rep.TTL = 5 * time.Second
		}
		r.Receive(rep)
	}
}

// failAttempt drives a's attempt to a loss on held keys and its cleanup,
// and returns the attempt's and the cleanup's first commands.
func failAttempt(t *testing.T, a *core.Acquisition, now time.Time) (attempt, cleanup core.Command) {
	t.Helper()
	require.Equal(t, core.PhaseRound, a.Phase())
	attempt = drive(a.Round(), now, core.StatusHeld)[0]
	a.RoundDone(now)
	require.Equal(t, core.OpRelease, a.Round().Command().Op, "the cleanup")
	cleanup = drive(a.Round(), now, core.StatusHeld)[0]
	a.RoundDone(now)
	require.Equal(t, core.PhaseWait, a.Phase())
	return attempt, cleanup
}

// TestFairCommands: what Config.Fair puts in an acquisition's commands.
// Every attempt probes (it may find the key handed to it) and is Fair;
// a failed attempt's cleanup queues the waiter under the ticket of the
// first cleanup, so that it keeps its place; an attempt queues the
// process again only when Grant.WithFollowers says others follow; a cancelled
// acquisition's cleanup leaves the queue; a release hands the key on.
func TestFairCommands(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	spec, err := core.NewSpec(names{"a", "b", "c"}, core.Config{Fair: true, TTL: 10 * time.Second,
		NodeTimeout: 50 * time.Millisecond, Tokens: &seqTokens{}, Jitter: fixedRand(0)})
	require.NoError(t, err)
	const handoff, life = 100 * time.Millisecond, 20*time.Second + 100*time.Millisecond

	a, err := spec.Acquire("k", core.Token{}, t0)
	require.NoError(t, err)
	att, clean := failAttempt(t, &a, t0)
	assert.Equal(t, core.Command{Op: core.OpAcquire, Key: "k", Token: att.Token, TTL: 10 * time.Second,
		Probe: true, Fair: true, Life: life}, att, "the first attempt probes, and does not queue")
	assert.Equal(t, core.Command{Op: core.OpRelease, Key: "k", Token: att.Token, Fair: true,
		Ticket: t0.UnixMilli(), Handoff: handoff, Life: life}, clean, "its cleanup queues the waiter")

	t1 := t0.Add(3 * time.Second)
	a.Wake(t1)
	att, clean = failAttempt(t, &a, t1)
	assert.Zero(t, att.Ticket)
	assert.Equal(t, t0.UnixMilli(), clean.Ticket, "a waiter keeps its first ticket")

	t2 := t1.Add(time.Second)
	a.Wake(t2)
	att = drive(a.Round(), t2, core.StatusOK)[0]
	assert.Zero(t, att.Ticket, "the attempt that takes the key leaves the queue")
	a.RoundDone(t2)
	g, err := a.Result()
	require.NoError(t, err)
	t3 := t2.Add(time.Second)
	rel, err := spec.Release(g.WithFollowers(true), t3)
	require.NoError(t, err)
	assert.Equal(t, core.Command{Op: core.OpRelease, Key: "k", Token: g.Token(), Fair: true, Ticket: t3.UnixMilli(), Handoff: handoff, Life: life},
		rel.Command(), "followed: the release queues the process at the back, then hands the key on")

	c, err := spec.Acquire("k", core.Token{}, t0)
	require.NoError(t, err)
	drive(c.Round(), t0, core.StatusOK)
	c.RoundDone(t0)
	g, err = c.Result()
	require.NoError(t, err)
	rel, err = spec.Release(g, t3)
	require.NoError(t, err)
	assert.Equal(t, core.Command{Op: core.OpRelease, Key: "k", Token: g.Token(), Fair: true, Handoff: handoff, Life: life},
		rel.Command(), "a release hands the key on, and queues nobody")

	b, err := spec.Acquire("k", core.Token{}, t0)
	require.NoError(t, err)
	drive(b.Round(), t0, 0) // sent, unanswered
	b.Cancel(t0, errors.New("gone"))
	require.Equal(t, core.PhaseRound, b.Phase())
	assert.Zero(t, b.Round().Command().Ticket, "a cancelled waiter's cleanup leaves the queue")
	assert.True(t, b.Round().Command().Fair)
}

// TestWaitAgainBeforeTheFirstAttempt: a new acquisition told to wait
// afresh before its first attempt is driven waits instead, and attempts
// first at its wake, as attempt 1.
func TestWaitAgainBeforeTheFirstAttempt(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	for _, fair := range []bool{false, true} {
		spec, err := core.NewSpec(names{"a", "b", "c"}, core.Config{Fair: fair, Tokens: &seqTokens{}, Jitter: fixedRand(0),
			Retry: core.RandomDelay(3, 20*time.Millisecond, 20*time.Millisecond)})
		require.NoError(t, err)
		a, err := spec.Acquire("k", core.TokenFromUint64s(7, 9), t0)
		require.NoError(t, err)
		a.WaitAgain(t0)
		require.Equal(t, core.PhaseWait, a.Phase(), "fair %v", fair)
		assert.Equal(t, t0.Add(20*time.Millisecond), a.WakeAt())
		a.Wake(a.WakeAt())
		cmd := drive(a.Round(), a.WakeAt(), core.StatusHeld)[0]
		assert.Equal(t, core.TokenFromUint64s(7, 9), cmd.Token, "attempt 1's token")
		assert.Equal(t, fair, cmd.Probe)
		a.RoundDone(t0)
		drive(a.Round(), t0, core.StatusHeld)
		a.RoundDone(t0)
		a.GiveUp()
		_, err = a.Result()
		var e *core.Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, 1, e.Attempts, "the wait was no attempt")

		// Once an attempt is under way, it is too late.
		b, _ := spec.Acquire("k", core.Token{}, t0)
		drive(b.Round(), t0, 0)
		b.WaitAgain(t0)
		assert.Equal(t, core.PhaseRound, b.Phase())
	}
}
