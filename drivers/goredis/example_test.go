package goredis_test

import (
	"context"
	"log"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/drivers/goredis"
)

// Lock a resource across three independent Redis masters. (The example is
// compiled but not run: it needs the three servers.)
func Example() {
	drv, err := goredis.Dial([]string{"127.0.0.1:6379", "127.0.0.1:6380", "127.0.0.1:6381"}, goredis.Options{
		Password: "secret", // optional: AUTH; add Username for an ACL user, TLS for TLS
	})
	if err != nil {
		log.Fatal(err) // a malformed or repeated address: errors.Is(err, redlock.ErrInvalidConfig)
	}
	defer drv.Close() // after every lock is unlocked

	client, err := redlock.NewClient(drv, redlock.Options{Config: redlock.Config{TTL: 10 * time.Second}})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	lock, err := client.TryLock(ctx, "invoice:42")
	if err != nil {
		log.Fatal(err) // redlock.ErrTaken, redlock.ErrQuorumUnreachable, ...
	}
	// Work while time.Now().Before(lock.Until()); lock.Extend(ctx) for more time.
	if err := lock.Unlock(ctx); err != nil {
		log.Print(err)
	}
}

// Lock over clients the application already has. (Compiled, not run.)
func ExampleNew() {
	var clients []*redis.Client
	for _, addr := range []string{"10.0.0.1:6379", "10.0.0.2:6379", "10.0.0.3:6379"} {
		clients = append(clients, redis.NewClient(&redis.Options{
			Addr:                  addr,
			ContextTimeoutEnabled: true, // the lock's deadlines bound each command
		}))
	}
	drv, err := goredis.New(clients, nil) // nodes named by their addresses
	if err != nil {
		log.Fatal(err)
	}
	defer drv.Close() // leaves the clients open
	// New's driver reads the system clock: leave Options.Clock nil.
	client, err := redlock.NewClient(drv, redlock.Options{Config: redlock.Config{TTL: 10 * time.Second}})
	if err != nil {
		log.Fatal(err)
	}
	_ = client
}
