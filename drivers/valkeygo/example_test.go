package valkeygo_test

import (
	"context"
	"fmt"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/drivers/valkeygo"
)

// Three independent Valkey (or Redis) masters on this machine, with
// fencing. It needs the servers, so it is compiled but not run.
func Example() {
	drv, err := valkeygo.Dial([]string{"127.0.0.1:7001", "127.0.0.1:7002", "127.0.0.1:7003"},
		valkeygo.Options{Password: "secret", DialTimeout: time.Second})
	if err != nil {
		panic(err) // only invalid configuration fails Dial
	}
	defer func() {
		if err := drv.Close(); err != nil {
			fmt.Println("close:", err)
		}
	}()

	client, err := redlock.NewClient(drv, redlock.Options{Config: redlock.Config{TTL: 10 * time.Second, Fencing: true}})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	lock, err := client.TryLock(ctx, "invoice:42")
	if err != nil {
		fmt.Println("not locked:", err) // ErrTaken, ErrQuorumUnreachable, ...
		return
	}
	defer func() {
		if err := lock.Unlock(ctx); err != nil {
			fmt.Println("unlock:", err) // the lock was lost, or no quorum answered: the keys expire with the TTL
		}
	}()
	fence, _ := lock.Fence()
	fmt.Println("locked until", lock.Until(), "with fence", fence)
	// ... writes that carry the fence, for storage that refuses a lower one ...
}
