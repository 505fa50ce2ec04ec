package memnode

import (
	"runtime"
	"testing"
	"time"

	"github.com/redlock-go/redlock/core"
)

// TestReadersAndWriters: readers share a key and expire each on its own;
// a writer refused for readers marks the key, which keeps new readers
// out, not a reader's extension, for the writer's TTL; the writer takes
// the key once the readers are gone, and its mark goes; a reader reads
// the last writer's fence; the last reader's release is announced,
// another's not; Restart forgets readers and marks.
func TestReadersAndWriters(t *testing.T) {
	clock := NewManualClock(epoch)
	c := New(1, clock)
	var heard int
	w := c.Watch("k", func(int) { heard++ })
	defer w.Stop()
	heard = 0
	r1, r2, r3, wr := core.TokenFromUint64s(1, 1), core.TokenFromUint64s(2, 2), core.TokenFromUint64s(3, 3), core.TokenFromUint64s(9, 9)
	cmd := func(kind core.Kind, op core.Op, tok core.Token, ttl time.Duration) core.Reply {
		return do(c, 0, core.Command{Kind: kind, Op: op, Key: "k", Token: tok, TTL: ttl})
	}
	expect := func(what string, r core.Reply, st core.Status, ttl time.Duration, fence uint64) {
		t.Helper()
		if r.Status != st || r.TTL != ttl || r.Fence != fence || r.Err != nil {
			t.Fatalf("%s: %+v, want %v TTL %v fence %d", what, r, st, ttl, fence)
		}
	}
	expect("reader 1", cmd(core.KindRead, core.OpAcquireFenced, r1, time.Second), core.StatusOK, 0, 0)
	expect("reader 2", cmd(core.KindRead, core.OpAcquire, r2, 3*time.Second), core.StatusOK, 0, 0)
	expect("writer behind readers", cmd(core.KindWrite, core.OpAcquire, wr, 2*time.Second), core.StatusHeld, 3*time.Second, 0)
	if tok, ttl, ok := c.Mark(0, "k"); !ok || tok != wr || ttl != 2*time.Second {
		t.Fatalf("Mark = %v %v %v", tok, ttl, ok)
	}
	expect("reader behind the mark", cmd(core.KindRead, core.OpAcquire, r3, time.Second), core.StatusHeld, 2*time.Second, 0)
	expect("reader 1 extends", cmd(core.KindRead, core.OpExtend, r1, 4*time.Second), core.StatusOK, 0, 0)
	expect("a reader never admitted extends", cmd(core.KindRead, core.OpExtend, r3, time.Second), core.StatusMissing, 0, 0)
	if rs := c.Readers(0, "k"); len(rs) != 2 || rs[r1] != 4*time.Second || rs[r2] != 3*time.Second {
		t.Fatalf("Readers = %v", rs)
	}
	clock.Advance(3 * time.Second) // reader 2 expires, the mark too
	expect("reader 2 expired", cmd(core.KindRead, core.OpRelease, r2, 0), core.StatusMissing, 0, 0)
	if heard != 0 {
		t.Fatalf("a release that leaves a reader is announced (%d)", heard)
	}
	expect("a writer behind reader 1", cmd(core.KindWrite, core.OpAcquireFenced, wr, 2*time.Second), core.StatusHeld, time.Second, 0)
	expect("reader 1 leaves", cmd(core.KindRead, core.OpRelease, r1, 0), core.StatusOK, 0, 0)
	if heard != 1 {
		t.Fatalf("the last reader's release is announced once, heard %d", heard)
	}
	expect("the writer", cmd(core.KindWrite, core.OpAcquireFenced, wr, 2*time.Second), core.StatusOK, 0, 1)
	if _, _, ok := c.Mark(0, "k"); ok {
		t.Fatal("the writer's own mark stays")
	}
	expect("a reader behind the writer", cmd(core.KindRead, core.OpAcquire, r1, time.Second), core.StatusHeld, 2*time.Second, 0)
	expect("the writer leaves", cmd(core.KindWrite, core.OpRelease, wr, 0), core.StatusOK, 0, 0)
	if heard != 2 {
		t.Fatalf("the writer's release is announced, heard %d", heard)
	}
	expect("a fenced reader", cmd(core.KindRead, core.OpAcquireFenced, r1, time.Second), core.StatusOK, 0, 1)
	if f := c.Fence(0, "k"); f != 1 {
		t.Fatalf("a reader changed the fence counter: %d", f)
	}
	if r := cmd(core.KindRead, core.OpRaiseFence, r1, 0); r.Status != core.StatusError {
		t.Fatalf("a reader's fence raise: %+v", r)
	}
	cmd(core.KindWrite, core.OpAcquire, wr, time.Minute) // marks the key
	c.Restart(0)
	if rs := c.Readers(0, "k"); rs != nil {
		t.Fatalf("readers after a restart: %v", rs)
	}
	if _, _, ok := c.Mark(0, "k"); ok {
		t.Fatal("a mark after a restart")
	}
}

// TestMultiKey: a multi-key lock takes every key or none, its fence one
// more than the highest counter; release frees and announces each key
// it holds; extension and fence raise need every key.
func TestMultiKey(t *testing.T) {
	clock := NewManualClock(epoch)
	c := New(1, clock)
	heard := map[string]int{}
	for _, k := range []string{"a", "b", "c"} {
		w := c.Watch(k, func(int) { heard[k]++ })
		defer w.Stop()
	}
	clear(heard)
	one, two := core.TokenFromUint64s(1, 1), core.TokenFromUint64s(2, 2)
	all := func(op core.Op, tok core.Token, ttl time.Duration, keys ...string) core.Reply {
		return do(c, 0, core.Command{Kind: core.KindAll, Op: op, Key: keys[0], Keys: core.NewKeyList(keys), Token: tok, TTL: ttl})
	}
	expect := func(what string, r core.Reply, st core.Status, ttl time.Duration, fence uint64) {
		t.Helper()
		if r.Status != st || r.TTL != ttl || r.Fence != fence || r.Err != nil {
			t.Fatalf("%s: %+v, want %v TTL %v fence %d", what, r, st, ttl, fence)
		}
	}
	c.Set(0, "c", two, 5*time.Second)
	do(c, 0, core.Command{Op: core.OpAcquireFenced, Key: "b", Token: two, TTL: time.Second})
	do(c, 0, core.Command{Op: core.OpRelease, Key: "b", Token: two})
	clear(heard)
	expect("a, b, c with c held", all(core.OpAcquire, one, time.Second, "a", "b", "c"), core.StatusHeld, 5*time.Second, 0)
	if _, _, ok := c.Get(0, "a"); ok {
		t.Fatal("a refused multi-key lock took a key")
	}
	expect("a and b", all(core.OpAcquireFenced, one, 2*time.Second, "a", "b"), core.StatusOK, 0, 2)
	if c.Fence(0, "a") != 2 || c.Fence(0, "b") != 2 {
		t.Fatalf("fences %d %d", c.Fence(0, "a"), c.Fence(0, "b"))
	}
	expect("extend a, b, c", all(core.OpExtend, one, time.Minute, "a", "b", "c"), core.StatusHeld, 0, 0)
	expect("extend a and b", all(core.OpExtend, one, 3*time.Second, "b", "a"), core.StatusOK, 0, 0)
	if _, ttl, _ := c.Get(0, "a"); ttl != 3*time.Second {
		t.Fatalf("a's TTL %v", ttl)
	}
	r := do(c, 0, core.Command{Kind: core.KindAll, Op: core.OpRaiseFence, Key: "a", Keys: core.NewKeyList([]string{"a", "b"}), Token: one, Fence: 7})
	expect("raise", r, core.StatusOK, 0, 0)
	if c.Fence(0, "a") != 7 || c.Fence(0, "b") != 7 {
		t.Fatalf("raised fences %d %d", c.Fence(0, "a"), c.Fence(0, "b"))
	}
	expect("release b and c by one", all(core.OpRelease, one, 0, "b", "c"), core.StatusOK, 0, 0)
	if heard["b"] != 1 || heard["a"] != 0 || heard["c"] != 0 {
		t.Fatalf("announcements %v, want b's alone", heard)
	}
	expect("extend a and b, b gone", all(core.OpExtend, one, time.Second, "a", "b"), core.StatusMissing, 0, 0)
	expect("release c by one", all(core.OpRelease, one, 0, "c"), core.StatusHeld, 0, 0)
	clock.Advance(3 * time.Second)
	expect("release a, expired", all(core.OpRelease, one, 0, "a"), core.StatusMissing, 0, 0)
}

// TestKindsAllocateNothing: once a key has been read, a reader's
// acquire and release allocate nothing, nor do a multi-key lock's; a
// reader set emptied is kept for the key's next reader.
func TestKindsAllocateNothing(t *testing.T) {
	c := New(1, NewManualClock(epoch))
	tok := core.TokenFromUint64s(1, 1)
	keys := []string{"a", "b", "c"}
	cmds := []core.Command{
		{Kind: core.KindRead, Op: core.OpAcquire, Key: "k", Token: tok, TTL: time.Minute},
		{Kind: core.KindRead, Op: core.OpRelease, Key: "k", Token: tok},
		{Kind: core.KindAll, Op: core.OpAcquireFenced, Key: "a", Keys: core.NewKeyList(keys), Token: tok, TTL: time.Minute},
		{Kind: core.KindAll, Op: core.OpRelease, Key: "a", Keys: core.NewKeyList(keys), Token: tok},
	}
	run := func() {
		for _, cmd := range cmds {
			if r := do(c, 0, cmd); r.Status != core.StatusOK {
				panic(r.Status.String())
			}
		}
	}
	run()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 100 {
		run()
	}
	runtime.ReadMemStats(&after)
	if n := (after.Mallocs - before.Mallocs) / 100; n != 0 {
		t.Fatalf("%d allocations per reader and multi-key pair, want 0", n)
	}
}
