package target

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/bench/measure"
	"github.com/redlock-go/redlock/core"
)

// The API variants of an acquire+release pair that the fencing and lease
// table compares over one driver.
const (
	// VariantPlain is core's Locker: Acquire, then Release.
	VariantPlain = "plain"
	// VariantFenced is core's Locker with Config.Fencing: the acquire
	// round also increments the key's fence counter, and one more round
	// raises the counters on a majority before Acquire returns.
	VariantFenced = "fenced"
	// VariantHandle is redlock.Client's TryLock, then Lock.Unlock, without
	// a lease: core's pair plus the handle, its Context and its watcher
	// goroutine.
	VariantHandle = "handle"
	// VariantLease is VariantHandle with Lease{Fraction: 1.0/3}. A pair
	// ends long before a third of the validity has passed, so no extension
	// runs: it measures what the lease costs to set up and tear down.
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

// Variant is a measure.Subject that runs pairs of one API variant over a
// driver wrapped in a RoundCounter; its Rounds are the driver's.
type Variant struct {
	Name string
	*RoundCounter
	worker func(key string) measure.Worker
}

// Worker implements measure.Subject.
func (v *Variant) Worker(key string) measure.Worker { return v.worker(key) }

// NewVariant returns the subject of variant name over drv, which it wraps
// in a RoundCounter, with the given fan-out and TTL and a single try.
func NewVariant(name string, drv core.Driver, fan core.FanOut, ttl time.Duration) (*Variant, error) {
	counter := CountRounds(drv)
	v := &Variant{Name: name, RoundCounter: counter}
	cfg := core.Config{TTL: ttl, FanOut: fan, Retry: core.NoRetry()}
	switch name {
	case VariantPlain, VariantFenced:
		cfg.Fencing = name == VariantFenced
		l, err := redlock.New(counter.driver(), cfg)
		if err != nil {
			return nil, err
		}
		v.worker = func(key string) measure.Worker { return &worker{l: l, key: key} }
	case VariantHandle, VariantLease:
		opts := redlock.Options{Config: cfg}
		if name == VariantLease {
			opts.Lease = &redlock.Lease{Fraction: LeaseFraction}
		}
		c, err := redlock.NewClient(counter.driver(), opts)
		if err != nil {
			return nil, err
		}
		v.worker = func(key string) measure.Worker { return &handleWorker{c: c, key: key} }
	default:
		return nil, fmt.Errorf("target: unknown variant %q (%v)", name, Variants)
	}
	return v, nil
}

type handleWorker struct {
	c   *redlock.Client
	key string
}

// Pair takes the lock with TryLock and unlocks the handle. ErrTaken is a
// lost contest, not an error.
func (w *handleWorker) Pair(ctx context.Context) (bool, error) {
	h, err := w.c.TryLock(ctx, w.key)
	if err != nil {
		if errors.Is(err, core.ErrTaken) {
			return false, nil
		}
		return false, err
	}
	return true, h.Unlock(ctx)
}
