package goredis_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers"
	"github.com/redlock-go/redlock/drivers/conformance"
	"github.com/redlock-go/redlock/drivers/engine"
	"github.com/redlock-go/redlock/drivers/goredis"
	"github.com/redlock-go/redlock/internal/dialtest"
	"github.com/redlock-go/redlock/internal/redistest"
	"github.com/redlock-go/redlock/internal/redistest/embedded"
	"github.com/redlock-go/redlock/internal/subtest"
	"github.com/redlock-go/redlock/internal/systest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

func TestNewValidation(t *testing.T) {
	// Clients connect lazily: these never touch the network.
	p := redis.NewClient(&redis.Options{Addr: "a:1"})
	q := redis.NewClient(&redis.Options{Addr: "b:1"})
	t.Cleanup(func() { assert.NoError(t, p.Close()); assert.NoError(t, q.Close()) })
	dialtest.NewValidation(t, goredis.New, p, q)
}

func TestNewOverUserClients(t *testing.T) {
	ss := embedded.StartN(t, 3, redistest.Options{})
	clients := make([]*redis.Client, 3)
	for i, s := range ss {
		clients[i] = redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1, ContextTimeoutEnabled: true})
		t.Cleanup(func() { assert.NoError(t, clients[i].Close()) })
	}
	d, err := goredis.New(clients, nil)
	require.NoError(t, err)
	assert.Equal(t, ss[1].Addr, d.NodeName(1), "nil names: the clients' addresses")
	assert.Equal(t, core.Clock(core.SystemClock{}), d.Clock(), "New's driver reads the system clock")
	client, err := redlock.NewClient(d, redlock.Options{TTL: 5 * time.Second, NodeTimeout: time.Second})
	require.NoError(t, err)
	lock, err := client.TryLock(context.Background(), "user-clients")
	require.NoError(t, err)
	require.NoError(t, lock.Extend(context.Background()))
	require.NoError(t, lock.Unlock(context.Background()))
	require.NoError(t, d.Close())
	require.NoError(t, d.Close(), "Close is idempotent")
	for i, c := range clients {
		assert.NoError(t, c.Ping(context.Background()).Err(), "Close leaves the caller's client %d open", i)
	}
}

// Many concurrent lockers share one connection per node, in RESP2. TryLock
// never waits, so no subscription connection is dialled.
func TestOneConnectionPerNode(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{})
	d, err := goredis.Dial([]string{srv.Addr}, goredis.Options{})
	require.NoError(t, err)
	defer func() { assert.NoError(t, d.Close()) }()
	client, err := redlock.NewClient(d, redlock.Options{TTL: 5 * time.Second, NodeTimeout: time.Second})
	require.NoError(t, err)
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range 20 {
				lock, err := client.TryLock(context.Background(), "one-conn-"+strconv.Itoa(g)+"-"+strconv.Itoa(k))
				if assert.NoError(t, err) {
					assert.NoError(t, lock.Unlock(context.Background()))
				}
			}
		}()
	}
	wg.Wait()
	list, err := srv.Do("CLIENT", "LIST")
	require.NoError(t, err)
	var ours []string
	for _, line := range strings.Split(strings.TrimSpace(list.(string)), "\n") {
		if !strings.Contains(line, "cmd=client") { // not the CLIENT LIST itself
			ours = append(ours, line)
		}
	}
	require.Len(t, ours, 1, "one connection: %q", list)
	assert.Contains(t, ours[0]+" ", " resp=2 ")
}

// The test servers have one database: SELECT 1 fails, and so do the
// node's commands, naming it.
func TestDBIsSelected(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{})
	d, err := goredis.Dial([]string{srv.Addr}, goredis.Options{DB: 1, DialTimeout: time.Second})
	require.NoError(t, err)
	defer func() { assert.NoError(t, d.Close()) }()
	cmd := core.Command{Op: core.OpAcquire, Key: "k", Token: core.TokenFromUint64s(1, 2), TTL: time.Second}
	r := conformance.SendOne(d, 0, cmd, time.Second)
	assert.Equal(t, core.StatusError, r.Status)
	assert.ErrorContains(t, r.Err, srv.Addr)
	assert.ErrorContains(t, r.Err, "DB index is out of range")
}

// A pair makes no allocation but the Lock's (systest.LockAllocs): each
// node's commands are made once and sent again, one at a time through go-redis's Process, which allocates nothing
// on a Conn of its own. Multiplexed, the majority answers a round: a
// node's release may still wait when the next acquire comes, and the two
// share a pipeline, which costs go-redis's three (TestExchangeAllocations).
func TestAllocations(t *testing.T) {
	for _, mode := range []core.FanOut{core.Multiplexed, core.Sequential} {
		for _, n := range []int{1, 3, 5} {
			// Each round but the first may share a pipeline with the one before.
			check := func(t *testing.T, rounds int, got float64) {
				if mode == core.Sequential || n == 1 {
					assert.Equal(t, systest.LockAllocs, got, "the Lock only")
				} else {
					assert.LessOrEqual(t, got, systest.LockAllocs+float64(3*n*(rounds-1)))
				}
			}
			t.Run(mode.String()+"/N="+strconv.Itoa(n), func(t *testing.T) {
				check(t, 2, systest.AllocsPerPair(t, dial.Defaults(), n, mode))
			})
			t.Run("fenced/"+mode.String()+"/N="+strconv.Itoa(n), func(t *testing.T) {
				check(t, 3, systest.AllocsPerFencedPair(t, dial.Defaults(), n, mode))
			})
		}
	}
}

// TestSubscriptionOverClients: New subscribes through each client's PubSub.
func TestSubscriptionOverClients(t *testing.T) {
	subtest.RunSubscription(t, func(addrs []string, opts drivers.Options) engine.SubscribeDialer {
		clients := make([]*redis.Client, len(addrs))
		for i, a := range addrs {
			clients[i] = redis.NewClient(&redis.Options{Addr: a, Username: opts.Username, Password: opts.Password,
				TLSConfig: opts.TLS, DialTimeout: opts.DialTimeout, Protocol: 2, MaxRetries: -1})
			t.Cleanup(func() { assert.NoError(t, clients[i].Close()) })
		}
		return goredis.ClientSubscriber(clients)
	})
}
