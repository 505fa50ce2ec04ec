package core

import (
	"fmt"
	"testing"
	"time"
)

// TestNeededIsTheFewestRepliesThatDecide walks every order and every
// answer of the replies to multiplexed rounds of 1 to 5 nodes, releases
// with nodes not awaited among them, and checks at each step that Needed
// is exactly the fewest replies after which the round is done: never more
// (a gathering caller would decide late), never fewer (it would be woken
// for nothing).
func TestNeededIsTheFewestRepliesThatDecide(t *testing.T) {
	for _, c := range neededCases() {
		t.Run(c.name, func(t *testing.T) {
			if err := checkNeeded(c.round()); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestNeededSequential: a sequential round's every reply may hand out the
// next command.
func TestNeededSequential(t *testing.T) {
	s := Spec{n: 5, quorum: Quorum(5), cfg: Config{FanOut: Sequential, NodeTimeout: time.Second}}
	var r Round
	s.initRound(&r, Command{Op: OpAcquire, Key: "k"}, time.Unix(0, 0))
	for node := 0; !r.Done(); node++ {
		if _, _, ok := r.next(time.Unix(0, 0)); !ok {
			t.Fatalf("node %d: no command handed out", node)
		}
		if got := r.Needed(); got != 1 {
			t.Fatalf("node %d: Needed = %d, want 1", node, got)
		}
		r.Receive(Reply{Node: node, Status: StatusOK})
	}
	if got := r.Needed(); got != 0 {
		t.Fatalf("done: Needed = %d, want 0", got)
	}
}

type neededCase struct {
	name   string
	n      int
	op     Op
	noWait uint32
}

func (c neededCase) round() Round {
	s := Spec{n: c.n, quorum: Quorum(c.n), cfg: Config{FanOut: Multiplexed, NodeTimeout: time.Second}}
	var r Round
	s.initRound(&r, Command{Op: c.op, Key: "k"}, time.Unix(0, 0))
	r.noWait = c.noWait
	for {
		if _, _, ok := r.next(time.Unix(0, 0)); !ok {
			return r
		}
	}
}

func neededCases() []neededCase {
	var cs []neededCase
	for n := 1; n <= 5; n++ {
		for _, op := range []Op{OpAcquire, OpAcquireFenced, OpExtend, OpRelease} {
			cs = append(cs, neededCase{name: fmt.Sprintf("%v/N=%d", op, n), n: n, op: op})
		}
		cs = append(cs, neededCase{name: fmt.Sprintf("cleanup/N=%d", n), n: n, op: OpRelease, noWait: (1<<n - 1) & 0b10101})
	}
	return cs
}

// checkNeeded compares Needed with the fewest replies that finish r, in
// every state reachable from r.
func checkNeeded(r Round) error {
	_, err := fewestToDone(r, nil)
	return err
}

// fewestToDone returns the fewest replies after which r is done, checking
// Needed on the way; path is the replies that led to r, for the error.
func fewestToDone(r Round, path []Reply) (int, error) {
	if r.Done() {
		if got := r.Needed(); got != 0 {
			return 0, fmt.Errorf("after %v: done, but Needed = %d", path, got)
		}
		return 0, nil
	}
	best := -1
	for node := range r.tally.n {
		if s, _ := r.tally.statusOf(node); s != 0 {
			continue
		}
		for _, st := range []Status{StatusOK, StatusHeld, StatusMissing, StatusTimeout} {
			next := r
			next.Receive(Reply{Node: node, Status: st})
			d, err := fewestToDone(next, append(path, Reply{Node: node, Status: st}))
			if err != nil {
				return 0, err
			}
			if best < 0 || d+1 < best {
				best = d + 1
			}
		}
	}
	if got := r.Needed(); got != best {
		return 0, fmt.Errorf("after %v: Needed = %d, but %d replies can finish the round", path, got, best)
	}
	return best, nil
}
