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
