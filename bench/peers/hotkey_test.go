package peers

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redlock-go/redlock/bench/matrix"
	"github.com/redlock-go/redlock/bench/measure"
	"github.com/redlock-go/redlock/internal/redistest"
)

// startServers starts n redis-server processes on free loopback ports
// (internal/redistest), stopped when the test ends, and returns their
// addresses. Without redis-server on PATH the test is skipped, or fails
// with REDLOCK_REQUIRE_REDIS=1.
func startServers(t *testing.T, n int) []string {
	t.Helper()
	var addrs []string
	for _, s := range redistest.StartN(t, n, redistest.Options{}) {
		addrs = append(addrs, s.Addr)
	}
	return addrs
}

var hotPeers = []matrix.Cell{
	{Library: matrix.Redsync, Driver: "redigo", Scenario: matrix.Handoff, Nodes: 5, FanOut: matrix.FanConcurrent},
	{Library: matrix.Redsync, Driver: "rueidis", Scenario: matrix.Handoff, Nodes: 5, FanOut: matrix.FanConcurrent},
	{Library: matrix.Rueidislock, Driver: "rueidis", Scenario: matrix.Handoff, Nodes: 5, FanOut: matrix.FanKeys},
}

// TestHotKeyPeersExclusive: every peer's hot-key subject, 4 contenders on
// one key, takes turns without overlap, each section after a handoff.
func TestHotKeyPeersExclusive(t *testing.T) {
	addrs := startServers(t, 5)
	for _, cell := range hotPeers {
		t.Run(cell.Subject(), func(t *testing.T) {
			s := openHot(t, cell, addrs)
			const sections = 6
			r, h := measure.RunHandoff(context.Background(), s, measure.HandoffSpec{Contenders: 4, Key: "test:peers:" + cell.Subject(), Sections: sections})
			if !h.Exclusive() || r.Errors != 0 || r.Ops != sections || h.Handoffs != sections-1 {
				t.Errorf("%+v %+v", r, h)
			}
		})
	}
}

// TestHotKeyWaitEndsWithContext: a contender waiting for a held lock
// returns when its context ends, holding nothing, and the lock once
// released goes to the next contender at once: the abandoned wait left
// no key behind. A lock held stays held after its Lock's context ends.
func TestHotKeyWaitEndsWithContext(t *testing.T) {
	addrs := startServers(t, 5)
	for _, cell := range hotPeers {
		t.Run(cell.Subject(), func(t *testing.T) {
			s := openHot(t, cell, addrs)
			key := fmt.Sprintf("test:peers:abandon:%s", cell.Subject())
			holder, waiter, next := s.Contender(key), s.Contender(key), s.Contender(key)
			hctx, hcancel := context.WithCancel(context.Background())
			if err := holder.Lock(hctx); err != nil {
				t.Fatal(err)
			}
			hcancel() // the lock outlives its Lock's context
			wctx, wcancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- waiter.Lock(wctx) }()
			wcancel()
			if err := <-done; err == nil {
				t.Fatal("a wait on a held lock returned no error when its context ended")
			}
			// The holder still holds: a contender waiting a moment does not
			// get in.
			tctx, tcancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
			err := next.Lock(tctx)
			tcancel()
			if err == nil {
				t.Fatal("the lock was free while held")
			}
			if err := holder.Unlock(context.Background()); err != nil {
				t.Fatal(err)
			}
			if err := next.Lock(context.Background()); err != nil {
				t.Fatal(err)
			}
			if err := next.Unlock(context.Background()); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// openHot opens cell's hot-key subject over addrs, closed with the test.
func openHot(t *testing.T, cell matrix.Cell, addrs []string) HotSubject {
	t.Helper()
	s, err := OpenHotKey(cell, addrs, Options{TTL: 10 * time.Second, PoolSize: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}
