package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redlock-go/redlock"
)

// Readers share a key; a writer waits for them, and keeps new readers out
// while it waits.
func ExampleClient_RLock() {
	ctx := context.Background()
	client, _ := redlock.NewClient(nodes(), redlock.Options{})
	first, _ := client.RLock(ctx, "catalog")
	second, err := client.RLock(ctx, "catalog") // beside the first
	fmt.Println(err)

	_, err = client.TryWLock(ctx, "catalog") // refused while readers hold it
	fmt.Println(errors.Is(err, redlock.ErrTaken))

	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	writer := make(chan error)
	go func() {
		// Refused, it marks the key: no new reader is admitted while it
		// waits. The last reader's release wakes it.
		w, err := client.WLock(wctx, "catalog")
		if err == nil {
			err = w.Unlock(ctx)
		}
		writer <- err
	}()
	if err := first.Unlock(ctx); err != nil {
		panic(err)
	}
	if err := second.Unlock(ctx); err != nil {
		panic(err)
	}
	fmt.Println(<-writer)
	// Output:
	// <nil>
	// true
	// <nil>
}

// A reader's fence is a reading of the writers' counters, never raised:
// here, with no writer's attempt failed, the last writer's.
func ExampleClient_WLock() {
	ctx := context.Background()
	client, _ := redlock.NewClient(nodes(), redlock.Options{Fencing: true})
	for range 2 {
		w, _ := client.WLock(ctx, "prices")
		wf, _ := w.Fence()
		if err := w.Unlock(ctx); err != nil {
			panic(err)
		}
		r, _ := client.RLock(ctx, "prices")
		rf, _ := r.Fence()
		if err := r.Unlock(ctx); err != nil {
			panic(err)
		}
		fmt.Println(wf, rf)
	}
	// Output:
	// 1 1
	// 2 2
}

// LockAll takes every key or none: a lock of any of them, or of a key
// set that meets them, is refused while it holds them.
func ExampleClient_LockAll() {
	ctx := context.Background()
	client, _ := redlock.NewClient(nodes(), redlock.Options{})
	// On a Redis Cluster member the keys must share a hash slot: one tag.
	transfer, err := client.LockAll(ctx, "{acct}:alice", "{acct}:bob")
	if err != nil {
		panic(err)
	}
	fmt.Println(transfer.Key())
	_, err = client.TryLock(ctx, "{acct}:bob")
	fmt.Println(errors.Is(err, redlock.ErrTaken))
	_, err = client.TryLockAll(ctx, "{acct}:bob", "{acct}:carol")
	fmt.Println(errors.Is(err, redlock.ErrTaken))
	carol, err := client.TryLock(ctx, "{acct}:carol") // left free by the refused LockAll
	fmt.Println(err)
	if err := carol.Unlock(ctx); err != nil {
		panic(err)
	}
	fmt.Println(transfer.Unlock(ctx)) // releases every key

	_, err = client.LockAll(ctx, "{acct}:alice", "{acct}:alice")
	fmt.Println(errors.Is(err, redlock.ErrInvalidConfig))
	// Output:
	// {acct}:alice
	// true
	// true
	// <nil>
	// <nil>
	// true
}
