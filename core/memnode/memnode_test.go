package memnode

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/redlock-go/redlock/core"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func do(c *Cluster, i int, cmd core.Command) core.Reply {
	b := c.Begin(context.Background())
	defer b.Close()
	b.Send(i, cmd, c.clock.Now().Add(time.Second))
	r, _ := b.Receive(nil)
	return r
}

func TestRedisSemantics(t *testing.T) {
	clock := NewManualClock(epoch)
	c := New(1, clock)
	a, b := core.TokenFromUint64s(1, 1), core.TokenFromUint64s(2, 2)
	acq := func(tok core.Token, ttl time.Duration) core.Status {
		return do(c, 0, core.Command{Op: core.OpAcquire, Key: "k", Token: tok, TTL: ttl}).Status
	}
	rel := func(tok core.Token) core.Status {
		return do(c, 0, core.Command{Op: core.OpRelease, Key: "k", Token: tok}).Status
	}
	ext := func(tok core.Token, ttl time.Duration) core.Status {
		return do(c, 0, core.Command{Op: core.OpExtend, Key: "k", Token: tok, TTL: ttl}).Status
	}
	steps := []struct {
		name string
		got  func() core.Status
		want core.Status
	}{
		{"release of a missing key", func() core.Status { return rel(a) }, core.StatusMissing},
		{"extend of a missing key", func() core.Status { return ext(a, time.Second) }, core.StatusMissing},
		{"acquire", func() core.Status { return acq(a, 100*time.Millisecond) }, core.StatusOK},
		{"acquire again (NX)", func() core.Status { return acq(b, time.Second) }, core.StatusHeld},
		{"release with a foreign token", func() core.Status { return rel(b) }, core.StatusHeld},
		{"extend with a foreign token", func() core.Status { return ext(b, time.Second) }, core.StatusHeld},
		{"expiry at exactly the TTL", func() core.Status { clock.Advance(100 * time.Millisecond); return acq(b, time.Second) }, core.StatusOK},
		{"old holder's release", func() core.Status { return rel(a) }, core.StatusHeld},
		{"extend", func() core.Status { clock.Advance(900 * time.Millisecond); return ext(b, time.Second) }, core.StatusOK},
		{"still held after the old TTL", func() core.Status { clock.Advance(500 * time.Millisecond); return acq(a, time.Second) }, core.StatusHeld},
		{"release", func() core.Status { return rel(b) }, core.StatusOK},
		{"released key is free", func() core.Status { return acq(a, time.Second) }, core.StatusOK},
	}
	for _, s := range steps {
		if got := s.got(); got != s.want {
			t.Fatalf("%s: %v, want %v", s.name, got, s.want)
		}
	}
	if tok, ttl, ok := c.Get(0, "k"); !ok || tok != a || ttl != time.Second {
		t.Fatalf("Get = %v %v %v", tok, ttl, ok)
	}
}

func TestFaults(t *testing.T) {
	clock := NewManualClock(epoch)
	c := New(2, clock)
	cmd := core.Command{Op: core.OpAcquire, Key: "k", Token: core.TokenFromUint64s(1, 1), TTL: time.Second}
	c.SetDown(0, true)
	if r := do(c, 0, cmd); r.Status != core.StatusError || !errors.Is(r.Err, ErrDown) {
		t.Fatalf("down node: %+v", r)
	}
	c.SetHung(1, true)
	start := clock.Now()
	if r := do(c, 1, cmd); r.Status != core.StatusTimeout || clock.Now().Sub(start) != time.Second {
		t.Fatalf("hung node: %+v after %v", r, clock.Now().Sub(start))
	}
	if _, _, ok := c.Get(1, "k"); ok {
		t.Fatal("a hung node applied the command")
	}
	c.SetHung(1, false)
	c.SetLatency(1, 30*time.Millisecond)
	start = clock.Now()
	if r := do(c, 1, cmd); r.Status != core.StatusOK || clock.Now().Sub(start) != 30*time.Millisecond {
		t.Fatalf("slow node: %+v after %v", r, clock.Now().Sub(start))
	}
	c.Restart(1)
	if _, _, ok := c.Get(1, "k"); ok {
		t.Fatal("restart kept the key")
	}
	if c.Calls(0) != 1 || c.Calls(1) != 2 {
		t.Fatalf("calls %d %d", c.Calls(0), c.Calls(1))
	}
}

func TestDeadEntriesAreSwept(t *testing.T) {
	clock := NewManualClock(epoch)
	c := New(1, clock)
	tok := core.TokenFromUint64s(1, 1)
	for i := 0; i < 10_000; i++ {
		key := "k" + strconv.Itoa(i)
		do(c, 0, core.Command{Op: core.OpAcquire, Key: key, Token: tok, TTL: time.Second})
		do(c, 0, core.Command{Op: core.OpRelease, Key: key, Token: tok})
	}
	n := c.nodes[0]
	if len(n.data) > 2100 {
		t.Fatalf("%d entries kept for 0 live keys", len(n.data))
	}
	if n.dead != len(n.data) {
		t.Fatalf("dead count %d for %d entries, all dead", n.dead, len(n.data))
	}
}

func TestReceiveHonoursCancel(t *testing.T) {
	c := New(1, NewManualClock(epoch))
	b := c.Begin(context.Background())
	defer b.Close()
	b.Send(0, core.Command{Op: core.OpAcquire, Key: "k", Token: core.TokenFromUint64s(1, 1), TTL: time.Second}, epoch.Add(time.Second))
	done := make(chan struct{})
	close(done)
	if _, ok := b.Receive(done); ok {
		t.Fatal("Receive returned a reply after cancel")
	}
}

// TestSystemClockReadings: on the system clock, the cluster reads the
// monotonic clock alone (Cluster.now); its readings must still order
// against time.Now's, which the deadlines of a Client's rounds are.
func TestSystemClockReadings(t *testing.T) {
	c := New(1, core.SystemClock{})
	if c.epoch.IsZero() {
		t.Fatal("no epoch on the system clock")
	}
	send := func(key string, deadline time.Time) core.Reply {
		b := c.Begin(context.Background())
		defer b.Close()
		b.Send(0, core.Command{Op: core.OpAcquire, Key: key, Token: core.TokenFromUint64s(1, 1), TTL: time.Minute}, deadline)
		r, _ := b.Receive(nil)
		return r
	}
	if r := send("past", time.Now().Add(-time.Millisecond)); r.Status != core.StatusTimeout {
		t.Fatalf("deadline passed: %v, want a timeout", r.Status)
	}
	if r := send("ahead", time.Now().Add(time.Minute)); r.Status != core.StatusOK {
		t.Fatalf("deadline a minute ahead: %v %v, want OK", r.Status, r.Err)
	}
	before := time.Now()
	now := c.now()
	if now < c.instant(before) || now > c.instant(time.Now()) {
		t.Fatalf("now() %v is not between two time.Now readings from %v", now, before)
	}
	if _, ttl, ok := c.Get(0, "ahead"); !ok || ttl <= 0 || ttl > time.Minute {
		t.Fatalf("Get: ttl %v, ok %v", ttl, ok)
	}
	clock := NewManualClock(epoch)
	m := New(1, clock)
	clock.Advance(time.Second)
	if m.system || !m.epoch.Equal(epoch) || m.now() != instant(time.Second) {
		t.Fatalf("a ManualClock is read as itself: epoch %v, now %v after a second", m.epoch, m.now())
	}
}

// TestSweptEntryIsNotRemembered: the entry a node remembers for the last
// key it served must leave with the sweep that drops it from the data.
// Here the release of "a" sweeps its own dead entry; "a" taken again must
// be stored, and found once the node has served another key since.
func TestSweptEntryIsNotRemembered(t *testing.T) {
	c := New(1, NewManualClock(epoch))
	tok := core.TokenFromUint64s(1, 1)
	cycle := func(key string) {
		do(c, 0, core.Command{Op: core.OpAcquire, Key: key, Token: tok, TTL: time.Minute})
		do(c, 0, core.Command{Op: core.OpRelease, Key: key, Token: tok})
	}
	for i := 0; i < 1024; i++ { // 1024 dead entries: one more sweeps
		cycle("k" + strconv.Itoa(i))
	}
	cycle("a")
	n := c.nodes[0]
	if _, kept := n.data["a"]; kept || n.dead != 0 {
		t.Fatalf("the release of a did not sweep: a kept %v, %d dead", kept, n.dead)
	}
	if r := do(c, 0, core.Command{Op: core.OpAcquire, Key: "a", Token: tok, TTL: time.Minute}); r.Status != core.StatusOK {
		t.Fatalf("acquire of a after the sweep: %v", r.Status)
	}
	cycle("b")
	if got, _, ok := c.Get(0, "a"); !ok || got != tok {
		t.Fatal("a, taken after the sweep, is not held")
	}
	c.Restart(0)
	if _, _, ok := c.Get(0, "a"); ok {
		t.Fatal("a outlived a restart")
	}
	if r := do(c, 0, core.Command{Op: core.OpAcquire, Key: "a", Token: tok, TTL: time.Minute}); r.Status != core.StatusOK {
		t.Fatalf("acquire of a after the restart: %v", r.Status)
	}
	cycle("b")
	if _, _, ok := c.Get(0, "a"); !ok {
		t.Fatal("a, taken after the restart, is not held")
	}
}

// TestFlushRunsFirst: a release flushed (core.Flusher) takes effect
// before an acquire another batch sends after it, though its own replies
// are received last.
func TestFlushRunsFirst(t *testing.T) {
	c := New(3, core.SystemClock{})
	a, b := core.TokenFromUint64s(1, 1), core.TokenFromUint64s(2, 2)
	for i := range 3 {
		if r := do(c, i, core.Command{Op: core.OpAcquire, Key: "k", Token: a, TTL: time.Minute}); r.Status != core.StatusOK {
			t.Fatalf("node %d: %v", i, r.Status)
		}
	}
	rel := c.Begin(context.Background())
	deadline := time.Now().Add(time.Second)
	for i := range 3 {
		rel.Send(i, core.Command{Op: core.OpRelease, Key: "k", Token: a}, deadline)
	}
	rel.(core.Flusher).Flush()
	for i := range 3 {
		if r := do(c, i, core.Command{Op: core.OpAcquire, Key: "k", Token: b, TTL: time.Minute}); r.Status != core.StatusOK {
			t.Fatalf("node %d: the acquire after the flushed release: %v", i, r.Status)
		}
	}
	for range 3 {
		if r, ok := rel.Receive(nil); !ok || r.Status != core.StatusOK {
			t.Fatalf("the release's reply: %v %v", ok, r.Status)
		}
	}
	rel.Close()
}

// TestQuietReleaseIsNotAnnounced: a release with Command.Quiet deletes
// the key without telling the key's watches; one without it tells them.
func TestQuietReleaseIsNotAnnounced(t *testing.T) {
	c := New(1, core.SystemClock{})
	var heard int
	w := c.Watch("k", func(int) { heard++ })
	defer w.Stop()
	heard = 0 // the watch's start is heard too
	tok := core.TokenFromUint64s(1, 1)
	do(c, 0, core.Command{Op: core.OpAcquire, Key: "k", Token: tok, TTL: time.Minute})
	if r := do(c, 0, core.Command{Op: core.OpRelease, Key: "k", Token: tok, Quiet: true}); r.Status != core.StatusOK || heard != 0 {
		t.Fatalf("quiet release: %v, heard %d times", r.Status, heard)
	}
	do(c, 0, core.Command{Op: core.OpAcquire, Key: "k", Token: tok, TTL: time.Minute})
	if r := do(c, 0, core.Command{Op: core.OpRelease, Key: "k", Token: tok}); r.Status != core.StatusOK || heard != 1 {
		t.Fatalf("release: %v, heard %d times, want 1", r.Status, heard)
	}
}
