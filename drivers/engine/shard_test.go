package engine

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers/wire"
)

// shardConn is a Cluster's Conn that tells whether its masters have
// sharded pub/sub.
type shardConn struct {
	idConn
	sharded bool
}

func (c shardConn) ShardedPubSub() bool { return c.sharded }

// TestShardedReleaseScript: a release on a Cluster node whose masters have
// sharded pub/sub runs wire.ReleaseSharded (EVAL, then EVALSHA); a node
// without it, or not a ShardedPublisher, runs wire.Release.
func TestShardedReleaseScript(t *testing.T) {
	f := newFakeNet(t, 3)
	dial := func(ctx context.Context, i int) (Conn, error) {
		c, err := f.dial(ctx, i)
		if err != nil || i == 2 {
			return c, err
		}
		return shardConn{idConn{c.(*fakeConn), []string{strconv.Itoa(i)}, 0}, i == 0}, nil
	}
	clock := newManualClock()
	e := mustNew(t, Config{Names: []string{"sharded", "classic", "plain"}, Dial: dial, Clock: clock,
		Nodes: []NodeConfig{{Cluster: true}, {Cluster: true}, {}}})
	defer e.Close()
	want := []wire.Script{wire.ReleaseSharded, wire.Release, wire.Release}
	for i, s := range want {
		for _, word := range []string{s.Src, s.SHA1} {
			b := send(e, clock, i, release("k", 1), time.Second)
			c := receive(b, nil)
			x := f.next()
			assert.Equal(t, word, x.cmds[0][1], "node %d", i)
			x.reply(nil, Reply{Kind: KindInt, Int: 1})
			assert.Equal(t, core.StatusOK, wait(t, c).Status)
			b.Close()
		}
	}
}

// shardRun is one run of a fake ShardRunner.
type shardRun struct {
	ctx     context.Context
	channel string
	push    func(Event)
	end     chan error
}

// fakeShards is a ShardRunner whose runs the test drives.
type fakeShards struct {
	runs   chan *shardRun
	mu     sync.Mutex
	closed bool
}

func (f *fakeShards) run(ctx context.Context, channel string, push func(Event)) error {
	r := &shardRun{ctx: ctx, channel: channel, push: push, end: make(chan error, 1)}
	f.runs <- r
	select {
	case err := <-r.end:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (f *fakeShards) close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	return nil
}

func (f *fakeShards) next(t *testing.T) *shardRun {
	t.Helper()
	select {
	case r := <-f.runs:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("no run")
		return nil
	}
}

// TestShardedSubscription: each channel runs under its shard name; the
// events come back under the channel's own name; a run that ends after
// its confirmation (a moved slot) reports the channel unsubscribed and
// runs again; Unsubscribe and Close end the runs; an untaggable key's
// channel never runs.
func TestShardedSubscription(t *testing.T) {
	f := &fakeShards{runs: make(chan *shardRun, 8)}
	s := NewShardedSubscription(f.run, f.close)
	ctx := context.Background()
	recv := func() Event {
		t.Helper()
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		e, err := s.Receive(rctx)
		require.NoError(t, err)
		return e
	}
	ch := wire.ReleaseChannel("k")
	require.NoError(t, s.Subscribe(ctx, ch, wire.ReleaseChannel("a}b")))
	r := f.next(t)
	assert.Equal(t, wire.ReleasePrefix+"{k}", r.channel)
	r.push(Event{Kind: EventSubscribed, Channel: r.channel})
	assert.Equal(t, Event{Kind: EventSubscribed, Channel: ch}, recv())
	r.push(Event{Kind: EventMessage, Channel: r.channel})
	assert.Equal(t, Event{Kind: EventMessage, Channel: ch}, recv())

	r.end <- nil // sunsubscribe: the slot moved
	assert.Equal(t, Event{Kind: EventUnsubscribed, Channel: ch}, recv())
	r = f.next(t)
	assert.Equal(t, wire.ReleasePrefix+"{k}", r.channel, "again, on the slot's new master")
	r.push(Event{Kind: EventSubscribed, Channel: r.channel})
	assert.Equal(t, Event{Kind: EventSubscribed, Channel: ch}, recv())

	require.NoError(t, s.Unsubscribe(ctx, ch))
	assert.Error(t, r.ctx.Err(), "the run was cancelled")
	assert.Equal(t, Event{Kind: EventUnsubscribed, Channel: ch}, recv())

	turn := wire.TurnChannel("8000000000000001", "{t}x")
	require.NoError(t, s.Subscribe(ctx, turn))
	r = f.next(t)
	assert.Equal(t, turn, r.channel, "a tagged key's channel keeps its name")
	require.NoError(t, s.Close())
	assert.Error(t, r.ctx.Err())
	f.mu.Lock()
	assert.True(t, f.closed, "Close closes the client")
	f.mu.Unlock()
	_, err := s.Receive(ctx)
	assert.Error(t, err)
	select {
	case r := <-f.runs:
		t.Fatalf("an unexpected run of %s", r.channel)
	default:
	}
}

// TestWatchOverShardedSubscription: a Watch on a node whose subscription
// is sharded listens once the shard subscription is confirmed, hears its
// messages, stops listening (notified) when the server ends it, and
// listens again once it is made again; Stop ends its run.
func TestWatchOverShardedSubscription(t *testing.T) {
	f := &fakeShards{runs: make(chan *shardRun, 8)}
	e := mustNew(t, Config{Names: []string{"cluster"}, Dial: newFakeNet(t, 1).dial,
		Subscribe: func(context.Context, int) (Subscription, error) { return NewShardedSubscription(f.run, f.close), nil }})
	defer e.Close()
	notified := make(chan int, 16)
	w := e.Watch("k", func(i int) { notified <- i })
	heard := func() {
		t.Helper()
		select {
		case <-notified:
		case <-time.After(10 * time.Second):
			t.Fatal("not notified")
		}
	}
	r := f.next(t)
	assert.Equal(t, wire.ReleasePrefix+"{k}", r.channel)
	assert.Zero(t, w.Listening())
	r.push(Event{Kind: EventSubscribed})
	heard()
	assert.Equal(t, uint32(1), w.Listening())
	r.push(Event{Kind: EventMessage})
	heard()

	r.end <- nil // the slot moved
	heard()
	assert.Zero(t, w.Listening(), "not listening while it subscribes again")
	r = f.next(t)
	r.push(Event{Kind: EventSubscribed})
	heard()
	assert.Equal(t, uint32(1), w.Listening())

	w.Stop()
	select {
	case <-r.ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the run goes on after Stop")
	}
}
