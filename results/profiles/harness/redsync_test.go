package harness

import (
	"context"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"
	rsredis "github.com/go-redsync/redsync/v4/redis"
	rsredigo "github.com/go-redsync/redsync/v4/redis/redigo"
	"github.com/gomodule/redigo/redis"

	"github.com/redlock-go/redlock/internal/redistest"
)

func BenchmarkRedsync(b *testing.B) {
	// Five redis-servers on free loopback ports, as the library's tests
	// start theirs; without redis-server on PATH the benchmark skips.
	var rp []rsredis.Pool
	for _, s := range redistest.StartN(b, 5, redistest.Options{}) {
		addr := s.Addr
		p := &redis.Pool{MaxIdle: 64, IdleTimeout: time.Minute, Dial: func() (redis.Conn, error) { return redis.Dial("tcp", addr) }}
		rp = append(rp, rsredigo.NewPool(p))
	}
	m := redsync.New(rp...).NewMutex("bench", redsync.WithExpiry(10*time.Second), redsync.WithTries(1))
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := m.LockContext(ctx); err != nil {
			b.Fatal(err)
		}
		if _, err := m.UnlockContext(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
