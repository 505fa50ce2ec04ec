package redlock_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/redlock-go/redlock"
)

// A semaphore of 2 permits: two holders at once; a third waits until one
// of them lets go, and takes the permit it released.
func ExampleClient_LockPermit() {
	client, _ := redlock.NewClient(nodes(), redlock.Options{})
	ctx := context.Background()
	a, _ := client.LockPermit(ctx, "encoders", 2)
	b, _ := client.LockPermit(ctx, "encoders", 2)
	fmt.Println("two holders of distinct permits:", a.Key() != b.Key())

	_, err := client.TryLockPermit(ctx, "encoders", 2)
	fmt.Println("a third is refused:", errors.Is(err, redlock.ErrTaken))

	got := make(chan *redlock.Lock)
	go func() {
		lock, err := client.LockPermit(ctx, "encoders", 2) // waits for a release
		if err != nil {
			panic(err)
		}
		got <- lock
	}()
	if err := a.Unlock(ctx); err != nil {
		panic(err)
	}
	c := <-got
	fmt.Println("the waiter holds the permit released:", c.Key() == a.Key())
	for _, l := range []*redlock.Lock{b, c} {
		if err := l.Unlock(ctx); err != nil {
			panic(err)
		}
	}
	// Output:
	// two holders of distinct permits: true
	// a third is refused: true
	// the waiter holds the permit released: true
}
