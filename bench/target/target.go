// Package target turns this library into benchmark subjects: it dials a
// core.Driver by name (mem, redigo, rueidis, radix, goredis, valkeygo)
// against a list of servers, and wraps a redlock.Client over it as a
// measure.Subject.
package target

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/bench/measure"
	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/core/memnode"
)

// DialOptions mirror the drivers' Options.
type DialOptions struct {
	Username, Password string
	TLS                *tls.Config
	PoolSize           int
	DialTimeout        time.Duration
}

// Dialer opens a driver over addrs. The returned close function releases
// its connections; it is never nil.
type Dialer func(addrs []string, o DialOptions) (core.Driver, func() error, error)

// Order is the order in which drivers are listed and run.
var Order = []string{"mem", "redigo", "rueidis", "radix", "goredis", "valkeygo"}

var dialers = map[string]Dialer{
	"mem": func(addrs []string, _ DialOptions) (core.Driver, func() error, error) {
		return memnode.New(len(addrs), core.SystemClock{}), func() error { return nil }, nil
	},
}

// register adds a driver; the files of this package that import a driver
// call it from init.
func register(name string, d Dialer) { dialers[name] = d }

// Drivers returns the names of the drivers compiled in, in Order.
func Drivers() []string {
	var names []string
	for _, n := range Order {
		if _, ok := dialers[n]; ok {
			names = append(names, n)
		}
	}
	return names
}

// Has reports whether driver name is compiled in.
func Has(name string) bool { _, ok := dialers[name]; return ok }

// InMemory reports whether driver name needs no servers ("mem").
func InMemory(name string) bool { return name == "mem" }

// Dial opens driver name over addrs.
func Dial(name string, addrs []string, o DialOptions) (core.Driver, func() error, error) {
	d, ok := dialers[name]
	if !ok {
		return nil, nil, fmt.Errorf("target: unknown driver %q (compiled in: %v)", name, Drivers())
	}
	if len(addrs) == 0 {
		return nil, nil, errors.New("target: no addresses")
	}
	return d(slices.Clone(addrs), o)
}

// ParseFanOut maps "sequential" and "multiplexed" to core.FanOut.
func ParseFanOut(s string) (core.FanOut, error) {
	switch s {
	case "sequential", "seq":
		return core.Sequential, nil
	case "multiplexed", "mux":
		return core.Multiplexed, nil
	}
	return 0, fmt.Errorf("target: unknown fan-out %q (sequential, multiplexed)", s)
}

// Redlock is this library under test: a redlock.Client whose workers
// take the lock with TryLock and unlock the handle. Its Config has no
// retries (TryLock makes one attempt in any case), so a held lock costs
// one round.
type Redlock struct {
	C *redlock.Client
}

// NewRedlock returns a Client over drv with production inputs
// (redlock.NewClient: crypto/rand tokens, seeded jitter, the driver's
// clock), the given TTL and fan-out, no lease, no fencing.
func NewRedlock(drv core.Driver, fan core.FanOut, ttl time.Duration) (*Redlock, error) {
	c, err := redlock.NewClient(drv, redlock.Options{TTL: ttl, FanOut: fan})
	if err != nil {
		return nil, err
	}
	return &Redlock{C: c}, nil
}

// Worker implements measure.Subject.
func (r *Redlock) Worker(key string) measure.Worker { return &worker{c: r.C, key: key} }

// worker is one client of a Client: a pair is TryLock, then the handle's
// Unlock. With fenced set it reads the handle's fence too; with watched,
// its Context, which starts the handle's watcher goroutine.
type worker struct {
	c       *redlock.Client
	key     string
	fenced  bool
	watched bool
}

// Pair takes the lock with TryLock and unlocks the handle. ErrTaken is a
// lost contest, not an error.
func (w *worker) Pair(ctx context.Context) (bool, error) {
	if w.watched {
		return w.watchedPair(ctx)
	}
	// The handle stays in this frame: nothing here lets it escape, so
	// that a pair allocates only what the Client does.
	l, err := w.c.TryLock(ctx, w.key)
	if err != nil {
		return false, lost(err)
	}
	if w.fenced {
		switch f, err := l.Fence(); {
		case err != nil:
			return true, errors.Join(fmt.Errorf("target: fence %d on a fenced Client: %w", f, err), l.Unlock(ctx))
		case f == 0:
			return true, errors.Join(errors.New("target: fence 0 on a fenced Client"), l.Unlock(ctx))
		}
	}
	return true, l.Unlock(ctx)
}

// watchedPair is Pair that asks for the handle's Context, which starts
// its watcher, before Unlock.
func (w *worker) watchedPair(ctx context.Context) (bool, error) {
	l, err := w.c.TryLock(ctx, w.key)
	if err != nil {
		return false, lost(err)
	}
	if lctx := l.Context(); lctx.Err() != nil {
		return true, errors.Join(fmt.Errorf("target: the lock's Context ended at once: %w", context.Cause(lctx)), l.Unlock(ctx))
	}
	return true, l.Unlock(ctx)
}

// lost maps ErrTaken, a lost contest, to nil: it is not an error.
func lost(err error) error {
	if errors.Is(err, core.ErrTaken) {
		return nil
	}
	return err
}
