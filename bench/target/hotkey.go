package target

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/bench/matrix"
	"github.com/redlock-go/redlock/bench/measure"
	"github.com/redlock-go/redlock/core"
)

// HotKey is this library's subject of the hot-key measurement
// (measure.RunHandoff): one redlock.Client over one driver, shared by
// every contender of the process, whose Lock waits as long as it takes.
type HotKey struct {
	C *redlock.Client
}

// NewHotKey returns the hot-key subject over drv for wait mode
// (matrix.Wake: the Client's default, woken by release announcements;
// matrix.Poll: Options.Poll, sleeping Options.Backoff's delays; matrix.Fair:
// Options.Fair, the servers' waiter queue), with the
// given TTL, multiplexed rounds and Options.Backoff's default delays
// (random, 50–250 ms).
func NewHotKey(drv core.Driver, mode string, ttl time.Duration) (*HotKey, error) {
	opts := redlock.Options{TTL: ttl, FanOut: core.Multiplexed}
	switch mode {
	case matrix.Wake:
	case matrix.Poll:
		opts.Poll = true
	case matrix.Fair:
		opts.Fair = true
	default:
		return nil, fmt.Errorf("target: unknown wait mode %q (%v)", mode, matrix.WaitModes)
	}
	c, err := redlock.NewClient(drv, opts)
	if err != nil {
		return nil, err
	}
	return &HotKey{C: c}, nil
}

// Contender implements measure.HotSubject.
func (h *HotKey) Contender(key string) measure.Contender { return &hotContender{c: h.C, key: key} }

type hotContender struct {
	c    *redlock.Client
	key  string
	l    *redlock.Lock // the handle Lock returned, while held
	held bool
}

// Lock waits with Client.Lock: ctx bounds the wait only, the handle it
// returns does not end with ctx.
func (h *hotContender) Lock(ctx context.Context) error {
	if h.held {
		return errors.New("target: Lock while holding the lock")
	}
	var err error
	if h.l, err = h.c.Lock(ctx, h.key); err != nil {
		return err
	}
	h.held = true
	return nil
}

// Unlock unlocks the handle Lock returned.
func (h *hotContender) Unlock(ctx context.Context) error {
	if !h.held {
		return errors.New("target: Unlock without a lock")
	}
	h.held = false
	return h.l.Unlock(ctx)
}
