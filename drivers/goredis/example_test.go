package goredis_test

import (
	"context"
	"log"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/drivers"
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
	defer func() { // after every lock is unlocked
		if err := drv.Close(); err != nil {
			log.Print(err)
		}
	}()

	client, err := redlock.NewClient(drv, redlock.Options{TTL: 10 * time.Second})
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
	defer func() { // leaves the clients open
		if err := drv.Close(); err != nil {
			log.Print(err)
		}
	}()
	// New's driver reads the system clock: leave Options.Clock nil.
	client, err := redlock.NewClient(drv, redlock.Options{TTL: 10 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	_ = client
}

// A quorum of three standalone masters, as members: Dial's nodes.
// (Compiled, not run.)
func ExampleDialMembers_standalone() {
	drv, err := goredis.DialMembers(drivers.Members("10.0.0.1:6379", "10.0.0.2:6379", "10.0.0.3:6379"), goredis.Options{})
	if err != nil {
		log.Fatal(err) // errors.Is(err, redlock.ErrInvalidConfig)
	}
	defer func() {
		if err := drv.Close(); err != nil {
			log.Print(err)
		}
	}()
	client, err := redlock.NewClient(drv, redlock.Options{TTL: 10 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	_ = client
}

// Sentinel groups as members: each group votes once, through whichever
// server its Sentinels name as the master. WithWait makes each vote wait
// until both replicas hold the key, so that a failover cannot lose it.
// (Compiled, not run.)
func ExampleDialMembers_sentinel() {
	members := []drivers.Member{
		drivers.NewSentinel("locks-a", "10.0.1.1:26379", "10.0.1.2:26379", "10.0.1.3:26379").WithWait(2, 100*time.Millisecond),
		drivers.NewSentinel("locks-b", "10.0.2.1:26379", "10.0.2.2:26379", "10.0.2.3:26379").WithWait(2, 100*time.Millisecond),
		drivers.NewSentinel("locks-c", "10.0.3.1:26379", "10.0.3.2:26379", "10.0.3.3:26379").WithWait(2, 100*time.Millisecond),
	}
	drv, err := goredis.DialMembers(members, goredis.Options{Password: "secret"})
	if err != nil {
		log.Fatal(err)
	}
	defer func() {
		if err := drv.Close(); err != nil {
			log.Print(err)
		}
	}()
	// Keep WaitTimeout well below NodeTimeout: a WAIT holds its member's
	// connection until it returns.
	client, err := redlock.NewClient(drv, redlock.Options{TTL: 10 * time.Second, NodeTimeout: time.Second})
	if err != nil {
		log.Fatal(err) // a master with fewer replicas fails its member's votes: errors.Is(err, drivers.ErrNotReplicated)
	}
	lock, err := client.TryLock(context.Background(), "invoice:42")
	if err != nil {
		log.Fatal(err) // a vote short of replicas: errors.Is(err, drivers.ErrNotReplicated)
	}
	_ = lock.Unlock(context.Background())
}

// A Redis Cluster as one member among others: it votes once, through the
// master of the key's hash slot. A key's fence counter is named in the
// key's slot ("redlock:fence:{invoice:42}"). (Compiled, not run.)
func ExampleDialMembers_cluster() {
	members := []drivers.Member{
		drivers.NewCluster("10.0.4.1:6379", "10.0.4.2:6379", "10.0.4.3:6379").WithWait(1, 100*time.Millisecond),
		drivers.NewStandalone("10.0.5.1:6379"),
		drivers.NewSentinel("locks", "10.0.6.1:26379", "10.0.6.2:26379"),
	}
	drv, err := goredis.DialMembers(members, goredis.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer func() {
		if err := drv.Close(); err != nil {
			log.Print(err)
		}
	}()
	client, err := redlock.NewClient(drv, redlock.Options{TTL: 10 * time.Second, Fencing: true})
	if err != nil {
		log.Fatal(err)
	}
	lock, err := client.TryLock(context.Background(), "invoice:42")
	if err != nil {
		log.Fatal(err) // a key with '}' and no hash tag fails the Cluster member's vote: drivers.ErrMisconfigured
	}
	fence, _ := lock.Fence()
	_ = fence // pass it with every write the lock guards
	_ = lock.Unlock(context.Background())
}
