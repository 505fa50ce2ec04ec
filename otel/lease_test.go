package otel_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/internal/redistest"
)

// TestObserverLeaseLoss: a leased lock lost other than to another holder
// (TestObserver's taken) is one redlock.lease.lost point whose outcome and
// error.type are the cause, and one redlock.hold.duration ending "lost",
// at least as long as the test saw the lock held before the fault; the
// lease's own extensions (redlock.lease true) say what they met, on their
// metric points and on their spans' node events.
func TestObserverLeaseLoss(t *testing.T) {
	const key = "k"
	for _, c := range []struct {
		name, cause string
		sentinel    error
		lease       redlock.Lease
		opts        redlock.Options
		// fault breaks the lock and returns when it began; extended is
		// when the lease's first successful extension was heard.
		fault func(t *testing.T, servers []*redistest.Server, extended <-chan time.Time) time.Time
		// extensions checks the lease's extension spans.
		extensions func(t *testing.T, spans []sdktrace.ReadOnlySpan)
	}{
		{
			name: "quorum_unreachable", cause: "quorum_unreachable", sentinel: redlock.ErrQuorumUnreachable,
			fault: func(_ *testing.T, servers []*redistest.Server, _ <-chan time.Time) time.Time {
				at := time.Now()
				servers[1].Kill()
				servers[2].Kill()
				return at
			},
			extensions: func(t *testing.T, spans []sdktrace.ReadOnlySpan) {
				n := 0
				for _, s := range spans {
					a := spanAttrs(s)
					if a["redlock.outcome"] != "quorum_unreachable" {
						continue
					}
					n++
					assert.Equal(t, codes.Error, s.Status().Code)
					assert.Equal(t, "quorum_unreachable", a["error.type"])
					failed := map[string]string{}
					for _, e := range s.Events() {
						if ea := eventAttrs(e); ea["error.type"] != "" {
							failed[ea["redlock.node"]] = ea["error.type"]
							assert.Equal(t, ea["error.type"], ea["redlock.node.status"])
							assert.NotEmpty(t, ea["exception.message"])
						}
					}
					assert.Equal(t, "error", failed["1"], "the killed node 1 refuses")
					assert.Equal(t, "error", failed["2"], "the killed node 2 refuses")
				}
				assert.Positive(t, n, "an extension that could not reach a quorum")
			},
		},
		{
			name: "not_held", cause: "not_held", sentinel: redlock.ErrNotHeld,
			fault: func(t *testing.T, servers []*redistest.Server, _ <-chan time.Time) time.Time {
				at := time.Now()
				var deleted int64
				for _, s := range servers {
					n, err := s.Do("DEL", key)
					require.NoError(t, err)
					d, ok := n.(int64)
					require.True(t, ok, "DEL answers %T %v", n, n)
					deleted += d
				}
				// TryLock returns at a quorum: the third SET may come after its DEL.
				require.GreaterOrEqual(t, deleted, int64(2), "a quorum held the lock's key")
				return at
			},
			extensions: func(t *testing.T, spans []sdktrace.ReadOnlySpan) {
				var lost []sdktrace.ReadOnlySpan
				for _, s := range spans {
					if spanAttrs(s)["redlock.outcome"] == "lost" {
						lost = append(lost, s)
					}
				}
				require.Len(t, lost, 1, "the extension that found the keys gone")
				s := lost[0]
				assert.Equal(t, codes.Error, s.Status().Code)
				assert.Equal(t, "lost", spanAttrs(s)["error.type"])
				missing := 0
				for _, e := range s.Events() {
					ea := eventAttrs(e)
					if ea["redlock.node.status"] == "missing" {
						missing++
					} else { // the node whose SET came after the DEL
						assert.Equal(t, "ok", ea["redlock.node.status"])
					}
					assert.NotContains(t, ea, "error.type", "a missing key is an answer, not a node failure")
				}
				assert.GreaterOrEqual(t, missing, 2, "a quorum found the key gone")
			},
		},
		{
			name: "max-extensions", cause: "extension_limit", sentinel: redlock.ErrExtensionLimit,
			opts:  redlock.Options{MaxExtensions: 1},
			fault: untilExtended,
			extensions: func(t *testing.T, spans []sdktrace.ReadOnlySpan) {
				require.Len(t, spans, 1, "one extension allowed, none refused in a round")
				assertExtended(t, spans[0])
			},
		},
		{
			name: "max-hold", cause: "extension_limit", sentinel: redlock.ErrExtensionLimit,
			lease: redlock.Lease{MaxHold: 3 * time.Second}, // the TTL
			fault: untilExtended,
			extensions: func(t *testing.T, spans []sdktrace.ReadOnlySpan) {
				require.NotEmpty(t, spans)
				for _, s := range spans {
					assertExtended(t, s)
				}
			},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			servers, addrs := startRedis(t, 3)
			rec := newRecorder(t)
			lost := make(chan struct{}, 1)
			extended := make(chan time.Time, 1)
			onLoss, onExtend := rec.obs.Loss, rec.obs.Extend
			rec.obs.Loss = func(e redlock.LossEvent) {
				onLoss(e)
				lost <- struct{}{}
			}
			rec.obs.Extend = func(e redlock.ExtendEvent) {
				onExtend(e)
				if e.Lease && e.Outcome == redlock.OutcomeOK {
					select {
					case extended <- time.Now(): // the first
					default:
					}
				}
			}
			lease := c.lease
			lease.Fraction = 0.25
			opts := c.opts
			// Node timeouts long against a loaded machine under -race: the
			// live nodes answer in time.
			opts.TTL, opts.NodeTimeout = 3*time.Second, 500*time.Millisecond
			opts.Observer, opts.Lease = rec.obs, &lease
			client, err := redlock.NewClient(dial(t, addrs), opts)
			require.NoError(t, err)

			ctx := context.Background()
			lock, err := client.TryLock(ctx, key)
			require.NoError(t, err)
			lockedAt := time.Now() // the hold began before
			faultAt := c.fault(t, servers, extended)
			select {
			case <-lost:
			case <-time.After(30 * time.Second): // a hang, not a timing
				t.Fatal("the lock was not declared lost")
			}
			assert.ErrorIs(t, context.Cause(lock.Context()), c.sentinel, "the loss's cause")
			err = lock.Unlock(ctx)
			require.ErrorIs(t, err, redlock.ErrLost)
			require.ErrorIs(t, err, c.sentinel)

			rm := rec.collect(t)
			lostPts := points(t, rm, "redlock.lease.lost")
			require.Len(t, lostPts, 1)
			assert.Equal(t, map[string]string{"db.system.name": "redis", "redlock.outcome": c.cause, "error.type": c.cause},
				lostPts[0].attrs)
			assert.Equal(t, 1.0, lostPts[0].value)

			hold := points(t, rm, "redlock.hold.duration")
			h := find(t, hold, map[string]string{"redlock.hold.end": "lost"})
			assert.Equal(t, map[string]string{"db.system.name": "redis", "redlock.hold.end": "lost"}, h.attrs)
			assert.Equal(t, uint64(1), h.count)
			assert.GreaterOrEqual(t, h.value, faultAt.Sub(lockedAt).Seconds(),
				"held from before TryLock returned until after the fault began")
			assert.Len(t, hold, 1, "one sample per lock, the loss's: the Unlock after it held nothing")
			rel := find(t, points(t, rm, "redlock.release.duration"), map[string]string{"redlock.outcome": "lost"})
			assert.Equal(t, "lost", rel.attrs["error.type"])
			assert.Equal(t, uint64(1), rel.count)

			var spans []sdktrace.ReadOnlySpan
			for _, s := range rec.ended("redlock.extend") {
				assert.Equal(t, "true", spanAttrs(s)["redlock.lease"], "only the lease extended")
				spans = append(spans, s)
			}
			c.extensions(t, spans)
			// The extension points agree with the spans.
			count := map[string]uint64{}
			for _, s := range spans {
				count[spanAttrs(s)["redlock.outcome"]]++
			}
			for _, p := range points(t, rm, "redlock.extend.duration") {
				assert.Equal(t, "true", p.attrs["redlock.lease"])
				assert.Equal(t, count[p.attrs["redlock.outcome"]], p.count, "%v", p.attrs)
				delete(count, p.attrs["redlock.outcome"])
			}
			assert.Empty(t, count, "an extension span without its metric point")
		})
	}
}

// untilExtended waits for the lease's first extension and returns when it
// was heard: the lease's bound ends the lock after that.
func untilExtended(t *testing.T, _ []*redistest.Server, extended <-chan time.Time) time.Time {
	t.Helper()
	select {
	case at := <-extended:
		return at
	case <-time.After(30 * time.Second): // a hang, not a timing
		t.Fatal("the lease never extended the lock")
		return time.Time{}
	}
}

// assertExtended checks a successful lease extension's span.
func assertExtended(t *testing.T, s sdktrace.ReadOnlySpan) {
	t.Helper()
	a := spanAttrs(s)
	assert.Equal(t, "ok", a["redlock.outcome"])
	assert.NotContains(t, a, "error.type")
	assert.Equal(t, codes.Unset, s.Status().Code)
	require.GreaterOrEqual(t, len(s.Events()), 2, "a quorum of answers")
	for _, e := range s.Events() {
		ea := eventAttrs(e)
		assert.Equal(t, "extend", ea["db.operation.name"])
		assert.Equal(t, "ok", ea["redlock.node.status"])
	}
}
