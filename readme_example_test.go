package redlock_test

// The Examples whose bodies README.md quotes. readme_test.go checks that
// every Go block of the README appears, line for line, in one of them, so
// the README's code compiles and, where it has an Output, runs.

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/core/memnode"
	"github.com/redlock-go/redlock/drivers/goredis"
	"github.com/redlock-go/redlock/drivers/radix"
	"github.com/redlock-go/redlock/drivers/redigo"
	"github.com/redlock-go/redlock/drivers/rueidis"
	"github.com/redlock-go/redlock/drivers/valkeygo"
)

// work stands for the caller's work under the lock.
func work(ctx context.Context) {}

// The README's quickstart against three real Redis masters. It needs
// servers, so it is compiled, not run.
func Example_readmeQuickstart() {
	ctx := context.Background()
	drv, err := redigo.Dial([]string{"127.0.0.1:7001", "127.0.0.1:7002", "127.0.0.1:7003"}, redigo.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer func() {
		if err := drv.Close(); err != nil {
			log.Print(err)
		}
	}()
	client, err := redlock.NewClient(drv, redlock.Options{Lease: &redlock.Lease{Fraction: 1.0 / 3}})
	if err != nil {
		log.Fatal(err)
	}
	lock, err := client.Lock(ctx, "invoice:42") // waits until it holds the lock, or ctx ends
	if err != nil {
		log.Fatal(err) // errors.Is(err, redlock.ErrTaken), redlock.ErrQuorumUnreachable, ...
	}
	defer func() {
		if err := lock.Unlock(context.Background()); err != nil {
			log.Print(err) // a *redlock.LostError if the lock was lost during the work
		}
	}()
	work(lock.Context()) // cancelled the moment the lock is lost; context.Cause says why
}

// The README's TryLock, Lock and Unlock on the in-memory driver, which
// makes the output deterministic.
func Example_readmeTryLock() {
	ctx := context.Background()
	client, err := redlock.NewClient(memnode.New(3, core.SystemClock{}), redlock.Options{})
	if err != nil {
		panic(err)
	}
	first, err := client.TryLock(ctx, "invoice:42") // one attempt
	if err != nil {
		panic(err)
	}
	_, err = client.TryLock(ctx, "invoice:42")
	fmt.Println(errors.Is(err, redlock.ErrTaken))
	fmt.Println(first.Unlock(ctx))
	second, err := client.Lock(ctx, "invoice:42") // tries again until it holds the lock, or ctx ends
	fmt.Println(err)
	fmt.Println(second.Unlock(ctx))
	// Output:
	// true
	// <nil>
	// <nil>
	// <nil>
}

// The README's driver table: the Dial line of each driver. Compiled, not
// run.
func Example_readmeDrivers() {
	addrs := []string{"127.0.0.1:7001", "127.0.0.1:7002", "127.0.0.1:7003"}
	var drivers []redlock.Driver
	if d, err := redigo.Dial(addrs, redigo.Options{}); err == nil {
		drivers = append(drivers, d)
	}
	if d, err := radix.Dial(addrs, radix.Options{}); err == nil {
		drivers = append(drivers, d)
	}
	if d, err := rueidis.Dial(addrs, rueidis.Options{}); err == nil {
		drivers = append(drivers, d)
	}
	if d, err := goredis.Dial(addrs, goredis.Options{}); err == nil {
		drivers = append(drivers, d)
	}
	if d, err := valkeygo.Dial(addrs, valkeygo.Options{}); err == nil {
		drivers = append(drivers, d)
	}
	for _, d := range drivers {
		_, _ = redlock.NewClient(d, redlock.Options{})
	}
}
