// Package otel records a redlock Client's events as OpenTelemetry metrics
// and spans: NewObserver returns a redlock.Observer for Options.Observer.
//
// It follows the database-client semantic conventions that go-redis's
// redisotel uses: every node's answer is a db.client.operation.duration
// sample (seconds) with db.system.name "redis", db.operation.name (the
// Redlock command: acquire, release, extend, acquire-fenced, raise-fence),
// server.address and server.port (the node's name, split), and
// error.type when the node failed or timed out. The lock's own figures are
// redlock.* instruments:
//
//	redlock.acquire.duration   histogram, s     a TryLock or Lock, won or not
//	redlock.acquire.attempts   histogram        acquire rounds per TryLock or Lock
//	redlock.release.duration   histogram, s     an Unlock's release round
//	redlock.extend.duration    histogram, s     an extension (redlock.lease: the Lease's own)
//	redlock.hold.duration      histogram, s     acquisition to Unlock (redlock.hold.end "unlock") or loss ("lost"), once per lock
//	redlock.lease.lost         counter          locks declared lost
//	redlock.waiters            up-down counter  Lock calls waiting for a key
//	redlock.handoff.duration   histogram, s     release heard to lock acquired
//	redlock.fence              gauge            the last fence raised
//
// Their attributes are db.system.name, redlock.outcome (ok, taken,
// quorum_unreachable, cancelled, invalid, not_held, extension_limit,
// lost, other) and, unless the outcome is ok, error.type (the same
// name). Lock names are not attributes unless WithLockNames is given:
// they are unbounded.
//
// Spans redlock.acquire, redlock.release and redlock.extend (kind client)
// start and end at the operation's times, children of the span in the
// operation's ctx, with one event redlock.node per node answer of the
// deciding round (the last attempt's acquire round, the release round,
// the extension round) and status Error unless the outcome is ok.
package otel

import (
	"context"
	"net"
	"strconv"
	"time"

	otelglobal "go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/core"
)

// ScopeName is the instrumentation scope of the meter and the tracer.
const ScopeName = "github.com/redlock-go/redlock/otel"

// The redlock.* attribute keys.
const (
	OutcomeKey  = attribute.Key("redlock.outcome")
	AttemptsKey = attribute.Key("redlock.attempts")
	FenceKey    = attribute.Key("redlock.fence")
	LeaseKey    = attribute.Key("redlock.lease")
	HoldEndKey  = attribute.Key("redlock.hold.end")
	StatusKey   = attribute.Key("redlock.node.status")
	NodeKey     = attribute.Key("redlock.node")
	LockNameKey = attribute.Key("redlock.lock.name")
	// NodeDurationKey is a node event's send-to-answer time, in seconds.
	NodeDurationKey = attribute.Key("redlock.node.duration")
)

// Option configures NewObserver.
type Option func(*config)

type config struct {
	mp        metric.MeterProvider
	tp        trace.TracerProvider
	lockNames bool
}

// WithMeterProvider records the metrics through mp; nil or absent: the
// global MeterProvider.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *config) { c.mp = mp }
}

// WithTracerProvider records the spans through tp; nil or absent: the
// global TracerProvider.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) { c.tp = tp }
}

// WithLockNames adds the lock's name (redlock.lock.name) to every metric
// and span. Lock names are unbounded: use it only when they are few.
func WithLockNames() Option {
	return func(c *config) { c.lockNames = true }
}

// observer holds the instruments.
type observer struct {
	cfg    config
	tracer trace.Tracer

	opDuration  metric.Float64Histogram
	acquire     metric.Float64Histogram
	attempts    metric.Int64Histogram
	release     metric.Float64Histogram
	extend      metric.Float64Histogram
	hold        metric.Float64Histogram
	lost        metric.Int64Counter
	waiters     metric.Int64UpDownCounter
	handoff     metric.Float64Histogram
	fence       metric.Int64Gauge
	outcomeAttr [redlock.OutcomeOther + 1][]attribute.KeyValue
}

// Latency buckets in seconds, from a loopback round trip to a node
// timeout of seconds.
var secondsBuckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// NewObserver returns a redlock.Observer that records metrics and spans,
// or the error of creating an instrument.
func NewObserver(opts ...Option) (redlock.Observer, error) {
	var o observer
	for _, opt := range opts {
		opt(&o.cfg)
	}
	if o.cfg.mp == nil {
		o.cfg.mp = otelglobal.GetMeterProvider()
	}
	if o.cfg.tp == nil {
		o.cfg.tp = otelglobal.GetTracerProvider()
	}
	meter := o.cfg.mp.Meter(ScopeName)
	o.tracer = o.cfg.tp.Tracer(ScopeName)
	seconds := func(name, desc string) (metric.Float64Histogram, error) {
		return meter.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc),
			metric.WithExplicitBucketBoundaries(secondsBuckets...))
	}
	var err error
	set := func(e error) {
		if err == nil {
			err = e
		}
	}
	var e error
	o.opDuration, e = seconds("db.client.operation.duration", "Duration of one Redlock command to one Redis node.")
	set(e)
	o.acquire, e = seconds("redlock.acquire.duration", "Duration of a TryLock or Lock, won or not.")
	set(e)
	o.attempts, e = meter.Int64Histogram("redlock.acquire.attempts", metric.WithUnit("{attempt}"),
		metric.WithDescription("Acquire rounds sent per TryLock or Lock."),
		metric.WithExplicitBucketBoundaries(0, 1, 2, 3, 5, 10, 20, 50, 100))
	set(e)
	o.release, e = seconds("redlock.release.duration", "Duration of an Unlock's release round.")
	set(e)
	o.extend, e = seconds("redlock.extend.duration", "Duration of an extension.")
	set(e)
	o.hold, e = seconds("redlock.hold.duration", "How long a lock was held: until Unlock or its loss.")
	set(e)
	o.lost, e = meter.Int64Counter("redlock.lease.lost", metric.WithUnit("{lock}"),
		metric.WithDescription("Locks declared lost."))
	set(e)
	o.waiters, e = meter.Int64UpDownCounter("redlock.waiters", metric.WithUnit("{waiter}"),
		metric.WithDescription("Lock calls waiting for a key's release."))
	set(e)
	o.handoff, e = seconds("redlock.handoff.duration", "From a release heard to the lock acquired by a waiter.")
	set(e)
	o.fence, e = meter.Int64Gauge("redlock.fence", metric.WithUnit("{fence}"),
		metric.WithDescription("The last fence an acquisition raised."))
	set(e)
	if err != nil {
		return redlock.Observer{}, err
	}
	for oc := range o.outcomeAttr {
		out := redlock.Outcome(oc)
		kv := []attribute.KeyValue{semconv.DBSystemNameRedis, OutcomeKey.String(out.String())}
		if out != redlock.OutcomeOK {
			kv = append(kv, semconv.ErrorTypeKey.String(out.String()))
		}
		o.outcomeAttr[oc] = kv
	}
	return redlock.Observer{
		Acquire: o.onAcquire,
		Vote:    o.onVote,
		Release: o.onRelease,
		Extend:  o.onExtend,
		Loss:    o.onLoss,
		Waiters: o.onWaiters,
		Handoff: o.onHandoff,
		Fence:   o.onFence,
	}, nil
}

// attrs returns the attributes of an event of outcome out on key, with
// more.
func (o *observer) attrs(out redlock.Outcome, key string, more ...attribute.KeyValue) []attribute.KeyValue {
	base := o.outcomeAttr[min(int(out), len(o.outcomeAttr)-1)]
	kv := make([]attribute.KeyValue, 0, len(base)+len(more)+1)
	kv = append(kv, base...)
	kv = append(kv, more...)
	if o.cfg.lockNames {
		kv = append(kv, LockNameKey.String(key))
	}
	return kv
}

// plain returns the attributes of an event without an outcome.
func (o *observer) plain(key string, more ...attribute.KeyValue) []attribute.KeyValue {
	kv := make([]attribute.KeyValue, 0, len(more)+2)
	kv = append(kv, semconv.DBSystemNameRedis)
	kv = append(kv, more...)
	if o.cfg.lockNames {
		kv = append(kv, LockNameKey.String(key))
	}
	return kv
}

// ctxOf returns ctx, or the background for an event without one.
func ctxOf(ctx context.Context) context.Context {
	if ctx == nil {
		return context.Background()
	}
	return ctx
}

func (o *observer) onAcquire(e redlock.AcquireEvent) {
	ctx := ctxOf(e.Context)
	mode := "wait"
	if e.Try {
		mode = "try"
	}
	kv := o.attrs(e.Outcome, e.Key, attribute.String("redlock.acquire.mode", mode))
	set := metric.WithAttributes(kv...)
	o.acquire.Record(ctx, e.Duration.Seconds(), set)
	o.attempts.Record(ctx, int64(e.Attempts), set)
	span := append(kv, AttemptsKey.Int(e.Attempts))
	if e.Fence != 0 {
		span = append(span, FenceKey.Int64(int64(e.Fence))) //nolint:gosec // G115: a fence is a Redis INCR counter, at most 2^63-1
	}
	o.span(ctx, "redlock.acquire", e.Start, e.Duration, e.Outcome, e.Err, span, e.Votes)
}

func (o *observer) onVote(e redlock.VoteEvent) {
	kv := o.plain(e.Key, nodeAttrs(e)...)
	kv = append(kv, semconv.DBOperationName(e.Op.String()))
	if e.Status == core.StatusError || e.Status == core.StatusTimeout {
		kv = append(kv, semconv.ErrorTypeKey.String(e.Status.String()))
	}
	o.opDuration.Record(ctxOf(e.Context), e.Duration.Seconds(), metric.WithAttributes(kv...))
}

func (o *observer) onRelease(e redlock.ReleaseEvent) {
	ctx := ctxOf(e.Context)
	kv := o.attrs(e.Outcome, e.Key)
	o.release.Record(ctx, e.Duration.Seconds(), metric.WithAttributes(kv...))
	if e.Outcome != redlock.OutcomeLost { // a lost lock's hold ended at its loss, recorded then
		o.hold.Record(ctx, e.Held.Seconds(), metric.WithAttributes(o.plain(e.Key, HoldEndKey.String("unlock"))...))
	}
	o.span(ctx, "redlock.release", e.Start, e.Duration, e.Outcome, e.Err, kv, e.Votes)
}

func (o *observer) onExtend(e redlock.ExtendEvent) {
	ctx := ctxOf(e.Context)
	kv := o.attrs(e.Outcome, e.Key, LeaseKey.Bool(e.Lease))
	o.extend.Record(ctx, e.Duration.Seconds(), metric.WithAttributes(kv...))
	o.span(ctx, "redlock.extend", e.Start, e.Duration, e.Outcome, e.Err, kv, e.Votes)
}

func (o *observer) onLoss(e redlock.LossEvent) {
	ctx := ctxOf(e.Context)
	o.lost.Add(ctx, 1, metric.WithAttributes(o.attrs(e.Outcome, e.Key)...))
	o.hold.Record(ctx, e.Held.Seconds(), metric.WithAttributes(o.plain(e.Key, HoldEndKey.String("lost"))...))
}

func (o *observer) onWaiters(e redlock.WaitersEvent) {
	o.waiters.Add(context.Background(), int64(e.Delta), metric.WithAttributes(o.plain(e.Key)...))
}

func (o *observer) onHandoff(e redlock.HandoffEvent) {
	o.handoff.Record(ctxOf(e.Context), e.Duration.Seconds(), metric.WithAttributes(o.plain(e.Key)...))
}

func (o *observer) onFence(e redlock.FenceEvent) {
	o.fence.Record(ctxOf(e.Context), int64(e.Fence), metric.WithAttributes(o.plain(e.Key)...)) //nolint:gosec // G115: a fence is a Redis INCR counter, at most 2^63-1
}

// span records an operation that ran from start for d as a client span,
// a child of ctx's, with one event per vote.
func (o *observer) span(ctx context.Context, name string, start time.Time, d time.Duration,
	out redlock.Outcome, err error, kv []attribute.KeyValue, votes []redlock.VoteEvent) {
	_, span := o.tracer.Start(ctx, name, trace.WithTimestamp(start),
		trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(kv...))
	for _, v := range votes {
		ev := append(nodeAttrs(v), semconv.DBOperationName(v.Op.String()),
			NodeDurationKey.Float64(v.Duration.Seconds()))
		if v.Err != nil {
			ev = append(ev, semconv.ErrorTypeKey.String(v.Status.String()),
				attribute.String("exception.message", v.Err.Error()))
		}
		span.AddEvent("redlock.node", trace.WithTimestamp(v.At), trace.WithAttributes(ev...))
	}
	if out != redlock.OutcomeOK {
		msg := out.String()
		if err != nil {
			msg = err.Error()
		}
		span.SetStatus(codes.Error, msg)
	}
	span.End(trace.WithTimestamp(start.Add(d)))
}

// nodeAttrs returns a vote's node attributes: server.address and
// server.port from its name (host:port), the node's index and status.
func nodeAttrs(v redlock.VoteEvent) []attribute.KeyValue {
	kv := make([]attribute.KeyValue, 0, 8)
	if host, port, err := net.SplitHostPort(v.Name); err == nil {
		kv = append(kv, semconv.ServerAddress(host))
		if p, err := strconv.Atoi(port); err == nil {
			kv = append(kv, semconv.ServerPort(p))
		}
	} else {
		kv = append(kv, semconv.ServerAddress(v.Name))
	}
	return append(kv, NodeKey.Int(v.Node), StatusKey.String(v.Status.String()))
}
