package radix_test

import (
	"context"
	"fmt"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers/radix"
)

// Three independent Redis masters on this machine. It needs the servers,
// so it is compiled but not run.
func Example() {
	drv, err := radix.Dial([]string{"127.0.0.1:7001", "127.0.0.1:7002", "127.0.0.1:7003"},
		radix.Options{Password: "secret", DialTimeout: time.Second})
	if err != nil {
		panic(err) // only invalid configuration fails Dial
	}
	defer drv.Close()

	locker, err := redlock.New(drv, core.Config{TTL: 10 * time.Second})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	lock, err := locker.Acquire(ctx, "invoice:42")
	if err != nil {
		fmt.Println("not locked:", err) // ErrTaken, ErrQuorumUnreachable, ...
		return
	}
	fmt.Println("locked for", lock.Remaining())
	// ... work that must finish before lock.ValidUntil() ...
	if err := locker.Release(ctx, lock); err != nil {
		fmt.Println("release:", err)
	}
}
