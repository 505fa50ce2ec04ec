package target

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/bench/measure"
	"github.com/redlock-go/redlock/core"
)

// The API variants of an acquire+release pair that the fencing and lease
// table compares over one driver. Every one is a redlock.Client's TryLock,
// then the handle's Unlock; they differ in the Client's options and in
// what the pair asks of the handle.
const (
	// VariantPlain is the bare handle: TryLock, then Unlock, without a
	// lease or fencing, and without asking for the handle's Context, so
	// that no goroutine starts: the pair of the loopback matrix.
	VariantPlain = "plain"
	// VariantFenced is VariantPlain with Options.Fencing, reading the
	// handle's Fence: the acquire round also increments the key's fence
	// counter, and one more round raises the counters on a majority
	// before TryLock returns.
	VariantFenced = "fenced"
	// VariantHandle is VariantPlain that also asks for the handle's
	// Context before Unlock: the handle's state, its Context and its
	// watcher goroutine, which Unlock stops.
	VariantHandle = "handle"
	// VariantLease is VariantPlain with Lease{Fraction: 1.0/3}: the
	// watcher starts with the lock. A pair ends long before a third of
	// the validity has passed, so no extension runs: it measures what the
	// lease costs to set up and tear down.
	VariantLease = "lease"
)

// Variants lists the variants in the order they are run and shown.
var Variants = []string{VariantPlain, VariantFenced, VariantHandle, VariantLease}

// LeaseFraction is the Lease.Fraction of VariantLease.
const LeaseFraction = 1.0 / 3

// RoundCounter is a core.Driver that counts the rounds run over it: one
// Begin call is one round. It adds one atomic increment per round and
// nothing else; it allocates nothing.
type RoundCounter struct {
	core.Driver
	rounds atomic.Uint64
}

// CountRounds wraps d in a RoundCounter.
func CountRounds(d core.Driver) *RoundCounter { return &RoundCounter{Driver: d} }

// Begin counts the round and begins it on the wrapped driver.
func (c *RoundCounter) Begin(ctx context.Context) core.Batch {
	c.rounds.Add(1)
	return c.Driver.Begin(ctx)
}

// Rounds returns the rounds begun so far. It implements
// measure.RoundCounter, so a measurement reports rounds per pair.
func (c *RoundCounter) Rounds() uint64 { return c.rounds.Load() }

// announcingCounter is a RoundCounter over a driver that announces
// releases, and announces them too.
type announcingCounter struct {
	*RoundCounter
	ann core.Announcer
}

func (a announcingCounter) Watch(key string, notify func(node int)) core.Watch {
	return a.ann.Watch(key, notify)
}

// driver returns c as the driver to build on: a core.Announcer when the
// driver it counts is one, so that a Client over it is woken as over the
// driver itself (and does not warn that it polls).
func (c *RoundCounter) driver() core.Driver {
	if ann, ok := c.Driver.(core.Announcer); ok {
		return announcingCounter{RoundCounter: c, ann: ann}
	}
	return c
}

// Clock returns the wrapped driver's clock, so that a Client over the
// counter reads the driver's clock as over the driver itself; nil (the
// system clock) when the driver does not say.
func (c *RoundCounter) Clock() core.Clock {
	if cd, ok := c.Driver.(interface{ Clock() core.Clock }); ok {
		return cd.Clock()
	}
	return nil
}

// Variant is a measure.Subject that runs pairs of one API variant over a
// driver wrapped in a RoundCounter; its Rounds are the driver's.
type Variant struct {
	Name string
	*RoundCounter
	c      *redlock.Client
	fenced bool
	watch  bool
}

// Worker implements measure.Subject.
func (v *Variant) Worker(key string) measure.Worker {
	return &worker{c: v.c, key: key, fenced: v.fenced, watched: v.watch}
}

// Client returns the variant's Client.
func (v *Variant) Client() *redlock.Client { return v.c }

// NewVariant returns the subject of variant name over drv, which it wraps
// in a RoundCounter, with the given fan-out and TTL and a single try.
func NewVariant(name string, drv core.Driver, fan core.FanOut, ttl time.Duration) (*Variant, error) {
	counter := CountRounds(drv)
	v := &Variant{Name: name, RoundCounter: counter}
	opts := redlock.Options{TTL: ttl, FanOut: fan}
	switch name {
	case VariantPlain:
	case VariantFenced:
		opts.Fencing, v.fenced = true, true
	case VariantHandle:
		v.watch = true
	case VariantLease:
		opts.Lease = &redlock.Lease{Fraction: LeaseFraction}
	default:
		return nil, fmt.Errorf("target: unknown variant %q (%v)", name, Variants)
	}
	c, err := redlock.NewClient(counter.driver(), opts)
	if err != nil {
		return nil, err
	}
	v.c = c
	return v, nil
}

// CheckKeys asks the wrapped driver, if it can tell (core.KeysChecker),
// whether its nodes can take a multi-key lock's keys, so that a Client
// over the counter checks them as over the driver itself; nil when it
// cannot tell, as a Client takes a driver that is no KeysChecker.
func (c *RoundCounter) CheckKeys(keys []string) error {
	if kc, ok := c.Driver.(core.KeysChecker); ok {
		return kc.CheckKeys(keys)
	}
	return nil
}
