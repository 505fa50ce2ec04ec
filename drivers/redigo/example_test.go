package redigo_test

import (
	"context"
	"log"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers/redigo"
)

// Lock a resource across three independent Redis masters. (The example is
// compiled but not run: it needs the three servers.)
func Example() {
	drv, err := redigo.Dial([]string{"127.0.0.1:6379", "127.0.0.1:6380", "127.0.0.1:6381"}, redigo.Options{
		Password: "secret", // optional: AUTH; add Username for an ACL user, TLS for TLS
	})
	if err != nil {
		log.Fatal(err) // a malformed or repeated address: errors.Is(err, core.ErrInvalidConfig)
	}
	defer drv.Close()

	locker, err := redlock.New(drv, core.Config{TTL: 10 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	lock, err := locker.Acquire(ctx, "invoice:42")
	if err != nil {
		log.Fatal(err) // core.ErrTaken, core.ErrQuorumUnreachable, ...
	}
	// Work while lock.Remaining() > 0; locker.Extend(ctx, lock) for more time.
	if err := locker.Release(ctx, lock); err != nil {
		log.Print(err)
	}
}
