package latproxy

import (
	"bufio"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// hangGuard bounds a read that must end (with data or an error): reaching
// it means the proxy hung where it should not.
const hangGuard = 5 * time.Second

// hangWindow is how long a read that must hang is watched before it is
// taken as hanging.
const hangWindow = 150 * time.Millisecond

// recorder is a loopback echo server that also records every byte it
// reads, and "<EOF>" where a connection ended in order, so that a test can
// tell what got through the proxy.
type recorder struct {
	addr string
	mu   sync.Mutex
	got  strings.Builder
}

func startRecorder(t *testing.T) *recorder {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{addr: ln.Addr().String()}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		if err := ln.Close(); err != nil {
			t.Error(err)
		}
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { _ = c.Close() }() // the server side of a test's connection: nothing to report
				buf := make([]byte, 4096)
				for {
					n, err := c.Read(buf)
					if n > 0 {
						rec.mu.Lock()
						rec.got.Write(buf[:n])
						rec.mu.Unlock()
						_, _ = c.Write(buf[:n]) // a failed write shows in the next Read
					}
					if err != nil {
						if errors.Is(err, io.EOF) {
							rec.mu.Lock()
							rec.got.WriteString("<EOF>")
							rec.mu.Unlock()
						}
						return
					}
				}
			}()
		}
	}()
	return rec
}

func (r *recorder) received() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.got.String()
}

func startProxy(t *testing.T, target string) *Proxy {
	t.Helper()
	p, err := Start(target, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() }) // a test may have closed it: the second Close's error is expected
	return p
}

type client struct {
	net.Conn
	r *bufio.Reader
}

func dial(t *testing.T, p *Proxy) *client {
	t.Helper()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() }) // a test may have closed it: the second Close's error is expected
	return &client{c, bufio.NewReader(c)}
}

// line writes s and reads one line back within d.
func (c *client) line(t *testing.T, s string, d time.Duration) (string, error) {
	t.Helper()
	if s != "" {
		if _, err := c.Write([]byte(s)); err != nil {
			return "", err
		}
	}
	if err := c.SetReadDeadline(time.Now().Add(d)); err != nil {
		return "", err
	}
	return c.r.ReadString('\n')
}

// echoes checks that s comes back through c.
func (c *client) echoes(t *testing.T, s string) {
	t.Helper()
	got, err := c.line(t, s, hangGuard)
	if err != nil || got != s {
		t.Fatalf("echo of %q: got %q, %v", s, got, err)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// requireEnded checks that err ends the connection (EOF or reset), as
// opposed to a hang that the read deadline cut short.
func requireEnded(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: read succeeded, want the connection ended", what)
	}
	if isTimeout(err) {
		t.Fatalf("%s: read hung for %v, want the connection ended at once", what, hangGuard)
	}
}

func requireHangs(t *testing.T, what string, got string, err error) {
	t.Helper()
	if !isTimeout(err) {
		t.Fatalf("%s: got %q, %v; want no reply within %v", what, got, err, hangWindow)
	}
}

func TestPartitionString(t *testing.T) {
	for m, want := range map[Partition]string{Healed: "healed", Drop: "drop", BlackHole: "black-hole", 7: "Partition(7)"} {
		if m.String() != want {
			t.Errorf("%d.String() = %q, want %q", m, m.String(), want)
		}
	}
}

// TestDropEndsAndRefuses: Drop ends open connections at once and resets
// new ones, forwarding nothing; Heal lets new connections through.
func TestDropEndsAndRefuses(t *testing.T) {
	rec := startRecorder(t)
	p := startProxy(t, rec.addr)
	c := dial(t, p)
	c.echoes(t, "before\n")

	p.SetPartition(Drop)
	if got := p.Partitioned(); got != Drop {
		t.Fatalf("Partitioned() = %v, want drop", got)
	}
	_, err := c.line(t, "", hangGuard)
	requireEnded(t, "open connection after Drop", err)

	// A new connection: the dial may complete (the kernel accepts before
	// the proxy does), but the first read fails at once.
	if nc, err := net.Dial("tcp", p.Addr()); err == nil {
		t.Cleanup(func() {
			if err := nc.Close(); err != nil {
				t.Error(err)
			}
		})
		nc := &client{nc, bufio.NewReader(nc)}
		_, err = nc.line(t, "refused\n", hangGuard)
		requireEnded(t, "new connection under Drop", err)
	}
	if got := rec.received(); got != "before\n" {
		t.Fatalf("the target received %q under Drop", got)
	}

	p.Heal()
	if got := p.Partitioned(); got != Healed {
		t.Fatalf("Partitioned() = %v, want healed", got)
	}
	dial(t, p).echoes(t, "after\n")
}

// blackHoled returns a recorder, a proxy to it, and a connection through
// the proxy that echoed "before\n" before the proxy was black-holed.
func blackHoled(t *testing.T) (*recorder, *Proxy, *client) {
	t.Helper()
	rec := startRecorder(t)
	p := startProxy(t, rec.addr)
	c := dial(t, p)
	c.echoes(t, "before\n")
	p.SetPartition(BlackHole)
	return rec, p, c
}

// TestBlackHoleHangsThenDelivers: a black hole accepts and reads but
// forwards nothing, on open and new connections alike, so replies hang;
// Heal delivers what was held, in order, and traffic flows again.
func TestBlackHoleHangsThenDelivers(t *testing.T) {
	rec, p, old := blackHoled(t)
	got, err := old.line(t, "held-1\n", hangWindow)
	requireHangs(t, "open connection", got, err)
	if _, err := old.Write([]byte("held-2\n")); err != nil {
		t.Fatal(err)
	}
	fresh := dial(t, p) // accepted: the dial completes
	got, err = fresh.line(t, "held-new\n", hangWindow)
	requireHangs(t, "new connection", got, err)
	if got := rec.received(); got != "before\n" {
		t.Fatalf("the target received %q through the black hole", got)
	}

	p.Heal()
	for _, want := range []string{"held-1\n", "held-2\n"} {
		got, err := old.line(t, "", hangGuard)
		if err != nil || got != want {
			t.Fatalf("after Heal, open connection: got %q, %v; want %q", got, err, want)
		}
	}
	got, err = fresh.line(t, "", hangGuard)
	if err != nil || got != "held-new\n" {
		t.Fatalf("after Heal, new connection: got %q, %v; want %q", got, err, "held-new\n")
	}
	old.echoes(t, "after\n")
}

// TestBlackHoleHoldsEndOfStream: a client that gives up and closes its
// connection inside a black hole: its close, and the data it sent before,
// reach the target only once the partition heals.
func TestBlackHoleHoldsEndOfStream(t *testing.T) {
	for _, tc := range []struct{ name, last string }{{"with data", "last\n"}, {"without data", ""}} {
		t.Run(tc.name, func(t *testing.T) {
			rec, p, c := blackHoled(t)
			if _, err := c.Write([]byte(tc.last)); err != nil {
				t.Fatal(err)
			}
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			// Watch for hangWindow on another connection, which sends
			// nothing: neither the data nor the end of stream gets through.
			got, err := dial(t, p).line(t, "", hangWindow)
			requireHangs(t, "an idle connection", got, err)
			if got := rec.received(); got != "before\n" {
				t.Fatalf("the target received %q through the black hole", got)
			}
			p.Heal()
			want := "before\n" + tc.last + "<EOF>"
			deadline := time.Now().Add(hangGuard)
			for rec.received() != want {
				if time.Now().After(deadline) {
					t.Fatalf("after Heal the target received %q, want %q", rec.received(), want)
				}
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
}

// TestBlackHoleThenDropDiscards: switching from a black hole to Drop ends
// the held connections and discards what they held.
func TestBlackHoleThenDropDiscards(t *testing.T) {
	rec, p, c := blackHoled(t)
	got, err := c.line(t, "lost\n", hangWindow)
	requireHangs(t, "black-holed connection", got, err)

	p.SetPartition(Drop)
	_, err = c.line(t, "", hangGuard)
	requireEnded(t, "black-holed connection after Drop", err)
	p.Heal()
	dial(t, p).echoes(t, "after\n")
	if got := rec.received(); strings.Contains(got, "lost") {
		t.Fatalf("the target received %q: Drop must discard what the black hole held", got)
	}
}

// TestCloseWhileBlackHoled: Close does not wait for a partition to heal.
func TestCloseWhileBlackHoled(t *testing.T) {
	rec := startRecorder(t)
	p, err := Start(rec.addr, 0)
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, p)
	c.echoes(t, "before\n")
	p.SetPartition(BlackHole)
	if _, err := c.Write([]byte("held\n")); err != nil {
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
	case <-time.After(hangGuard):
		t.Fatal("Close waited on the black hole")
	}
	_, err = c.line(t, "", hangGuard)
	requireEnded(t, "connection after Close", err)
	p.SetPartition(Healed) // after Close: a no-op, not a panic
}
