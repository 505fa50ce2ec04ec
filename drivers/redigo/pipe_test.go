package redigo

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/internal/redistest"
)

// pipeServers starts n servers and a pipelined driver over them with k
// connections per node, closed at cleanup.
func pipeServers(t *testing.T, n, k int) ([]*redistest.Server, *Driver) {
	t.Helper()
	ss := redistest.StartN(t, n, redistest.Options{})
	d, err := Dial(addrsOf(ss), Options{Pipeline: k})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	return ss, d
}

func addrsOf(ss []*redistest.Server) []string {
	addrs := make([]string, len(ss))
	for i, s := range ss {
		addrs[i] = s.Addr
	}
	return addrs
}

// backlog returns the commands node i's connections hold: queued for the
// writers, and written but unanswered.
func (d *Driver) backlog(i int) (queued, pending int) {
	for _, p := range d.nodes[i].pipes {
		p.mu.Lock()
		queued += len(p.queue)
		s := p.sess
		p.mu.Unlock()
		if s != nil {
			s.mu.Lock()
			pending += s.pending.n
			s.mu.Unlock()
		}
	}
	return queued, pending
}

// infoStat reads a numeric field of INFO stats.
func infoStat(t *testing.T, s *redistest.Server, field string) int64 {
	t.Helper()
	v, err := s.Do("INFO", "stats")
	require.NoError(t, err)
	for _, line := range strings.Split(v.(string), "\r\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			n, err := strconv.ParseInt(rest, 10, 64)
			require.NoError(t, err)
			return n
		}
	}
	t.Fatalf("no %s in INFO stats", field)
	return 0
}

func TestPipelineValidation(t *testing.T) {
	for _, k := range []int{-1, MaxPipeline + 1} {
		d, err := Dial([]string{"127.0.0.1:1"}, Options{Pipeline: k})
		assert.Nil(t, d)
		assert.ErrorIs(t, err, core.ErrInvalidConfig)
		assert.ErrorContains(t, err, "Pipeline "+strconv.Itoa(k)+" is not in 0..")
	}
}

func TestPipelineCommands(t *testing.T) {
	ss, d := pipeServers(t, 3, 2)
	const key = "pipe-cmds"
	mine := tok(1)
	acq := core.Command{Op: core.OpAcquire, Key: key, Token: mine, TTL: 5 * time.Second}
	assert.Equal(t, repeat(core.StatusOK, 3), statuses(round(d, acq, time.Second)))
	assert.Equal(t, repeat(core.StatusHeld, 3), statuses(round(d, acq, time.Second)))
	ext := core.Command{Op: core.OpExtend, Key: key, Token: mine, TTL: 20 * time.Second}
	assert.Equal(t, repeat(core.StatusOK, 3), statuses(round(d, ext, time.Second)))
	pttl, err := redis.Int64(ss[1].Do("PTTL", key))
	require.NoError(t, err)
	assert.Greater(t, pttl, int64(10000), "extended")
	rel := core.Command{Op: core.OpRelease, Key: key, Token: mine}
	assert.Equal(t, repeat(core.StatusOK, 3), statuses(round(d, rel, time.Second)))
	assert.Equal(t, repeat(core.StatusMissing, 3), statuses(round(d, rel, time.Second)))

	// A deadline already passed: nothing is sent.
	r := round(d, core.Command{Op: core.OpAcquire, Key: "pipe-late", Token: mine, TTL: time.Second}, -time.Millisecond)
	assert.Equal(t, repeat(core.StatusTimeout, 3), statuses(r))
	n, err := redis.Int(ss[0].Do("EXISTS", "pipe-late"))
	require.NoError(t, err)
	assert.Zero(t, n)

	// Cancelled before the first Receive: nothing is sent.
	cancel := make(chan struct{})
	close(cancel)
	b := d.Begin(context.Background())
	b.Send(0, acq, time.Now().Add(time.Second))
	_, ok := b.Receive(cancel)
	assert.False(t, ok)
	b.Close()

	require.NoError(t, d.Close())
	r = round(d, acq, time.Second)
	assert.Equal(t, repeat(core.StatusError, 3), statuses(r))
	assert.ErrorIs(t, r[0].Err, ErrClosed)
}

// Concurrent rounds share writes: the server sees far fewer reads than
// commands.
func TestPipelineBatches(t *testing.T) {
	ss, d := pipeServers(t, 1, 1)
	l, err := redlock.New(d, core.Config{TTL: 10 * time.Second, NodeTimeout: 5 * time.Second})
	require.NoError(t, err)
	ctx := context.Background()
	lock, err := l.Acquire(ctx, "pipe-batch-warm") // connect
	require.NoError(t, err)
	require.NoError(t, l.Release(ctx, lock))

	cmds0, reads0 := infoStat(t, ss[0], "total_commands_processed"), infoStat(t, ss[0], "total_reads_processed")
	const workers, ops = 32, 100
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := "pipe-batch-" + strconv.Itoa(w)
			for i := 0; i < ops; i++ {
				lock, err := l.Acquire(ctx, key)
				if !assert.NoError(t, err) {
					return
				}
				assert.NoError(t, l.Release(ctx, lock))
			}
		}()
	}
	wg.Wait()
	cmds := infoStat(t, ss[0], "total_commands_processed") - cmds0
	reads := infoStat(t, ss[0], "total_reads_processed") - reads0
	t.Logf("%d commands in %d reads (%.1f per read)", cmds, reads, float64(cmds)/float64(reads))
	require.GreaterOrEqual(t, cmds, int64(2*workers*ops))
	assert.Less(t, float64(reads), 0.5*float64(cmds), "commands are batched")
}

// All the commands for one key on one node travel on one connection, in
// order: a release sent right after an acquire whose replies were not all
// read finds the key set on every node.
func TestPipelineOrderPerKey(t *testing.T) {
	_, d := pipeServers(t, 3, 4)
	for i := 0; i < 300; i++ {
		key := "pipe-order-" + strconv.Itoa(i%7)
		acq := core.Command{Op: core.OpAcquire, Key: key, Token: tok(uint64(i)), TTL: 10 * time.Second}
		b := d.Begin(context.Background())
		dl := time.Now().Add(time.Second)
		for j := 0; j < 3; j++ {
			b.Send(j, acq, dl)
		}
		r, ok := b.Receive(nil)
		require.True(t, ok)
		require.Equal(t, core.StatusOK, r.Status, "%v", r.Err)
		b.Close() // two SETs may still be in flight
		rel := core.Command{Op: core.OpRelease, Key: key, Token: tok(uint64(i))}
		require.Equal(t, repeat(core.StatusOK, 3), statuses(round(d, rel, time.Second)), "round %d", i)
	}
}

// A stopped node costs its deadline, and what its connection holds stays
// bounded: once the oldest command is overdue by its own timeout the
// connection is dropped, and beyond MaxPending commands are refused at
// once.
func TestPipelineStoppedNode(t *testing.T) {
	ss, d := pipeServers(t, 3, 1)
	acq := core.Command{Op: core.OpAcquire, Key: "pipe-stopped", Token: tok(1), TTL: 5 * time.Second}
	round(d, core.Command{Op: core.OpRelease, Key: "warm", Token: tok(1)}, time.Second) // connect
	ss[0].Stop()
	stopped := true
	defer func() {
		if stopped {
			ss[0].Cont()
		}
	}()
	start := time.Now()
	r := round(d, acq, 300*time.Millisecond)
	assert.Less(t, time.Since(start), 3*time.Second, "the stopped node does not hold the round past its deadline")
	assert.Equal(t, []core.Status{core.StatusTimeout, core.StatusOK, core.StatusOK}, statuses(r))
	assert.ErrorContains(t, r[0].Err, "node 0 ("+ss[0].Addr+"): acquire: ")
	assert.ErrorIs(t, r[0].Err, errNoReply)

	// Sequential shape.
	b := d.Begin(context.Background())
	b.Send(0, acq, time.Now().Add(100*time.Millisecond))
	r0, ok := b.Receive(nil)
	b.Close()
	require.True(t, ok)
	assert.Equal(t, core.StatusTimeout, r0.Status)

	// The two commands above are still on node 0's connection. It is given
	// up once the first is overdue by as long again as it had (about
	// 600 ms after it was written), and that fails every command on it
	// with a timeout. Wait for that here: the rounds below must meet a
	// connection that holds only their own commands, whose deadlines are
	// all after the loop, or else the drop lands among them and answers
	// the round in flight with an i/o timeout, racing node 1's reply.
	require.Eventually(t, func() bool {
		q, p := d.backlog(0)
		return q == 0 && p == 0
	}, 10*time.Second, time.Millisecond, "the connection holding the timed-out commands is given up")

	// Rounds that leave node 0's command behind (node 1 answers, the round
	// closes) pile up on its connection until MaxPending, then are refused.
	dl := time.Now().Add(2 * time.Second)
	maxQueued, maxPending := 0, 0
	for i := 0; i < MaxPending+500 && time.Now().Before(dl.Add(-500*time.Millisecond)); i++ {
		b := d.Begin(context.Background())
		cmd := core.Command{Op: core.OpAcquire, Key: "pile-" + strconv.Itoa(i), Token: tok(1), TTL: time.Second}
		b.Send(0, cmd, dl)
		b.Send(1, cmd, dl)
		r, ok := b.Receive(nil)
		require.True(t, ok)
		if r.Node == 0 {
			assert.ErrorIs(t, r.Err, ErrBacklog, "node 0 answers only to refuse")
		}
		b.Close()
		if i%64 == 0 {
			q, p := d.backlog(0)
			maxQueued, maxPending = max(maxQueued, q), max(maxPending, p)
		}
	}
	q, p := d.backlog(0)
	maxQueued, maxPending = max(maxQueued, q), max(maxPending, p)
	t.Logf("node 0 held at most %d queued and %d written commands", maxQueued, maxPending)
	assert.LessOrEqual(t, maxQueued, MaxPending)
	assert.LessOrEqual(t, maxPending, MaxPending)
	// Past the deadline and as long again, the connection is dropped and
	// its commands answered.
	require.Eventually(t, func() bool {
		q, p := d.backlog(0)
		return q == 0 && p == 0
	}, 10*time.Second, 5*time.Millisecond)

	ss[0].Cont()
	stopped = false
	rel := core.Command{Op: core.OpRelease, Key: "pipe-stopped", Token: tok(1)}
	require.Eventually(t, func() bool {
		return statuses(round(d, rel, time.Second))[0] != core.StatusTimeout
	}, 5*time.Second, 10*time.Millisecond, "node 0 answers again on a new connection")
}

// A killed node refuses connections; once restarted it is used again.
func TestPipelineReconnect(t *testing.T) {
	ss, d := pipeServers(t, 1, 2)
	acq := func(key string) core.Reply {
		return round(d, core.Command{Op: core.OpAcquire, Key: key, Token: tok(1), TTL: time.Second}, time.Second)[0]
	}
	require.Equal(t, core.StatusOK, acq("a").Status)
	ss[0].Kill()
	r := acq("b")
	assert.Equal(t, core.StatusError, r.Status, "%v", r.Err)
	r = acq("c")
	assert.Equal(t, core.StatusError, r.Status, "refused: %v", r.Err)
	ss[0].Restart()
	require.Eventually(t, func() bool { return acq("d").Status == core.StatusOK }, 5*time.Second, 10*time.Millisecond)

	// A restart while connected costs at most the commands in flight.
	ss[0].Restart()
	failed := 0
	for i := 0; i < 10; i++ {
		if acq("e"+strconv.Itoa(i)).Status != core.StatusOK {
			failed++
		}
	}
	assert.LessOrEqual(t, failed, 2, "one failed command per connection")
}

// Driver.Close with rounds whose replies are still due on a stopped node
// returns at once and leaves no goroutine behind.
func TestPipelineCloseWithStragglers(t *testing.T) {
	ss := redistest.StartN(t, 3, redistest.Options{})
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	d, err := Dial(addrsOf(ss), Options{Pipeline: 2})
	require.NoError(t, err)
	round(d, core.Command{Op: core.OpRelease, Key: "warm", Token: tok(1)}, time.Second)
	ss[0].Stop()
	defer ss[0].Cont()
	dl := time.Now().Add(time.Minute)
	for i := 0; i < 20; i++ {
		b := d.Begin(context.Background())
		for j := 0; j < 3; j++ {
			b.Send(j, core.Command{Op: core.OpAcquire, Key: "close-" + strconv.Itoa(i), Token: tok(1), TTL: time.Second}, dl)
		}
		for j := 0; j < 2; j++ {
			r, ok := b.Receive(nil)
			require.True(t, ok)
			assert.NotEqual(t, 0, r.Node)
		}
		b.Close() // node 0's SET stays in flight
	}
	_, p := d.backlog(0)
	require.Equal(t, 20, p)
	start := time.Now()
	require.NoError(t, d.Close())
	assert.Less(t, time.Since(start), 10*time.Second, "Close does not wait for the deadlines")
	q, p := d.backlog(0)
	assert.Zero(t, q+p)
}
