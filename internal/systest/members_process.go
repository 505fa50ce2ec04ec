package systest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers"
	"github.com/redlock-go/redlock/drivers/wire"
	"github.com/redlock-go/redlock/internal/redistest"
)

// Cluster-across-processes parameters: 3 processes × 2 goroutines share
// the critical sections.
const (
	cpChildren   = 3
	cpGoroutines = 2
	// cpSections is the critical sections of all of them.
	cpSections = 200
	// cpWait is each vote's WAIT for the key's master's replica.
	cpWait = 500 * time.Millisecond
	// cpTTL is long against a critical section, and short because the
	// failover costs one: the key of an acquisition the kill cut short
	// is on the promoted replica, and must expire. It leaves a lock the
	// loss margin of the children's 1 s node timeout (two of them), with
	// about a second to spare for an acquisition and its WAIT.
	cpTTL = 3 * time.Second
)

// testMembersClusterMemberAcrossProcesses: 3 OS processes, each with its
// own DialMembers, take one key on a 3-master Cluster member with WAIT
// for each master's replica, 200 critical sections in all, in the
// harness of testMultiProcessFenced: a non-atomic counter on a separate
// server, the sections' intervals, each fence written to a fenced store.
// While they run, once the counter shows progress, the key's slot is
// migrated to another master (CLUSTER SETSLOT and MIGRATE); after more
// progress that master is killed and its replica promoted by CLUSTER
// FAILOVER TAKEOVER, which waits for no sync. The counter stays exact,
// no two sections overlap, the fences strictly increase, and the
// promoted replica, which granted the later sections, holds the key's
// fence counter.
func testMembersClusterMemberAcrossProcesses(t *testing.T, md Members) {
	if raw := os.Getenv(childEnv); raw != "" {
		runMembersChild(t, md, raw)
		return
	}
	cl := redistest.StartCluster(t, redistest.ClusterOptions{})
	data := redistest.Start(t, redistest.Options{})
	store, storeAddr := serveFencedStore(t)
	const key, total = "counted", cpSections
	spec := childSpec{
		Test: t.Name(), Members: []drivers.Member{drivers.NewCluster(cl.Addrs()...).WithWait(1, cpWait)},
		Data: data.Addr, Store: storeAddr, Failover: true,
		Key: key, Counter: "counter", Sections: "sections", Ready: "ready",
		Children: cpChildren, Goroutines: cpGoroutines, Total: total, TTL: cpTTL,
	}

	counter := counterWatch(t, data.Addr, spec.Counter)
	var atMigration, migrated, atFailover, promotedAt int
	var promoted *redistest.Server
	ok := runChildren(t, spec, func(done <-chan struct{}) {
		atMigration = counter(total/5, done)
		to := otherMaster(cl, cl.MasterForKey(key))
		cl.MigrateSlot(t, redistest.KeySlot(key), to)
		migrated = counter(0, done)
		atFailover = counter(migrated+total/5, done)
		promoted = cl.ReplicasOf(to)[0]
		old := cl.ForceFailover(t, promoted)
		promotedAt = counter(0, done)
		old.Restart() // back as a replica: WAIT finds one again
	})
	if !ok {
		return
	}
	checkSections(t, data, spec, store)
	// The replica was promoted while the children still had sections to
	// run: later grants were its own.
	assert.Less(t, promotedAt, total, "the failover came before the last section")
	require.Equal(t, promoted.Addr, cl.MasterForKey(key).Addr, "the promoted replica owns the key's slot")
	name, err := wire.ClusterName(core.FenceKeyPrefix, key)
	require.NoError(t, err)
	v, err := promoted.Do("GET", name)
	require.NoError(t, err)
	fence, err := strconv.ParseUint(fmt.Sprint(v), 10, 64)
	require.NoError(t, err, "the fence counter %s on %s", name, promoted.Addr)
	assert.GreaterOrEqual(t, fence, store.Highest(), "the promoted replica's fence counter covers every fence written")
	t.Logf("%d sections: slot migrated from section %d to %d, replica promoted from %d to %d; last fence %d",
		total, atMigration, migrated, atFailover, promotedAt, store.Highest())
}

// counterWatch returns a wait on the counter at key on the server at
// addr, over one connection closed with the test: wait(n, done) waits
// until the counter reaches n and returns it; done closed first (the
// children exited) fails the test.
func counterWatch(t *testing.T, addr, key string) (wait func(n int, done <-chan struct{}) int) {
	t.Helper()
	conn, err := redis.Dial("tcp", addr, redis.DialConnectTimeout(5*time.Second),
		redis.DialReadTimeout(5*time.Second), redis.DialWriteTimeout(5*time.Second))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() }) // replies read: the close changes nothing
	return func(n int, done <-chan struct{}) int {
		t.Helper()
		for {
			v, err := redis.Int(conn.Do("GET", key))
			if errors.Is(err, redis.ErrNil) {
				v, err = 0, nil
			}
			require.NoError(t, err)
			if v >= n {
				return v
			}
			select {
			case <-done:
				require.FailNow(t, "the children exited", "the counter at %d, short of %d", v, n)
			case <-time.After(2 * time.Millisecond): // a section is a few round trips
			}
		}
	}
}

// runMembersChild is a child process's side of
// testMembersClusterMemberAcrossProcesses: a Client over md.Dial of the
// spec's members, fencing, running childLoop.
func runMembersChild(t *testing.T, md Members, raw string) {
	s := parseChildSpec(t, raw)
	require.NotEmpty(t, s.Members)
	d, err := md.Dial(s.Members, drivers.Options{})
	require.NoError(t, err)
	c := lockClient(t, d, redlock.Options{
		TTL: s.TTL, NodeTimeout: time.Second, Fencing: true,
		Backoff: redlock.RandomDelay(time.Millisecond, 5*time.Millisecond),
	})
	take := clientTaker(c, s.Key)
	if s.Failover {
		var failed atomic.Int64
		take = throughFailover(t, take, &failed)
		defer func() {
			t.Logf("child %d: %d failed Lock or Unlock calls", s.Child, failed.Load())
		}()
	}
	childLoop(t, s, take)
}

// throughFailover is take for a lock whose servers fail over: a failed
// Lock is tried again, paced, until its context ends, and a failed
// Unlock is counted, not reported (the key expires at its TTL: still one
// holder at a time). Both count in failed; the first few are logged.
func throughFailover(t *testing.T, take taker, failed *atomic.Int64) taker {
	note := func(what string, err error) {
		if n := failed.Add(1); n <= 3 {
			t.Logf("%s failed, as a failover may make it: %v", what, err)
		}
	}
	return func(ctx context.Context) (held, error) {
		for {
			h, err := take(ctx)
			if err == nil {
				release := h.release
				h.release = func() error {
					if err := release(); err != nil {
						note("Unlock", err)
					}
					return nil
				}
				return h, nil
			}
			if ctx.Err() != nil {
				return h, err
			}
			note("Lock", err)
			time.Sleep(20 * time.Millisecond) // pace the retries through the failover
		}
	}
}
