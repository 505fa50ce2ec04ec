package radix_test

import (
	"context"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers"
	"github.com/redlock-go/redlock/drivers/internal/engine"
	"github.com/redlock-go/redlock/drivers/internal/wire"
	"github.com/redlock-go/redlock/drivers/radix"
	"github.com/redlock-go/redlock/internal/redistest"
)

// TestClusterMember: a Cluster as one member. The key's fence counter
// lives in its slot, on its master, under its Cluster name; a key that
// cannot be tagged is refused, sent nowhere.
func TestClusterMember(t *testing.T) {
	cl := redistest.StartCluster(t, redistest.ClusterOptions{Replicas: -1})
	c := membersClient(t, []drivers.Member{drivers.NewCluster(cl.Addrs()...)})
	ctx := context.Background()
	for _, key := range []string{"plain", "{tag}:x"} {
		lock, err := c.TryLock(ctx, key)
		require.NoError(t, err, key)
		fence, err := lock.Fence()
		require.NoError(t, err)
		assert.Equal(t, uint64(1), fence)
		m := cl.MasterForKey(key)
		assert.Equal(t, lock.Token().String(), get(t, m, key))
		name, err := wire.ClusterName(core.FenceKeyPrefix, key)
		require.NoError(t, err)
		assert.Equal(t, "1", get(t, m, name), "the counter %s is on the key's master", name)
		require.NoError(t, lock.Extend(ctx))
		require.NoError(t, lock.Unlock(ctx))
		assert.Nil(t, get(t, m, key))
	}
	before := 0
	for _, s := range cl.Masters() {
		before += int(dbsize(t, s))
	}
	_, err := c.TryLock(ctx, "a}b")
	require.ErrorIs(t, err, core.ErrInvalidConfig)
	assert.ErrorIs(t, err, wire.ErrUntaggable)
	after := 0
	for _, s := range cl.Masters() {
		after += int(dbsize(t, s))
	}
	assert.Equal(t, before, after, "nothing written for an untaggable key")
}

// TestClusterMemberThroughMigrationAndFailover: goroutines take one lock
// on a Cluster member with WAIT for each master's replica, across a
// migration of the key's slot (MOVED and ASK, followed by radix) and a
// forced failover of its master: the counter the lock guards is exact and
// the fences strictly increase.
func TestClusterMemberThroughMigrationAndFailover(t *testing.T) {
	cl := redistest.StartCluster(t, redistest.ClusterOptions{})
	c := membersClient(t, []drivers.Member{drivers.NewCluster(cl.Addrs()...).WithWait(1, 500*time.Millisecond)})
	const key, workers, each = "counted", 4, 25
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	var counter atomic.Int64
	var last atomic.Uint64
	var failures atomic.Int64
	progress := make(chan struct{}, workers*each)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for done := 0; done < each; {
				lock, err := c.Lock(ctx, key)
				if err != nil {
					if ctx.Err() != nil {
						t.Errorf("gave up: %v", err)
						return
					}
					failures.Add(1)
					time.Sleep(20 * time.Millisecond) // pace retries through the failover
					continue
				}
				fence, err := lock.Fence()
				assert.NoError(t, err)
				if prev := last.Swap(fence); fence <= prev {
					t.Errorf("fence %d after %d", fence, prev)
				}
				v := counter.Load()
				runtime.Gosched() // an overlapping holder would lose an update
				counter.Store(v + 1)
				if err := lock.Unlock(ctx); err != nil {
					failures.Add(1) // lost in the failover, the key expires: still one holder at a time
				}
				done++
				progress <- struct{}{}
			}
		}()
	}
	waitProgress := func(n int) {
		t.Helper()
		for range n {
			select {
			case <-progress:
			case <-ctx.Done():
				t.Fatal("no progress")
			}
		}
	}
	waitProgress(15)
	slot := redistest.KeySlot(key)
	from := cl.MasterForKey(key)
	var to *redistest.Server
	for _, m := range cl.Masters() {
		if m != from {
			to = m
			break
		}
	}
	cl.MigrateSlot(t, slot, to)
	require.Equal(t, to, cl.MasterForKey(key))
	waitProgress(15)
	old := cl.ForceFailover(t, cl.ReplicasOf(to)[0])
	old.Restart() // back as a replica: WAIT finds one again
	wg.Wait()
	assert.Equal(t, int64(workers*each), counter.Load(), "one holder at a time")
	t.Logf("%d sections, last fence %d, %d failed Lock or Unlock calls", counter.Load(), last.Load(), failures.Load())
}

// TestClusterSeedNotInClusterMode: a Cluster member whose seed is a
// standalone server is a typed error naming the member, and no lock
// command reaches any server.
func TestClusterSeedNotInClusterMode(t *testing.T) {
	ss := redistest.StartN(t, 2, redistest.Options{})
	members := []drivers.Member{drivers.NewStandalone(ss[0].Addr), drivers.NewCluster(ss[1].Addr)}
	d, err := radix.DialMembers(members, radix.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, d.Close()) })
	c, err := redlock.NewClient(d, redlock.Options{Config: core.Config{TTL: 2 * time.Second, NodeTimeout: time.Second}})
	require.NoError(t, err)
	_, err = c.TryLock(context.Background(), "notcluster")
	require.ErrorIs(t, err, core.ErrInvalidConfig)
	assert.ErrorContains(t, err, "cluster:"+ss[1].Addr+": not a Cluster")
	for _, s := range ss {
		assert.Zero(t, dbsize(t, s), "nothing left on %s", s.Addr)
	}
}

// TestClusterAnnouncesReleases: a Cluster member's subscription, on one
// master of the Cluster, hears the release script's PUBLISH from every
// master (a Cluster broadcasts it): a key on each is released, and each
// release is heard.
func TestClusterAnnouncesReleases(t *testing.T) {
	cl := redistest.StartCluster(t, redistest.ClusterOptions{Replicas: -1})
	members := []drivers.Member{drivers.NewCluster(cl.Addrs()...)}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var keys []string // one per master
	owners := map[*redistest.Server]bool{}
	for i := 0; len(owners) < len(cl.Masters()); i++ {
		k := "k" + strconv.Itoa(i)
		if m := cl.MasterForKey(k); !owners[m] {
			owners[m] = true
			keys = append(keys, k)
		}
	}
	s, err := radix.MembersSubscriber(members, radix.Options{})(ctx, 0)
	require.NoError(t, err)
	defer func() { _ = s.Close() }() // the subscription's Close reports nothing a test checks
	want := map[engine.Event]bool{}
	for _, k := range keys {
		ch := wire.ReleaseChannel(k)
		require.NoError(t, s.Subscribe(ctx, ch))
		e, err := s.Receive(ctx)
		require.NoError(t, err)
		require.Equal(t, engine.Event{Kind: engine.EventSubscribed, Channel: ch}, e)
		want[engine.Event{Kind: engine.EventMessage, Channel: ch}] = true
	}

	c := membersClient(t, members)
	for _, k := range keys {
		lock, err := c.TryLock(ctx, k)
		require.NoError(t, err)
		require.NoError(t, lock.Unlock(ctx))
	}
	got := map[engine.Event]bool{}
	for range keys {
		e, err := s.Receive(ctx)
		require.NoError(t, err)
		got[e] = true
	}
	assert.Equal(t, want, got, "each master's release was heard")
}

// TestClusterExchange: one pipeline over two masters, through the
// member's Conn. Commands on one key run in order (a release behind the
// SET it undoes); with one master dead, the pipeline fails and the live
// master's replies are still returned, for their rounds (their SETs ran).
func TestClusterExchange(t *testing.T) {
	cl := redistest.StartCluster(t, redistest.ClusterOptions{Replicas: -1})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := radix.MemberConn(ctx, drivers.NewCluster(cl.Addrs()...))
	require.NoError(t, err)
	defer func() { assert.NoError(t, conn.Close()) }()
	_, _, err = conn.(engine.Identifier).Identify(ctx)
	require.NoError(t, err)
	dead, live := "k0", ""
	for i := 1; live == ""; i++ {
		if k := "k" + strconv.Itoa(i); cl.MasterForKey(k) != cl.MasterForKey(dead) {
			live = k
		}
	}
	set := func(k, tok string) []string { return []string{"SET", k, tok, "NX", "PX", "10000"} }
	replies := make([]engine.Reply, 4)
	require.NoError(t, conn.Exchange(ctx, [][]string{set(dead, "a"), {"DEL", dead}, set(dead, "b"), set(live, "c")}, replies))
	assert.Equal(t, []engine.Kind{engine.KindOK, engine.KindInt, engine.KindOK, engine.KindOK},
		[]engine.Kind{replies[0].Kind, replies[1].Kind, replies[2].Kind, replies[3].Kind}, "%v", replies)
	assert.Equal(t, "b", get(t, cl.MasterForKey(dead), dead), "in order on one key")
	_, err = cl.MasterForKey(dead).Do("DEL", dead)
	require.NoError(t, err)
	_, err = cl.MasterForKey(live).Do("DEL", live)
	require.NoError(t, err)

	cl.MasterForKey(dead).Kill()
	replies = make([]engine.Reply, 2)
	err = conn.Exchange(ctx, [][]string{set(dead, "t"), set(live, "t")}, replies)
	require.Error(t, err, "a master is dead")
	assert.Equal(t, engine.KindNone, replies[0].Kind)
	assert.Equal(t, engine.KindOK, replies[1].Kind, "the live master's reply")
	assert.Equal(t, "t", get(t, cl.MasterForKey(live), live))
}
