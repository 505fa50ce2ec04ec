package fencedstore_test

import (
	"context"
	"fmt"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/core/memnode"
	"github.com/redlock-go/redlock/internal/fencedstore"
)

// mustFence is l's fence; the Client has Options.Fencing on.
func mustFence(l *redlock.Lock) uint64 {
	f, err := l.Fence()
	if err != nil {
		panic(err)
	}
	return f
}

// Example is Kleppmann's scenario: client 1 takes the lock, pauses past
// its validity, client 2 takes the lock and writes, then client 1 wakes
// and writes too. With fences the store refuses client 1's stale write;
// a store without them lets it land over client 2's.
func Example() {
	clock := memnode.NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	client, err := redlock.NewClient(memnode.New(5, clock), redlock.Options{
		TTL: 10 * time.Second, Fencing: true,
	}) // the Client reads the cluster's clock
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	fenced, unfenced := fencedstore.New(), fencedstore.Unfenced()

	lock1, err := client.TryLock(ctx, "report")
	if err != nil {
		panic(err)
	}
	clock.Advance(11 * time.Second) // client 1 is paused; its keys expire
	lock2, err := client.TryLock(ctx, "report")
	if err != nil {
		panic(err)
	}
	fence1, fence2 := mustFence(lock1), mustFence(lock2)
	fmt.Println("fences:", fence1, fence2)
	for _, store := range []*fencedstore.Store{fenced, unfenced} {
		fmt.Println("client 2 writes:", store.Write(fence2, "client 2's report"))
		fmt.Println("client 1 wakes and writes:", store.Write(fence1, "client 1's stale report"))
		latest, _ := store.Latest()
		fmt.Println("the store holds:", latest)
	}
	// Output:
	// fences: 1 2
	// client 2 writes: <nil>
	// client 1 wakes and writes: fencedstore: stale fence: 1 is lower than 2, already accepted
	// the store holds: client 2's report
	// client 2 writes: <nil>
	// client 1 wakes and writes: <nil>
	// the store holds: client 1's stale report
}
