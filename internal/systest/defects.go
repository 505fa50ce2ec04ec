package systest

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/internal/redistest"
)

// Cases that reproduce known defects: they fail on the code as it is, and
// say what they expect.
func init() {
	behavioural = append(behavioural, behaviouralCase{"wake-stale-minority", []int{5}, testWakeStaleMinority})
	realCases = append(realCases, realCase{"lease-loss-before-until", testLeaseLossBeforeUntil})
}

// staleWaiter is the waiter's driver in wake-stale-minority: an
// attemptWatch whose acquire rounds hear node 0 first, as from the nearest
// node, and which records the nodes whose notifications (subscriptions
// confirmed, releases) have reached the waiter.
type staleWaiter struct {
	*attemptWatch
	all     uint32
	heard   atomic.Uint32 // nodes whose notify has returned
	once    sync.Once
	waiting chan struct{} // closed once the waiter sleeps with every node heard
}

func (s *staleWaiter) Begin(ctx context.Context) core.Batch {
	return &nodeZeroFirst{Batch: s.attemptWatch.Begin(ctx)}
}

func (s *staleWaiter) Watch(key string, notify func(int)) core.Watch {
	return s.attemptWatch.Watch(key, func(i int) {
		notify(i)
		s.heard.Or(1 << i)
	})
}

// nodeZeroFirst holds back the replies to an acquire round until node 0's
// has been received: node 0 answers first, whatever the order in which
// the servers' replies arrive.
type nodeZeroFirst struct {
	core.Batch
	awaiting bool         // node 0 was sent an acquire and has not answered
	held     []core.Reply // replies held back meanwhile
}

func (b *nodeZeroFirst) Send(node int, cmd core.Command, deadline time.Time) {
	if node == 0 && (cmd.Op == core.OpAcquire || cmd.Op == core.OpAcquireFenced) {
		b.awaiting = true
	}
	b.Batch.Send(node, cmd, deadline)
}

func (b *nodeZeroFirst) Receive(cancel <-chan struct{}) (core.Reply, bool) {
	for b.awaiting {
		rep, ok := b.Batch.Receive(cancel)
		if !ok {
			return rep, false
		}
		if rep.Node == 0 {
			b.awaiting = false
			return rep, true
		}
		b.held = append(b.held, rep)
	}
	if len(b.held) > 0 {
		rep := b.held[0]
		b.held = b.held[1:]
		return rep, true
	}
	return b.Batch.Receive(cancel)
}

// Clock is the waiter's clock: the driver's deadlines are read on the
// system clock, of which waitClock's readings are.
func (s *staleWaiter) Clock() core.Clock { return waitClock{s} }

// waitClock is the system clock of the waiter's Client: it closes
// s.waiting when the waiter goes to sleep (a timer for its wait) after
// every node's subscription has been confirmed to it: from then on only a
// release wakes it before its learnt expiry. The nodes are read when the
// timer is set, after every notify they record has returned; a
// confirmation that came after the waiter last took what it heard has
// poked it already, and costs at most one more attempt, refused, before
// the release.
type waitClock struct{ s *staleWaiter }

func (c waitClock) Now() time.Time { return time.Now() }

func (c waitClock) AfterFunc(d time.Duration, f func()) core.Timer {
	if c.s.heard.Load() == c.s.all && d > 0 {
		c.s.once.Do(func() { close(c.s.waiting) })
	}
	return time.AfterFunc(d, f)
}

// testWakeStaleMinority: node 0 holds the key with the token of a crashed
// client (never released; PTTL 5 s). Client A holds the lock on nodes 1-4.
// Client B's Lock (hour-long retry delays: only a wake gets it in) is
// refused, node 0 answering first, and waits. A unlocks: nodes 1-4 are
// free and announce it, a quorum B can win at once. B must take the lock
// before the stale key expires: when its Lock returns, node 0 still holds
// the stale key.
//
// Today B waits until the stale key expires: its failed attempt records as
// held only the nodes that answered before the round was decided (node 0
// and two others), and the wake counts announcements from those alone.
func testWakeStaleMinority(t *testing.T, c cluster, mode core.FanOut) {
	const (
		staleTTL  = 5 * time.Second
		holderTTL = 4 * time.Second // below staleTTL: B's learnt expiry is the stale key's
	)
	s := &staleWaiter{attemptWatch: watchAttempts(t, c), all: 1<<c.N() - 1, waiting: make(chan struct{})}
	b := clientOver(t, s, mode, redlock.Options{Clock: waitClock{s},
		Backoff: redlock.RandomDelay(time.Hour, time.Hour)})
	a := clientOver(t, c.Driver(), mode, redlock.Options{TTL: holderTTL})
	key := testKey(t, "")
	c.Set(0, key, foreignToken, staleTTL)
	holder, err := a.TryLock(testContext(t), key)
	require.NoError(t, err)
	requireHolds(t, c, key, holder.Token(), 0, without(all(c.N()), 0)...)

	got := lockAsync(t, b, key)
	select {
	case <-s.waiting:
	case <-time.After(wakeTimeout):
		require.FailNow(t, "B did not go to sleep with every subscription confirmed")
	}
	attempts := s.count()
	unlocked := time.Now()
	require.NoError(t, holder.Unlock(testContext(t)))
	r := <-got
	waited := time.Since(unlocked)
	tok, pttl, ok := c.Get(0, key)
	require.NoError(t, r.err, "B did not take the lock")
	defer func() { require.NoError(t, r.l.Unlock(testContext(t))) }()
	assert.True(t, ok && tok == foreignToken.String() && pttl > 0,
		"B took the lock only once the stale key on node 0 had expired: its Lock returned %v after A's unlock "+
			"(B had made %d attempts before the unlock)", waited.Round(time.Millisecond), attempts)
}

// testLeaseLossBeforeUntil: a leased lock (Fraction 1/3, TTL 400 ms) whose
// majority is SIGSTOPped: every extension times out. Its Context must be
// done strictly before Until, read on the lock's clock (the system
// clock), so that work under it stops while the lock is still valid. Runs
// eight times, so that an order that holds only usually fails. The retry
// delay is the default range's longest, 250 ms, every time: the first
// failed extension leaves less than that before Until, so every run takes
// the path that schedules a retry to end at the validity's end.
//
// Today the Context ends at or after Until: the last retry is scheduled so
// that its round, which lasts the node timeout, ends at the end of the
// validity; the driver's timeout fires no earlier than that.
func testLeaseLossBeforeUntil(t *testing.T, f Factory, mode core.FanOut) {
	if mode != core.Multiplexed {
		t.Skip("checked in multiplexed mode, where the last retry's round lasts exactly the node timeout")
	}
	c := startReal(t, f, 3, redistest.Options{}, nil)
	hung := all(c.N())[:lossThreshold(c.N())]
	for _, i := range hung {
		c.srv[i].NeedProcess(t) // the subtests stop them
	}
	for run := range 8 {
		t.Run("run="+strconv.Itoa(run), func(t *testing.T) {
			w := watchExtends(c.Driver())
			// The loss's time is read where the Client declares it (the
			// Observer's Loss, called then), not when this goroutine next
			// runs: on a loaded machine that can be ms later.
			lossAt := make(chan time.Time, 1)
			client := clientOver(t, w, mode, redlock.Options{
				TTL: 400 * time.Millisecond, NodeTimeout: 50 * time.Millisecond,
				Backoff: redlock.RandomDelay(250*time.Millisecond, 250*time.Millisecond),
				Lease:   &redlock.Lease{Fraction: 1.0 / 3},
				Observer: redlock.Observer{Loss: func(redlock.LossEvent) {
					select {
					case lossAt <- time.Now():
					default: // one loss per lock; never block the Client
					}
				}},
				Poll: true}) // Lock polls: w does not relay announcements
			key := testKey(t, "")
			l, err := client.Lock(testContext(t), key) // Lock: retried while a node continued last run reconnects
			require.NoError(t, err)
			until := l.Until()
			defer func() {
				for _, i := range hung {
					c.Cont(i)
				}
			}()
			for _, i := range hung {
				c.Stop(i)
			}
			require.Zero(t, w.extends(), "an extension was sent before the majority was stopped: the run cannot tell the Until in force")
			cause := awaitDone(t, l)
			done := <-lossAt
			assert.ErrorIs(t, cause, redlock.ErrQuorumUnreachable)
			assert.True(t, done.Before(until),
				"the lock's Context was done %v after Until: the loss was reported once the lock was already invalid",
				done.Sub(until))
			for _, i := range hung {
				c.Cont(i)
			}
			assert.ErrorIs(t, l.Unlock(testContext(t)), redlock.ErrLost)
		})
	}
}
