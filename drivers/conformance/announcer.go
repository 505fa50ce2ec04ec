package conformance

import (
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/internal/contract"
	"github.com/redlock-go/redlock/internal/redistest"
)

// eventWait bounds the wait for a notification or a subscription that
// must come: a failure bound, never a synchronisation.
const eventWait = 10 * time.Second

// RunAnnouncer checks the release announcements of a driver that
// implements core.Announcer (it fails for one that does not), against
// real servers:
//
//   - the first Watch of a key is notified for node i when node i's
//     subscription to the key starts, and Listening reports the node
//     then;
//   - a release of the key on node i, an OpRelease through the driver's
//     own Batch, notifies node i, on each node and every time;
//   - two Watches of one key are both notified, and once one is stopped
//     the other still is; a Watch stopped while releases are announced
//     is not notified once Stop has returned; a key watched anew after
//     every Watch of it stopped is announced again;
//   - a node's server killed notifies the node and drops it from
//     Listening while the other nodes listen on; restarted, its
//     subscription starts again (a notification, Listening) and its
//     releases are announced;
//   - a node down when the driver is dialled is not Listening until it
//     comes up, and is then;
//   - notify is never called with a node out of range.
//
// Waits for a notification or for Listening are bounded (a missing one
// fails the test), never sleeps. The test binary's goleak check catches
// a goroutine that a stopped Watch or a closed driver left behind.
func RunAnnouncer(t *testing.T, dial Dialer) {
	t.Run("release-notifies", func(t *testing.T) {
		srvs := contract.StartServers(t, 3, redistest.Options{})
		a := openAnnouncer(t, dial, contract.AddrsOf(srvs))
		w, r := watch(t, a, "k")
		started(t, w, r, allNodes(3))
		for i := range 3 {
			announced(t, a, r, i, "k")
		}
		r.requireGood(t)
	})
	t.Run("two-watches-and-stop", func(t *testing.T) { testWatchesAndStop(t, dial) })
	t.Run("node-restarted", func(t *testing.T) {
		srvs := contract.StartServers(t, 3, redistest.Options{})
		a := openAnnouncer(t, dial, contract.AddrsOf(srvs))
		w, r := watch(t, a, "k")
		started(t, w, r, allNodes(3))

		before := r.count(1)
		srvs[1].Kill()
		r.waitAbove(t, 1, before, "the subscription of the killed node 1 stopped")
		require.Eventually(t, func() bool { return w.Listening()&(1<<1) == 0 }, eventWait, 10*time.Millisecond,
			"the killed node 1 is still Listening: %03b", w.Listening())
		assert.Equal(t, uint32(0b101), w.Listening(), "the other nodes listen on")
		announced(t, a, r, 0, "k")

		backUp(t, a, w, r, srvs[1], 1, "the subscription of the restarted node 1 started again")
		r.requireGood(t)
	})
	t.Run("node-down-at-dial", func(t *testing.T) {
		srvs := contract.StartServers(t, 3, redistest.Options{})
		srvs[1].Kill()
		a := openAnnouncer(t, dial, contract.AddrsOf(srvs))
		w, r := watch(t, a, "k")
		started(t, w, r, 0b101)
		assert.Zero(t, w.Listening()&(1<<1), "node 1 is down, yet Listening: %03b", w.Listening())
		announced(t, a, r, 2, "k")

		backUp(t, a, w, r, srvs[1], 1, "the subscription of node 1 started once it came up")
		r.requireGood(t)
	})
}

// testWatchesAndStop: two Watches of one key, one stopped; a Watch
// stopped while releases are announced; the key watched anew.
func testWatchesAndStop(t *testing.T, dial Dialer) {
	srvs := contract.StartServers(t, 2, redistest.Options{})
	a := openAnnouncer(t, dial, contract.AddrsOf(srvs))
	wa, ra := watch(t, a, "k")
	started(t, wa, ra, allNodes(2))
	// The second Watch joins subscriptions that started: it listens, and
	// is notified of each node it listens to, since a release there may
	// have been announced before it began (a reader that joined its
	// Client's subscription just after a writer's release otherwise slept
	// until the writer's TTL).
	wb, rb := watch(t, a, "k")
	started(t, wb, rb, allNodes(2))

	// Both are notified of a release.
	beforeA := ra.count(0)
	announced(t, a, rb, 0, "k")
	ra.waitAbove(t, 0, beforeA, "the first Watch of the key")

	// One stopped, the other is notified still, of releases on every
	// node, and the stopped one no more.
	wa.Stop()
	ra.stopped.Store(true)
	for i := range 2 {
		announced(t, a, rb, i, "k")
	}
	waitListening(t, wb, allNodes(2))

	// A Watch stopped while releases of its key are announced: notify
	// may run until Stop returns, not after. The other Watch, notified
	// of the same releases, tells when they have all been relayed.
	wc, rc := watch(t, a, "k")
	waitListening(t, wc, allNodes(2))
	before, beforeB := rc.count(0), rb.count(0)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for k := range 20 {
			tok := core.TokenFromUint64s(7, uint64(k))
			cmd := core.Command{Op: core.OpAcquire, Key: "k", Token: tok, TTL: 10 * time.Second}
			if !assert.Equal(t, core.StatusOK, SendOne(a, 0, cmd, time.Second).Status, "acquire %d", k) {
				return
			}
			assert.Equal(t, core.StatusOK, SendOne(a, 0, contract.ReleaseCmd("k", tok), time.Second).Status, "release %d", k)
		}
	}()
	rc.waitAbove(t, 0, before, "a release while the third Watch runs")
	wc.Stop()
	rc.stopped.Store(true)
	<-done
	rb.waitAbove(t, 0, beforeB+19, "the 20 releases, relayed to the Watch still running")
	announced(t, a, rb, 0, "k")
	announced(t, a, rb, 1, "k")

	// Every Watch of the key stopped: watched anew, it is announced again.
	wb.Stop()
	rb.stopped.Store(true)
	wd, rd := watch(t, a, "k")
	waitListening(t, wd, allNodes(2))
	announced(t, a, rd, 1, "k")

	for _, r := range []*notes{ra, rb, rc, rd} {
		r.requireGood(t)
	}
}

// backUp restarts node i's server srv and requires what follows: a
// notification for node i (what), every node Listening, node i
// answering, and its releases of "k" announced.
func backUp(t *testing.T, a core.Announcer, w core.Watch, r *notes, srv *redistest.Server, i int, what string) {
	t.Helper()
	before := r.count(i)
	srv.Restart()
	r.waitAbove(t, i, before, what)
	waitListening(t, w, allNodes(r.nodes))
	reachable(t, a, i)
	announced(t, a, r, i, "k")
}

// openAnnouncer dials a driver over addrs, closed after the test, and
// requires that it implement core.Announcer.
func openAnnouncer(t *testing.T, dial Dialer, addrs []string) core.Announcer {
	t.Helper()
	d := dial.open()(t, addrs)
	a, ok := d.(core.Announcer)
	require.True(t, ok, "%T does not implement core.Announcer: RunAnnouncer checks the drivers that announce releases", d)
	return a
}

// allNodes is the Listening mask of n nodes.
func allNodes(n int) uint32 { return 1<<n - 1 }

// watch watches key on a, counting the notifications; the Watch is
// stopped after the test, before the driver is closed.
func watch(t *testing.T, a core.Announcer, key string) (core.Watch, *notes) {
	t.Helper()
	r := &notes{nodes: a.Nodes(), n: make([]int, a.Nodes()), changed: make(chan struct{}, 1)}
	w := a.Watch(key, r.notify)
	require.NotNil(t, w, "Watch returned no Watch")
	t.Cleanup(func() {
		if !r.stopped.Load() { // a case that stopped it said so
			w.Stop()
		}
	})
	return w, r
}

// started waits for the nodes of mask to be Listening and to have
// notified their subscription's start.
func started(t *testing.T, w core.Watch, r *notes, mask uint32) {
	t.Helper()
	waitListening(t, w, mask)
	for i := range r.nodes {
		if mask&(1<<i) != 0 {
			r.waitAbove(t, i, 0, "node "+strconv.Itoa(i)+"'s subscription started")
		}
	}
}

// waitListening waits for the nodes of mask to be Listening.
func waitListening(t *testing.T, w core.Watch, mask uint32) {
	t.Helper()
	require.Eventually(t, func() bool { return w.Listening()&mask == mask }, eventWait, 10*time.Millisecond,
		"Listening %b, want the nodes %b", w.Listening(), mask)
}

// announced acquires key on node i and releases it there, an OpRelease
// through a Batch of the driver's own, and requires a notification for
// node i after the release; twice, so that a notification of the
// subscription's start still on its way cannot pass for the release's.
func announced(t *testing.T, a core.Announcer, r *notes, i int, key string) {
	t.Helper()
	for round := range 2 {
		tok := core.TokenFromUint64s(0xa11, uint64(round))
		acquire := core.Command{Op: core.OpAcquire, Key: key, Token: tok, TTL: 10 * time.Second}
		rep := SendOne(a, i, acquire, time.Second)
		require.Equal(t, core.StatusOK, rep.Status, "acquire %s on node %d: %v", key, i, rep.Err)
		before := r.count(i)
		rep = SendOne(a, i, contract.ReleaseCmd(key, tok), time.Second)
		require.Equal(t, core.StatusOK, rep.Status, "release %s on node %d: %v", key, i, rep.Err)
		r.waitAbove(t, i, before, "the release of "+key+" on node "+strconv.Itoa(i))
	}
}

// reachable waits for node i to answer a command: its first after a
// restart may fail on the connection the restart broke.
func reachable(t *testing.T, a core.Announcer, i int) {
	t.Helper()
	// A fresh key each try: a try that timed out may still have set its
	// key once the node answered, and the same key would then be held.
	try := 0
	require.Eventually(t, func() bool {
		try++
		return SendOne(a, i, contract.AcquireCmd("reachable-"+strconv.Itoa(try)), time.Second).Status == core.StatusOK
	}, eventWait, 50*time.Millisecond, "node %d answers", i)
}

// notes counts a Watch's notifications per node.
type notes struct {
	nodes   int
	changed chan struct{} // a notification came since the last wait

	// stopped is set once the Watch's Stop returned: a notification after
	// it breaks the contract.
	stopped atomic.Bool
	// inside counts the notify calls running: one at a time per Watch.
	inside atomic.Int32

	mu    sync.Mutex
	n     []int    // notifications per node
	wrong []string // notifications that broke the contract
}

// notify is the Watch's notify: it must not block, and does not.
func (r *notes) notify(i int) {
	concurrent := r.inside.Add(1) > 1
	defer r.inside.Add(-1)
	r.mu.Lock()
	if concurrent {
		r.wrong = append(r.wrong, "notify("+strconv.Itoa(i)+") while another notify of the Watch ran")
	}
	switch {
	case i < 0 || i >= r.nodes:
		r.wrong = append(r.wrong, "notify("+strconv.Itoa(i)+"): no such node")
	case r.stopped.Load():
		r.wrong = append(r.wrong, "notify("+strconv.Itoa(i)+") after Stop returned")
	default:
		r.n[i]++
	}
	r.mu.Unlock()
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

func (r *notes) count(i int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n[i]
}

// waitAbove waits for node i's notifications to number more than before.
func (r *notes) waitAbove(t *testing.T, i, before int, what string) {
	t.Helper()
	timeout := time.NewTimer(eventWait)
	defer timeout.Stop()
	for r.count(i) <= before {
		select {
		case <-r.changed:
		case <-timeout.C:
			require.FailNow(t, "no notification for node "+strconv.Itoa(i), "%s: %d notifications, none since", what, before)
		}
	}
}

// requireGood fails t if a notification broke the contract.
func (r *notes) requireGood(t *testing.T) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	require.Empty(t, r.wrong)
}
