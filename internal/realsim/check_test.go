package realsim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// The checkers over made-up histories: each reports what it must, and
// nothing on a history that keeps every property.
func TestCheckers(t *testing.T) {
	t0 := time.Unix(0, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	h := func(key string, start, stop, until, done int, lost bool, fence uint64) *holding {
		x := &holding{key: key, start: at(start), stop: at(stop), until: at(until), lost: lost, fence: fence}
		if done >= 0 {
			x.done = at(done)
		}
		return x
	}
	fenced := &Config{Fencing: true}
	kinds := func(vs []Violation) []string {
		var ks []string
		for _, v := range vs {
			ks = append(ks, v.Kind)
		}
		return ks
	}
	tests := []struct {
		name string
		hs   []*holding
		want []string
	}{
		{"successive holders", []*holding{h("k", 0, 10, 20, 10, false, 1), h("k", 10, 30, 40, 30, false, 2)}, nil},
		{"two keys at once", []*holding{h("a", 0, 10, 20, 10, false, 1), h("b", 5, 30, 40, 30, false, 1)}, nil},
		{"overlap", []*holding{h("k", 0, 10, 20, 10, false, 1), h("k", 9, 30, 40, 30, false, 2)}, []string{"exclusion"}},
		{"fence not raised", []*holding{h("k", 0, 10, 20, 10, false, 2), h("k", 10, 30, 40, 30, false, 2)}, []string{"fences"}},
		{"loss after Until", []*holding{h("k", 0, 25, 20, 25, true, 1)}, []string{"late loss"}},
		{"loss before Until", []*holding{h("k", 0, 15, 20, 15, true, 1)}, nil},
		{"worked past Until, Context live", []*holding{h("k", 0, 25, 20, 26, false, 1)}, []string{"late loss"}},
		{"worked past its loss", []*holding{h("k", 0, 25, 20, 15, true, 1), h("k", 20, 30, 40, 30, false, 2)}, []string{"exclusion"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, kinds(check(fenced, tt.hs)))
		})
	}
}

// The checkers of the primitives beyond the mutex, over made-up
// histories: readers share and writers exclude; key sets that intersect
// exclude and disjoint ones do not; K permits, not K+1; a reader reads
// the last writer's fence.
func TestCheckersPrimitives(t *testing.T) {
	t0 := time.Unix(0, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	h := func(kind string, keys []string, start, stop int, fence uint64) *holding {
		x := &holding{kind: kind, key: keys[0], start: at(start), began: at(start - 1), stop: at(stop), until: at(stop + 10), done: at(stop), fence: fence}
		if kind == "all" {
			x.keys = keys
		}
		if kind == "permit" {
			x.permits = 2
		}
		return x
	}
	k := []string{"k"}
	kinds := func(vs []Violation) []string {
		var ks []string
		for _, v := range vs {
			ks = append(ks, v.Kind)
		}
		return ks
	}
	tests := []struct {
		name string
		hs   []*holding
		want []string
	}{
		{"readers share", []*holding{h("read", k, 0, 10, 0), h("read", k, 5, 30, 0)}, nil},
		{"a reader beside a writer", []*holding{h("write", k, 0, 10, 1), h("read", k, 5, 30, 1)}, []string{"writer overlap"}},
		{"two writers", []*holding{h("write", k, 0, 10, 1), h("write", k, 5, 30, 2)}, []string{"writer overlap"}},
		{"a writer after readers", []*holding{h("read", k, 0, 10, 0), h("read", k, 2, 12, 0), h("write", k, 12, 30, 1), h("read", k, 30, 40, 1)}, nil},
		{"a reader with a stale fence", []*holding{h("write", k, 0, 10, 3), h("read", k, 12, 30, 2)}, []string{"fences"}},
		{"writers' fences", []*holding{h("write", k, 0, 10, 3), h("read", k, 12, 20, 3), h("write", k, 20, 30, 3)}, []string{"fences"}},
		{"disjoint key sets", []*holding{h("all", []string{"a", "b"}, 0, 10, 1), h("all", []string{"c", "d"}, 5, 30, 1)}, nil},
		{"intersecting key sets, once for two keys", []*holding{h("all", []string{"a", "b"}, 0, 10, 1), h("all", []string{"b", "a"}, 5, 30, 2)}, []string{"key sets"}},
		{"a key set and a mutex", []*holding{h("all", []string{"a", "b"}, 0, 10, 1), h("mutex", []string{"b"}, 5, 30, 2)}, []string{"key sets"}},
		{"key sets' fences", []*holding{h("all", []string{"a", "b"}, 0, 10, 2), h("all", []string{"b", "c"}, 10, 30, 2)}, []string{"fences"}},
		{"two permits of 2", []*holding{h("permit", k, 0, 10, 0), h("permit", k, 5, 30, 0), h("permit", k, 10, 30, 0)}, nil},
		{"three permits of 2", []*holding{h("permit", k, 0, 10, 0), h("permit", k, 5, 30, 0), h("permit", k, 9, 30, 0)}, []string{"permits"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, kinds(check(&Config{Fencing: true}, tt.hs)))
		})
	}
}

// The permit slots' names are core.PermitKey's, and slotOf reads them
// back.
func TestPermitSlotNames(t *testing.T) {
	for _, key := range []string{"key0", "{tag}x", "a:permit:b"} {
		for i := range 3 {
			k, slot, ok := slotOf(permitKey(key, i))
			assert.True(t, ok, key)
			assert.Equal(t, i, slot)
			assert.Equal(t, key, k)
		}
	}
	_, _, ok := slotOf("key0")
	assert.False(t, ok)
}

// The writer-wait checker reports a WLock that waited past the bound, and
// nothing without a bound.
func TestWriterWaitChecker(t *testing.T) {
	t0 := time.Unix(0, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	writes := []call{{"k", at(0), at(150)}, {"k", at(200), at(450)}}
	vs := checkWriterWaits(&Config{WriterWait: 200 * ms}, writes)
	if assert.Len(t, vs, 1) {
		assert.Equal(t, "writer wait", vs[0].Kind)
		assert.Contains(t, vs[0].Detail, "250ms")
	}
	assert.Empty(t, checkWriterWaits(&Config{}, writes))
}
