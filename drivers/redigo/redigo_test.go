package redigo_test

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers"
	"github.com/redlock-go/redlock/drivers/engine"
	"github.com/redlock-go/redlock/drivers/redigo"
	"github.com/redlock-go/redlock/internal/dialtest"
	"github.com/redlock-go/redlock/internal/redistest"
	"github.com/redlock-go/redlock/internal/redistest/embedded"
	"github.com/redlock-go/redlock/internal/subtest"
	"github.com/redlock-go/redlock/internal/systest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

func TestNewValidation(t *testing.T) {
	dialtest.NewValidation(t, redigo.New, &redis.Pool{}, &redis.Pool{})
}

func TestNewOverUserPools(t *testing.T) {
	ss := embedded.StartN(t, 3, redistest.Options{})
	pools := make([]*redis.Pool, 3)
	for i, s := range ss {
		pools[i] = &redis.Pool{MaxIdle: 2, DialContext: func(ctx context.Context) (redis.Conn, error) {
			return redis.DialContext(ctx, "tcp", s.Addr)
		}}
		t.Cleanup(func() { assert.NoError(t, pools[i].Close()) })
	}
	d, err := redigo.New(pools, nil)
	require.NoError(t, err)
	assert.Equal(t, "pool 1", d.NodeName(1))
	assert.Equal(t, core.Clock(core.SystemClock{}), d.Clock(), "New's driver reads the system clock")
	client, err := redlock.NewClient(d, redlock.Options{TTL: 5 * time.Second, NodeTimeout: time.Second})
	require.NoError(t, err)
	lock, err := client.TryLock(context.Background(), "user-pools")
	require.NoError(t, err)
	require.NoError(t, lock.Extend(context.Background()))
	require.NoError(t, lock.Unlock(context.Background()))
	require.NoError(t, d.Close())
	require.NoError(t, d.Close(), "Close is idempotent")
	_, err = pools[0].Get().Do("PING")
	assert.NoError(t, err, "Close leaves the caller's pools open")
}

func TestAllocations(t *testing.T) {
	for _, mode := range []core.FanOut{core.Multiplexed, core.Sequential} {
		for _, n := range []int{1, 3, 5} {
			t.Run(mode.String()+"/N="+strconv.Itoa(n), func(t *testing.T) {
				// Batches are pooled, arguments boxed once per connection,
				// replies decoded without allocation.
				assert.Equal(t, systest.LockAllocs, systest.AllocsPerPair(t, dial.Defaults(), n, mode), "the Lock only")
			})
			t.Run("fenced/"+mode.String()+"/N="+strconv.Itoa(n), func(t *testing.T) {
				// The fenced scripts' six arguments fit the boxes too.
				assert.Equal(t, systest.LockAllocs, systest.AllocsPerFencedPair(t, dial.Defaults(), n, mode), "the Lock only")
			})
		}
	}
}

// TestSubscriptionOverPools: New subscribes on a connection of its own,
// from the pool's DialContext, and reads it without the read timeout the
// pool's connections have.
func TestSubscriptionOverPools(t *testing.T) {
	subtest.RunSubscription(t, func(addrs []string, opts drivers.Options) engine.SubscribeDialer {
		pools := make([]*redis.Pool, len(addrs))
		for i, a := range addrs {
			do := []redis.DialOption{redis.DialUsername(opts.Username), redis.DialPassword(opts.Password),
				redis.DialReadTimeout(time.Second)}
			if opts.TLS != nil {
				do = append(do, redis.DialUseTLS(true), redis.DialTLSConfig(opts.TLS))
			}
			pools[i] = &redis.Pool{DialContext: func(ctx context.Context) (redis.Conn, error) {
				return redis.DialContext(ctx, "tcp", a, do...)
			}}
			t.Cleanup(func() { assert.NoError(t, pools[i].Close()) })
		}
		return redigo.PoolSubscriber(pools)
	})
}

// TestDialSetsOneDeadlinePerPipeline: a Dial connection's socket gets one
// write deadline per pipeline written and one read deadline per pipeline
// read, whatever the commands in it (redigo alone would set one per
// command sent and one per reply read), and the read deadline still ends
// a read that waits longer.
func TestDialSetsOneDeadlinePerPipeline(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	n := redigo.CountSocketDeadlines(t)
	c, err := redigo.DialDuplex(context.Background(), []string{s.Addr}, redigo.Options{}, 0)
	require.NoError(t, err)
	defer func() { _ = c.Close() }() // after the timeout below, redigo's Close returns that failure
	r0, w0 := n.Read.Load(), n.Write.Load()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmds := [][]string{{"SET", "k", "v"}, {"GET", "k"}, {"INCR", "n"}, {"INCR", "n"}, {"GET", "missing"}}
	require.NoError(t, c.Write(ctx, cmds))
	replies := make([]engine.Reply, len(cmds))
	require.NoError(t, c.Read(ctx, replies))
	assert.Equal(t, []engine.Reply{engine.String("OK"), engine.String("v"),
		{Kind: engine.KindInt, Int: 1}, {Kind: engine.KindInt, Int: 2}, {Kind: engine.KindNil}}, replies)
	assert.Equal(t, int64(1), n.Write.Load()-w0, "write deadlines for one pipeline")
	assert.Equal(t, int64(1), n.Read.Load()-r0, "read deadlines for one pipeline")

	// BLPOP answers after 5 s; the read's deadline comes first.
	short, cancelShort := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancelShort()
	require.NoError(t, c.Write(short, [][]string{{"BLPOP", "empty", "5"}}))
	err = c.Read(short, make([]engine.Reply, 1))
	require.ErrorIs(t, err, os.ErrDeadlineExceeded)

	// A read whose deadline has passed fails before it touches the socket.
	r1 := n.Read.Load()
	require.ErrorIs(t, c.Read(short, make([]engine.Reply, 1)), context.DeadlineExceeded)
	assert.Equal(t, r1, n.Read.Load())
}
