// Package peers adapts other Redis lock libraries to the benchmark loop of
// package measure, so that the redlock command compares them with this
// library on the same servers, through the same loop and histogram:
//
//   - redsync v4 over redigo and over rueidis: Redlock over N pools, a
//     goroutine per node, waiting for all;
//   - bsm/redislock over go-redis: one instance, so N=1 only;
//   - rueidislock: a majority of 2k-1 keys on ONE server; N is its key count.
//
// Each is configured fairly: the same TTL, one try (no retries on the
// uncontended path), its own default fan-out, and a connection pool of the
// same size where it has one. This package lives in its own module so
// that the library's go.mod does not carry the peers.
package peers

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	rsredis "github.com/go-redsync/redsync/v4/redis"
	rsredigo "github.com/go-redsync/redsync/v4/redis/redigo"
	rsrueidis "github.com/go-redsync/redsync/v4/redis/rueidis"
	"github.com/gomodule/redigo/redis"
	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidiscompat"
	"github.com/redis/rueidis/rueidislock"

	"github.com/redlock-go/redlock/bench/matrix"
	"github.com/redlock-go/redlock/bench/measure"
)

// Options are the connection settings shared by every peer.
type Options struct {
	Username, Password string
	TLS                *tls.Config
	TTL                time.Duration
	PoolSize           int
}

// TLSConfig returns matrix.ClientTLS(caFile), or nil when enabled is false.
func TLSConfig(enabled bool, caFile string) (*tls.Config, error) {
	if !enabled {
		return nil, nil
	}
	return matrix.ClientTLS(caFile)
}

// Subject is a peer bound to its servers.
type Subject interface {
	measure.Subject
	Close() error
}

// Open returns the peer of cell over addrs (the first cell.Nodes of them
// are used; rueidislock and redislock use addrs[0] only).
func Open(cell matrix.Cell, addrs []string, o Options) (Subject, error) {
	if len(addrs) < cell.Nodes {
		return nil, fmt.Errorf("peers: %d addresses for N=%d", len(addrs), cell.Nodes)
	}
	switch cell.Subject() {
	case "redsync+redigo":
		return newRedsyncRedigo(addrs[:cell.Nodes], o), nil
	case "redsync+rueidis":
		return newRedsyncRueidis(addrs[:cell.Nodes], o)
	case "redislock+go-redis":
		return newRedislock(addrs[0], o), nil
	case "rueidislock+rueidis":
		return newRueidislock(addrs[0], cell.Nodes, o)
	}
	return nil, fmt.Errorf("peers: unknown subject %q", cell.Subject())
}

// redsyncSubject is redsync over any of its pool adapters.
type redsyncSubject struct {
	rs    *redsync.Redsync
	ttl   time.Duration
	close func() error
}

func (s *redsyncSubject) Close() error { return s.close() }

// Worker keeps one Mutex per client goroutine: a Mutex holds the value of
// its last lock, and redsync documents reusing it.
func (s *redsyncSubject) Worker(key string) measure.Worker {
	return &redsyncWorker{m: s.rs.NewMutex(key, redsync.WithExpiry(s.ttl), redsync.WithTries(1))}
}

type redsyncWorker struct{ m *redsync.Mutex }

func (w *redsyncWorker) Pair(ctx context.Context) (bool, error) {
	if err := w.m.LockContext(ctx); err != nil {
		if isTaken(err) {
			return false, nil
		}
		return false, err
	}
	_, err := w.m.UnlockContext(ctx)
	return true, err
}

// isTaken reports whether a failed redsync lock only met other holders:
// its error (ErrFailed, ErrTaken, or ErrNodeTaken joined per node) wraps
// no RedisError, which is a failure to talk to a node.
func isTaken(err error) bool {
	var re *redsync.RedisError
	return !errors.As(err, &re)
}

func newRedsyncRedigo(addrs []string, o Options) *redsyncSubject {
	var pools []*redis.Pool
	for _, a := range addrs {
		addr := a
		dialOpts := []redis.DialOption{redis.DialConnectTimeout(5 * time.Second)}
		if o.Username != "" {
			dialOpts = append(dialOpts, redis.DialUsername(o.Username))
		}
		if o.Password != "" {
			dialOpts = append(dialOpts, redis.DialPassword(o.Password))
		}
		if o.TLS != nil {
			dialOpts = append(dialOpts, redis.DialUseTLS(true), redis.DialTLSConfig(o.TLS))
		}
		pools = append(pools, &redis.Pool{
			MaxIdle:     o.PoolSize,
			IdleTimeout: time.Minute,
			Dial:        func() (redis.Conn, error) { return redis.Dial("tcp", addr, dialOpts...) },
		})
	}
	var rp []rsredis.Pool
	for _, p := range pools {
		rp = append(rp, rsredigo.NewPool(p))
	}
	return &redsyncSubject{rs: redsync.New(rp...), ttl: o.TTL, close: func() error {
		var errs []error
		for _, p := range pools {
			errs = append(errs, p.Close())
		}
		return errors.Join(errs...)
	}}
}

func rueidisOption(addr string, o Options) rueidis.ClientOption {
	return rueidis.ClientOption{
		InitAddress:  []string{addr},
		Username:     o.Username,
		Password:     o.Password,
		TLSConfig:    o.TLS,
		DisableCache: true, // locks are never read through the cache
	}
}

func newRedsyncRueidis(addrs []string, o Options) (*redsyncSubject, error) {
	var clients []rueidis.Client
	closeAll := func() error {
		for _, c := range clients {
			c.Close()
		}
		return nil
	}
	var rp []rsredis.Pool
	for _, a := range addrs {
		c, err := rueidis.NewClient(rueidisOption(a, o))
		if err != nil {
			return nil, errors.Join(err, closeAll())
		}
		clients = append(clients, c)
		rp = append(rp, rsrueidis.NewPool(rueidiscompat.NewAdapter(c)))
	}
	return &redsyncSubject{rs: redsync.New(rp...), ttl: o.TTL, close: closeAll}, nil
}

// redislockSubject is bsm/redislock on one server.
type redislockSubject struct {
	rdb *goredis.Client
	c   *redislock.Client
	ttl time.Duration
}

func newRedislock(addr string, o Options) *redislockSubject {
	rdb := goredis.NewClient(&goredis.Options{
		Addr: addr, Username: o.Username, Password: o.Password, TLSConfig: o.TLS,
		PoolSize: o.PoolSize, MinIdleConns: 0,
	})
	return &redislockSubject{rdb: rdb, c: redislock.New(rdb), ttl: o.TTL}
}

func (s *redislockSubject) Close() error { return s.rdb.Close() }

func (s *redislockSubject) Worker(key string) measure.Worker {
	return &redislockWorker{s: s, key: key}
}

type redislockWorker struct {
	s   *redislockSubject
	key string
}

// Pair obtains with the default options: no retry.
func (w *redislockWorker) Pair(ctx context.Context) (bool, error) {
	l, err := w.s.c.Obtain(ctx, w.key, w.s.ttl, nil)
	if err != nil {
		if errors.Is(err, redislock.ErrNotObtained) {
			return false, nil
		}
		return false, err
	}
	return true, l.Release(ctx)
}

// rueidislockSubject is rueidislock with a majority of n keys on one
// server: KeyMajority = n/2+1 of 2·KeyMajority-1 keys.
type rueidislockSubject struct {
	l rueidislock.Locker
}

func newRueidislock(addr string, n int, o Options) (*rueidislockSubject, error) {
	opt := rueidisOption(addr, o)
	opt.DisableCache = false // rueidislock relies on client-side caching for wake-ups
	lo := rueidislock.LockerOption{
		ClientOption:   opt,
		KeyValidity:    o.TTL,
		KeyMajority:    int32(n/2 + 1), //nolint:gosec // G115: n counts nodes, a handful
		NoLoopTracking: true,
	}
	l, err := rueidislock.NewLocker(lo)
	if err != nil && strings.Contains(err.Error(), "DisableCache") {
		// A server without CLIENT TRACKING (miniredis): run without the
		// wake-ups, which an uncontended Try never waits for anyway.
		lo.ClientOption.DisableCache = true
		l, err = rueidislock.NewLocker(lo)
	}
	if err != nil {
		return nil, err
	}
	return &rueidislockSubject{l: l}, nil
}

func (s *rueidislockSubject) Close() error { s.l.Close(); return nil }

func (s *rueidislockSubject) Worker(key string) measure.Worker {
	return &rueidislockWorker{l: s.l, key: key}
}

type rueidislockWorker struct {
	l   rueidislock.Locker
	key string
}

// Pair tries once (TryWithContext does not wait); cancel releases the keys
// and returns once they are deleted.
func (w *rueidislockWorker) Pair(ctx context.Context) (bool, error) {
	_, cancel, err := w.l.TryWithContext(ctx, w.key)
	if err != nil {
		if errors.Is(err, rueidislock.ErrNotLocked) {
			return false, nil
		}
		return false, err
	}
	cancel()
	return true, nil
}
