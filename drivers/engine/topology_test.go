package engine

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers/internal/dialspec"
	"github.com/redlock-go/redlock/drivers/wire"
)

// startNodes is start with per-node configurations.
func startNodes(t *testing.T, f *fakeNet, nodes []NodeConfig) (*Engine, *manualClock) {
	t.Helper()
	clock := newManualClock()
	names := make([]string, len(nodes))
	for i := range names {
		names[i] = "member" + string(rune('A'+i))
	}
	e := mustNew(t, Config{Names: names, Dial: f.dial, Clock: clock, Nodes: nodes})
	for range nodes {
		<-f.dials
	}
	t.Cleanup(func() {
		go func() {
			for x := range f.exchanges {
				x.ok()
			}
		}()
		e.Close()
		close(f.exchanges)
	})
	return e, clock
}

var waitTwo = NodeConfig{Replicas: 2, WaitTimeout: 50 * time.Millisecond}

// TestWaitFollowsWrites: on a node with Replicas, an acquisition, an
// extension and a fence raise go with WAIT right behind them, in their pipeline, and count
// only if WAIT counts enough replicas; a release goes alone.
func TestWaitFollowsWrites(t *testing.T) {
	f := newFakeNet(t, 1)
	f.replicas[0] = 2
	e, clock := startNodes(t, f, []NodeConfig{waitTwo})
	wait2 := []string{"WAIT", "2", "50"}
	for _, tc := range []struct {
		name  string
		cmd   core.Command
		reply Reply
		acks  int64
		want  core.Status
	}{
		{"acquire replicated", acquire("k", 1), Reply{Kind: KindOK}, 2, core.StatusOK},
		{"acquire short", acquire("k", 1), Reply{Kind: KindOK}, 1, core.StatusError},
		{"acquire held", acquire("k", 1), Reply{Kind: KindNil}, 0, core.StatusHeld},
		{"extend replicated", extend("k", 1), Reply{Kind: KindInt, Int: 1}, 3, core.StatusOK},
		{"extend short", extend("k", 1), Reply{Kind: KindInt, Int: 1}, 0, core.StatusError},
		{"extend missing", extend("k", 1), Reply{Kind: KindInt, Int: 0}, 0, core.StatusMissing},
		{"fenced replicated", acquireFenced("k", 1), Reply{Kind: KindInt, Int: 7}, 2, core.StatusOK},
		{"fenced short", acquireFenced("k", 1), Reply{Kind: KindInt, Int: 8}, 1, core.StatusError},
		// A fence raise too: a failover that lost it would let a later
		// quorum return a smaller fence (core.Waited).
		{"raise replicated", raise("k", 1, 7), Reply{Kind: KindInt, Int: 1}, 2, core.StatusOK},
		{"raise short", raise("k", 1, 7), Reply{Kind: KindInt, Int: 1}, 1, core.StatusError},
	} {
		b := send(e, clock, 0, tc.cmd, time.Second)
		c := receive(b, nil)
		x := f.next()
		if !assert.Len(t, x.cmds, 2, tc.name) {
			x.ok() // answered, so that the engine closes
			wait(t, c)
			b.Close()
			continue
		}
		assert.Equal(t, wait2, x.cmds[1], "%s: WAIT right behind the write", tc.name)
		x.reply(nil, tc.reply, Reply{Kind: KindInt, Int: tc.acks})
		r := wait(t, c)
		b.Close()
		assert.Equal(t, tc.want, r.Status, tc.name)
		if tc.want == core.StatusError {
			assert.ErrorIs(t, r.Err, dialspec.ErrNotReplicated, tc.name)
			var ne *wire.NodeError
			require.ErrorAs(t, r.Err, &ne, tc.name)
			assert.Equal(t, "memberA", ne.Addr)
			assert.ErrorContains(t, r.Err, "WAIT 2 50ms: "+strconv.FormatInt(tc.acks, 10)+" acknowledged")
		} else {
			assert.NoError(t, r.Err, tc.name)
		}
	}
	b := send(e, clock, 0, release("k", 1), time.Second)
	c := receive(b, nil)
	x := f.next()
	assert.Len(t, x.cmds, 1, "a release needs no WAIT")
	x.ok()
	assert.Equal(t, core.StatusOK, wait(t, c).Status)
	b.Close()
}

// TestWaitInAPipelineOfRounds: several rounds' writes in one pipeline of
// the WAIT lane, each with its WAIT; every reply reaches its round.
func TestWaitInAPipelineOfRounds(t *testing.T) {
	f := newFakeNet(t, 1)
	f.replicas[0] = 2
	e, clock := startNodes(t, f, []NodeConfig{waitTwo})
	lane := e.nodes[0].lane
	// Hold the lane in an exchange, so that the next rounds queue.
	b0 := send(e, clock, 0, acquire("h", 0), time.Second)
	c0 := receive(b0, nil)
	x0 := f.next()
	var cs []<-chan core.Reply
	for i, cmd := range []core.Command{acquire("a", 1), extend("c", 3), acquireFenced("d", 4)} {
		b := send(e, clock, 0, cmd, time.Second)
		cs = append(cs, receive(b, nil))
		t.Cleanup(b.Close)
		eventuallyQueued(t, lane, i+1)
	}
	x0.reply(nil, Reply{Kind: KindOK}, Reply{Kind: KindInt, Int: 2})
	assert.Equal(t, core.StatusOK, wait(t, c0).Status)
	b0.Close()
	x := f.next()
	if !assert.Len(t, x.cmds, 4) {
		x.ok()
		return
	}
	assert.Same(t, x0.conn, x.conn, "the lane's connection")
	assert.Equal(t, []string{"SET", "EVAL", "EVAL", "WAIT"}, []string{x.cmds[0][0], x.cmds[1][0], x.cmds[2][0], x.cmds[3][0]},
		"one WAIT, behind the last write, answers for all")
	x.reply(nil, Reply{Kind: KindNil}, Reply{Kind: KindInt, Int: 1}, Reply{Kind: KindInt, Int: 5}, Reply{Kind: KindInt, Int: 1})
	assert.Equal(t, core.StatusHeld, wait(t, cs[0]).Status)
	for _, c := range cs[1:] {
		r := wait(t, c)
		assert.Equal(t, core.StatusError, r.Status)
		assert.ErrorIs(t, r.Err, dialspec.ErrNotReplicated)
	}
}

// TestWaitPerWriteOnACluster: on a Cluster, whose writes go to their
// keys' masters, each write has its WAIT right behind it.
func TestWaitPerWriteOnACluster(t *testing.T) {
	f := newFakeNet(t, 1)
	f.replicas[0] = 2
	e, clock := startNodes(t, f, []NodeConfig{{Replicas: 2, WaitTimeout: 50 * time.Millisecond, Cluster: true}})
	lane := e.nodes[0].lane
	b0 := send(e, clock, 0, acquire("h", 0), time.Second)
	c0 := receive(b0, nil)
	x0 := f.next()
	var cs []<-chan core.Reply
	for i, cmd := range []core.Command{acquire("a", 1), extend("c", 3)} {
		b := send(e, clock, 0, cmd, time.Second)
		cs = append(cs, receive(b, nil))
		t.Cleanup(b.Close)
		eventuallyQueued(t, lane, i+1)
	}
	x0.reply(nil, Reply{Kind: KindOK}, Reply{Kind: KindInt, Int: 2})
	wait(t, c0)
	b0.Close()
	x := f.next()
	if !assert.Len(t, x.cmds, 4) {
		x.ok()
		return
	}
	assert.Equal(t, []string{"SET", "WAIT", "EVAL", "WAIT"}, []string{x.cmds[0][0], x.cmds[1][0], x.cmds[2][0], x.cmds[3][0]})
	x.reply(nil, Reply{Kind: KindOK}, Reply{Kind: KindInt, Int: 2}, Reply{Kind: KindInt, Int: 1}, Reply{Kind: KindInt, Int: 0})
	assert.Equal(t, core.StatusOK, wait(t, cs[0]).Status)
	assert.ErrorIs(t, wait(t, cs[1]).Err, dialspec.ErrNotReplicated)
}

// TestWaitLaneKeepsOtherCommandsMoving: while a WAIT blocks the lane,
// releases of other locks go out on the node's connection; the release
// of the write that waits queues behind it, on the lane, so that it
// cannot overtake the SET it undoes.
func TestWaitLaneKeepsOtherCommandsMoving(t *testing.T) {
	f := newFakeNet(t, 1)
	f.replicas[0] = 2
	e, clock := startNodes(t, f, []NodeConfig{waitTwo})
	lane := e.nodes[0].lane
	ba := send(e, clock, 0, acquire("a", 1), time.Second)
	cancel := make(chan struct{})
	ca := receive(ba, cancel)
	xa := f.next() // the lane, blocked in WAIT

	bo := send(e, clock, 0, release("other", 2), time.Second)
	co := receive(bo, nil)
	xo := f.next()
	assert.NotSame(t, xa.conn, xo.conn, "another connection")
	assert.Equal(t, []string{"EVAL other"}, xo.names())
	xo.ok()
	assert.Equal(t, core.StatusOK, wait(t, co).Status, "answered while the WAIT blocks")
	bo.Close()

	// The attempt on "a" is cancelled; its cleanup follows the SET on
	// the lane.
	close(cancel)
	assert.Equal(t, -1, wait(t, ca).Node)
	ba.Close()
	bc := send(e, clock, 0, release("a", 1), time.Second)
	cc := receive(bc, nil)
	eventuallyQueued(t, lane, 1)
	select {
	case x := <-f.exchanges:
		t.Fatalf("the release overtook its SET: %v", x.names())
	default:
	}
	xa.reply(nil, Reply{Kind: KindOK}, Reply{Kind: KindInt, Int: 0})
	xc := f.next()
	assert.Same(t, xa.conn, xc.conn, "the release went on the lane")
	assert.Equal(t, []string{"EVAL a"}, xc.names())
	xc.ok()
	assert.Equal(t, core.StatusOK, wait(t, cc).Status)
	bc.Close()

	// Answered, the write is no longer outstanding: its next release goes
	// on the node's connection.
	lane.mu.Lock()
	assert.Empty(t, lane.outstanding)
	lane.mu.Unlock()
	bd := send(e, clock, 0, release("a", 1), time.Second)
	cd := receive(bd, nil)
	xd := f.next()
	assert.Same(t, xo.conn, xd.conn)
	xd.ok()
	wait(t, cd)
	bd.Close()
}

// TestWaitNoScriptSendsWaitAgain: a write that meets NOSCRIPT goes again
// as EVAL with its WAIT, whose reply decides the vote.
func TestWaitNoScriptSendsWaitAgain(t *testing.T) {
	f := newFakeNet(t, 1)
	f.replicas[0] = 2
	e, clock := startNodes(t, f, []NodeConfig{waitTwo})
	run := func() (*exchange, <-chan core.Reply) {
		b := send(e, clock, 0, extend("k", 1), time.Second)
		t.Cleanup(b.Close)
		c := receive(b, nil)
		return f.next(), c
	}
	x, c := run()
	x.reply(nil, Reply{Kind: KindInt, Int: 1}, Reply{Kind: KindInt, Int: 2})
	require.Equal(t, core.StatusOK, wait(t, c).Status)
	x, c = run()
	require.Equal(t, "EVALSHA", x.cmds[0][0])
	x.reply(nil, Reply{Kind: KindError, Err: errors.New("NOSCRIPT No matching script")}, Reply{Kind: KindInt, Int: 2})
	x = f.next()
	require.Len(t, x.cmds, 2)
	assert.Equal(t, "EVAL", x.cmds[0][0])
	assert.Equal(t, "WAIT", x.cmds[1][0])
	x.reply(nil, Reply{Kind: KindInt, Int: 1}, Reply{Kind: KindInt, Int: 1})
	r := wait(t, c)
	assert.Equal(t, core.StatusError, r.Status, "the second WAIT's count decides")
	assert.ErrorIs(t, r.Err, dialspec.ErrNotReplicated)
}

// TestWaitRefusesAMasterWithTooFewReplicas: a WAIT lane whose master has
// fewer connected replicas than Replicas is refused, before any command
// goes on it, with dialspec.ErrNotReplicated (a failed vote, not
// core.ErrInvalidConfig) naming the member; the node's
// own connection still carries releases.
func TestWaitRefusesAMasterWithTooFewReplicas(t *testing.T) {
	f := newFakeNet(t, 2)
	f.replicas[0], f.replicas[1] = 1, 2
	e, clock := startNodes(t, f, []NodeConfig{waitTwo, waitTwo})
	b := send(e, clock, 0, acquire("k", 1), time.Second)
	r := wait(t, receive(b, nil))
	b.Close()
	assert.Equal(t, core.StatusError, r.Status)
	require.ErrorIs(t, r.Err, dialspec.ErrNotReplicated)
	assert.NotErrorIs(t, r.Err, core.ErrInvalidConfig)
	assert.ErrorContains(t, r.Err, "memberA")
	assert.ErrorContains(t, r.Err, "WAIT for 2 replicas, but the master has 1 connected")
	select {
	case x := <-f.exchanges:
		t.Fatalf("a command went out: %v", x.cmds)
	default:
	}
	b = send(e, clock, 0, release("k", 1), time.Second)
	c := receive(b, nil)
	x := f.next()
	x.reply(nil, Reply{Kind: KindInt, Int: 0})
	assert.Equal(t, core.StatusMissing, wait(t, c).Status, "a release goes out")
	b.Close()
	// The other member, with its replicas, works.
	b = send(e, clock, 1, acquire("k", 1), time.Second)
	c = receive(b, nil)
	x = f.next()
	x.reply(nil, Reply{Kind: KindOK}, Reply{Kind: KindInt, Int: 2})
	assert.Equal(t, core.StatusOK, wait(t, c).Status)
	b.Close()
}

// TestClusterNames: a Cluster node names a key's fence counter and queues
// so that they hash with the key, and refuses, unsent, a key that cannot
// be so named; a plain node keeps the names of old.
func TestClusterNames(t *testing.T) {
	f := newFakeNet(t, 2)
	e, clock := startNodes(t, f, []NodeConfig{{Cluster: true}, {}})
	for _, tc := range []struct {
		node      int
		key, want string
	}{
		{0, "k", "redlock:fence:{k}"},
		{0, "{t}x", "redlock:fence:{t}x"},
		{1, "k", "redlock:fence:k"},
		{1, "a}b", "redlock:fence:a}b"},
	} {
		b := send(e, clock, tc.node, acquireFenced(tc.key, 1), time.Second)
		c := receive(b, nil)
		x := f.next()
		assert.Equal(t, []string{"2", tc.key, tc.want}, x.cmds[0][2:5])
		x.reply(nil, Reply{Kind: KindInt, Int: 1})
		assert.Equal(t, core.StatusOK, wait(t, c).Status)
		b.Close()
	}
	fair := acquire("k", 1)
	fair.Probe, fair.Fair = true, true
	b := send(e, clock, 0, fair, time.Second)
	c := receive(b, nil)
	x := f.next()
	assert.Equal(t, []string{"3", "k", "redlock:queue:{k}", "redlock:queue-due:{k}"}, x.cmds[0][2:6])
	x.reply(nil, Reply{Kind: KindOK})
	wait(t, c)
	b.Close()

	b = send(e, clock, 0, acquireFenced("a}b", 1), time.Second)
	r := wait(t, receive(b, nil))
	b.Close()
	assert.Equal(t, core.StatusError, r.Status)
	assert.ErrorIs(t, r.Err, wire.ErrUntaggable)
	assert.ErrorIs(t, r.Err, dialspec.ErrMisconfigured)
	assert.NotErrorIs(t, r.Err, core.ErrInvalidConfig)
	assert.ErrorContains(t, r.Err, "memberA")
	select {
	case x := <-f.exchanges:
		t.Fatalf("an untaggable key went out: %v", x.cmds)
	default:
	}
}

// idConn is a Conn that identifies its servers itself, as a Cluster's.
type idConn struct {
	*fakeConn
	ids      []string
	replicas int
}

func (c idConn) Identify(context.Context) ([]string, int, error) { return c.ids, c.replicas, nil }

// TestIdentifierClaimsEveryServer: a Cluster given twice shares its
// masters' run_ids: the second to connect is refused; a standalone
// member that is one of its masters too.
func TestIdentifierClaimsEveryServer(t *testing.T) {
	f := newFakeNet(t, 3)
	ids := [][]string{{"m1", "m2", "m3"}, {"m4", "m5"}, {"m2"}}
	dial := func(ctx context.Context, i int) (Conn, error) {
		c, err := f.dial(ctx, i)
		if err != nil {
			return nil, err
		}
		return idConn{c.(*fakeConn), ids[i], 1}, nil
	}
	clock := newManualClock()
	e := mustNew(t, Config{Names: []string{"cluster:a", "cluster:b", "cluster:c"}, Dial: dial, Clock: clock,
		Nodes: []NodeConfig{{Cluster: true}, {Cluster: true, Replicas: 1, WaitTimeout: time.Millisecond}, {Cluster: true}}})
	defer e.Close()
	for range 3 {
		<-f.dials
	}
	var r core.Reply
	statuses := map[int]core.Reply{}
	for _, i := range []int{0, 2, 1} {
		b := send(e, clock, i, acquire("k", 1), time.Second)
		c := receive(b, nil)
		select {
		case r = <-c:
		case x := <-f.exchanges:
			rs := []Reply{{Kind: KindOK}, {Kind: KindInt, Int: 1}}
			x.reply(nil, rs[:len(x.cmds)]...)
			r = wait(t, c)
		}
		b.Close()
		statuses[i] = r
	}
	assert.Equal(t, core.StatusOK, statuses[1].Status, "no server in common")
	// Nodes 0 and 2 share m2: the second to connect is refused.
	refused := statuses[2]
	if statuses[0].Status != core.StatusOK {
		refused = statuses[0]
		assert.Equal(t, core.StatusOK, statuses[2].Status)
	}
	require.Equal(t, core.StatusError, refused.Status)
	assert.ErrorIs(t, refused.Err, dialspec.ErrMisconfigured)
	assert.NotErrorIs(t, refused.Err, core.ErrInvalidConfig)
	assert.ErrorContains(t, refused.Err, "run_id m2")
}

// TestWaitOverDuplex: over a Duplex connection too, WAIT goes behind the
// write and decides its vote.
func TestWaitOverDuplex(t *testing.T) {
	f := newFakeNet(t, 1)
	f.duplex = true
	f.replicas[0] = 2
	e, clock := startNodes(t, f, []NodeConfig{waitTwo})
	for _, acks := range []int64{2, 1} {
		b := send(e, clock, 0, extend("k", 1), time.Second)
		c := receive(b, nil)
		x := f.next()
		require.Len(t, x.cmds, 2)
		assert.Equal(t, []string{"WAIT", "2", "50"}, x.cmds[1])
		x.reply(nil, Reply{Kind: KindInt, Int: 1}, Reply{Kind: KindInt, Int: acks})
		r := wait(t, c)
		b.Close()
		if acks == 2 {
			assert.Equal(t, core.StatusOK, r.Status)
		} else {
			assert.Equal(t, core.StatusError, r.Status)
			assert.ErrorIs(t, r.Err, dialspec.ErrNotReplicated)
		}
	}
}

// TestIdentifierReplicasAreChecked: a Cluster whose masters have fewer
// replicas than WAIT asks is refused at connect.
func TestIdentifierReplicasAreChecked(t *testing.T) {
	f := newFakeNet(t, 1)
	dial := func(ctx context.Context, i int) (Conn, error) {
		c, err := f.dial(ctx, i)
		if err != nil {
			return nil, err
		}
		return idConn{c.(*fakeConn), []string{"m1", "m2"}, 1}, nil
	}
	clock := newManualClock()
	e := mustNew(t, Config{Names: []string{"cluster:a"}, Dial: dial, Clock: clock,
		Nodes: []NodeConfig{{Cluster: true, Replicas: 2, WaitTimeout: time.Millisecond}}})
	defer e.Close()
	b := send(e, clock, 0, acquire("k", 1), time.Second)
	r := wait(t, receive(b, nil))
	b.Close()
	assert.Equal(t, core.StatusError, r.Status)
	require.ErrorIs(t, r.Err, dialspec.ErrNotReplicated)
	assert.NotErrorIs(t, r.Err, core.ErrInvalidConfig)
	assert.ErrorContains(t, r.Err, "WAIT for 2 replicas, but the master has 1 connected")
	select {
	case x := <-f.exchanges:
		t.Fatalf("a command went out: %v", x.cmds)
	default:
	}
}

// TestWaitNoScriptInAPipeline: a write of a pipeline that meets NOSCRIPT
// goes again with a WAIT of its own, which answers for it alone; the
// pipeline's WAIT still answers for the others.
func TestWaitNoScriptInAPipeline(t *testing.T) {
	f := newFakeNet(t, 1)
	f.replicas[0] = 2
	e, clock := startNodes(t, f, []NodeConfig{waitTwo})
	lane := e.nodes[0].lane
	b0 := send(e, clock, 0, extend("h", 0), time.Second) // caches the extend script
	c0 := receive(b0, nil)
	x0 := f.next()
	var cs []<-chan core.Reply
	for i, cmd := range []core.Command{extend("a", 1), extend("b", 2)} {
		b := send(e, clock, 0, cmd, time.Second)
		cs = append(cs, receive(b, nil))
		t.Cleanup(b.Close)
		eventuallyQueued(t, lane, i+1)
	}
	x0.reply(nil, Reply{Kind: KindInt, Int: 1}, Reply{Kind: KindInt, Int: 2})
	require.Equal(t, core.StatusOK, wait(t, c0).Status)
	b0.Close()
	x := f.next()
	if !assert.Len(t, x.cmds, 3) {
		x.ok()
		return
	}
	assert.Equal(t, []string{"EVALSHA", "EVALSHA", "WAIT"}, []string{x.cmds[0][0], x.cmds[1][0], x.cmds[2][0]})
	x.reply(nil, Reply{Kind: KindError, Err: errors.New("NOSCRIPT No matching script")}, Reply{Kind: KindInt, Int: 1}, Reply{Kind: KindInt, Int: 2})
	x = f.next()
	require.Len(t, x.cmds, 2)
	assert.Equal(t, []string{"EVAL", "WAIT"}, []string{x.cmds[0][0], x.cmds[1][0]})
	x.reply(nil, Reply{Kind: KindInt, Int: 1}, Reply{Kind: KindInt, Int: 1})
	r := wait(t, cs[0])
	assert.Equal(t, core.StatusError, r.Status, "the retry's WAIT, short")
	assert.ErrorIs(t, r.Err, dialspec.ErrNotReplicated)
	assert.Equal(t, core.StatusOK, wait(t, cs[1]).Status, "the pipeline's WAIT")
}
