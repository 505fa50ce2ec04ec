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
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 4096)
				for {
					n, err := c.Read(buf)
					if n > 0 {
						c.Write(buf[:n])
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

func TestRoundTripIsDelayedBothWays(t *testing.T) {
	const delay = 5 * time.Millisecond
	p, err := Start(echo(t), delay)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	for i := 0; i < 5; i++ {
		t0 := time.Now()
		if _, err := c.Write([]byte("ping\n")); err != nil {
			t.Fatal(err)
		}
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

// TestPipelinedWritesOverlap checks that two writes sent back to back are
// each delayed from their own send time, not queued behind each other's
// delay: both echoes arrive well before 2 round trips.
func TestPipelinedWritesOverlap(t *testing.T) {
	const delay = 20 * time.Millisecond
	p, err := Start(echo(t), delay)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	t0 := time.Now()
	c.Write([]byte("a\n"))
	c.Write([]byte("b\n"))
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
	defer c.Close()
	c.Write([]byte("x\n"))
	bufio.NewReader(c).ReadString('\n')
	done := make(chan struct{})
	go func() { p.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return")
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("connection still open after Close")
	}
}

func TestNegativeDelay(t *testing.T) {
	if _, err := Start("127.0.0.1:1", -time.Second); err == nil {
		t.Fatal("want an error")
	}
}
