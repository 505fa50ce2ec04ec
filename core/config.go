package core

import (
	"strconv"
	"time"
)

// FanOut is how a round reaches its nodes.
type FanOut uint8

const (
	// Multiplexed issues every node's request before awaiting any reply (the
	// distlock page's "poor man's multiplexing") and decides as soon as the
	// tally does: a round costs about one round trip. It is the zero value.
	Multiplexed FanOut = iota
	// Sequential sends to one node, awaits its reply, then the next, as the
	// distlock page describes: a round costs about N round trips.
	Sequential
)

// String returns "multiplexed" or "sequential".
func (f FanOut) String() string {
	if f == Sequential {
		return "sequential"
	}
	return "multiplexed"
}

// defaultTTL is the TTL of a zero Config: long against a round trip and
// the node timeout, short enough that a crashed holder frees the lock
// soon. The other defaults are stated on Config's fields.
const defaultTTL = 10 * time.Second

// Defaults applied to the other zero Config fields.
const (
	defaultDriftPPM       = 10_000 // 1% of the TTL, the distlock page's factor
	defaultDriftFixed     = 2 * time.Millisecond
	defaultNodeTimeoutDiv = 200 // node timeout = TTL/200: 50 ms for 10 s
	defaultMinNodeTimeout = 5 * time.Millisecond
	defaultMaxNodeTimeout = time.Second
	defaultMaxExtensions  = 10
)

// Config configures a Spec. Its zero value takes the documented defaults
// for every field except Tokens and Jitter: package core makes no
// randomness it was not given, and reads no clock at all (time is an
// input of every step). The root package redlock supplies production
// inputs (crypto/rand tokens, a seeded jitter generator, the system
// clock).
type Config struct {
	// TTL is the keys' expiry, a whole number of milliseconds (Redis PX).
	// Default 10 s: long against a round trip and the node timeout, short
	// enough that a crashed holder frees the lock soon.
	TTL time.Duration
	// DriftPPM is the clock-drift allowance in parts per million of the TTL,
	// in [0, 1e6). Zero means the default, 10,000 (1%).
	DriftPPM int64
	// DriftFixed is added to the drift allowance; it covers the millisecond
	// granularity of Redis expiry. Zero means 2 ms.
	DriftFixed time.Duration
	// NodeTimeout bounds every command to every node, including release and
	// cleanup. Zero means TTL/200 clamped into [MinNodeTimeout,
	// MaxNodeTimeout]. It must be below the TTL, and leave a grant the
	// loss margin: TTL − drift at least two round bounds (a round bound
	// is NodeTimeout, N of them when Sequential), since a lock is
	// declared lost a round bound before its validity ends and an
	// extension round must end by then.
	NodeTimeout time.Duration
	// MinNodeTimeout and MaxNodeTimeout bound the derived NodeTimeout.
	// Zero means 5 ms and 1 s.
	MinNodeTimeout, MaxNodeTimeout time.Duration
	// FanOut chooses sequential or multiplexed rounds. Zero is Multiplexed.
	FanOut FanOut
	// Retry is the acquisition retry policy. Zero means DefaultRetry.
	Retry RetryPolicy
	// MaxExtensions bounds how often one lock may be extended (the distlock
	// page's liveness rule). Zero means 10; negative forbids extension.
	MaxExtensions int
	// Fencing makes every acquisition return a fence (Grant.Fence) strictly
	// greater than the fences of every earlier holder of the key, as long
	// as the nodes keep their counters: see the package documentation's
	// "Fencing". It costs one more round per acquisition, and one counter
	// key per locked key on every node (FenceKeyPrefix). Off by default.
	Fencing bool
	// Fair queues the waiters of a key on the nodes, so that a release
	// hands the key to one waiter, first come first served across
	// processes, rather than wake them all to race for it: see the package
	// documentation's "Fair handoff". Every client of a key must agree on
	// it, and the nodes must run Redis 5 or later (the scripts read TIME
	// before they write). It costs the uncontended path nothing but a
	// script for a Lock's first attempt instead of a plain SET NX;
	// TryLock never queues, and a waiter that gives up leaves the queues
	// first (one more round). Off by default.
	Fair bool
	// LeaseFraction makes a Lease extend a grant on its own once this
	// fraction of its validity has passed, in [0, 1): 1.0/3 extends a 10 s
	// lock every 3.3 s, leaving two thirds of its validity for the
	// extension and its retries. Zero: a Lease extends only when asked.
	// (TTL − drift)×(1 − LeaseFraction) must be at least the loss margin
	// (NodeTimeout's doc): otherwise no lease would ever extend.
	LeaseFraction float64
	// MaxHold bounds how long a Lease keeps one grant, from its
	// acquisition: at MaxHold the grant is lost with ErrExtensionLimit.
	// Zero: none. It must be at least the TTL; set with MaxExtensions
	// zero, it lifts the default of 10 extensions.
	MaxHold time.Duration
	// Tokens and Jitter are required inputs.
	Tokens TokenSource
	Jitter Rand
}

// withDefaults returns c with zero fields replaced, or why c is invalid.
func (c Config) withDefaults(nodes int) (Config, error) {
	if c.TTL == 0 {
		c.TTL = defaultTTL
	}
	if c.DriftPPM == 0 {
		c.DriftPPM = defaultDriftPPM
	}
	if c.DriftFixed == 0 {
		c.DriftFixed = defaultDriftFixed
	}
	if c.MinNodeTimeout == 0 {
		c.MinNodeTimeout = defaultMinNodeTimeout
	}
	if c.MaxNodeTimeout == 0 {
		c.MaxNodeTimeout = defaultMaxNodeTimeout
	}
	if c.Retry.isZero() {
		c.Retry = DefaultRetry
	}
	if c.MaxExtensions == 0 {
		c.MaxExtensions = defaultMaxExtensions
		if c.MaxHold > 0 {
			c.MaxExtensions = 1<<31 - 1 // MaxHold alone bounds the lease
		}
	}
	switch {
	case nodes < 1:
		return c, invalid("no nodes")
	case nodes > MaxNodes:
		return c, invalid(itoa(nodes) + " nodes, more than MaxNodes (" + itoa(MaxNodes) + ")")
	case c.TTL < 0:
		return c, invalid("TTL " + c.TTL.String() + " is negative")
	case c.TTL%time.Millisecond != 0:
		return c, invalid("TTL " + c.TTL.String() + " is not a whole number of milliseconds (Redis PX)")
	case c.DriftPPM < 0 || c.DriftPPM >= ppm:
		return c, invalid("DriftPPM " + itoa(int(c.DriftPPM)) + " is outside [0, 1000000)")
	case c.DriftFixed < 0:
		return c, invalid("DriftFixed " + c.DriftFixed.String() + " is negative")
	case c.MinNodeTimeout < 0 || c.MaxNodeTimeout < c.MinNodeTimeout:
		return c, invalid("node timeout bounds [" + c.MinNodeTimeout.String() + ", " + c.MaxNodeTimeout.String() + "] are empty")
	case c.NodeTimeout < 0:
		return c, invalid("NodeTimeout " + c.NodeTimeout.String() + " is negative")
	case !(c.LeaseFraction >= 0 && c.LeaseFraction < 1): // NaN too
		return c, invalid("LeaseFraction " + strconv.FormatFloat(c.LeaseFraction, 'g', -1, 64) + " is not in [0, 1)")
	case c.LeaseFraction > 0 && c.MaxExtensions < 0:
		return c, invalid("LeaseFraction " + strconv.FormatFloat(c.LeaseFraction, 'g', -1, 64) + " with MaxExtensions " + itoa(c.MaxExtensions) + ": extension is forbidden")
	case c.MaxHold < 0:
		return c, invalid("MaxHold " + c.MaxHold.String() + " is negative")
	case c.MaxHold > 0 && c.MaxHold < c.TTL:
		return c, invalid("MaxHold " + c.MaxHold.String() + " is below the TTL " + c.TTL.String())
	case c.FanOut > Sequential:
		return c, invalid("unknown FanOut " + itoa(int(c.FanOut)))
	case c.Tokens == nil:
		return c, invalid("Tokens is nil (redlock.NewClient supplies crypto/rand tokens)")
	case c.Jitter == nil:
		return c, invalid("Jitter is nil (redlock.NewClient supplies a seeded generator)")
	}
	if r := c.Retry.validate(); r != "" {
		return c, invalid(r)
	}
	if d := drift(c.TTL, c.DriftPPM, c.DriftFixed); d >= c.TTL {
		return c, invalid("TTL " + c.TTL.String() + " is consumed entirely by the clock-drift allowance " + d.String())
	}
	if c.NodeTimeout == 0 {
		c.NodeTimeout = min(max(c.TTL/defaultNodeTimeoutDiv, c.MinNodeTimeout), c.MaxNodeTimeout)
	}
	if c.NodeTimeout >= c.TTL {
		return c, invalid("NodeTimeout " + c.NodeTimeout.String() + " is not below TTL " + c.TTL.String())
	}
	return c, nil
}
