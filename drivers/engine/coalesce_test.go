package engine

import (
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock/core"
)

// eventuallyIdle waits until n's goroutine waits for a command, failing
// the test if it does not: a command sent then wakes it (node.offer).
func eventuallyIdle(t *testing.T, n *node) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		n.mu.Lock()
		idle := n.idle
		n.mu.Unlock()
		if idle {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the node's goroutine never waited for a command")
		}
		runtime.Gosched()
	}
}

// coalesceHook makes n's coalesce yields queue one more round's command
// each, adds of them in all, and counts the yields.
type coalesceHook struct {
	e      *Engine
	clock  *manualClock
	adds   int
	yields int
	rounds []core.Batch
}

func (h *coalesceHook) yielded() {
	h.yields++
	if len(h.rounds) < h.adds {
		key := "k" + strconv.Itoa(len(h.rounds))
		b := send(h.e, h.clock, 0, acquire(key, uint64(len(h.rounds))), time.Second)
		b.(core.Flusher).Flush() // queued now, on the node's goroutine
		h.rounds = append(h.rounds, b)
	}
}

// TestCoalesceWhileOthersSend: a node whose last pipeline carried
// several rounds' commands, woken by one more, yields until a yield
// brings no more commands, and the commands that came meanwhile go out
// in one write.
func TestCoalesceWhileOthersSend(t *testing.T) {
	e, f, clock := startDuplex(t, 1)
	n := e.nodes[0]
	var xs []*exchange
	var cs []<-chan core.Reply
	for i := range duplexDepth { // every pipe out: the next rounds queue
		b := send(e, clock, 0, acquire(string(rune('a'+i)), uint64(i)), time.Second)
		defer b.Close()
		cs = append(cs, receive(b, nil))
		xs = append(xs, f.next())
	}
	for i, key := range []string{"q", "r"} {
		b := send(e, clock, 0, acquire(key, 9), time.Second)
		defer b.Close()
		cs = append(cs, receive(b, nil))
		eventuallyQueued(t, n, i+1)
	}
	xs[0].ok() // a pipe comes back: the two queued go out together
	x := f.next()
	require.Equal(t, []string{"SET q", "SET r"}, x.names())
	xs[1].ok() // and another, so that the node waits for commands, not for a pipe
	assert.Equal(t, core.StatusOK, wait(t, cs[1]).Status)
	cs[1] = nil // heard
	xs = append(xs[2:], x)

	h := &coalesceHook{e: e, clock: clock, adds: 2}
	eventuallyIdle(t, n)
	n.mu.Lock()
	n.yielded = h.yielded // read by the node once the next command wakes it
	n.mu.Unlock()
	b := send(e, clock, 0, acquire("s", 10), time.Second)
	defer b.Close()
	cs = append(cs, receive(b, nil))
	x = f.next()
	assert.Equal(t, []string{"SET s", "SET k0", "SET k1"}, x.names(), "one write for the commands that came while it yielded")
	assert.Equal(t, 3, h.yields, "it yields until a yield brings nothing")

	for _, x := range append(xs, x) {
		x.ok()
	}
	for _, c := range cs {
		if c != nil {
			assert.Equal(t, core.StatusOK, wait(t, c).Status)
		}
	}
	for _, b := range h.rounds {
		assert.Equal(t, core.StatusOK, wait(t, receive(b, nil)).Status)
		b.Close()
	}
}

// TestCoalesceLoneRound: a node whose pipelines carry one command each,
// a lone round's, writes the command that woke it without yielding more,
// whether or not its last pipeline is still unread.
func TestCoalesceLoneRound(t *testing.T) {
	e, f, clock := startDuplex(t, 1)
	n := e.nodes[0]
	h := &coalesceHook{e: e, clock: clock, adds: 1}
	eventuallyIdle(t, n)
	n.mu.Lock()
	n.yielded = h.yielded
	n.mu.Unlock()
	var xs []*exchange
	var cs []<-chan core.Reply
	for i, key := range []string{"a", "b", "c"} {
		b := send(e, clock, 0, acquire(key, uint64(i)), time.Second)
		defer b.Close()
		cs = append(cs, receive(b, nil))
		x := f.next()
		assert.Equal(t, []string{"SET " + key}, x.names())
		xs = append(xs, x)
		if i == 0 { // the first is read before the next is sent; the others are in flight
			x.ok()
			assert.Equal(t, core.StatusOK, wait(t, cs[0]).Status)
		}
		eventuallyIdle(t, n)
	}
	assert.Zero(t, h.yields, "a lone round's command waits for no more yields")
	assert.Empty(t, h.rounds)
	for _, x := range xs[1:] {
		x.ok()
	}
	for _, c := range cs[1:] {
		assert.Equal(t, core.StatusOK, wait(t, c).Status)
	}
}
