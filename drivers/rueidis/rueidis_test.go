package rueidis_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	rd "github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers"
	"github.com/redlock-go/redlock/drivers/conformance"
	"github.com/redlock-go/redlock/drivers/engine"
	rueidis "github.com/redlock-go/redlock/drivers/rueidis"
	"github.com/redlock-go/redlock/internal/dialtest"
	"github.com/redlock-go/redlock/internal/redistest"
	"github.com/redlock-go/redlock/internal/redistest/embedded"
	"github.com/redlock-go/redlock/internal/subtest"
	"github.com/redlock-go/redlock/internal/systest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// newClient returns a client for addr made as Dial makes them.
func newClient(t *testing.T, addr string) rd.Client {
	t.Helper()
	c, err := rd.NewClient(rueidis.ClientOption(addr, rueidis.Options{}))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

func TestNewValidation(t *testing.T) {
	ss := embedded.StartN(t, 2, redistest.Options{})
	dialtest.NewValidation(t, rueidis.New, newClient(t, ss[0].Addr), newClient(t, ss[1].Addr))
}

func TestNewOverUserClients(t *testing.T) {
	ss := embedded.StartN(t, 3, redistest.Options{})
	clients := make([]rd.Client, 3)
	for i, s := range ss {
		clients[i] = newClient(t, s.Addr)
	}
	d, err := rueidis.New(clients, nil)
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
	c := clients[0]
	assert.NoError(t, c.Do(context.Background(), c.B().Ping().Build()).Error(), "Close leaves the caller's clients open")
}

func TestClientOption(t *testing.T) {
	o := rueidis.ClientOption("h:1", rueidis.Options{Username: "u", Password: "p", DB: 3})
	assert.Equal(t, []string{"h:1"}, o.InitAddress)
	assert.True(t, o.ForceSingleClient)
	assert.True(t, o.DisableRetry, "a retried SET NX could report the caller's own key as held")
	assert.True(t, o.DisableCache)
	assert.Equal(t, -1, o.PipelineMultiplex, "one connection")
	assert.Less(t, o.ReadBufferEachConn+o.WriteBufferEachConn, 1<<20, "smaller than rueidis's 1 MiB default")
	assert.Equal(t, "u", o.Username)
	assert.Equal(t, "p", o.Password)
	assert.Equal(t, 3, o.SelectDB)
	assert.Equal(t, drivers.DefaultDialTimeout, o.Dialer.Timeout)
	assert.Equal(t, time.Second, rueidis.ClientOption("h:1", rueidis.Options{DialTimeout: time.Second}).Dialer.Timeout)
}

// TestDB: Dial selects Options.DB. The test servers have one database,
// so DB 1 is refused, naming the node.
func TestDB(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{})
	d, err := rueidis.Dial([]string{srv.Addr}, rueidis.Options{DB: 1})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, d.Close()) })
	r := conformance.SendOne(d, 0, core.Command{Op: core.OpAcquire, Key: "db", Token: core.TokenFromUint64s(1, 2), TTL: time.Second}, 5*time.Second)
	assert.Equal(t, core.StatusError, r.Status)
	assert.ErrorContains(t, r.Err, "DB index is out of range")
	assert.ErrorContains(t, r.Err, srv.Addr)
}

// TestAllocations: an acquire+release pair allocates nothing but the
// Lock (systest.LockAllocs) (batches
// pooled, commands built from rueidis's pool, replies decoded in place)
// except in rueidis's DoMulti, which allocates its result slice (2
// allocations) for every pipeline of more than one command. Sequential
// rounds and N=1 never make one. A multiplexed acquire is decided at its
// quorum, and the SET still queued for a straggling node may go out in one
// pipeline with the release that follows it, or not, as the scheduler has
// it: so for N>1 the mean lies between 0 and 2 per straggler, N-quorum,
// above the Lock's.
func TestAllocations(t *testing.T) {
	for _, mode := range []core.FanOut{core.Multiplexed, core.Sequential} {
		for _, n := range []int{1, 3, 5} {
			t.Run(mode.String()+"/N="+strconv.Itoa(n), func(t *testing.T) {
				got := systest.AllocsPerPair(t, dial.Defaults(), n, mode)
				t.Logf("%v allocations per acquire+release", got)
				if mode == core.Sequential || n == 1 {
					assert.Equal(t, systest.LockAllocs, got, "the Lock only")
					return
				}
				assert.LessOrEqual(t, got, systest.LockAllocs+float64(2*(n-core.Quorum(n))))
			})
			t.Run("fenced/"+mode.String()+"/N="+strconv.Itoa(n), func(t *testing.T) {
				// The same, with two rounds that may leave stragglers: the
				// fenced acquire and the raise.
				got := systest.AllocsPerFencedPair(t, dial.Defaults(), n, mode)
				t.Logf("%v allocations per fenced acquire+release", got)
				if mode == core.Sequential || n == 1 {
					assert.Equal(t, systest.LockAllocs, got, "the Lock only")
					return
				}
				assert.LessOrEqual(t, got, systest.LockAllocs+float64(2*2*(n-core.Quorum(n))))
			})
		}
	}
}

// TestSubscriptionOverClients: New subscribes on a connection it dedicates
// from each client.
func TestSubscriptionOverClients(t *testing.T) {
	subtest.RunSubscription(t, func(addrs []string, opts drivers.Options) engine.SubscribeDialer {
		clients := make([]rd.Client, len(addrs))
		for i, a := range addrs {
			clients[i], _ = rd.NewClient(rueidis.ClientOption(a, opts)) // a client even if a node is down
			t.Cleanup(clients[i].Close)
		}
		return rueidis.ClientSubscriber(clients)
	})
}
