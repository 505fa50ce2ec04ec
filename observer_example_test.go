package redlock_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/core/memnode"
)

// An Observer counts acquisitions by outcome and hears how long each lock
// was held; a Logger takes the Client's warnings (nil: none are logged).
func ExampleObserver() {
	var mu sync.Mutex
	outcomes := map[redlock.Outcome]int{}
	client, err := redlock.NewClient(memnode.New(3, core.SystemClock{}), redlock.Options{
		Logger: slog.New(slog.NewTextHandler(os.Stderr, nil)),
		Observer: redlock.Observer{
			Acquire: func(e redlock.AcquireEvent) {
				mu.Lock()
				defer mu.Unlock()
				outcomes[e.Outcome]++
			},
			Release: func(e redlock.ReleaseEvent) {
				fmt.Printf("released %s: %s, after %d votes\n", e.Key, e.Outcome, len(e.Votes))
			},
		},
	})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	lock, err := client.TryLock(ctx, "report")
	if err != nil {
		panic(err)
	}
	if _, err := client.TryLock(ctx, "report"); err != nil {
		fmt.Println("second TryLock:", redlock.OutcomeOf(err))
	}
	if err := lock.Unlock(ctx); err != nil {
		panic(err)
	}
	mu.Lock()
	fmt.Println("acquired:", outcomes[redlock.OutcomeOK], "taken:", outcomes[redlock.OutcomeTaken])
	mu.Unlock()
	// Output:
	// second TryLock: taken
	// released report: ok, after 3 votes
	// acquired: 1 taken: 1
}
