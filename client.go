package redlock

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"time"

	"github.com/redlock-go/redlock/core"
)

// Options configure a Client. The zero value is safe: a 10 s TTL, the
// distlock page's drift allowance, multiplexed rounds, Lock paced by
// random delays of 50–250 ms, no fencing, no lease, the system clock,
// crypto/rand tokens.
type Options struct {
	// Config is the algorithm's configuration; its zero fields take core's
	// defaults, and a nil Clock, Tokens or Jitter the production ones
	// (see New). Config.Retry's delays pace Lock; its count of tries is
	// not used: Lock tries until its ctx ends, TryLock once.
	Config
	// Lease, when set, keeps every lock alive in the background until
	// Unlock, within its bounds. Nil: a lock lives until its validity
	// runs out unless Extend is called.
	Lease *Lease
	// Poll makes Lock sleep Config.Retry's delays between attempts, as
	// the distlock page and redsync do. By default, over a driver that
	// announces releases (core.Announcer: every driver of this module),
	// Lock waits for a release to be announced, or for the holder's keys
	// to expire, and then tries again at once; see Client.Lock.
	Poll bool
}

// Lease is the automatic extension of a Client's locks: each lock is
// extended once Fraction of its validity has passed, through core's extend
// round (a quorum, and validity counted from the round; a lost key is
// never re-created), until Unlock, until an extension proves the lock lost
// or cannot be made in time, or until the bound is reached. Either way the
// lock's Context is cancelled with the cause.
type Lease struct {
	// Fraction of the validity after which the lease extends, in (0, 1):
	// 1.0/3 extends a 10 s lock every 3.3 s, leaving two thirds of its
	// validity for the extension and its retries.
	Fraction float64
	// MaxHold bounds how long the lease keeps one lock, from its
	// acquisition: at MaxHold the lock's Context is cancelled with a cause
	// that matches ErrExtensionLimit. It must be at least the TTL. Zero:
	// Config.MaxExtensions alone bounds the lease; a MaxHold set with
	// Config.MaxExtensions zero lifts core's default of 10 extensions.
	MaxHold time.Duration
}

// Client takes locks on a Driver's nodes and returns handles to them. It
// is safe for concurrent use. The Driver stays the caller's: close it
// after every lock is unlocked.
type Client struct {
	once  *core.Locker // one attempt: TryLock
	retry *core.Locker // until ctx ends: Lock
	clock core.Clock
	lease *Lease
	room  *waitRoom // Lock's waiters; nil: Lock polls
}

// NewClient checks opts against d and returns a Client, or an error that
// matches ErrInvalidConfig, before anything is sent: core's configuration
// errors, and a Lease whose Fraction is not in (0, 1), whose MaxHold is
// negative or below the TTL, or that comes with extension forbidden
// (negative MaxExtensions).
func NewClient(d Driver, opts Options) (*Client, error) {
	cfg := opts.Config
	if l := opts.Lease; l != nil {
		switch {
		case !(l.Fraction > 0 && l.Fraction < 1): // NaN too
			return nil, invalid("Lease.Fraction " + strconv.FormatFloat(l.Fraction, 'g', -1, 64) + " is not in (0, 1)")
		case l.MaxHold < 0:
			return nil, invalid("Lease.MaxHold " + l.MaxHold.String() + " is negative")
		case cfg.MaxExtensions < 0:
			return nil, invalid("a Lease with MaxExtensions " + strconv.Itoa(cfg.MaxExtensions) + ": extension is forbidden")
		}
		if l.MaxHold > 0 && cfg.MaxExtensions == 0 {
			cfg.MaxExtensions = math.MaxInt32
		}
		lease := *l
		opts.Lease = &lease
	}
	cfg.Retry = cfg.Retry.WithTries(math.MaxInt32)
	retry, err := New(d, cfg)
	if err != nil {
		return nil, err
	}
	cfg = retry.Config()
	if l := opts.Lease; l != nil && l.MaxHold > 0 && l.MaxHold < cfg.TTL {
		return nil, invalid("Lease.MaxHold " + l.MaxHold.String() + " is below the TTL " + cfg.TTL.String())
	}
	cfg.Retry = core.NoRetry()
	once, err := core.New(d, cfg)
	if err != nil {
		return nil, err
	}
	c := &Client{once: once, retry: retry, clock: cfg.Clock, lease: opts.Lease}
	if !opts.Poll {
		if ann, ok := d.(core.Announcer); ok {
			c.room = newWaitRoom(ann)
		} else {
			slog.Warn("redlock: the driver does not announce releases: Lock polls", "driver", fmt.Sprintf("%T", d))
		}
	}
	return c, nil
}

// Config returns the configuration in force, defaults filled in (Retry's
// count of tries is Lock's).
func (c *Client) Config() Config { return c.retry.Config() }

// TryLock makes one attempt to lock key. It returns ErrTaken when others
// hold it, ErrQuorumUnreachable when too few nodes answered, ErrNotHeld
// when the attempt won too late for any validity, ErrCancelled when ctx
// ended first, and ErrInvalidConfig for bad input, sent nowhere. A failed
// attempt leaves no key behind.
func (c *Client) TryLock(ctx context.Context, key string) (*Lock, error) {
	return c.lock(ctx, c.once, key)
}

// Lock locks key, trying again after each failed attempt until it holds
// the lock or ctx ends.
//
// Between attempts it waits for the key's release: the release script
// announces each deletion on the key's channel, and the driver's one
// subscription connection per node relays it. Lock tries again once
// enough of the nodes the holder held have announced a release, or when
// the holder's keys expire (a crashed holder), as learnt from the failed
// attempt; announcements are hints, and every attempt is the usual quorum
// round. Within the Client, one waiter per key makes the attempts and the
// others queue behind it. Where a node's announcements are not heard (its
// subscription is down, or refused: said once in the log), Lock waits at
// most Config.Retry's delay, as with Options.Poll, which always does.
//
// When ctx's deadline ends a wait, Lock returns the last attempt's error
// (ErrTaken, typically); when polling, it gives up with that error as
// soon as the next retry delay would pass the deadline. ctx cancelled, or
// ending during an attempt, gives ErrCancelled. Errors are otherwise
// TryLock's.
func (c *Client) Lock(ctx context.Context, key string) (*Lock, error) {
	return c.lock(ctx, c.retry, key)
}

// roundBound is the longest an extend round can take: the node timeout,
// once per node when sequential.
func (c *Client) roundBound() time.Duration {
	cfg := c.retry.Config()
	if cfg.FanOut == core.Sequential {
		return cfg.NodeTimeout * time.Duration(c.retry.Nodes())
	}
	return cfg.NodeTimeout
}

func (c *Client) lock(ctx context.Context, l *core.Locker, key string) (*Lock, error) {
	var lock core.Lock
	var err error
	if l == c.retry && c.room != nil && ctx != nil {
		lock, err = c.acquireWaking(ctx, l, key)
	} else {
		lock, err = l.Acquire(ctx, key)
	}
	if err != nil {
		return nil, err
	}
	return c.hold(ctx, lock), nil
}
