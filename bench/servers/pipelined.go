package servers

import (
	"context"
	"crypto/sha1" //nolint:gosec // G505: Redis names scripts by their SHA-1; no security rests on it
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redlock-go/redlock/bench/measure"
	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers/wire"
)

// ReleaseScript is the library's release script, the one every driver
// sends (wire.Release), so that the pipelined limit costs the servers
// what a pair's release costs them.
var ReleaseScript = wire.Release.Src

// PipelineSpec is the servers' pipelined limit for the work of one
// acquire+release pair: on each server, SET key token NX PX ttl then the
// release script by EVALSHA, Depth pairs on distinct keys per pipelined
// batch, for Duration after Warmup.
type PipelineSpec struct {
	Addrs     []string
	Options   measure.ServerOptions
	Depth     int
	Warmup    time.Duration
	Duration  time.Duration
	TTL       time.Duration
	KeyPrefix string
}

// Pipelined is the servers' pipelined limit: what the commands of one
// pair cost the servers with no client in the way.
type Pipelined struct {
	Depth int `json:"depth"`
	// Servers is how many servers ran the loop, each its own pairs at
	// once: a pair costs each of them one SET and one EVALSHA.
	Servers int `json:"servers"`
	// Pairs is the fewest pairs a server did in its window, Seconds the
	// window.
	Pairs   int64   `json:"pairs"`
	Seconds float64 `json:"seconds"`
	// ServersCPUUsPerOp is the sum over the servers of each one's CPU
	// time (INFO cpu) over its window divided by its pairs, in µs: the
	// servers' CPU per pair of N=Servers.
	ServersCPUUsPerOp float64 `json:"servers_cpu_us_per_op"`
	// ClientCPUUsPerOp is the loop's own CPU time (getrusage: its
	// process, user and system) over the windows divided by the mean
	// pairs per server, in µs: what sending and reading the commands
	// costs a client that does nothing else. 0 if not measured.
	ClientCPUUsPerOp float64 `json:"client_cpu_us_per_op,omitempty"`
	// ServersReadsPerOp is, summed over the servers, each one's reads of
	// the loop's input (total_reads_processed) over its window divided by
	// its pairs: about 1/Depth each where a read takes a whole batch. 0
	// if not counted.
	ServersReadsPerOp float64 `json:"servers_reads_per_op,omitempty"`
	// Rounds holds ServersCPUUsPerOp of every measurement, in run order,
	// when the loop ran more than once (Lowest); the other fields are the
	// lowest one's.
	Rounds []float64 `json:"rounds_servers_cpu_us_per_op,omitempty"`
}

// Lowest returns the measurement of the loop that cost the servers the
// least CPU per pair, with Rounds set to every one's: the limit is a
// floor, and a measurement taken while the machine ran slow only raises
// it. With one measurement it is returned as it is.
func Lowest(ps []Pipelined) Pipelined {
	if len(ps) < 2 {
		if len(ps) == 0 {
			return Pipelined{}
		}
		return ps[0]
	}
	low := ps[0]
	rounds := make([]float64, len(ps))
	for i, p := range ps {
		rounds[i] = p.ServersCPUUsPerOp
		if p.ServersCPUUsPerOp < low.ServersCPUUsPerOp {
			low = p
		}
	}
	low.Rounds = rounds
	return low
}

// PipelinedLimit measures the servers' CPU per pair with the work of a
// pair pipelined Depth deep, every server at once, each on its own
// connection.
func PipelinedLimit(ctx context.Context, spec PipelineSpec) (Pipelined, error) {
	if spec.Depth < 1 || spec.Duration <= 0 || spec.TTL < time.Millisecond || len(spec.Addrs) == 0 {
		return Pipelined{}, errors.New("servers: pipelined limit: need servers, a depth, a duration and a TTL of 1 ms or more")
	}
	sum := sha1.Sum([]byte(ReleaseScript)) //nolint:gosec // G401: the script's name for EVALSHA, as Redis computes it
	sha := hex.EncodeToString(sum[:])
	type out struct {
		pairs   int64
		used    measure.Usage
		elapsed time.Duration
		err     error
	}
	outs := make([]out, len(spec.Addrs))
	// Every loop warms up, then all measure from one start, so that the
	// process's CPU over the windows is the loops' alone. The first loop
	// that fails ends the others: its error is the one returned.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var first error
	var failed sync.Once
	var ready, wg sync.WaitGroup
	start := make(chan struct{})
	for i, a := range spec.Addrs {
		ready.Add(1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			o := &outs[i]
			o.pairs, o.used, o.elapsed, o.err = pipelineOne(ctx, a, sha, i, spec, sync.OnceFunc(ready.Done), start)
			if o.err != nil {
				failed.Do(func() { first = o.err; cancel() })
			}
		}()
	}
	ready.Wait()
	cpu0, ok0 := measure.ProcessCPU()
	close(start)
	wg.Wait()
	cpu1, ok1 := measure.ProcessCPU()
	if first != nil {
		return Pipelined{}, first
	}
	p := Pipelined{Depth: spec.Depth, Servers: len(spec.Addrs)}
	var total int64
	var reads float64 // per pair, summed over the servers; -1: not counted
	for i, o := range outs {
		if o.pairs == 0 {
			return Pipelined{}, fmt.Errorf("servers: pipelined limit on %s: no pair done", spec.Addrs[i])
		}
		if i == 0 || o.pairs < p.Pairs {
			p.Pairs = o.pairs
		}
		p.Seconds = max(p.Seconds, o.elapsed.Seconds())
		p.ServersCPUUsPerOp += measure.CPUPerOpUs(0, o.used.CPU, o.pairs)
		if o.used.Reads < 0 || reads < 0 {
			reads = -1
		} else {
			reads += float64(o.used.Reads) / float64(o.pairs)
		}
		total += o.pairs
	}
	if reads > 0 {
		p.ServersReadsPerOp = reads
	}
	if ok0 && ok1 {
		p.ClientCPUUsPerOp = measure.CPUPerOpUs(cpu0, cpu1, total/int64(len(outs)))
	}
	return p, nil
}

// pipelineOne runs the pipelined loop on one server and returns its pairs
// and CPU time over the measured window. It calls warm when warmed up or
// failed (warm must allow more than one call), and then measures from the
// closing of start.
func pipelineOne(ctx context.Context, addr, sha string, server int, spec PipelineSpec, warm func(), start <-chan struct{}) (pairs int64, used measure.Usage, elapsed time.Duration, err error) {
	defer warm()
	c, err := measure.Dial(addr, spec.Options)
	if err != nil {
		return 0, measure.Usage{}, 0, err
	}
	defer func() { _ = c.Close() }() // the measurement is over, or failed: a failed Close changes neither
	got, err := c.Do("SCRIPT", "LOAD", ReleaseScript)
	if err != nil {
		return 0, measure.Usage{}, 0, err
	}
	if got != sha {
		return 0, measure.Usage{}, 0, fmt.Errorf("servers: %s: SCRIPT LOAD returned %q, want %s", addr, got, sha)
	}
	tok := core.TokenFromUint64s(uint64(time.Now().UnixNano()), uint64(server)+1).String() //nolint:gosec // G115: server is an index, >= 0
	ttl := strconv.FormatInt(spec.TTL.Milliseconds(), 10)
	prefix := spec.KeyPrefix + strconv.Itoa(server) + ":"
	keys := make([]string, spec.Depth)
	for i := range keys {
		keys[i] = prefix + strconv.Itoa(i)
	}
	// The batch is the same every time: encoded once, written as is, and
	// its replies checked without a copy, so that the loop's own CPU is
	// the least a client can spend on these commands.
	var payload []byte
	for _, k := range keys {
		payload = measure.AppendCommand(payload, "SET", k, tok, "NX", "PX", ttl)
		payload = measure.AppendCommand(payload, "EVALSHA", sha, "1", k, tok)
	}
	batch := func() error { return c.Pipeline(payload, 2*len(keys), "+OK", ":1") }
	for t0 := time.Now(); time.Since(t0) < spec.Warmup && ctx.Err() == nil; {
		if err := batch(); err != nil {
			return 0, measure.Usage{}, 0, err
		}
	}
	warm()
	<-start
	before, err := c.Usage()
	if err != nil {
		return 0, measure.Usage{}, 0, err
	}
	t0 := time.Now()
	for time.Since(t0) < spec.Duration && ctx.Err() == nil {
		if err := batch(); err != nil {
			return 0, measure.Usage{}, 0, err
		}
		pairs += int64(spec.Depth)
	}
	elapsed = time.Since(t0)
	after, err := c.Usage()
	if err != nil {
		return 0, measure.Usage{}, 0, err
	}
	if ctx.Err() != nil {
		return 0, measure.Usage{}, 0, ctx.Err()
	}
	return pairs, after.Sub(before), elapsed, nil
}
