package redigo_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers/conformance"
	"github.com/redlock-go/redlock/drivers/redigo"
	"github.com/redlock-go/redlock/internal/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

func TestNewValidation(t *testing.T) {
	p, q := &redis.Pool{}, &redis.Pool{}
	for _, tc := range []struct {
		name  string
		pools []*redis.Pool
		names []string
		want  string
	}{
		{"none", nil, nil, "no clients"},
		{"nil pool", []*redis.Pool{p, nil}, nil, "client 1 is nil"},
		{"same pool", []*redis.Pool{p, q, p}, nil, "client 2 is client 0 again"},
		{"same name", []*redis.Pool{p, q}, []string{"a", "a"}, `clients 0 and 1 have the same name "a"`},
		{"names length", []*redis.Pool{p, q}, []string{"a"}, "1 names for 2 clients"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := redigo.New(tc.pools, tc.names)
			assert.Nil(t, d)
			require.ErrorIs(t, err, core.ErrInvalidConfig)
			assert.ErrorContains(t, err, tc.want)
		})
	}
}

func TestNewOverUserPools(t *testing.T) {
	ss := redistest.StartN(t, 3, redistest.Options{Embedded: true})
	pools := make([]*redis.Pool, 3)
	for i, s := range ss {
		pools[i] = &redis.Pool{MaxIdle: 2, DialContext: func(ctx context.Context) (redis.Conn, error) {
			return redis.DialContext(ctx, "tcp", s.Addr)
		}}
		t.Cleanup(func() { pools[i].Close() })
	}
	d, err := redigo.New(pools, nil)
	require.NoError(t, err)
	assert.Equal(t, "pool 1", d.NodeName(1))
	l, err := redlock.New(d, core.Config{TTL: 5 * time.Second, NodeTimeout: time.Second})
	require.NoError(t, err)
	lock, err := l.Acquire(context.Background(), "user-pools")
	require.NoError(t, err)
	require.NoError(t, l.Release(context.Background(), lock))
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
				assert.Zero(t, conformance.AllocsPerPair(t, dial.Defaults(), n, mode))
			})
		}
	}
}
