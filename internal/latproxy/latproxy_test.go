package latproxy

import (
	"bufio"
	"net"
	"testing"
	"time"
)

// echo starts a loopback TCP echo server.
func echo(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ln.Close(); err != nil {
			t.Error(err)
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer func() { _ = c.Close() }() // the server side of a test's connection: nothing to report
				buf := make([]byte, 4096)
				for {
					n, err := c.Read(buf)
					if n > 0 {
						_, _ = c.Write(buf[:n]) // a failed write shows in the next Read
					}
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// dialEcho starts an echo server behind a proxy adding delay each way and
// dials it; both are closed when the test ends.
func dialEcho(t *testing.T, delay time.Duration) (net.Conn, *bufio.Reader) {
	t.Helper()
	p, err := Start(echo(t), delay)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Error(err)
		}
	})
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	})
	return c, bufio.NewReader(c)
}

func write(t *testing.T, c net.Conn, s string) {
	t.Helper()
	if _, err := c.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
}

func TestRoundTripIsDelayedBothWays(t *testing.T) {
	const delay = 5 * time.Millisecond
	c, r := dialEcho(t, delay)
	for i := 0; i < 5; i++ {
		t0 := time.Now()
		write(t, c, "ping\n")
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if line != "ping\n" {
			t.Fatalf("echo = %q", line)
		}
		// The delay is a lower bound: one hop each way.
		if rtt := time.Since(t0); rtt < 2*delay {
			t.Fatalf("round trip %v, want at least %v", rtt, 2*delay)
		}
	}
}

// TestPipelinedWritesOverlap sends two writes back to back through the
// proxy: both echoes come back, in order, and no sooner than one delayed
// round trip. (That each is delayed from its own send time rather than
// queued behind the other's delay is a speed property, measured by the
// proxy scenario of the benchmarks, not asserted here.)
func TestPipelinedWritesOverlap(t *testing.T) {
	const delay = 20 * time.Millisecond
	c, r := dialEcho(t, delay)
	t0 := time.Now()
	write(t, c, "a\n")
	write(t, c, "b\n")
	for _, want := range []string{"a\n", "b\n"} {
		got, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("got %q, want %q (order must be kept)", got, want)
		}
	}
	if rtt := time.Since(t0); rtt < 2*delay {
		t.Fatalf("both echoes after %v, below the %v floor", rtt, 2*delay)
	}
}

func TestCloseEndsConnections(t *testing.T) {
	p, err := Start(echo(t), time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	}()
	if _, err := c.Write([]byte("x\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(c).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var closeErr error
	go func() { closeErr = p.Close(); close(done) }()
	select {
	case <-done:
		if closeErr != nil {
			t.Fatal(closeErr)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return")
	}
	if err := c.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("connection still open after Close")
	}
}

func TestNegativeDelay(t *testing.T) {
	if _, err := Start("127.0.0.1:1", -time.Second); err == nil {
		t.Fatal("want an error")
	}
}
