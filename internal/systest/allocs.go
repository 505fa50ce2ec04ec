package systest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/internal/redistest"
)

// LockAllocs is what the Client allocates of a pair: the *Lock that
// TryLock returns. Over a driver that allocates nothing per round, it is
// the whole of AllocsPerPair.
const LockAllocs float64 = 1

// AllocsPerPair returns the mean allocations of one Client.TryLock plus
// one Lock.Unlock through the driver dial makes over n fresh redis-servers, in
// mode, after a warm-up. It needs redis-server processes: an in-process
// miniredis would count its own allocations. Under the race detector it
// skips the test: sync.Pool then drops objects at random, so counts mean
// nothing.
func AllocsPerPair(t *testing.T, dial Dialer, n int, mode core.FanOut) float64 {
	t.Helper()
	return allocsPerPair(t, dial, n, mode, false)
}

// AllocsPerFencedPair is AllocsPerPair with Options.Fencing: each TryLock
// is two rounds, the fenced acquire and the raise.
func AllocsPerFencedPair(t *testing.T, dial Dialer, n int, mode core.FanOut) float64 {
	t.Helper()
	return allocsPerPair(t, dial, n, mode, true)
}

func allocsPerPair(t *testing.T, dial Dialer, n int, mode core.FanOut, fencing bool) float64 {
	t.Helper()
	if raceEnabled {
		t.Skip("allocation counts: the race detector makes sync.Pool drop objects at random")
	}
	d, err := dial(addrsOf(redistest.StartN(t, n, redistest.Options{})))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := d.Close(); err != nil {
			t.Error(err)
		}
	}()
	client, err := redlock.NewClient(d, keepable(redlock.Options{TTL: 10 * time.Second,
		NodeTimeout: time.Second, FanOut: mode, Fencing: fencing}, d.Nodes()))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	pair := func() {
		lock, err := client.TryLock(ctx, "allocs")
		if err != nil {
			panic(fmt.Sprint("acquire: ", err))
		}
		if f, err := lock.Fence(); fencing && (err != nil || f == 0) {
			panic(fmt.Sprint("acquire: no fence: ", err))
		}
		if err := lock.Unlock(ctx); err != nil {
			panic(fmt.Sprint("release: ", err))
		}
	}
	for range 50 {
		pair() // connections, scripts cached, pools filled
	}
	return testing.AllocsPerRun(200, pair)
}
