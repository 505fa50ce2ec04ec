package core_test

import (
	"context"
	"fmt"
	"time"

	"github.com/redlock-go/redlock/core"
)

// names is a Driver that only names its nodes: a caller that drives
// Acquisition and Round itself never asks it for a Batch.
type names []string

func (n names) Nodes() int                       { return len(n) }
func (n names) NodeName(i int) string            { return n[i] }
func (n names) Begin(context.Context) core.Batch { panic("step-wise callers do their own I/O") }

// ExampleAcquisition drives an acquisition step by step, as an event loop
// (JavaScript, TinyGo, a simulation) would: the caller owns the I/O and the
// time. Here three "nodes" are maps that answer at once, two of them held
// by another client until 100 ms, and the clock is a variable.
func ExampleAcquisition() {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	other := core.TokenFromUint64s(0xbad, 1)
	type entry struct {
		tok     core.Token
		expires time.Time
	}
	nodes := []map[string]entry{
		{"job": {other, now.Add(100 * time.Millisecond)}},
		{"job": {other, now.Add(100 * time.Millisecond)}},
		{},
	}
	exec := func(i int, cmd core.Command) core.Status {
		e, ok := nodes[i][cmd.Key]
		ok = ok && now.Before(e.expires)
		switch {
		case cmd.Op == core.OpAcquire && ok:
			return core.StatusHeld
		case cmd.Op == core.OpAcquire:
			nodes[i][cmd.Key] = entry{cmd.Token, now.Add(cmd.TTL)}
			return core.StatusOK
		case !ok:
			return core.StatusMissing
		case e.tok != cmd.Token:
			return core.StatusHeld
		}
		delete(nodes[i], cmd.Key)
		return core.StatusOK
	}

	spec, err := core.NewSpec(names{"a", "b", "c"}, core.Config{
		TTL:    time.Second,
		Tokens: &counterTokens{},
		Jitter: fixedRand(0),
		Retry:  core.RandomDelay(3, 150*time.Millisecond, 150*time.Millisecond),
	})
	if err != nil {
		panic(err)
	}
	acq, err := spec.Acquire("job", core.Token{}, now) // zero token: draw from Tokens
	if err != nil {
		panic(err)
	}
	attempts := 0
	for acq.Phase() != core.PhaseDone {
		switch acq.Phase() {
		case core.PhaseRound:
			r := acq.Round()
			if r.Command().Op == core.OpAcquire {
				attempts++
			}
			for !r.Done() {
				node, cmd, _, ok := r.Next(now)
				if !ok {
					break
				}
				r.Receive(core.Reply{Node: node, Status: exec(node, cmd)})
			}
			op := r.Command().Op
			acq.RoundDone(now) // the Round is the next one now
			fmt.Printf("%v attempt %d: %v round, then %v\n", now.Sub(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)),
				attempts, op, phase(acq.Phase()))
		case core.PhaseWait:
			now = acq.WakeAt() // a timer would fire here
			acq.Wake(now)
		}
	}
	lock, err := acq.Result()
	fmt.Println(lock.Token() != core.Token{}, lock.ValidUntil().Sub(now), err)
	// Output:
	// 0s attempt 1: acquire round, then cleanup
	// 0s attempt 1: release round, then wait
	// 150ms attempt 2: acquire round, then done
	// true 988ms <nil>
}

// phase names what an acquisition does next, for the example's output.
func phase(p core.Phase) string {
	switch p {
	case core.PhaseRound:
		return "cleanup"
	case core.PhaseWait:
		return "wait"
	}
	return "done"
}
