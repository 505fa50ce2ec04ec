package bench

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redlock-go/redlock/bench/measure"
	"github.com/redlock-go/redlock/bench/servers"
	"github.com/redlock-go/redlock/bench/target"
	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/internal/latproxy"
	"github.com/redlock-go/redlock/internal/redistest"
)

const (
	ttl      = 10 * time.Second
	maxNodes = 5
	poolSize = 64
	warmup   = 100 * time.Millisecond
)

var (
	nodeCounts  = []int{1, 3, 5}
	fanOuts     = []core.FanOut{core.Sequential, core.Multiplexed}
	concurrency = []int{1, 32}
)

// The redis-server processes and proxies are started once, by the first
// benchmark that needs them, and stopped by TestMain.
var (
	redisOnce     sync.Once
	redisSet      *servers.Redis
	errRedisStart error
	proxyOnce     sync.Once
	proxies       []*latproxy.Proxy
	errProxyStart error
	proxyDelay    = time.Millisecond
)

func TestMain(m *testing.M) {
	if v := os.Getenv("REDLOCK_BENCH_PROXY_MS"); v != "" {
		ms, err := strconv.ParseFloat(v, 64)
		if err != nil || ms < 0 {
			fmt.Fprintf(os.Stderr, "bench: bad REDLOCK_BENCH_PROXY_MS=%q\n", v)
			os.Exit(2)
		}
		proxyDelay = time.Duration(ms * float64(time.Millisecond))
	}
	code := m.Run()
	// Teardown after the results: a failure is reported, and does not
	// change them.
	if err := closeSubject(); err != nil {
		fmt.Fprintln(os.Stderr, "bench: closing the last subject:", err)
	}
	for _, p := range proxies {
		if err := p.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "bench: closing a latency proxy:", err)
		}
	}
	if redisSet != nil {
		if err := redisSet.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "bench: stopping redis-server:", err)
		}
	}
	os.Exit(code)
}

// addrs returns the addresses of maxNodes servers for driver, behind the
// proxy if asked. Redis-backed drivers skip (or fail, with
// REDLOCK_REQUIRE_REDIS=1) without redis-server.
func addrs(b testing.TB, driver string, proxied bool) []string {
	b.Helper()
	if target.InMemory(driver) {
		return []string{"mem:0", "mem:1", "mem:2", "mem:3", "mem:4"}
	}
	bin := redistest.RedisServerPath(b)
	redisOnce.Do(func() { redisSet, errRedisStart = servers.StartRedis(bin, maxNodes) })
	if errRedisStart != nil {
		b.Fatal(errRedisStart)
	}
	if !proxied {
		return redisSet.Addrs()
	}
	proxyOnce.Do(func() {
		for _, a := range redisSet.Addrs() {
			p, err := latproxy.Start(a, proxyDelay)
			if err != nil {
				errProxyStart = err
				return
			}
			proxies = append(proxies, p)
		}
	})
	if errProxyStart != nil {
		b.Fatal(errProxyStart)
	}
	var out []string
	for _, p := range proxies {
		out = append(out, p.Addr())
	}
	return out
}

// The subject of the running sub-benchmark is kept across its calls (the
// framework calls it with growing b.N), so that dialling and warm-up
// happen once; it is closed when the next sub-benchmark starts.
var (
	curName  string
	curSubj  measure.Subject
	curClose func() error
)

// closeSubject closes the kept subject, if any, and returns the close's
// error.
func closeSubject() error {
	var err error
	if curClose != nil {
		err = curClose()
	}
	curName, curSubj, curClose, curHot = "", nil, nil, nil
	return err
}

// closeKept closes the previous sub-benchmark's subject. Its close's
// error is logged: it is not the failure of the benchmark starting.
func closeKept(b *testing.B) {
	if err := closeSubject(); err != nil {
		b.Logf("closing the previous subject: %v", err)
	}
}

// checkClose calls closeFn, and fails tb if it fails.
func checkClose(tb testing.TB, closeFn func() error) {
	tb.Helper()
	if err := closeFn(); err != nil {
		tb.Errorf("close: %v", err)
	}
}

// newSubject makes the subject of a benchmark over its dialled driver.
type newSubject func(drv core.Driver, fan core.FanOut) (measure.Subject, error)

// redlockSubject is a redlock.Client's TryLock+Unlock of the bare handle
// (no lease, no Context), the subject of the matrix.
func redlockSubject(drv core.Driver, fan core.FanOut) (measure.Subject, error) {
	return target.NewRedlock(drv, fan, ttl)
}

func subject(b *testing.B, driver string, as []string, fan core.FanOut, spec measure.Spec, mk newSubject) measure.Subject {
	if curName == b.Name() {
		return curSubj
	}
	closeKept(b)
	drv, closeFn, err := target.Dial(driver, as, target.DialOptions{PoolSize: poolSize})
	if err != nil {
		b.Fatal(err)
	}
	s, err := mk(drv, fan)
	if err != nil {
		_ = closeFn() // mk's error is the one to report
		b.Fatal(err)
	}
	curName, curSubj, curClose = b.Name(), s, closeFn
	measure.Prepare(s, spec).Warmup(context.Background(), warmup)
	return s
}

// run measures b.N TryLock+Unlock pairs of a Client and reports the latency
// percentiles and goroutines per pair next to the framework's ns/op, B/op
// and allocs/op.
func run(b *testing.B, driver string, as []string, nodes int, fan core.FanOut, clients int, shared bool) {
	runSubject(b, driver, as, nodes, fan, clients, shared, redlockSubject)
}

// runSubject is run with the subject mk makes; a subject that counts its
// rounds (a target.Variant) reports rounds/op too.
func runSubject(b *testing.B, driver string, as []string, nodes int, fan core.FanOut, clients int, shared bool, mk newSubject) {
	spec := measure.Spec{Clients: clients, SharedKey: shared, KeyPrefix: "bench:" + b.Name() + ":"}
	s := subject(b, driver, as[:nodes], fan, spec, mk)
	spec.Ops = int64(b.N)
	loop := measure.Prepare(s, spec)
	b.ReportAllocs()
	b.ResetTimer()
	loop.Go(context.Background())
	b.StopTimer()
	r := loop.Result()
	if r.Errors > 0 && !shared {
		b.Fatalf("%d of %d pairs failed, first: %s", r.Errors, r.Ops, r.FirstError)
	}
	if r.Errors > 0 {
		// Under contention a node timeout is a result, not a broken run.
		b.Logf("%d of %d pairs failed, first: %s", r.Errors, r.Ops, r.FirstError)
		b.ReportMetric(100*float64(r.Errors)/float64(r.Ops), "errors-%")
	}
	b.ReportMetric(r.P50Us, "p50-µs")
	b.ReportMetric(r.P99Us, "p99-µs")
	b.ReportMetric(r.GoroutinesPerOp, "goroutines/op")
	if _, ok := s.(measure.RoundCounter); ok {
		b.ReportMetric(r.RoundsPerOp, "rounds/op")
	}
	if shared {
		b.ReportMetric(100*float64(r.Acquired)/float64(r.Ops), "won-%")
	}
}

// BenchmarkAcquireRelease is the matrix: driver × N × fan-out × clients on
// distinct keys, servers on loopback.
func BenchmarkAcquireRelease(b *testing.B) {
	for _, d := range target.Drivers() {
		for _, n := range nodeCounts {
			for _, f := range fanOuts {
				for _, c := range concurrency {
					b.Run(fmt.Sprintf("driver=%s/nodes=%d/fanout=%s/clients=%d", d, n, f, c), func(b *testing.B) {
						run(b, d, addrs(b, d, false), n, f, c, false)
					})
				}
			}
		}
	}
}

// BenchmarkContended has 32 clients race for one key at N=5: most rounds
// lose (won-% says how many win), which exercises the cleanup path.
func BenchmarkContended(b *testing.B) {
	const n, c = maxNodes, 32
	for _, d := range target.Drivers() {
		b.Run(fmt.Sprintf("driver=%s/nodes=%d/fanout=%s/clients=%d", d, n, core.Multiplexed, c), func(b *testing.B) {
			run(b, d, addrs(b, d, false), n, core.Multiplexed, c, true)
		})
	}
}

// BenchmarkProxy runs one client against servers behind the latency proxy
// (REDLOCK_BENCH_PROXY_MS each way, default 1 ms), where a round costs
// about one round trip multiplexed and N sequential.
func BenchmarkProxy(b *testing.B) {
	if proxyDelay == 0 {
		b.Skip("bench: REDLOCK_BENCH_PROXY_MS=0")
	}
	for _, d := range target.Drivers() {
		if target.InMemory(d) {
			continue
		}
		for _, n := range nodeCounts {
			for _, f := range fanOuts {
				b.Run(fmt.Sprintf("driver=%s/nodes=%d/fanout=%s/clients=1", d, n, f), func(b *testing.B) {
					run(b, d, addrs(b, d, true), n, f, 1, false)
				})
			}
		}
	}
}
