package harness

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/core"
	rl "github.com/redlock-go/redlock/drivers/redigo"
)

func BenchmarkOurs(b *testing.B) {
	var addrs []string
	for i := 0; i < 5; i++ {
		port := 20000 + (os.Getpid()%2000)*10 + 5 + i
		cmd := exec.Command("redis-server", "--port", fmt.Sprint(port), "--save", "", "--appendonly", "no")
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		defer func() { cmd.Process.Kill(); cmd.Wait() }()
		addrs = append(addrs, fmt.Sprintf("127.0.0.1:%d", port))
	}
	time.Sleep(300 * time.Millisecond)
	d, err := rl.Dial(addrs, rl.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	client, err := redlock.NewClient(d, redlock.Options{Config: core.Config{TTL: 10 * time.Second, FanOut: core.Multiplexed}})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		lock, err := client.TryLock(ctx, "bench")
		if err != nil {
			b.Fatal(err)
		}
		if err := lock.Unlock(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
