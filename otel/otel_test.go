package otel_test

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/drivers/redigo"
	"github.com/redlock-go/redlock/internal/redistest"
	rlotel "github.com/redlock-go/redlock/otel"
)

// startRedis starts n redis-servers on free loopback ports, through
// internal/redistest (skipped without redis-server on PATH, failed under
// REDLOCK_REQUIRE_REDIS=1), and returns them with their addresses.
func startRedis(t *testing.T, n int) ([]*redistest.Server, []string) {
	t.Helper()
	servers := redistest.StartN(t, n, redistest.Options{})
	addrs := make([]string, n)
	for i, s := range servers {
		addrs[i] = s.Addr
	}
	return servers, addrs
}

// nodeIndex maps each address's port to its node index, as
// redlock.node says it.
func nodeIndex(addrs []string) map[string]string {
	m := map[string]string{}
	for i, a := range addrs {
		_, p, _ := net.SplitHostPort(a)
		m[p] = strconv.Itoa(i)
	}
	return m
}

// wantUnits is the unit of every instrument the Observer makes: seconds
// for durations, UCUM annotations for counts.
var wantUnits = map[string]string{
	"db.client.operation.duration": "s",
	"redlock.acquire.duration":     "s",
	"redlock.acquire.attempts":     "{attempt}",
	"redlock.release.duration":     "s",
	"redlock.extend.duration":      "s",
	"redlock.hold.duration":        "s",
	"redlock.lease.lost":           "{lock}",
	"redlock.waiters":              "{waiter}",
	"redlock.handoff.duration":     "s",
	"redlock.fence":                "{fence}",
}

// units returns the unit of each metric of the Observer's scope in rm.
func units(rm metricdata.ResourceMetrics) map[string]string {
	m := map[string]string{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name == rlotel.ScopeName {
			for _, x := range sm.Metrics {
				m[x.Name] = x.Unit
			}
		}
	}
	return m
}

// point is one data point of a metric: its attributes, and its count
// (histograms) or value.
type point struct {
	attrs map[string]string
	count uint64
	value float64
}

func points(t *testing.T, rm metricdata.ResourceMetrics, name string) []point {
	t.Helper()
	var ps []point
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != rlotel.ScopeName {
			continue
		}
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			switch d := m.Data.(type) {
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					ps = append(ps, point{attrsOf(p.Attributes), p.Count, p.Sum})
				}
			case metricdata.Histogram[int64]:
				for _, p := range d.DataPoints {
					ps = append(ps, point{attrsOf(p.Attributes), p.Count, float64(p.Sum)})
				}
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					ps = append(ps, point{attrsOf(p.Attributes), 0, float64(p.Value)})
				}
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					ps = append(ps, point{attrsOf(p.Attributes), 0, float64(p.Value)})
				}
			default:
				t.Fatalf("%s: unexpected data %T", name, m.Data)
			}
		}
	}
	require.NotEmpty(t, ps, "no data points for %s", name)
	return ps
}

func attrsOf(s attribute.Set) map[string]string {
	m := map[string]string{}
	for _, kv := range s.ToSlice() {
		m[string(kv.Key)] = kv.Value.String()
	}
	return m
}

// find returns the one point whose attributes include want.
func find(t *testing.T, ps []point, want map[string]string) point {
	t.Helper()
	var found []point
	for _, p := range ps {
		match := true
		for k, v := range want {
			if p.attrs[k] != v {
				match = false
			}
		}
		if match {
			found = append(found, p)
		}
	}
	require.Len(t, found, 1, "points matching %v among %v", want, ps)
	return found[0]
}

func spanAttrs(s sdktrace.ReadOnlySpan) map[string]string {
	m := map[string]string{}
	for _, kv := range s.Attributes() {
		m[string(kv.Key)] = kv.Value.String()
	}
	return m
}

func eventAttrs(e sdktrace.Event) map[string]string {
	m := map[string]string{}
	for _, kv := range e.Attributes {
		m[string(kv.Key)] = kv.Value.String()
	}
	return m
}

// TestObserver runs a lock's life against three redis-servers, through
// the redigo driver, and checks every metric and span it leaves.
func TestObserver(t *testing.T) {
	for _, names := range []bool{false, true} {
		t.Run("lock-names="+strconv.FormatBool(names), func(t *testing.T) { testObserver(t, names) })
	}
}

func testObserver(t *testing.T, lockNames bool) {
	servers, addrs := startRedis(t, 3)
	node := nodeIndex(addrs)
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	opts := []rlotel.Option{rlotel.WithMeterProvider(mp), rlotel.WithTracerProvider(tp)}
	if lockNames {
		opts = append(opts, rlotel.WithLockNames())
	}
	obs, err := rlotel.NewObserver(opts...)
	require.NoError(t, err)
	waiting := make(chan struct{}, 1)
	lost := make(chan struct{}, 1)
	waiters, loss := obs.Waiters, obs.Loss
	obs.Waiters = func(e redlock.WaitersEvent) {
		waiters(e)
		if e.Delta > 0 {
			waiting <- struct{}{}
		}
	}
	obs.Loss = func(e redlock.LossEvent) {
		loss(e)
		lost <- struct{}{}
	}

	drv, err := redigo.Dial(addrs, redigo.Options{})
	require.NoError(t, err)
	defer func() { assert.NoError(t, drv.Close()) }()
	// Node timeouts long against a loaded machine under -race: no node
	// times out, which the metrics check.
	client, err := redlock.NewClient(drv, redlock.Options{Observer: obs,
		Fencing: true, NodeTimeout: time.Second, Backoff: redlock.RandomDelay(time.Hour, time.Hour)})
	require.NoError(t, err)
	leased, err := redlock.NewClient(drv, redlock.Options{Observer: obs, Lease: &redlock.Lease{Fraction: 0.25},
		TTL: 2 * time.Second, NodeTimeout: 250 * time.Millisecond})
	require.NoError(t, err)

	ctx, parent := tp.Tracer("test").Start(context.Background(), "parent")
	// Acquired, refused, extended, waited for, handed off, released.
	l, err := client.TryLock(ctx, "k")
	require.NoError(t, err)
	lockedAt := time.Now() // the hold began before
	fence, err := l.Fence()
	require.NoError(t, err)
	_, err = client.TryLock(ctx, "k")
	require.ErrorIs(t, err, redlock.ErrTaken)
	require.NoError(t, l.Extend(ctx))
	got := make(chan error)
	var next *redlock.Lock
	go func() {
		var err error
		next, err = client.Lock(ctx, "k")
		got <- err
	}()
	<-waiting
	waitingAt := time.Now() // the Lock began before
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	assert.Equal(t, 1.0, points(t, rm, "redlock.waiters")[0].value, "one waiter")
	unlockAt := time.Now() // the hold ends, and the Lock wins, after
	require.NoError(t, l.Unlock(ctx))
	require.NoError(t, <-got)
	require.NoError(t, next.Unlock(ctx))

	// A leased lock lost to another holder.
	ll, err := leased.TryLock(ctx, "lease")
	require.NoError(t, err)
	for _, s := range servers {
		_, err := s.Do("SET", "lease", "another-holder", "PX", 10000)
		require.NoError(t, err)
	}
	<-lost
	require.ErrorIs(t, ll.Unlock(ctx), redlock.ErrLost)
	parent.End()

	rm = metricdata.ResourceMetrics{}
	require.NoError(t, reader.Collect(context.Background(), &rm))
	name := func(m map[string]string, key string) map[string]string {
		if lockNames {
			m["redlock.lock.name"] = key
		}
		return m
	}
	every := func(ps []point) {
		for _, p := range ps {
			assert.Equal(t, "redis", p.attrs["db.system.name"], "%v", p.attrs)
			_, has := p.attrs["redlock.lock.name"]
			assert.Equal(t, lockNames, has, "lock names only when asked: %v", p.attrs)
		}
	}

	ops := points(t, rm, "db.client.operation.duration")
	every(ops)
	seenOps := map[string]bool{}
	for _, p := range ops {
		assert.Equal(t, "127.0.0.1", p.attrs["server.address"])
		require.Contains(t, node, p.attrs["server.port"])
		assert.Equal(t, node[p.attrs["server.port"]], p.attrs["redlock.node"], "the node's index")
		assert.Contains(t, []string{"ok", "held", "missing"}, p.attrs["redlock.node.status"])
		assert.NotContains(t, p.attrs, "error.type", "no node failed")
		assert.Positive(t, p.value)
		seenOps[p.attrs["db.operation.name"]] = true
	}
	for _, op := range []string{"acquire", "acquire-fenced", "raise-fence", "release", "extend"} {
		assert.True(t, seenOps[op], "no %s command recorded", op)
	}

	acq := points(t, rm, "redlock.acquire.duration")
	every(acq)
	// Without lock names the leased lock's acquisition shares k's point.
	both := func(k, all uint64) uint64 {
		if lockNames {
			return k
		}
		return all
	}
	ok := find(t, acq, name(map[string]string{"redlock.outcome": "ok", "redlock.acquire.mode": "try"}, "k"))
	assert.Equal(t, both(1, 2), ok.count)
	assert.NotContains(t, ok.attrs, "error.type")
	taken := find(t, acq, name(map[string]string{"redlock.outcome": "taken", "redlock.acquire.mode": "try",
		"error.type": "taken"}, "k"))
	assert.Equal(t, uint64(1), taken.count)
	waited := find(t, acq, name(map[string]string{"redlock.outcome": "ok", "redlock.acquire.mode": "wait"}, "k"))
	assert.Equal(t, uint64(1), waited.count)
	for _, p := range []point{ok, taken, waited} {
		assert.Positive(t, p.value, "%v", p.attrs)
	}
	assert.GreaterOrEqual(t, waited.value, unlockAt.Sub(waitingAt).Seconds(),
		"the Lock waited from before the test saw it wait until after the Unlock began")

	att := points(t, rm, "redlock.acquire.attempts")
	every(att)
	assert.Equal(t, 1.0, find(t, att, name(map[string]string{"redlock.outcome": "taken"}, "k")).value)
	assert.GreaterOrEqual(t, find(t, att, name(map[string]string{"redlock.acquire.mode": "wait"}, "k")).value, 2.0)

	rel := points(t, rm, "redlock.release.duration")
	every(rel)
	relOK := find(t, rel, name(map[string]string{"redlock.outcome": "ok"}, "k"))
	assert.Equal(t, uint64(2), relOK.count)
	assert.Positive(t, relOK.value)
	assert.Equal(t, uint64(1), find(t, rel, name(map[string]string{"redlock.outcome": "lost", "error.type": "lost"}, "lease")).count)

	ext := points(t, rm, "redlock.extend.duration")
	every(ext)
	extOK := find(t, ext, name(map[string]string{"redlock.outcome": "ok", "redlock.lease": "false"}, "k"))
	assert.Equal(t, uint64(1), extOK.count)
	assert.Positive(t, extOK.value)
	assert.Equal(t, uint64(1), find(t, ext, name(map[string]string{"redlock.outcome": "lost", "redlock.lease": "true"}, "lease")).count)

	hold := points(t, rm, "redlock.hold.duration")
	every(hold)
	held := find(t, hold, name(map[string]string{"redlock.hold.end": "unlock"}, "k"))
	assert.Equal(t, uint64(2), held.count, "k's two locks; the lost lease lock's hold ended at its loss")
	for _, p := range hold {
		if p.attrs["redlock.lock.name"] == "lease" {
			assert.Equal(t, "lost", p.attrs["redlock.hold.end"], "the lease lock's one hold sample")
		}
	}
	assert.GreaterOrEqual(t, held.value, unlockAt.Sub(lockedAt).Seconds(),
		"the first lock was held from before TryLock returned until after Unlock began")
	heldLost := find(t, hold, name(map[string]string{"redlock.hold.end": "lost"}, "lease"))
	assert.Equal(t, uint64(1), heldLost.count)
	assert.Positive(t, heldLost.value)

	lostPts := points(t, rm, "redlock.lease.lost")
	every(lostPts)
	assert.Equal(t, 1.0, find(t, lostPts, name(map[string]string{"redlock.outcome": "taken", "error.type": "taken"}, "lease")).value)

	w := points(t, rm, "redlock.waiters")
	every(w)
	assert.Equal(t, 0.0, find(t, w, name(map[string]string{}, "k")).value, "the waiter left")

	h := points(t, rm, "redlock.handoff.duration")
	every(h)
	handoff := find(t, h, name(map[string]string{}, "k"))
	assert.Equal(t, uint64(1), handoff.count)
	assert.Positive(t, handoff.value)
	assert.LessOrEqual(t, handoff.value, waited.value, "the handoff is the end of the Lock's wait")

	f := points(t, rm, "redlock.fence")
	every(f)
	last, err := next.Fence()
	require.NoError(t, err)
	assert.Greater(t, last, fence)
	assert.Equal(t, float64(last), find(t, f, name(map[string]string{}, "k")).value, "the last fence raised")
	assert.Equal(t, wantUnits, units(rm), "every instrument, with its unit")

	// Spans: children of the caller's, one event per node answer.
	spans := map[string][]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		spans[s.Name()] = append(spans[s.Name()], s)
	}
	for _, n := range []string{"redlock.acquire", "redlock.release", "redlock.extend"} {
		require.NotEmpty(t, spans[n], "no %s span", n)
		for _, s := range spans[n] {
			assert.Equal(t, parent.SpanContext().TraceID(), s.Parent().TraceID(), "%s in the caller's trace", n)
			assert.Equal(t, parent.SpanContext().SpanID(), s.Parent().SpanID(), "%s a child of the caller's span", n)
			assert.Equal(t, trace.SpanKindClient, s.SpanKind())
			a := spanAttrs(s)
			assert.Equal(t, "redis", a["db.system.name"])
			_, has := a["redlock.lock.name"]
			assert.Equal(t, lockNames, has)
			assert.False(t, s.EndTime().Before(s.StartTime()))
			if a["redlock.outcome"] == "ok" {
				assert.Equal(t, codes.Unset, s.Status().Code)
			} else {
				assert.Equal(t, codes.Error, s.Status().Code, "%s %v", n, a)
				assert.NotEmpty(t, s.Status().Description)
				assert.Equal(t, a["redlock.outcome"], a["error.type"])
			}
			if n == "redlock.extend" && a["redlock.lease"] == "true" && a["redlock.outcome"] == "lost" {
				assert.NotEmpty(t, s.Events(), "the extension that proved the loss")
			}
			for _, e := range s.Events() {
				assert.Equal(t, "redlock.node", e.Name)
				ea := eventAttrs(e)
				assert.Equal(t, "127.0.0.1", ea["server.address"])
				require.Contains(t, node, ea["server.port"])
				assert.Equal(t, node[ea["server.port"]], ea["redlock.node"], "the node's index")
				assert.Contains(t, []string{"0", "1", "2"}, ea["redlock.node"])
				assert.NotEmpty(t, ea["redlock.node.status"])
				assert.NotEmpty(t, ea["db.operation.name"])
				d, err := strconv.ParseFloat(ea["redlock.node.duration"], 64)
				require.NoError(t, err)
				assert.Positive(t, d, "redlock.node.duration")
				assert.False(t, e.Time.Before(s.StartTime()), "%s: node event before the span", n)
				assert.False(t, e.Time.After(s.EndTime()), "%s: node event after the span", n)
			}
		}
	}
	var okAcq, fenced, takenAcq int
	modes := map[string]int{}
	for _, s := range spans["redlock.acquire"] {
		a := spanAttrs(s)
		modes[a["redlock.outcome"]+"/"+a["redlock.acquire.mode"]]++
		switch a["redlock.outcome"] {
		case "ok":
			okAcq++
			if a["redlock.fence"] != "" {
				fenced++
			}
			assert.GreaterOrEqual(t, len(s.Events()), 2, "a quorum of votes")
		case "taken":
			takenAcq++
			assert.Equal(t, "1", a["redlock.attempts"])
			for _, e := range s.Events() {
				assert.Equal(t, "held", eventAttrs(e)["redlock.node.status"])
			}
		}
	}
	assert.Equal(t, 3, okAcq, "k twice, lease once")
	assert.Equal(t, 2, fenced, "k's acquisitions say their fence; lease has none")
	assert.Equal(t, 1, takenAcq)
	assert.Equal(t, map[string]int{"ok/try": 2, "taken/try": 1, "ok/wait": 1}, modes, "redlock.acquire.mode")
	for _, s := range spans["redlock.release"] {
		assert.Len(t, s.Events(), 3, "a release hears every node")
	}
}

// TestObserverNodeErrors: a node that refuses connections is an error
// vote, and one that accepts them but never answers (a redis-server
// stopped by SIGSTOP) a timeout vote: error.type and redlock.node.status
// on its db.client.operation.duration point and on its span event, with
// the error's message. The rounds are sequential, so that every node is
// heard.
func TestObserverNodeErrors(t *testing.T) {
	for _, c := range []struct {
		name, status string
		nodeTimeout  time.Duration
		third        func(t *testing.T) string // the failing node's address
	}{
		{"refused", "error", time.Second, func(t *testing.T) string { return closedAddrs(t, 1)[0] }},
		{"timeout", "timeout", 300 * time.Millisecond, func(t *testing.T) string {
			s, _ := startRedis(t, 1)
			s[0].Stop() // the kernel still accepts connections: nothing answers
			return s[0].Addr
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, addrs := startRedis(t, 2)
			failing := c.third(t)
			addrs = append(addrs, failing)
			rec := newRecorder(t)
			client, err := redlock.NewClient(dial(t, addrs), redlock.Options{Observer: rec.obs,
				FanOut: redlock.Sequential, NodeTimeout: c.nodeTimeout})
			require.NoError(t, err)
			lock, err := client.TryLock(context.Background(), "k")
			require.NoError(t, err, "two of three nodes are a quorum")
			require.NoError(t, lock.Unlock(context.Background()))

			rm := rec.collect(t)
			_, port, _ := net.SplitHostPort(failing)
			for _, op := range []string{"acquire", "release"} {
				p := find(t, points(t, rm, "db.client.operation.duration"),
					map[string]string{"db.operation.name": op, "server.port": port})
				assert.Equal(t, map[string]string{"db.system.name": "redis", "db.operation.name": op,
					"server.address": "127.0.0.1", "server.port": port, "redlock.node": "2",
					"redlock.node.status": c.status, "error.type": c.status}, p.attrs, op)
				assert.Equal(t, uint64(1), p.count, op)
				assert.Positive(t, p.value, op)
			}
			spans := rec.spans.Ended()
			require.Len(t, spans, 2)
			for _, s := range spans {
				assert.Equal(t, codes.Unset, s.Status().Code, "%s succeeded", s.Name())
				require.Len(t, s.Events(), 3, "%s: sequential rounds hear every node", s.Name())
				failed := eventAttrs(s.Events()[2])
				assert.Equal(t, port, failed["server.port"])
				assert.Equal(t, "2", failed["redlock.node"])
				assert.Equal(t, c.status, failed["redlock.node.status"])
				assert.Equal(t, c.status, failed["error.type"])
				assert.NotEmpty(t, failed["exception.message"])
				d, err := strconv.ParseFloat(failed["redlock.node.duration"], 64)
				require.NoError(t, err)
				assert.Positive(t, d)
				for i, e := range s.Events()[:2] {
					ea := eventAttrs(e)
					assert.NotContains(t, ea, "error.type")
					assert.NotContains(t, ea, "exception.message")
					assert.Equal(t, strconv.Itoa(i), ea["redlock.node"])
				}
			}
		})
	}
}
