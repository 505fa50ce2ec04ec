package batchwrap_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/internal/batchwrap"
)

// log records which batch was called for what.
type log []string

type plain struct {
	name string
	log  *log
}

func (b plain) Send(node int, _ core.Command, _ time.Time) {
	*b.log = append(*b.log, b.name+".Send")
}

func (b plain) Receive(<-chan struct{}) (core.Reply, bool) {
	*b.log = append(*b.log, b.name+".Receive")
	return core.Reply{Node: 1}, true
}

func (b plain) Close() { *b.log = append(*b.log, b.name+".Close") }

type gathers struct{ plain }

func (b gathers) Gather(n int, _ <-chan struct{}) (core.Reply, bool) {
	*b.log = append(*b.log, b.name+".Gather")
	return core.Reply{Node: n}, true
}

func (b gathers) Ready() int { return 7 }

type flushes struct{ plain }

func (b flushes) Flush() { *b.log = append(*b.log, b.name+".Flush") }

type both struct {
	gathers
}

func (b both) Flush() { *b.log = append(*b.log, b.name+".Flush") }

// watching is a wrapper as the workshop writes them: it changes Send.
type watching struct {
	core.Batch
	log *log
}

func (w watching) Send(node int, cmd core.Command, deadline time.Time) {
	*w.log = append(*w.log, "hook")
	w.Batch.Send(node, cmd, deadline)
}

func TestKeepHasTheInnerBatchsMethods(t *testing.T) {
	for _, c := range []struct {
		name             string
		inner            func(*log) core.Batch
		gather, flush    bool
		wantGatherReply  int
		wantCallsOnInner []string
	}{
		{"plain", func(l *log) core.Batch { return plain{"inner", l} }, false, false, 0,
			[]string{"hook", "inner.Send", "inner.Receive", "inner.Close"}},
		{"gatherer", func(l *log) core.Batch { return gathers{plain{"inner", l}} }, true, false, 3,
			[]string{"hook", "inner.Send", "inner.Receive", "inner.Gather", "inner.Close"}},
		{"flusher", func(l *log) core.Batch { return flushes{plain{"inner", l}} }, false, true, 0,
			[]string{"hook", "inner.Send", "inner.Receive", "inner.Flush", "inner.Close"}},
		{"both", func(l *log) core.Batch { return both{gathers{plain{"inner", l}}} }, true, true, 3,
			[]string{"hook", "inner.Send", "inner.Receive", "inner.Gather", "inner.Flush", "inner.Close"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var l log
			inner := c.inner(&l)
			b := batchwrap.Keep(watching{inner, &l}, inner)
			b.Send(1, core.Command{}, time.Time{})
			r, ok := b.Receive(nil)
			assert.True(t, ok)
			assert.Equal(t, 1, r.Node)
			g, isG := b.(core.Gatherer)
			assert.Equal(t, c.gather, isG, "a Gatherer exactly when the inner batch is one")
			if isG {
				r, ok := g.Gather(3, nil)
				assert.True(t, ok)
				assert.Equal(t, c.wantGatherReply, r.Node)
				assert.Equal(t, 7, g.Ready())
			}
			f, isF := b.(core.Flusher)
			assert.Equal(t, c.flush, isF, "a Flusher exactly when the inner batch is one")
			if isF {
				f.Flush()
			}
			b.Close()
			assert.Equal(t, c.wantCallsOnInner, []string(l))
		})
	}
}
