package peers

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/redlock-go/redlock/bench/matrix"
	"github.com/redlock-go/redlock/bench/measure"
)

// startServers starts n redis-server processes on free loopback ports,
// stopped when the test ends. Without redis-server on PATH the test is
// skipped, or fails with REDLOCK_REQUIRE_REDIS=1. (This module does not
// use bench/servers, which would bring miniredis into its go.mod.)
func startServers(t *testing.T, n int) []string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("REDLOCK_REQUIRE_REDIS") == "1" {
			t.Fatal("redis-server not found on PATH, and REDLOCK_REQUIRE_REDIS=1")
		}
		t.Skip("redis-server not found on PATH")
	}
	var addrs []string
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		_, port, _ := net.SplitHostPort(addr)
		cmd := exec.Command(bin, "--bind", "127.0.0.1", "--port", port, "--save", "", "--appendonly", "no", "--dir", t.TempDir())
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		// Wait until it answers: dial until the port accepts.
		for try := 0; ; try++ {
			c, err := net.Dial("tcp", addr)
			if err == nil {
				c.Close()
				break
			}
			if try == 500 {
				t.Fatalf("redis-server on %s: %v", addr, err)
			}
			time.Sleep(10 * time.Millisecond)
		}
		addrs = append(addrs, addr)
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
	t.Cleanup(func() { s.Close() })
	return s
}
