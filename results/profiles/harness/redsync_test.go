package harness

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"
	rsredis "github.com/go-redsync/redsync/v4/redis"
	rsredigo "github.com/go-redsync/redsync/v4/redis/redigo"
	"github.com/gomodule/redigo/redis"
)

func BenchmarkRedsync(b *testing.B) {
	var rp []rsredis.Pool
	for i := 0; i < 5; i++ {
		port := 20000 + (os.Getpid()%2000)*10 + 0 + i
		cmd := exec.Command("redis-server", "--port", fmt.Sprint(port), "--save", "", "--appendonly", "no")
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		defer func() { cmd.Process.Kill(); cmd.Wait() }()
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		p := &redis.Pool{MaxIdle: 64, IdleTimeout: time.Minute, Dial: func() (redis.Conn, error) { return redis.Dial("tcp", addr) }}
		rp = append(rp, rsredigo.NewPool(p))
	}
	time.Sleep(300 * time.Millisecond)
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
	_ = os.Stderr
}
