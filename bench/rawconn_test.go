package bench

import (
	"context"
	"errors"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	rd "github.com/redis/rueidis"

	"github.com/redlock-go/redlock/bench/measure"
	rueidis "github.com/redlock-go/redlock/drivers/rueidis"
	"github.com/redlock-go/redlock/internal/redistest"
)

// BenchmarkRawConn asks whether a connection of the client's own spares
// the one-pipeline drivers something, 1 and 16 commands deep, against one
// redis-server:
//
//   - rueidis: the client Dial makes (Client.DoMulti, from one goroutine
//     at a time, with a deadline, as the engine calls it) against a
//     connection dedicated to the caller (Client.Dedicate);
//   - go-redis: a pipeline of the client's pool (Client.Pipeline, a
//     connection taken and given back per Exec) against one on a
//     connection the caller holds (Client.Conn, as Dial's nodes do).
//
// None of them writes a pipeline without reading its replies: rueidis's
// pipe.DoMulti, called from one goroutine with a deadline, writes and
// reads on the caller's goroutine (syncDoMulti), dedicated or not, and
// go-redis's Exec writes, then reads. client-cpu-µs/op is this process's
// CPU per pipeline (the server is another process); goroutines is how
// many goroutines the run added (0: no background writer or reader
// started). docs/drivers.md says what the comparison found.
func BenchmarkRawConn(b *testing.B) {
	srv := redistest.Start(b, redistest.Options{})
	for _, depth := range []int{1, 16} {
		d := "/depth=" + strconv.Itoa(depth)
		b.Run("rueidis/client"+d, func(b *testing.B) {
			c := rueidisClient(b, srv.Addr)
			rawPipelines(b, depth, rueidisDo(c, c.DoMulti))
		})
		b.Run("rueidis/dedicated"+d, func(b *testing.B) {
			c := rueidisClient(b, srv.Addr)
			dc, release := c.Dedicate()
			defer release()
			rawPipelines(b, depth, rueidisDo(c, dc.DoMulti))
		})
		b.Run("goredis/client"+d, func(b *testing.B) {
			rawPipelines(b, depth, goredisDo(goredisClient(b, srv.Addr).Pipeline()))
		})
		b.Run("goredis/conn"+d, func(b *testing.B) {
			rc := goredisClient(b, srv.Addr).Conn()
			b.Cleanup(func() { _ = rc.Close() })
			rawPipelines(b, depth, goredisDo(rc.Pipeline()))
		})
	}
}

// rawPipelines runs do once per op: SET key token NX PX on each of depth
// keys, and the DELs that undo them every other op, as a Redlock pair
// does, each pipeline with a deadline, as the engine's have.
func rawPipelines(b *testing.B, depth int, do func(ctx context.Context, keys []string, set bool) error) {
	keys := make([]string, depth)
	for i := range keys {
		keys[i] = "bench:rawconn:" + strconv.Itoa(i)
	}
	run := func(set bool) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := do(ctx, keys, set); err != nil {
			b.Fatal(err)
		}
	}
	run(false) // the connection is dialled and warm
	g0 := runtime.NumGoroutine()
	b.ReportAllocs()
	cpu0, cpuOK := measure.ProcessCPU()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		run(i%2 == 0)
	}
	b.StopTimer()
	if cpu1, ok := measure.ProcessCPU(); ok && cpuOK {
		b.ReportMetric(measure.CPUPerOpUs(cpu0, cpu1, int64(b.N)), "client-cpu-µs/op")
	}
	b.ReportMetric(float64(runtime.NumGoroutine()-g0), "goroutines")
}

// rueidisClient returns a client made as the rueidis driver's Dial makes
// them.
func rueidisClient(b *testing.B, addr string) rd.Client {
	c, err := rd.NewClient(rueidis.ClientOption(addr, rueidis.Options{}))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(c.Close)
	return c
}

func rueidisDo(c rd.Client, doMulti func(context.Context, ...rd.Completed) []rd.RedisResult) func(context.Context, []string, bool) error {
	var cmds []rd.Completed
	return func(ctx context.Context, keys []string, set bool) error {
		cmds = cmds[:0]
		for _, k := range keys {
			if set {
				cmds = append(cmds, c.B().Set().Key(k).Value("token").Nx().PxMilliseconds(10000).Build())
			} else {
				cmds = append(cmds, c.B().Del().Key(k).Build())
			}
		}
		for _, r := range doMulti(ctx, cmds...) {
			if err := r.NonRedisError(); err != nil {
				return err
			}
		}
		return nil
	}
}

// goredisClient returns a client on one connection, with the go-redis
// driver's settings that bear on a pipeline.
func goredisClient(b *testing.B, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, Protocol: 2, DisableIdentity: true,
		ContextTimeoutEnabled: true, ReadTimeout: -1, WriteTimeout: -1,
		PoolSize: 2, MaxActiveConns: 1, PipelinePoolSize: -1})
	b.Cleanup(func() { _ = c.Close() })
	return c
}

func goredisDo(p redis.Pipeliner) func(context.Context, []string, bool) error {
	return func(ctx context.Context, keys []string, set bool) error {
		for _, k := range keys {
			if set {
				p.SetNX(ctx, k, "token", 10*time.Second)
			} else {
				p.Del(ctx, k)
			}
		}
		if _, err := p.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
		return nil
	}
}
