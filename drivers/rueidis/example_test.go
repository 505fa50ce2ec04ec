package rueidis_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/drivers"
	rueidis "github.com/redlock-go/redlock/drivers/rueidis"
)

// Three independent Redis masters on this machine, with fencing. It needs
// the servers, so it is compiled but not run.
func Example() {
	drv, err := rueidis.Dial([]string{"127.0.0.1:7001", "127.0.0.1:7002", "127.0.0.1:7003"},
		rueidis.Options{Password: "secret", DialTimeout: time.Second})
	if err != nil {
		panic(err) // only invalid configuration fails Dial
	}
	defer func() {
		if err := drv.Close(); err != nil {
			fmt.Println("close:", err)
		}
	}()

	client, err := redlock.NewClient(drv, redlock.Options{TTL: 10 * time.Second, Fencing: true})
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

// A quorum of three standalone masters, as members: Dial's nodes.
// (Compiled, not run.)
func ExampleDialMembers_standalone() {
	drv, err := rueidis.DialMembers(drivers.Members("10.0.0.1:6379", "10.0.0.2:6379", "10.0.0.3:6379"), rueidis.Options{})
	if err != nil {
		panic(err) // errors.Is(err, redlock.ErrInvalidConfig)
	}
	defer func() {
		if err := drv.Close(); err != nil {
			log.Print(err)
		}
	}()
	client, err := redlock.NewClient(drv, redlock.Options{TTL: 10 * time.Second})
	if err != nil {
		panic(err)
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
	drv, err := rueidis.DialMembers(members, rueidis.Options{Password: "secret"})
	if err != nil {
		panic(err)
	}
	defer func() {
		if err := drv.Close(); err != nil {
			log.Print(err)
		}
	}()
	// Keep WaitTimeout well below NodeTimeout: a WAIT holds its member's
	// second connection until it returns.
	client, err := redlock.NewClient(drv, redlock.Options{TTL: 10 * time.Second, NodeTimeout: time.Second})
	if err != nil {
		panic(err) // a master with fewer replicas fails its member's votes: errors.Is(err, drivers.ErrNotReplicated)
	}
	lock, err := client.TryLock(context.Background(), "invoice:42")
	if err != nil {
		panic(err) // a vote short of replicas: errors.Is(err, drivers.ErrNotReplicated)
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
	drv, err := rueidis.DialMembers(members, rueidis.Options{})
	if err != nil {
		panic(err)
	}
	defer func() {
		if err := drv.Close(); err != nil {
			log.Print(err)
		}
	}()
	client, err := redlock.NewClient(drv, redlock.Options{TTL: 10 * time.Second, Fencing: true})
	if err != nil {
		panic(err)
	}
	lock, err := client.TryLock(context.Background(), "invoice:42")
	if err != nil {
		panic(err) // a key with '}' and no hash tag fails the Cluster member's vote: drivers.ErrMisconfigured
	}
	fence, _ := lock.Fence()
	_ = fence // pass it with every write the lock guards
	_ = lock.Unlock(context.Background())
}
