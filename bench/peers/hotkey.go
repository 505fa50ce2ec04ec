package peers

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync/atomic"

	"github.com/go-redsync/redsync/v4"
	"github.com/redis/rueidis/rueidislock"

	"github.com/redlock-go/redlock/bench/matrix"
	"github.com/redlock-go/redlock/bench/measure"
)

// The peers as subjects of the hot-key measurement (measure.RunHandoff,
// the Handoff cells): each contender waits for the lock as long as it
// takes, in the peer's own way, with one client of the peer shared by
// every contender of the process.
//
//   - redsync: Mutex.LockContext with WithTries(MaxInt32) and redsync's
//     default delay between tries, random 50–250 ms: it polls, as this
//     library's Options.Poll does with Options.Backoff's default delays;
//   - rueidislock: Locker.WithContext, which waits for the key's
//     client-side-caching invalidation (or its KeyValidity without
//     caching) and tries again.

// HotSubject is a peer's hot-key subject bound to its servers.
type HotSubject interface {
	measure.HotSubject
	Close() error
}

// HotTries is redsync's count of tries in the Handoff cells: enough to
// keep waiting for the whole cell.
const HotTries = math.MaxInt32

// OpenHotKey returns the hot-key subject of Handoff cell over addrs,
// sharing Open's connection settings.
func OpenHotKey(cell matrix.Cell, addrs []string, o Options) (HotSubject, error) {
	if len(addrs) < cell.Nodes {
		return nil, fmt.Errorf("peers: %d addresses for N=%d", len(addrs), cell.Nodes)
	}
	switch cell.Subject() {
	case "redsync+redigo":
		return &redsyncHot{newRedsyncRedigo(addrs[:cell.Nodes], o)}, nil
	case "redsync+rueidis":
		s, err := newRedsyncRueidis(addrs[:cell.Nodes], o)
		if err != nil {
			return nil, err
		}
		return &redsyncHot{s}, nil
	case "rueidislock+rueidis":
		s, err := newRueidislock(addrs[0], cell.Nodes, o)
		if err != nil {
			return nil, err
		}
		return &rueidislockHot{s}, nil
	}
	return nil, fmt.Errorf("peers: no hot-key subject for %q", cell.Subject())
}

type redsyncHot struct{ *redsyncSubject }

// Contender keeps one Mutex per contender, as in the matrix.
func (s *redsyncHot) Contender(key string) measure.Contender {
	return &redsyncContender{m: s.rs.NewMutex(key, redsync.WithExpiry(s.ttl), redsync.WithTries(HotTries))}
}

type redsyncContender struct{ m *redsync.Mutex }

// Lock tries until it holds the lock or ctx ends (redsync then returns
// ErrFailed); a lock taken is the Mutex's until Unlock.
func (c *redsyncContender) Lock(ctx context.Context) error { return c.m.LockContext(ctx) }

func (c *redsyncContender) Unlock(ctx context.Context) error {
	ok, err := c.m.UnlockContext(ctx)
	if err == nil && !ok {
		err = errors.New("redsync: unlock deleted too few keys")
	}
	return err
}

type rueidislockHot struct{ *rueidislockSubject }

func (s *rueidislockHot) Contender(key string) measure.Contender {
	return &rueidislockContender{l: s.l, key: key}
}

type rueidislockContender struct {
	l      rueidislock.Locker
	key    string
	cancel context.CancelFunc
}

// Waiting states of a rueidislock contender: a lock's life is the
// context given to WithContext, so the wait cannot end with the caller's
// ctx directly; the contender's own context is cancelled if the caller's
// ctx ends first, and a lock that came too late is released unused.
const (
	waiting int32 = iota
	holding
	abandoned
)

// Lock waits with WithContext on a context of its own, which the caller's
// ctx ending cancels only while still waiting: a lock once held stays
// held until Unlock, as measure.Contender requires.
func (c *rueidislockContender) Lock(ctx context.Context) error {
	own, cancelOwn := context.WithCancel(context.WithoutCancel(ctx))
	var state atomic.Int32
	stop := context.AfterFunc(ctx, func() {
		if state.CompareAndSwap(waiting, abandoned) {
			cancelOwn()
		}
	})
	_, unlock, err := c.l.WithContext(own, c.key)
	if err == nil && state.CompareAndSwap(waiting, holding) {
		stop()
		c.cancel = func() { unlock(); cancelOwn() }
		return nil
	}
	stop()
	if err == nil {
		unlock() // acquired as ctx ended: released unused
	}
	cancelOwn()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// Unlock cancels the lock's context: rueidislock deletes its keys and
// returns once they are deleted.
func (c *rueidislockContender) Unlock(context.Context) error {
	if c.cancel == nil {
		return errors.New("rueidislock: Unlock without a lock")
	}
	c.cancel()
	c.cancel = nil
	return nil
}
