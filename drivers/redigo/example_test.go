package redigo_test

import (
	"context"
	"log"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/drivers/redigo"
)

// Lock a resource across three independent Redis masters, and keep it
// while the work lasts. (The example is compiled but not run: it needs
// the three servers.)
func Example() {
	drv, err := redigo.Dial([]string{"127.0.0.1:6379", "127.0.0.1:6380", "127.0.0.1:6381"}, redigo.Options{
		Password: "secret", // optional: AUTH; add Username for an ACL user, TLS for TLS
	})
	if err != nil {
		log.Fatal(err) // a malformed or repeated address: errors.Is(err, redlock.ErrInvalidConfig)
	}
	defer func() { // after every lock is unlocked
		if err := drv.Close(); err != nil {
			log.Print(err)
		}
	}()

	client, err := redlock.NewClient(drv, redlock.Options{
		TTL:   10 * time.Second,
		Lease: &redlock.Lease{Fraction: 1.0 / 3}, // extended in the background until Unlock
	})
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	lock, err := client.Lock(ctx, "invoice:42") // waits for the holder's release
	if err != nil {
		log.Fatal(err) // redlock.ErrTaken at the deadline, redlock.ErrQuorumUnreachable, ...
	}
	defer func() {
		if err := lock.Unlock(context.Background()); err != nil {
			log.Print(err) // the lock was lost, or no quorum answered: the keys expire with the TTL
		}
	}()
	if err := issue(lock.Context()); err != nil { // cancelled the moment the lock is lost
		log.Print(err)
	}
}

// issue is the work the lock protects.
func issue(ctx context.Context) error { return ctx.Err() }
