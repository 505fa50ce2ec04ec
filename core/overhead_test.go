package core_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redlock-go/redlock/core"
)

// okDriver answers every command OK at once, with no state: it isolates the
// cost of the core's rounds from any node's, memnode's included.
type okDriver struct {
	n int
	b okBatch
}

type okBatch struct {
	pending [core.MaxNodes]int
	k       int
}

func (d *okDriver) Nodes() int                             { return d.n }
func (d *okDriver) NodeName(i int) string                  { return "ok:" + strconv.Itoa(i) }
func (d *okDriver) Begin(ctx context.Context) core.Batch   { d.b.k = 0; return &d.b }
func (b *okBatch) Send(i int, _ core.Command, _ time.Time) { b.pending[b.k] = i; b.k++ }
func (b *okBatch) Close()                                  {}
func (b *okBatch) Receive(<-chan struct{}) (core.Reply, bool) {
	b.k--
	return core.Reply{Node: b.pending[b.k], Status: core.StatusOK}, true
}

// BenchmarkCoreOnly is acquire+release through the core's step values
// alone, driven by the tests' loop (single goroutine: okDriver shares one
// batch).
func BenchmarkCoreOnly(b *testing.B) {
	ctx := context.Background()
	for _, mode := range modes {
		for _, n := range []int{1, 5} {
			l, err := newLocker(&okDriver{n: n}, sysClock{}, core.Config{FanOut: mode,
				Tokens: &seqTokens{}, Jitter: fixedRand(0)})
			if err != nil {
				b.Fatal(err)
			}
			b.Run("nodes="+strconv.Itoa(n)+"/fanout="+mode.String(), func(b *testing.B) {
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					lock, err := l.Acquire(ctx, "k")
					if err != nil {
						b.Fatal(err)
					}
					if err := l.Release(ctx, lock); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
