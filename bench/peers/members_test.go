package peers

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"
	rsredis "github.com/go-redsync/redsync/v4/redis"
	rsgoredis "github.com/go-redsync/redsync/v4/redis/goredis/v9"
	goredisv9 "github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/bench/measure"
	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers"
	"github.com/redlock-go/redlock/drivers/goredis"
	"github.com/redlock-go/redlock/internal/redistest"
)

var clusterRounds = flag.Int("clusters.rounds", 1, "BenchmarkClusters: measure the cells this many times, interleaved (names of the later rounds end in #01, ...)")

// startCluster starts a Redis Cluster of masters masters with replicas
// replicas each on loopback (internal/redistest), stopped when tb's
// cleanups run, and returns its nodes' addresses once it is healthy.
// Without redis-server on PATH tb is skipped, or fails with
// REDLOCK_REQUIRE_REDIS=1.
func startCluster(tb testing.TB, masters, replicas int) []string {
	tb.Helper()
	if replicas == 0 {
		replicas = -1 // redistest's "none": its zero means one
	}
	// A long node timeout: a loaded benchmark must not see a failover.
	return redistest.StartCluster(tb, redistest.ClusterOptions{
		Masters: masters, Replicas: replicas, NodeTimeout: 15 * time.Second,
	}).Addrs()
}

// clusterSubject is a measure.Subject with an exclusion check and a close.
type clusterSubject interface {
	measure.Subject
	// exclusion holds key and checks that a second try does not win it.
	exclusion(ctx context.Context, key string) error
	close()
}

// refusal is the error of a second try on a held key that was not
// refused as want: the try's own error, or that it acquired the key.
func refusal(what string, err error, want string) error {
	if err == nil {
		return fmt.Errorf("%s acquired the held key, want %s", what, want)
	}
	return fmt.Errorf("%s: %w, want %s", what, err, want)
}

// redlockClusters is this library over N Clusters as N members
// (goredis.DialMembers), the Client of bench's BenchmarkMembers.
type redlockClusters struct {
	c *redlock.Client
	d *drivers.Driver
}

func newRedlockClusters(clusters [][]string) (*redlockClusters, error) {
	var ms []drivers.Member
	for _, c := range clusters {
		ms = append(ms, drivers.NewCluster(c...))
	}
	d, err := goredis.DialMembers(ms, goredis.Options{})
	if err != nil {
		return nil, err
	}
	c, err := redlock.NewClient(d, redlock.Options{TTL: 10 * time.Second, NodeTimeout: time.Second, FanOut: core.Multiplexed})
	if err != nil {
		return nil, errors.Join(err, d.Close())
	}
	return &redlockClusters{c: c, d: d}, nil
}

func (s *redlockClusters) Worker(key string) measure.Worker { return redlockWorker{s.c, key} }
func (s *redlockClusters) close()                           { _ = s.d.Close() } // nothing is left to lose

type redlockWorker struct {
	c   *redlock.Client
	key string
}

func (w redlockWorker) Pair(ctx context.Context) (bool, error) {
	l, err := w.c.TryLock(ctx, w.key)
	if errors.Is(err, core.ErrTaken) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, l.Unlock(ctx)
}

func (s *redlockClusters) exclusion(ctx context.Context, key string) error {
	l, err := s.c.TryLock(ctx, key)
	if err != nil {
		return err
	}
	_, err = s.c.TryLock(ctx, key)
	if !errors.Is(err, core.ErrTaken) {
		return errors.Join(refusal("second TryLock", err, "ErrTaken"), l.Unlock(ctx))
	}
	return l.Unlock(ctx)
}

// redsyncClusters is redsync over one go-redis ClusterClient per Cluster
// (its goredis/v9 pool takes any UniversalClient): each Cluster one of
// its pools, one try, a goroutine per pool.
type redsyncClusters struct {
	*redsyncSubject
}

func newRedsyncClusters(clusters [][]string) *redsyncClusters {
	var cs []*goredisv9.ClusterClient
	var pools []rsredis.Pool
	for _, c := range clusters {
		cc := goredisv9.NewClusterClient(&goredisv9.ClusterOptions{Addrs: c, PoolSize: 8})
		cs = append(cs, cc)
		pools = append(pools, rsgoredis.NewPool(cc))
	}
	return &redsyncClusters{&redsyncSubject{rs: redsync.New(pools...), ttl: 10 * time.Second, close: func() error {
		var errs []error
		for _, c := range cs {
			errs = append(errs, c.Close())
		}
		return errors.Join(errs...)
	}}}
}

func (s *redsyncClusters) close() { _ = s.Close() } // nothing is left to lose

func (s *redsyncClusters) exclusion(ctx context.Context, key string) error {
	a := s.rs.NewMutex(key, redsync.WithExpiry(s.ttl), redsync.WithTries(1))
	b := s.rs.NewMutex(key, redsync.WithExpiry(s.ttl), redsync.WithTries(1))
	if err := a.LockContext(ctx); err != nil {
		return err
	}
	if err := b.LockContext(ctx); err == nil || !isTaken(err) {
		_, uerr := a.UnlockContext(ctx)
		return errors.Join(refusal("second lock", err, "taken"), uerr)
	}
	_, err := a.UnlockContext(ctx)
	return err
}

// rueidislockCluster is rueidislock on one Cluster, n keys: its keys
// spread over the Cluster's slots, so over its masters.
type rueidislockCluster struct {
	*rueidislockSubject
}

func newRueidislockCluster(addrs []string, n int) (*rueidislockCluster, error) {
	l, err := rueidislock.NewLocker(rueidislock.LockerOption{
		ClientOption:   rueidis.ClientOption{InitAddress: addrs},
		KeyValidity:    10 * time.Second,
		KeyMajority:    int32(n/2 + 1), //nolint:gosec // G115: n counts keys, a handful
		NoLoopTracking: true,
	})
	if err != nil {
		return nil, err
	}
	return &rueidislockCluster{&rueidislockSubject{l: l}}, nil
}

func (s *rueidislockCluster) close() { _ = s.Close() } // nothing is left to lose

func (s *rueidislockCluster) exclusion(ctx context.Context, key string) error {
	_, cancel, err := s.l.TryWithContext(ctx, key)
	if err != nil {
		return err
	}
	defer cancel()
	if _, c2, err := s.l.TryWithContext(ctx, key); !errors.Is(err, rueidislock.ErrNotLocked) {
		if err == nil {
			c2()
		}
		return refusal("second try", err, "ErrNotLocked")
	}
	return nil
}

// BenchmarkClusters is the uncontended pair, one client, over Redis
// Clusters (3 masters, a replica each): this library over N=3 Clusters
// as members (goredis.DialMembers, no WAIT: bench's BenchmarkMembers
// cell nodes=3/topology=cluster/wait=none), redsync over the same 3
// Clusters (a go-redis ClusterClient per pool), and rueidislock on the
// first Cluster with 3 keys (KeyMajority 2), its keys on the Cluster's
// masters by slot. Each cell checks exclusion first and fails on a pair
// that did not acquire. It reports p50-µs and p99-µs.
//
//	go test -run '^$' -bench Clusters -benchtime 2000x . -clusters.rounds 3
func BenchmarkClusters(b *testing.B) {
	const n = 3
	var clusters [][]string
	for range n {
		clusters = append(clusters, startCluster(b, 3, 1))
	}
	cells := []struct {
		name string
		open func() (clusterSubject, error)
	}{
		{"lib=redlock+goredis/members=3-clusters", func() (clusterSubject, error) { return newRedlockClusters(clusters) }},
		{"lib=redsync+goredis/members=3-clusters", func() (clusterSubject, error) { return newRedsyncClusters(clusters), nil }},
		{"lib=rueidislock/members=1-cluster-3-keys", func() (clusterSubject, error) { return newRueidislockCluster(clusters[0], n) }},
	}
	for range max(*clusterRounds, 1) {
		for _, cell := range cells {
			b.Run(cell.name, func(b *testing.B) {
				s, err := cell.open()
				if err != nil {
					b.Fatal(err)
				}
				defer s.close()
				ctx := context.Background()
				prefix := "bench:" + b.Name() + ":" + strconv.Itoa(b.N) + ":"
				if err := s.exclusion(ctx, prefix+"exclusion"); err != nil {
					b.Fatalf("exclusion check: %v", err)
				}
				spec := measure.Spec{Clients: 1, KeyPrefix: prefix}
				measure.Prepare(s, spec).Warmup(ctx, 100*time.Millisecond)
				spec.Ops = int64(b.N)
				loop := measure.Prepare(s, spec)
				b.ResetTimer()
				loop.Go(ctx)
				b.StopTimer()
				r := loop.Result()
				if r.Errors > 0 || r.Acquired != r.Ops {
					b.Fatalf("%d of %d pairs acquired, %d failed, first error: %s", r.Acquired, r.Ops, r.Errors, r.FirstError)
				}
				b.ReportMetric(r.P50Us, "p50-µs")
				b.ReportMetric(r.P99Us, "p99-µs")
			})
		}
	}
}
