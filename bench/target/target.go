// Package target turns this library into benchmark subjects: it dials a
// core.Driver by name (mem, redigo, rueidis, radix, goredis) against a list of
// servers, and wraps a redlock Locker over it as a measure.Subject.
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
var Order = []string{"mem", "redigo", "rueidis", "radix", "goredis"}

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

// Redlock is a Locker under test. Its Config has no retries, so a held
// lock costs one round.
type Redlock struct {
	L *core.Locker
}

// NewRedlock returns a Locker over drv with production inputs
// (redlock.New), the given TTL and fan-out, and a single try.
func NewRedlock(drv core.Driver, fan core.FanOut, ttl time.Duration) (*Redlock, error) {
	l, err := redlock.New(drv, core.Config{TTL: ttl, FanOut: fan, Retry: core.NoRetry()})
	if err != nil {
		return nil, err
	}
	return &Redlock{L: l}, nil
}

// Worker implements measure.Subject.
func (r *Redlock) Worker(key string) measure.Worker { return &worker{l: r.L, key: key} }

type worker struct {
	l   *core.Locker
	key string
}

// Pair acquires and releases the key once. ErrTaken is a lost contest,
// not an error.
func (w *worker) Pair(ctx context.Context) (bool, error) {
	lock, err := w.l.Acquire(ctx, w.key)
	if err != nil {
		if errors.Is(err, core.ErrTaken) {
			return false, nil
		}
		return false, err
	}
	return true, w.l.Release(ctx, lock)
}
