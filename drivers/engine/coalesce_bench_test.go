package engine

import (
	"context"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlock-go/redlock/bench/measure"
	"github.com/redlock-go/redlock/core"
)

// relayDuplex is a Duplex over an in-process server: each Write hands
// the pipeline to the server's goroutine, as a socket wakes a server's
// event loop, and the server answers every command as soon as it runs;
// Read takes the answers in order. writes counts the Writes of every
// connection of a benchmark.
type relayDuplex struct {
	okConn
	writes *atomic.Int64
	in     chan []bool // per pipeline written: per command, a SET
	out    chan []bool // the same, answered
	once   sync.Once
}

func newRelayDuplex(writes *atomic.Int64) *relayDuplex {
	c := &relayDuplex{writes: writes, in: make(chan []bool, 64), out: make(chan []bool, 64)}
	go func() {
		for w := range c.in {
			c.out <- w
		}
		close(c.out)
	}()
	return c
}

func (c *relayDuplex) Write(_ context.Context, cmds [][]string) error {
	c.writes.Add(1)
	sets := make([]bool, len(cmds))
	for i, cmd := range cmds {
		sets[i] = cmd[0] == "SET"
	}
	c.in <- sets
	return nil
}

func (c *relayDuplex) Read(_ context.Context, replies []Reply) error {
	sets, ok := <-c.out
	if !ok || len(sets) != len(replies) {
		return errConnFailed
	}
	for i := range replies {
		replies[i] = Reply{Kind: KindInt, Int: 1}
		if sets[i] {
			replies[i] = Reply{Kind: KindOK}
		}
	}
	return nil
}

func (c *relayDuplex) Close() error {
	c.once.Do(func() { close(c.in) })
	return nil
}

// BenchmarkCoalesce runs 32 goroutines of acquire+release pairs on
// distinct keys at N=5 over relayDuplex connections, each round
// gathering the replies it needs as the runner's do (Round.Needed: a
// quorum of 3 for a won acquire, all 5 for a release). writes/op is the
// pipelines written per pair, of ten commands: 10/32 when every write
// carries one command of each goroutine. waits/round counts the Gathers
// that found fewer replies than they asked for, so waited: 1 when each
// round's goroutine is woken once. cpu-µs/op is the process's CPU per
// pair, the relay servers' included.
func BenchmarkCoalesce(b *testing.B) {
	const n, clients = 5, 32
	var writes, parks atomic.Int64
	dial := func(context.Context, int) (Conn, error) { return newRelayDuplex(&writes), nil }
	names := make([]string, n)
	for i := range names {
		names[i] = "node" + strconv.Itoa(i) + ":6379"
	}
	e := mustNew(b, Config{Names: names, Dial: dial})
	defer e.Close()
	round := func(cmd core.Command, need int) {
		bt := e.Begin(context.Background())
		dl := time.Now().Add(10 * time.Second)
		for i := range n {
			bt.Send(i, cmd, dl)
		}
		g := bt.(core.Gatherer)
		for k := need; k > 0; k-- {
			if g.Ready() < k {
				parks.Add(1) // the round's goroutine waits for the replies
			}
			if r, ok := g.Gather(k, nil); !ok || r.Status != core.StatusOK {
				panic(r.Err)
			}
		}
		bt.Close()
	}
	var next atomic.Uint64
	procs := runtime.GOMAXPROCS(0)
	b.SetParallelism((clients + procs - 1) / procs)
	b.ReportAllocs()
	cpu0, cpuOK := measure.ProcessCPU()
	w0, p0 := writes.Load(), parks.Load()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := next.Add(1)
		key := "k" + strconv.FormatUint(i, 10)
		for pb.Next() {
			round(acquire(key, i), 3) // a quorum, as a won acquire's round
			round(release(key, i), n)
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(writes.Load()-w0)/float64(b.N), "writes/op")
	b.ReportMetric(float64(parks.Load()-p0)/float64(2*b.N), "waits/round")
	if cpu1, ok := measure.ProcessCPU(); ok && cpuOK {
		b.ReportMetric(measure.CPUPerOpUs(cpu0, cpu1, int64(b.N)), "cpu-µs/op")
	}
}
