package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/core/memnode"
)

// nodes stands for a driver: redigo.Dial(addrs, redigo.Options{}) and the
// others return one for real Redis masters.
func nodes() redlock.Driver { return memnode.New(3, core.SystemClock{}) }

// A lock held under a lease: the work watches the lock's Context.
func Example() {
	client, err := redlock.NewClient(nodes(), redlock.Options{Lease: &redlock.Lease{Fraction: 1.0 / 3}})
	if err != nil {
		panic(err)
	}
	lock, err := client.Lock(context.Background(), "report")
	if err != nil {
		panic(err)
	}
	defer func() {
		if err := lock.Unlock(context.Background()); err != nil {
			log.Print(err) // a *redlock.LostError if the lock was lost during the work
		}
	}()

	select {
	case <-lock.Context().Done(): // the lock was lost: stop
		fmt.Println("lost:", context.Cause(lock.Context()))
	default:
		fmt.Println("working under the lock on", lock.Key())
	}
	// Output: working under the lock on report
}

func ExampleClient_TryLock() {
	client, _ := redlock.NewClient(nodes(), redlock.Options{})
	first, _ := client.TryLock(context.Background(), "job")
	_, err := client.TryLock(context.Background(), "job")
	fmt.Println(errors.Is(err, redlock.ErrTaken))
	if err := first.Unlock(context.Background()); err != nil {
		panic(err)
	}
	again, err := client.TryLock(context.Background(), "job")
	fmt.Println(err)
	if err := again.Unlock(context.Background()); err != nil {
		panic(err)
	}
	// Output:
	// true
	// <nil>
}

func ExampleClient_Lock() {
	client, _ := redlock.NewClient(nodes(), redlock.Options{})
	holder, _ := client.TryLock(context.Background(), "job")

	// Lock retries until the holder lets go, or its ctx ends.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got := make(chan error)
	go func() {
		lock, err := client.Lock(ctx, "job")
		if err == nil {
			err = lock.Unlock(context.Background())
		}
		got <- err
	}()
	if err := holder.Unlock(context.Background()); err != nil {
		panic(err)
	}
	fmt.Println(<-got)
	// Output: <nil>
}

func ExampleLock_Unlock() {
	client, _ := redlock.NewClient(nodes(), redlock.Options{})
	lock, _ := client.TryLock(context.Background(), "job")
	fmt.Println(lock.Unlock(context.Background()))
	fmt.Println(context.Cause(lock.Context()))
	err := lock.Unlock(context.Background())
	fmt.Println(errors.Is(err, redlock.ErrUnlocked), errors.Is(err, redlock.ErrNotHeld))
	// Output:
	// <nil>
	// redlock: lock already unlocked
	// true true
}

func ExampleLock_Extend() {
	client, _ := redlock.NewClient(nodes(), redlock.Options{MaxExtensions: 1})
	lock, _ := client.TryLock(context.Background(), "job")
	before := lock.Until()
	fmt.Println(lock.Extend(context.Background()), !lock.Until().Before(before))
	err := lock.Extend(context.Background())
	fmt.Println(errors.Is(err, redlock.ErrExtensionLimit))
	if err := lock.Unlock(context.Background()); err != nil {
		panic(err)
	}
	// Output:
	// <nil> true
	// true
}

func ExampleLock_Until() {
	client, _ := redlock.NewClient(nodes(), redlock.Options{TTL: 10 * time.Second})
	lock, _ := client.TryLock(context.Background(), "job")
	// The validity is the TTL less the round's time and the drift
	// allowance (1% + 2 ms): just under 9.898 s.
	left := time.Until(lock.Until())
	fmt.Println(left > 9*time.Second && left <= 9898*time.Millisecond)
	if err := lock.Unlock(context.Background()); err != nil {
		panic(err)
	}
	// Output: true
}

func ExampleLock_Token() {
	client, _ := redlock.NewClient(nodes(), redlock.Options{})
	lock, _ := client.TryLock(context.Background(), "job")
	fmt.Println(len(lock.Token().String()), lock.Token() != redlock.Token{})
	if err := lock.Unlock(context.Background()); err != nil {
		panic(err)
	}
	// Output: 32 true
}

func ExampleLock_Fence() {
	client, _ := redlock.NewClient(nodes(), redlock.Options{Fencing: true})
	for i := 0; i < 3; i++ {
		lock, _ := client.TryLock(context.Background(), "ledger")
		fence, _ := lock.Fence()
		fmt.Println(fence) // pass it with every write to the ledger
		if err := lock.Unlock(context.Background()); err != nil {
			panic(err)
		}
	}
	plain, _ := redlock.NewClient(nodes(), redlock.Options{})
	lock, _ := plain.TryLock(context.Background(), "ledger")
	_, err := lock.Fence()
	fmt.Println(err)
	if err := lock.Unlock(context.Background()); err != nil {
		panic(err)
	}
	// Output:
	// 1
	// 2
	// 3
	// redlock: fence requested but Options.Fencing is off
}

func ExampleLock_Context() {
	cluster := memnode.New(3, core.SystemClock{})
	client, _ := redlock.NewClient(cluster, redlock.Options{
		TTL:   300 * time.Millisecond,
		Lease: &redlock.Lease{Fraction: 1.0 / 3},
	})
	lock, _ := client.TryLock(context.Background(), "job")
	for i := 0; i < 3; i++ {
		cluster.Restart(i) // every node forgets the key: the next extension finds it gone
	}
	<-lock.Context().Done()
	cause := context.Cause(lock.Context())
	fmt.Println(errors.Is(cause, redlock.ErrLost), errors.Is(cause, redlock.ErrNotHeld))
	err := lock.Unlock(context.Background()) // releases what is left; says why the lock was lost
	fmt.Println(errors.Is(err, redlock.ErrLost))
	// Output:
	// true true
	// true
}
