package systest

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/internal/redistest"
)

// BenchAcquireRelease measures one TryLock plus one Unlock against N = 1,
// 3, 5 local redis-servers from one goroutine, in both fan-outs; allocs/op
// is per acquire+release pair. A driver's benchmark calls it with its
// Dialer; bench/ holds the cross-library matrix.
func BenchAcquireRelease(b *testing.B, dial Dialer) {
	for _, n := range []int{1, 3, 5} {
		d := openBench(b, dial, n)
		for _, mode := range modes {
			b.Run(fmt.Sprintf("N=%d/%v", n, mode), func(b *testing.B) {
				client, err := redlock.NewClient(d, redlock.Options{TTL: 10 * time.Second, FanOut: mode})
				if err != nil {
					b.Fatal(err)
				}
				ctx := context.Background()
				b.ReportAllocs()
				for b.Loop() {
					lock, err := client.TryLock(ctx, "bench")
					if err != nil {
						b.Fatal(err)
					}
					if err := lock.Unlock(ctx); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		if err := d.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchAcquireReleaseParallel measures acquire+release pairs from 32
// goroutines on distinct keys against 5 local redis-servers, multiplexed,
// with a 50 ms node timeout: the shape of a loaded service. allocs/op is
// per pair; failed/op counts pairs that did not succeed; writes/op and
// reads/op count the process's write and read system calls per pair
// (Linux): an upper bound on the sockets', since the runtime's netpoll
// wake-ups and the reads that meet EAGAIN count too.
func BenchAcquireReleaseParallel(b *testing.B, dial Dialer) {
	const n, clients = 5, 32
	d := openBench(b, dial, n)
	defer func() {
		if err := d.Close(); err != nil {
			b.Error(err)
		}
	}()
	client, err := redlock.NewClient(d, redlock.Options{TTL: 10 * time.Second,
		NodeTimeout: 50 * time.Millisecond})
	if err != nil {
		b.Fatal(err)
	}
	var next, failed atomic.Int64
	b.SetParallelism((clients + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	b.ReportAllocs()
	io0, ioOK := processIO()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		key := "bench:" + strconv.FormatInt(next.Add(1), 10)
		for pb.Next() {
			lock, err := client.TryLock(ctx, key)
			if err != nil {
				failed.Add(1)
				continue
			}
			if err := lock.Unlock(ctx); err != nil {
				failed.Add(1)
			}
		}
	})
	b.ReportMetric(float64(failed.Load())/float64(b.N), "failed/op")
	if io1, ok := processIO(); ioOK && ok {
		b.ReportMetric(float64(io1.writes-io0.writes)/float64(b.N), "writes/op")
		b.ReportMetric(float64(io1.reads-io0.reads)/float64(b.N), "reads/op")
	}
}

// ioCounts are the process's read and write system calls so far.
type ioCounts struct{ reads, writes int64 }

// processIO reads /proc/self/io (Linux): the system calls of every thread
// of the process, the benchmark's servers excluded. It reports false
// where there is no such file.
func processIO() (ioCounts, bool) {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return ioCounts{}, false
	}
	var c ioCounts
	var found int
	for line := range strings.Lines(string(b)) {
		name, v, ok := strings.Cut(strings.TrimSpace(line), ": ")
		n, err := strconv.ParseInt(v, 10, 64)
		if !ok || err != nil {
			continue
		}
		switch name {
		case "syscr":
			c.reads, found = n, found+1
		case "syscw":
			c.writes, found = n, found+1
		}
	}
	return c, found == 2
}

// openBench starts n servers and dials a driver over them.
func openBench(b *testing.B, dial Dialer, n int) Closer {
	b.Helper()
	d, err := dial(addrsOf(redistest.StartN(b, n, redistest.Options{})))
	if err != nil {
		b.Fatal(err)
	}
	return d
}
