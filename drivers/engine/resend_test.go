package engine

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers/internal/dialspec"
	"github.com/redlock-go/redlock/drivers/wire"
)

// The resend (node.resend): a release or an extension whose connection
// broke before its reply goes again, once, on a new connection, within
// the time its first send had; an acquisition never does.

// block holds node 0's connection with an exchange of its own, so that
// the rounds sent meanwhile go out together in the next pipeline; free
// answers it.
func block(t *testing.T, e *Engine, f *fakeNet, clock *manualClock) (free func()) {
	t.Helper()
	b := send(e, clock, 0, acquire("blocker", 99), time.Second)
	c := receive(b, nil)
	x := f.next()
	return func() {
		x.ok()
		wait(t, c)
		b.Close()
	}
}

// TestBrokenExchangeSendsAReleaseAndAnExtensionAgain: over a Conn that
// is not a Duplex, a pipeline whose connection fails before its replies
// is answered with the failure for its acquisition, and its release and
// extension go again, in their order, on a new connection, where they
// are answered.
func TestBrokenExchangeSendsAReleaseAndAnExtensionAgain(t *testing.T) {
	e, f, clock := start(t, 1)
	free := block(t, e, f, clock)
	var cs []<-chan core.Reply
	for k, cmd := range []core.Command{acquire("a", 1), extend("b", 2), release("c", 3)} {
		b := send(e, clock, 0, cmd, time.Second)
		defer b.Close()
		cs = append(cs, receive(b, nil))
		eventuallyQueued(t, e.nodes[0], k+1) // in this order
	}
	free()
	x := f.next()
	assert.Equal(t, []string{"SET a", "EVAL b", "EVAL c"}, x.names(), "one pipeline")
	x.reply(errors.New("EOF"))

	r := wait(t, cs[0])
	assert.Equal(t, core.StatusError, r.Status)
	assert.ErrorContains(t, r.Err, "node 0 (nodeA:6379): acquire: EOF", "an acquisition is never sent again")
	f.dialed(0)
	x2 := f.next()
	assert.NotSame(t, x.conn, x2.conn, "on a new connection")
	assert.Equal(t, []string{"EVAL b", "EVAL c"}, x2.names(), "the extension and the release go again, in order")
	x2.ok()
	assert.Equal(t, core.StatusOK, wait(t, cs[1]).Status)
	assert.Equal(t, core.StatusOK, wait(t, cs[2]).Status)
	assert.Equal(t, 1, f.closedConns())
}

// TestResendKeepsTheRoundsDeadline: the command sent again has the time
// left to its first send's end, not a new budget; once that has passed,
// it is not sent again; and it goes again only once.
func TestResendKeepsTheRoundsDeadline(t *testing.T) {
	e, f, clock := start(t, 1)
	b := send(e, clock, 0, extend("k", 1), time.Second)
	defer b.Close()
	c := receive(b, nil)
	x := f.next()
	clock.Advance(600 * time.Millisecond)
	x.reply(errors.New("ECONNRESET"))
	f.dialed(0)
	x2 := f.next()
	assert.Equal(t, []string{"EVAL k"}, x2.names())
	assertBudget(t, 400*time.Millisecond, x2.budget, "the extension keeps its round's deadline")
	x2.reply(errors.New("EOF again"))
	r := wait(t, c)
	assert.Equal(t, core.StatusError, r.Status, "sent twice, it fails")
	assert.ErrorContains(t, r.Err, "EOF again")

	// A release: its first send's time on the wire, its budget.
	b2 := send(e, clock, 0, release("k", 2), time.Second)
	defer b2.Close()
	c2 := receive(b2, nil)
	f.dialed(0)
	x3 := f.next()
	clock.Advance(time.Second) // past the round's deadline
	x3.reply(errors.New("EOF"))
	r2 := wait(t, c2)
	assert.Equal(t, core.StatusTimeout, r2.Status, "no time left: not sent again")

	b3 := send(e, clock, 0, release("k", 3), time.Second)
	defer b3.Close()
	c3 := receive(b3, nil)
	f.dialed(0)
	x4 := f.next()
	assert.Equal(t, []string{"EVAL k"}, x4.names(), "the next command, not the late release")
	assert.Contains(t, x4.cmds[0], tok(3).String())
	x4.ok()
	assert.Equal(t, core.StatusOK, wait(t, c3).Status)
}

// TestResendRedialsUntilTheServerIsBack: a command sent again on a node
// that refuses connections (a restarting server) dials again every
// redialPause, on the engine's clock, until the server takes it.
func TestResendRedialsUntilTheServerIsBack(t *testing.T) {
	f := newFakeNet(t, 1)
	clock := armedClock{newManualClock(), make(chan time.Duration, 64)}
	e := mustNew(t, Config{Names: []string{"nodeA:6379"}, Dial: f.dial, Clock: clock})
	f.dialed(0)
	t.Cleanup(func() {
		go func() {
			for x := range f.exchanges {
				x.ok()
			}
		}()
		e.Close()
		close(f.exchanges)
	})
	b := e.Begin(t.Context())
	b.Send(0, release("k", 1), clock.Now().Add(time.Second))
	defer b.Close()
	c := receive(b, nil)
	x := f.next()
	f.mu.Lock()
	f.dialErr[0] = errRefused
	f.mu.Unlock()
	x.reply(errors.New("EOF"))
	for k := range 3 {
		f.dialed(0)
		for clock.nextArmed(t) != redialPause { // the batch's own timers aside
		}
		if k == 2 { // back while the node pauses: its next dial is taken
			f.mu.Lock()
			f.dialErr[0] = nil
			f.mu.Unlock()
		}
		clock.Advance(redialPause)
	}
	f.dialed(0)
	x2 := f.next()
	assert.Equal(t, []string{"EVAL k"}, x2.names())
	x2.ok()
	assert.Equal(t, core.StatusOK, wait(t, c).Status, "the release reached the server once it was back")
}

// TestFairReleaseGoesAgainFlagged: a Fair release goes again as the
// same Fair release, its waiter queue's keys and arguments included, with
// wire.Resent last, under which release.lua has the effects of a first
// run (the hand-on, the announcement, the caller queued) only if it
// deletes the caller's token: a second run changes nothing a first run
// did not, and a first run that never ran has them all.
func TestFairReleaseGoesAgainFlagged(t *testing.T) {
	e, f, clock := start(t, 1)
	for _, ticket := range []int64{7, -1, 0} {
		cmd := release("k", 1)
		cmd.Fair, cmd.Ticket, cmd.TTL, cmd.Handoff = true, ticket, time.Minute, 10*time.Millisecond
		b := send(e, clock, 0, cmd, time.Second)
		c := receive(b, nil)
		x := f.next()
		require.Len(t, x.cmds, 1, "ticket %d", ticket)
		first := slices.Clone(x.cmds[0])
		require.Equal(t, "3", first[2], "the Fair release names three keys")
		assert.NotContains(t, first[8:], wire.Resent, "ticket %d: a first send is not flagged", ticket)
		x.reply(errors.New("EOF"))
		f.dialed(0)
		x2 := f.next()
		require.Len(t, x2.cmds, 1, "ticket %d", ticket)
		assert.Equal(t, []string{"EVAL", wire.Release.Src}, x2.cmds[0][:2], "ticket %d: on a new connection", ticket)
		assert.Equal(t, append(first[2:], wire.Resent), x2.cmds[0][2:], "ticket %d: the same Fair release, flagged", ticket)
		x2.reply(nil, Reply{Kind: KindInt, Int: 0})
		assert.Equal(t, core.StatusMissing, wait(t, c).Status, "ticket %d", ticket)
		b.Close()
	}
}

// TestResentExtensionCountsOnceItsWaitIsMet: on a node with WAIT, an
// extension whose connection broke after its reply but before its
// WAIT's goes again with a WAIT behind it, and counts only if that WAIT
// counts enough replicas: after a failover, the new master's replicas
// must hold it.
func TestResentExtensionCountsOnceItsWaitIsMet(t *testing.T) {
	f := newFakeNet(t, 1)
	f.replicas[0] = 1
	e, clock := startNodes(t, f, []NodeConfig{{Replicas: 1, WaitTimeout: 50 * time.Millisecond}})
	<-f.dials // the WAIT lane's
	for _, tc := range []struct {
		name string
		acks int64
		want core.Status
	}{{"met", 1, core.StatusOK}, {"short", 0, core.StatusError}} {
		b := send(e, clock, 0, extend("k", 1), time.Second)
		c := receive(b, nil)
		x := f.next()
		require.Len(t, x.cmds, 2, tc.name)
		x.reply(errors.New("EOF"), Reply{Kind: KindInt, Int: 1}) // the WAIT's reply lost
		f.dialed(0)
		x2 := f.next()
		require.Len(t, x2.cmds, 2, tc.name)
		assert.Equal(t, []string{"WAIT", "1", "50"}, x2.cmds[1], "%s: a WAIT behind the extension again", tc.name)
		x2.reply(nil, Reply{Kind: KindInt, Int: 1}, Reply{Kind: KindInt, Int: tc.acks})
		r := wait(t, c)
		b.Close()
		assert.Equal(t, tc.want, r.Status, tc.name)
		if tc.want == core.StatusError {
			assert.ErrorIs(t, r.Err, dialspec.ErrNotReplicated, tc.name)
		}
	}
}

// TestDuplexReadFailureSendsAReleaseAgain: over a Duplex, a release in
// the pipeline being read when the connection fails goes again too, as
// one behind it does.
func TestDuplexReadFailureSendsAReleaseAgain(t *testing.T) {
	e, f, clock := startDuplex(t, 1)
	b := send(e, clock, 0, release("a", 1), time.Second)
	defer b.Close()
	c := receive(b, nil)
	x := f.next()
	x.reply(errors.New("ECONNRESET"))
	f.dialed(0)
	x2 := f.next()
	assert.Equal(t, []string{"EVAL a"}, x2.names())
	x2.ok()
	assert.Equal(t, core.StatusOK, wait(t, c).Status)
}

// errLoading is the reply of a server that has restarted over a large
// dataset: it takes connections at once, and answers LOADING until its
// data is loaded.
var errLoading = errors.New("LOADING Redis is loading the dataset in memory")

// startArmed is start with an armedClock, whose timers the test sees.
func startArmed(t *testing.T) (*Engine, *fakeNet, armedClock) {
	t.Helper()
	return startArmedOn(t, newFakeNet(t, 1))
}

// startArmedOn is startArmed over f.
func startArmedOn(t *testing.T, f *fakeNet) (*Engine, *fakeNet, armedClock) {
	t.Helper()
	clock := armedClock{newManualClock(), make(chan time.Duration, 64)}
	e := mustNew(t, Config{Names: []string{"nodeA:6379"}, Dial: f.dial, Clock: clock})
	f.dialed(0)
	t.Cleanup(func() {
		go func() {
			for x := range f.exchanges {
				x.ok()
			}
		}()
		e.Close()
		close(f.exchanges)
	})
	return e, f, clock
}

// advancePause moves clock past the node's redialPause once it is armed.
func advancePause(t *testing.T, clock armedClock) {
	t.Helper()
	for clock.nextArmed(t) != redialPause { // the batch's own timers aside
	}
	clock.Advance(redialPause)
}

// TestLoadingSendsAReleaseAndAnExtensionAgain: a release or an extension
// answered LOADING did not run: it goes again, a redialPause later each
// time, on the same connection, until the server has loaded its data,
// and as many times as it meets LOADING; an acquisition answered LOADING
// fails, a failed vote.
func TestLoadingSendsAReleaseAndAnExtensionAgain(t *testing.T) {
	for _, cmd := range []core.Command{release("k", 1), extend("k", 1)} {
		e, f, clock := startArmed(t)
		b := e.Begin(t.Context())
		b.Send(0, cmd, clock.Now().Add(time.Second))
		c := receive(b, nil)
		x := f.next()
		for range 2 {
			x.reply(nil, Reply{Kind: KindError, Err: errLoading})
			advancePause(t, clock)
			x2 := f.next()
			assert.Same(t, x.conn, x2.conn, "%v: the connection is fine", cmd.Op)
			x = x2
		}
		assert.Equal(t, []string{"EVAL k"}, x.names(), cmd.Op)
		x.ok()
		assert.Equal(t, core.StatusOK, wait(t, c).Status, "%v: it ran once the data was loaded", cmd.Op)
		b.Close()
	}

	e, f, clock := startArmed(t)
	b := e.Begin(t.Context())
	defer b.Close()
	b.Send(0, acquire("a", 2), clock.Now().Add(time.Second))
	c := receive(b, nil)
	f.next().reply(nil, Reply{Kind: KindError, Err: errLoading})
	r := wait(t, c)
	assert.Equal(t, core.StatusError, r.Status, "an acquisition answered LOADING is a failed vote")
	assert.ErrorContains(t, r.Err, "LOADING")
}

// TestDuplexLoadingSendsAReleaseAgain: over a Duplex, where the reader
// decodes the LOADING reply, the release goes again a redialPause later
// too, on the same connection.
func TestDuplexLoadingSendsAReleaseAgain(t *testing.T) {
	f := newFakeNet(t, 1)
	f.duplex = true
	e, f, clock := startArmedOn(t, f)
	b := e.Begin(t.Context())
	defer b.Close()
	b.Send(0, release("k", 1), clock.Now().Add(time.Second))
	c := receive(b, nil)
	x := f.next()
	x.reply(nil, Reply{Kind: KindError, Err: errLoading})
	advancePause(t, clock)
	x2 := f.next()
	assert.Same(t, x.conn, x2.conn)
	assert.Equal(t, []string{"EVAL k"}, x2.names())
	x2.ok()
	assert.Equal(t, core.StatusOK, wait(t, c).Status)
}

// TestLoadingResendEndsAtTheDeadline: an extension that meets LOADING goes
// again until its time on the wire ends, and no longer.
func TestLoadingResendEndsAtTheDeadline(t *testing.T) {
	e, f, clock := startArmed(t)
	b := e.Begin(t.Context())
	defer b.Close()
	b.Send(0, extend("k", 1), clock.Now().Add(50*time.Millisecond))
	c := receive(b, nil)
	sends := 0
	for {
		x := f.next()
		sends++
		x.reply(nil, Reply{Kind: KindError, Err: errLoading})
		if sends == 2 { // 0, 20 ms: a pause to 40 would leave no time to send before 50
			break
		}
		advancePause(t, clock)
	}
	// No time for another pause: it fails at once, with LOADING as its
	// cause, not at the deadline as a timeout.
	r := wait(t, c)
	assert.Equal(t, core.StatusError, r.Status, "past its deadline, it is not sent again")
	assert.ErrorContains(t, r.Err, "LOADING")
	assert.Equal(t, 2, sends)
}

// TestUnsentFirstSendFailsAtOnce: a release or an extension whose first
// dial is refused fails at once, as any command does: a node that
// refuses connections, dead or restarting, costs no node timeout (the
// failure-bounds system test holds Sequential fan-out to that). Only a
// command that went out on a connection broken under it redials until
// its end (TestResendRedialsUntilTheServerIsBack).
func TestUnsentFirstSendFailsAtOnce(t *testing.T) {
	for _, cmd := range []core.Command{release("k", 1), extend("k", 1)} {
		e, f, clock := startArmed(t)
		// Break the node's connection, with nothing on it, so that the
		// next command dials.
		b0 := e.Begin(t.Context())
		b0.Send(0, acquire("a", 9), clock.Now().Add(time.Second))
		c0 := receive(b0, nil)
		f.next().reply(errors.New("EOF"))
		wait(t, c0)
		b0.Close()
		f.mu.Lock()
		f.dialErr[0] = errRefused
		f.mu.Unlock()

		b := e.Begin(t.Context())
		b.Send(0, cmd, clock.Now().Add(time.Second))
		c := receive(b, nil)
		f.dialed(0)
		r := wait(t, c) // the clock stands still: no redialPause passes
		assert.Equal(t, core.StatusError, r.Status, cmd.Op)
		assert.ErrorIs(t, r.Err, errRefused, cmd.Op)
		b.Close()
		f.mu.Lock()
		f.dialErr[0] = nil
		f.mu.Unlock()
	}
}

// TestDuplexAbandonSendsAnExtensionAgainOnce: over a Duplex, an extension
// written behind a pipeline whose read fails goes again on the next
// connection; when that one breaks too, it is not sent a third time.
func TestDuplexAbandonSendsAnExtensionAgainOnce(t *testing.T) {
	e, f, clock := startDuplex(t, 1)
	b1 := send(e, clock, 0, acquire("a", 1), time.Second)
	defer b1.Close()
	c1 := receive(b1, nil)
	x1 := f.next()
	b2 := send(e, clock, 0, extend("b", 2), time.Second)
	defer b2.Close()
	c2 := receive(b2, nil)
	x2 := f.next()
	assert.Equal(t, []string{"EVAL b"}, x2.names(), "written behind the acquisition")
	x1.reply(errors.New("ECONNRESET"))
	assert.Equal(t, core.StatusError, wait(t, c1).Status, "the acquisition is not sent again")

	f.dialed(0)
	x3 := f.next()
	assert.NotSame(t, x1.conn, x3.conn)
	assert.Equal(t, []string{"EVAL b"}, x3.names(), "the abandoned extension goes again")
	x3.reply(errors.New("EOF again"))
	r := wait(t, c2)
	assert.Equal(t, core.StatusError, r.Status, "broken twice, it fails")
	assert.ErrorContains(t, r.Err, "EOF again")

	// The next command is the node's next, not the extension a third time.
	b3 := send(e, clock, 0, release("c", 3), time.Second)
	defer b3.Close()
	c3 := receive(b3, nil)
	f.dialed(0)
	x4 := f.next()
	assert.Equal(t, []string{"EVAL c"}, x4.names())
	x4.ok()
	assert.Equal(t, core.StatusOK, wait(t, c3).Status)
}

// TestResendRefusedToTheEndFailsWithTheRefusal: a release or extension
// whose connection broke under it, on a node that refuses every dial
// until the round's deadline (a server killed, not restarting), fails
// with the refusal as its cause, as it did before the resend: the node
// refused, it did not time out.
func TestResendRefusedToTheEndFailsWithTheRefusal(t *testing.T) {
	for _, cmd := range []core.Command{release("k", 1), extend("k", 1)} {
		e, f, clock := startArmed(t)
		b := e.Begin(t.Context())
		b.Send(0, cmd, clock.Now().Add(100*time.Millisecond))
		c := receive(b, nil)
		x := f.next()
		f.mu.Lock()
		f.dialErr[0] = errRefused
		f.mu.Unlock()
		x.reply(errors.New("EOF"))
		var r core.Reply
	redials:
		for range 200 { // dials refused, pauses, until the reply
			select {
			case r = <-c:
				break redials
			case i := <-f.dials:
				require.Equal(t, 0, i)
			case d := <-clock.armed:
				if d == redialPause {
					clock.Advance(redialPause)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("neither a reply, a dial nor a redial pause")
			}
		}
		assert.Equal(t, core.StatusError, r.Status, "%v: the node refused; it did not time out", cmd.Op)
		assert.ErrorIs(t, r.Err, errRefused, cmd.Op)
		b.Close()
	}
}
