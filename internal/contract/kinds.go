package contract

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock/core"
)

// Kinds checks the commands of the kinds beyond the mutex (core.Kind)
// and what they did on the node's master: a reader/writer lock's reader
// set and writer's mark under their names on the node (Layout.AuxName:
// in the key's slot on a Cluster), a reader's fence read and never
// raised, a multi-key lock's keys taken all or none (keys sharing a hash
// tag, as a Cluster needs).
func Kinds(t *testing.T, n Target) {
	d, i := n.D, n.I
	const s, ttl = time.Second, 10 * time.Second
	one, two, writer := core.TokenFromUint64s(1, 1), core.TokenFromUint64s(2, 2), core.TokenFromUint64s(9, 9)
	rw := n.Key("rw")
	readers, mark := n.At.AuxName(t, i, core.ReadersPrefix, rw), n.At.AuxName(t, i, core.WriterWaitPrefix, rw)
	fence := n.At.AuxName(t, i, core.FenceKeyPrefix, rw)
	cmd := func(kind core.Kind, op core.Op, tok core.Token) core.Command {
		c := core.Command{Kind: kind, Op: op, Key: rw, Token: tok}
		if op != core.OpRelease {
			c.TTL = ttl
		}
		return c
	}
	send := func(c core.Command, want core.Status, what string) core.Reply {
		t.Helper()
		r := SendOne(d, i, c, s)
		require.NoError(t, r.Err, what)
		require.Equal(t, want, r.Status, what)
		return r
	}

	r := send(cmd(core.KindRead, core.OpAcquireFenced, one), core.StatusOK, "a fenced reader")
	assert.Zero(t, r.Fence, "no writer yet")
	send(cmd(core.KindRead, core.OpAcquire, two), core.StatusOK, "a second reader")
	assert.Equal(t, int64(2), n.Do(t, "ZCARD", readers), "the reader set, named on the node")
	r = send(cmd(core.KindWrite, core.OpAcquire, writer), core.StatusHeld, "a writer behind readers")
	assert.InDelta(t, ttl, r.TTL, float64(s))
	assert.Equal(t, writer.String(), n.Do(t, "GET", mark), "the waiting writer's mark, named on the node")
	send(cmd(core.KindRead, core.OpAcquire, core.TokenFromUint64s(3, 3)), core.StatusHeld, "a new reader behind the mark")
	waiting := cmd(core.KindWrite, core.OpRelease, writer)
	waiting.Ticket = 1 // the cleanup of an attempt whose writer waits on
	send(waiting, core.StatusMissing, "a waiting writer's cleanup")
	assert.Equal(t, writer.String(), n.Do(t, "GET", mark), "a waiting writer's cleanup deleted its mark")
	send(cmd(core.KindRead, core.OpExtend, one), core.StatusOK, "a reader extends")
	send(cmd(core.KindRead, core.OpRelease, one), core.StatusOK, "a reader leaves")
	send(cmd(core.KindRead, core.OpRelease, two), core.StatusOK, "the other reader leaves")
	send(cmd(core.KindRead, core.OpRelease, two), core.StatusMissing, "a reader gone")
	r = send(cmd(core.KindWrite, core.OpAcquireFenced, writer), core.StatusOK, "the writer")
	assert.Equal(t, uint64(1), r.Fence)
	assert.Equal(t, writer.String(), n.Do(t, "GET", rw))
	assert.Equal(t, int64(0), n.Do(t, "EXISTS", mark), "the writer's own mark goes")
	raise := cmd(core.KindWrite, core.OpRaiseFence, writer)
	raise.TTL, raise.Fence = 0, 7
	send(raise, core.StatusOK, "the writer raises its fence")
	send(cmd(core.KindRead, core.OpAcquire, one), core.StatusHeld, "a reader behind the writer")
	send(cmd(core.KindWrite, core.OpExtend, writer), core.StatusOK, "the writer extends")
	send(cmd(core.KindWrite, core.OpRelease, writer), core.StatusOK, "the writer leaves")
	r = send(cmd(core.KindRead, core.OpAcquireFenced, one), core.StatusOK, "a fenced reader after the writer")
	assert.Equal(t, uint64(7), r.Fence, "the last writer's fence")
	assert.Equal(t, "7", n.Do(t, "GET", fence), "never raised by a reader")
	other := core.TokenFromUint64s(8, 8)
	send(cmd(core.KindWrite, core.OpAcquire, other), core.StatusHeld, "another writer behind the reader")
	assert.Equal(t, other.String(), n.Do(t, "GET", mark), "its mark")
	send(cmd(core.KindWrite, core.OpRelease, other), core.StatusMissing, "the writer gives up")
	assert.Equal(t, int64(0), n.Do(t, "EXISTS", mark), "the mark of a writer that gave up stays")
	send(cmd(core.KindRead, core.OpRelease, one), core.StatusOK, "the reader leaves")

	// A multi-key lock over keys of one hash tag: all or none.
	a, b, c := n.Key("{all}:a"), n.Key("{all}:b"), n.Key("{all}:c")
	all := func(op core.Op, tok core.Token, keys ...string) core.Command {
		cm := core.Command{Kind: core.KindAll, Op: op, Key: keys[0], Keys: core.NewKeyList(keys), Token: tok}
		if op == core.OpAcquire || op == core.OpAcquireFenced || op == core.OpExtend {
			cm.TTL = ttl
		}
		return cm
	}
	r = send(all(core.OpAcquireFenced, one, a, b), core.StatusOK, "a and b")
	assert.Equal(t, uint64(1), r.Fence)
	send(all(core.OpAcquire, two, c, b), core.StatusHeld, "c and b, b held")
	assert.Equal(t, int64(0), n.Do(t, "EXISTS", c), "a refused multi-key lock takes nothing")
	send(all(core.OpExtend, one, a, b), core.StatusOK, "extend a and b")
	raise = all(core.OpRaiseFence, one, a, b)
	raise.Fence = 4
	send(raise, core.StatusOK, "raise a's and b's fences")
	assert.Equal(t, "4", n.Do(t, "GET", n.At.AuxName(t, i, core.FenceKeyPrefix, b)))
	send(all(core.OpRelease, two, b, c), core.StatusHeld, "release another's")
	send(all(core.OpRelease, one, a, b), core.StatusOK, "release a and b")
	assert.Equal(t, int64(0), n.Do(t, "EXISTS", a))
	r = send(all(core.OpAcquireFenced, two, c, b), core.StatusOK, "c and b once free")
	assert.Equal(t, uint64(5), r.Fence, "one more than the highest counter")
	send(all(core.OpRelease, two, c, b), core.StatusOK, "release c and b")

	announcements(t, n)
}

// announcements: on a driver that is a core.Announcer, the last reader's
// release and a multi-key release reach a watch of the key for the node
// (on a Cluster, with SPUBLISH in the key's shard when the driver
// subscribes so); twice, so that a notification of the subscription's
// start still on its way cannot pass for a release's.
func announcements(t *testing.T, n Target) {
	a, ok := n.D.(core.Announcer)
	if !ok {
		return
	}
	i, key := n.I, n.Key("announced")
	var heard atomic.Int64
	w := a.Watch(key, func(j int) {
		if j == i {
			heard.Add(1)
		}
	})
	defer w.Stop()
	require.Eventually(t, func() bool { return w.Listening()&(1<<i) != 0 }, 10*time.Second, 10*time.Millisecond,
		"node %d listens", i)
	for round := range 2 {
		tok := core.TokenFromUint64s(0xa11, uint64(round))
		for _, c := range []core.Command{
			{Kind: core.KindRead, Key: key, Token: tok},
			{Kind: core.KindAll, Key: key, Keys: core.NewKeyList([]string{key}), Token: tok},
		} {
			c.Op, c.TTL = core.OpAcquire, 10*time.Second
			r := SendOne(n.D, i, c, time.Second)
			require.Equal(t, core.StatusOK, r.Status, "%v acquire: %v", c.Kind, r.Err)
			before := heard.Load()
			c.Op, c.TTL = core.OpRelease, 0
			r = SendOne(n.D, i, c, time.Second)
			require.Equal(t, core.StatusOK, r.Status, "%v release: %v", c.Kind, r.Err)
			require.Eventually(t, func() bool { return heard.Load() > before }, 10*time.Second, 5*time.Millisecond,
				"the %v release of %s on node %d is announced", c.Kind, key, i)
		}
	}
}
