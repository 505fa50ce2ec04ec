// Package batchwrap keeps what a core.Batch can do beyond Batch when the
// workshop wraps it to watch its sends: the tests' hooks and the
// benchmarks' counters. A runner tells a Gatherer or a Flusher by a type
// assertion, so a wrapper that embeds core.Batch alone hides them, and
// the code over it takes another path than over the batch itself.
package batchwrap

import "github.com/redlock-go/redlock/core"

// Keep returns outer with the core.Gatherer and core.Flusher methods of
// inner, where inner has them. outer wraps inner and changes Send or
// Close only: Gather, Ready and Flush go to inner as they are, and so
// does outer's Receive if it does not override it. Over an inner
// without either, Keep returns outer itself.
func Keep(outer, inner core.Batch) core.Batch {
	g, gathers := inner.(core.Gatherer)
	f, flushes := inner.(core.Flusher)
	switch {
	case gathers && flushes:
		return gatherFlusher{gatherer{outer, g}, f}
	case gathers:
		return gatherer{outer, g}
	case flushes:
		return flusher{outer, f}
	}
	return outer
}

type gatherer struct {
	core.Batch
	g core.Gatherer
}

func (w gatherer) Gather(n int, cancel <-chan struct{}) (core.Reply, bool) {
	return w.g.Gather(n, cancel)
}

func (w gatherer) Ready() int { return w.g.Ready() }

type flusher struct {
	core.Batch
	f core.Flusher
}

func (w flusher) Flush() { w.f.Flush() }

type gatherFlusher struct {
	gatherer
	f core.Flusher
}

func (w gatherFlusher) Flush() { w.f.Flush() }
