package otel_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/drivers"
	"github.com/redlock-go/redlock/drivers/redigo"
	rlotel "github.com/redlock-go/redlock/otel"
)

// recorder is an Observer recording into an in-memory metric reader and
// span recorder.
type recorder struct {
	reader *sdkmetric.ManualReader
	spans  *tracetest.SpanRecorder
	obs    redlock.Observer
}

func newRecorder(t *testing.T) *recorder {
	t.Helper()
	r := &recorder{reader: sdkmetric.NewManualReader(), spans: tracetest.NewSpanRecorder()}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r.reader))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(r.spans))
	var err error
	r.obs, err = rlotel.NewObserver(rlotel.WithMeterProvider(mp), rlotel.WithTracerProvider(tp))
	require.NoError(t, err)
	return r
}

func (r *recorder) collect(t *testing.T) metricdata.ResourceMetrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, r.reader.Collect(context.Background(), &rm))
	return rm
}

// ended returns the ended spans named name.
func (r *recorder) ended(name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range r.spans.Ended() {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

// closedAddrs returns n loopback addresses nobody listens on: a node
// there refuses connections.
func closedAddrs(t *testing.T, n int) []string {
	t.Helper()
	var out []string
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		out = append(out, l.Addr().String())
		require.NoError(t, l.Close())
	}
	return out
}

// dial returns a redigo driver on addrs, closed at the test's end.
func dial(t *testing.T, addrs []string) *drivers.Driver {
	t.Helper()
	drv, err := redigo.Dial(addrs, redigo.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, drv.Close()) })
	return drv
}

// outcomeAttrs is the exact attribute set of an acquisition's metric
// points of outcome out in mode.
func outcomeAttrs(out, mode string) map[string]string {
	m := map[string]string{"db.system.name": "redis", "redlock.outcome": out, "redlock.acquire.mode": mode}
	if out != "ok" {
		m["error.type"] = out
	}
	return m
}

// TestObserverAcquireOutcomes: the acquisitions that fail other than
// with taken, each a redlock.acquire.duration and .attempts point with its
// outcome, error.type and mode, and a redlock.acquire span with status
// Error and the same attributes: cancelled (a ctx cancelled before the
// first attempt, and one cancelled during a Lock's wait), invalid (an
// empty key, refused before anything is sent) and quorum_unreachable
// (two of three nodes refuse connections).
func TestObserverAcquireOutcomes(t *testing.T) {
	_, addrs := startRedis(t, 3)
	rec := newRecorder(t)
	waiting := make(chan struct{}, 1)
	waiters := rec.obs.Waiters
	rec.obs.Waiters = func(e redlock.WaitersEvent) {
		waiters(e)
		if e.Delta > 0 {
			waiting <- struct{}{}
		}
	}
	client, err := redlock.NewClient(dial(t, addrs), redlock.Options{Observer: rec.obs,
		NodeTimeout: time.Second, Backoff: redlock.RandomDelay(time.Hour, time.Hour)})
	require.NoError(t, err)
	// Sequential: the round hears every node, the refusing ones included.
	unreachable, err := redlock.NewClient(dial(t, append(addrs[:1:1], closedAddrs(t, 2)...)),
		redlock.Options{Observer: rec.obs, FanOut: redlock.Sequential, NodeTimeout: time.Second})
	require.NoError(t, err)
	ctx := context.Background()
	errs := map[string][]error{} // outcome/mode: the errors returned

	// cancelled: before anything is sent.
	done, cancel := context.WithCancel(ctx)
	cancel()
	_, err = client.TryLock(done, "free")
	require.ErrorIs(t, err, redlock.ErrCancelled)
	errs["cancelled/try"] = append(errs["cancelled/try"], err)
	_, err = client.Lock(done, "free")
	require.ErrorIs(t, err, redlock.ErrCancelled)
	errs["cancelled/wait"] = append(errs["cancelled/wait"], err)

	// cancelled: while a Lock waits for a held key.
	held, err := client.TryLock(ctx, "held")
	require.NoError(t, err)
	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	got := make(chan error, 1)
	go func() {
		_, err := client.Lock(wctx, "held")
		got <- err
	}()
	<-waiting
	waitingAt := time.Now() // the Lock began before
	cancelAt := time.Now()  // the Lock ends after
	wcancel()
	err = <-got
	require.ErrorIs(t, err, redlock.ErrCancelled)
	errs["cancelled/wait"] = append(errs["cancelled/wait"], err)
	require.NoError(t, held.Unlock(ctx))

	// invalid: an empty key.
	_, err = client.TryLock(ctx, "")
	require.ErrorIs(t, err, redlock.ErrInvalidConfig)
	errs["invalid/try"] = append(errs["invalid/try"], err)
	_, err = client.Lock(ctx, "")
	require.ErrorIs(t, err, redlock.ErrInvalidConfig)
	errs["invalid/wait"] = append(errs["invalid/wait"], err)

	// quorum_unreachable: one node of three answers.
	_, err = unreachable.TryLock(ctx, "q")
	require.ErrorIs(t, err, redlock.ErrQuorumUnreachable)
	errs["quorum_unreachable/try"] = append(errs["quorum_unreachable/try"], err)

	rm := rec.collect(t)
	acq := points(t, rm, "redlock.acquire.duration")
	att := points(t, rm, "redlock.acquire.attempts")
	for _, c := range []struct {
		out, mode string
		count     uint64
		attempts  float64 // the sum over the calls; -1: at least one per call
	}{
		{"cancelled", "try", 1, 0},
		{"cancelled", "wait", 2, -1}, // the first before any attempt, the second after one at least
		{"invalid", "try", 1, 0},
		{"invalid", "wait", 1, 0},
		{"quorum_unreachable", "try", 1, 1},
	} {
		want := outcomeAttrs(c.out, c.mode)
		p := find(t, acq, want)
		assert.Equal(t, want, p.attrs, "redlock.acquire.duration %s/%s: exactly these attributes", c.out, c.mode)
		assert.Equal(t, c.count, p.count, "redlock.acquire.duration %s/%s", c.out, c.mode)
		a := find(t, att, want)
		assert.Equal(t, want, a.attrs, "redlock.acquire.attempts %s/%s: exactly these attributes", c.out, c.mode)
		assert.Equal(t, c.count, a.count, "redlock.acquire.attempts %s/%s", c.out, c.mode)
		if c.attempts >= 0 {
			assert.Equal(t, c.attempts, a.value, "redlock.acquire.attempts %s/%s", c.out, c.mode)
		} else {
			assert.GreaterOrEqual(t, a.value, 1.0, "redlock.acquire.attempts %s/%s", c.out, c.mode)
		}
	}
	assert.GreaterOrEqual(t, find(t, acq, outcomeAttrs("cancelled", "wait")).value, cancelAt.Sub(waitingAt).Seconds(),
		"the cancelled Lock waited from before the test saw it wait until after the cancel")
	assert.Positive(t, find(t, acq, outcomeAttrs("quorum_unreachable", "try")).value)

	// Spans: one per call, status Error with the error's message, the
	// outcome's attributes, and the deciding round's node answers.
	spans := map[string][]sdktrace.ReadOnlySpan{}
	for _, s := range rec.ended("redlock.acquire") {
		a := spanAttrs(s)
		spans[a["redlock.outcome"]+"/"+a["redlock.acquire.mode"]] = append(spans[a["redlock.outcome"]+"/"+a["redlock.acquire.mode"]], s)
	}
	for k, want := range errs {
		require.Len(t, spans[k], len(want), "%s spans", k)
		var msgs []string
		for _, s := range spans[k] {
			a := spanAttrs(s)
			assert.Equal(t, codes.Error, s.Status().Code, k)
			msgs = append(msgs, s.Status().Description)
			assert.Equal(t, a["redlock.outcome"], a["error.type"], k)
			assert.Equal(t, "redis", a["db.system.name"], k)
			assert.False(t, s.EndTime().Before(s.StartTime()), k)
		}
		var wantMsgs []string
		for _, e := range want {
			wantMsgs = append(wantMsgs, e.Error())
		}
		assert.ElementsMatch(t, wantMsgs, msgs, "%s: the span's status says the error", k)
	}
	for _, k := range []string{"cancelled/try", "invalid/try", "invalid/wait"} {
		s := spans[k][0]
		assert.Equal(t, "0", spanAttrs(s)["redlock.attempts"], k)
		assert.Empty(t, s.Events(), "%s: nothing was sent", k)
	}
	var waited sdktrace.ReadOnlySpan
	for _, s := range spans["cancelled/wait"] {
		if spanAttrs(s)["redlock.attempts"] != "0" {
			waited = s
		} else {
			assert.Empty(t, s.Events(), "cancelled before the first attempt: nothing was sent")
		}
	}
	require.NotNil(t, waited, "the Lock cancelled in its wait made an attempt")
	require.GreaterOrEqual(t, len(waited.Events()), 2, "the last attempt's refusals")
	for _, e := range waited.Events() {
		assert.Equal(t, "held", eventAttrs(e)["redlock.node.status"], "the attempt before the wait found the key held")
	}

	q := spans["quorum_unreachable/try"][0]
	assert.Equal(t, "1", spanAttrs(q)["redlock.attempts"])
	require.Len(t, q.Events(), 3, "a sequential round hears every node")
	for i, e := range q.Events() {
		ea := eventAttrs(e)
		assert.Equal(t, "redlock.node", e.Name)
		assert.Equal(t, []string{"0", "1", "2"}[i], ea["redlock.node"], "sequential: in the nodes' order")
		if i == 0 {
			assert.Equal(t, "ok", ea["redlock.node.status"])
			assert.NotContains(t, ea, "error.type")
			continue
		}
		assert.Equal(t, "error", ea["redlock.node.status"])
		assert.Equal(t, "error", ea["error.type"])
		assert.NotEmpty(t, ea["exception.message"])
	}
}

// TestObserverExtendReleaseOutcomes: the extensions and releases that fail
// other than with lost. An Extend past Options.MaxExtensions is an
// extension_limit redlock.extend.duration point and an Error span with no
// node event (nothing is sent); an Extend after Unlock records nothing.
// An Unlock whose keys are gone is a not_held release, its span's events
// saying "missing"; one with two of three nodes killed a
// quorum_unreachable release, the killed nodes' events errors.
func TestObserverExtendReleaseOutcomes(t *testing.T) {
	servers, addrs := startRedis(t, 3)
	rec := newRecorder(t)
	client, err := redlock.NewClient(dial(t, addrs), redlock.Options{Observer: rec.obs,
		MaxExtensions: 1, NodeTimeout: time.Second})
	require.NoError(t, err)
	ctx := context.Background()

	l, err := client.TryLock(ctx, "extended")
	require.NoError(t, err)
	require.NoError(t, l.Extend(ctx))
	limitErr := l.Extend(ctx)
	require.ErrorIs(t, limitErr, redlock.ErrExtensionLimit)
	require.NoError(t, l.Unlock(ctx))
	require.ErrorIs(t, l.Extend(ctx), redlock.ErrUnlocked)

	gone, err := client.TryLock(ctx, "gone")
	require.NoError(t, err)
	var deleted int64
	for _, s := range servers {
		n, err := s.Do("DEL", "gone")
		require.NoError(t, err)
		d, ok := n.(int64)
		require.True(t, ok, "DEL answers %T %v", n, n)
		deleted += d
	}
	require.GreaterOrEqual(t, deleted, int64(2), "a quorum held the key") // the third SET may come after its DEL
	goneErr := gone.Unlock(ctx)
	require.ErrorIs(t, goneErr, redlock.ErrNotHeld)

	dead, err := client.TryLock(ctx, "dead")
	require.NoError(t, err)
	servers[1].Kill()
	servers[2].Kill()
	deadErr := dead.Unlock(ctx)
	require.ErrorIs(t, deadErr, redlock.ErrQuorumUnreachable)

	rm := rec.collect(t)
	ext := points(t, rm, "redlock.extend.duration")
	require.Len(t, ext, 2, "ok and extension_limit; the Extend after Unlock records nothing")
	extOK := find(t, ext, map[string]string{"redlock.outcome": "ok"})
	assert.Equal(t, map[string]string{"db.system.name": "redis", "redlock.outcome": "ok", "redlock.lease": "false"}, extOK.attrs)
	assert.Equal(t, uint64(1), extOK.count)
	limit := find(t, ext, map[string]string{"redlock.outcome": "extension_limit"})
	assert.Equal(t, map[string]string{"db.system.name": "redis", "redlock.outcome": "extension_limit",
		"error.type": "extension_limit", "redlock.lease": "false"}, limit.attrs)
	assert.Equal(t, uint64(1), limit.count)

	rel := points(t, rm, "redlock.release.duration")
	require.Len(t, rel, 3)
	for _, out := range []string{"ok", "not_held", "quorum_unreachable"} {
		p := find(t, rel, map[string]string{"redlock.outcome": out})
		want := map[string]string{"db.system.name": "redis", "redlock.outcome": out}
		if out != "ok" {
			want["error.type"] = out
		}
		assert.Equal(t, want, p.attrs, out)
		assert.Equal(t, uint64(1), p.count, out)
		assert.Positive(t, p.value, out)
	}
	// Each lock was held until its Unlock: a failed release ends the hold all the same.
	assert.Equal(t, uint64(3), find(t, points(t, rm, "redlock.hold.duration"),
		map[string]string{"redlock.hold.end": "unlock"}).count)

	extSpans := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range rec.ended("redlock.extend") {
		extSpans[spanAttrs(s)["redlock.outcome"]] = s
	}
	require.Len(t, extSpans, 2)
	require.Contains(t, extSpans, "extension_limit")
	s := extSpans["extension_limit"]
	assert.Equal(t, codes.Error, s.Status().Code)
	assert.Equal(t, limitErr.Error(), s.Status().Description)
	assert.Equal(t, "extension_limit", spanAttrs(s)["error.type"])
	assert.Empty(t, s.Events(), "refused before anything was sent")
	assert.GreaterOrEqual(t, len(extSpans["ok"].Events()), 2, "a quorum of answers")

	relSpans := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range rec.ended("redlock.release") {
		relSpans[spanAttrs(s)["redlock.outcome"]] = s
	}
	require.Len(t, relSpans, 3)
	for out, err := range map[string]error{"not_held": goneErr, "quorum_unreachable": deadErr} {
		s := relSpans[out]
		require.NotNil(t, s, out)
		assert.Equal(t, codes.Error, s.Status().Code, out)
		assert.Equal(t, err.Error(), s.Status().Description, out)
		assert.Equal(t, out, spanAttrs(s)["error.type"], out)
		require.Len(t, s.Events(), 3, "%s: a release hears every node", out)
	}
	missing := 0
	for _, e := range relSpans["not_held"].Events() {
		ea := eventAttrs(e)
		assert.Contains(t, []string{"missing", "ok"}, ea["redlock.node.status"], "the keys are gone (but for a late SET)")
		assert.NotContains(t, ea, "error.type")
		if ea["redlock.node.status"] == "missing" {
			missing++
		}
	}
	assert.GreaterOrEqual(t, missing, 2)
	failed := map[string]string{}
	for _, e := range relSpans["quorum_unreachable"].Events() {
		ea := eventAttrs(e)
		if ea["redlock.node"] == "0" {
			assert.Equal(t, "ok", ea["redlock.node.status"], "the live node released")
			continue
		}
		failed[ea["redlock.node"]] = ea["error.type"]
		assert.Equal(t, "error", ea["redlock.node.status"])
		assert.NotEmpty(t, ea["exception.message"])
	}
	assert.Equal(t, map[string]string{"1": "error", "2": "error"}, failed, "the killed nodes")
}
