package plots

import (
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock/bench/multiproc"
)

func TestWriteMultiProc(t *testing.T) {
	per := func(base int64) []int64 {
		out := make([]int64, 32)
		for i := range out {
			out[i] = base + int64(i%8)
		}
		return out
	}
	recs := []multiproc.Record{
		{Driver: "redigo", Mode: multiproc.Wake, Nodes: 5, Procs: 4, Goroutines: 8, HoldUs: 1000, Seconds: 5, Sections: 1600, PerContender: per(46), Fairness: 53.0 / 46, AttemptsPerAcq: 4.27, GapP50Us: 1440, Throughput: 320},
		{Driver: "redigo", Mode: multiproc.Poll, Nodes: 5, Procs: 4, Goroutines: 8, HoldUs: 1000, Seconds: 5, Sections: 0, Note: "not measured"},
	}
	dir := t.TempDir()
	files, err := WriteMultiProc(dir, recs)
	require.NoError(t, err)
	require.Equal(t, []string{multiproc.PlotFile}, files)
	f, err := os.Open(filepath.Join(dir, multiproc.PlotFile)) //nolint:gosec // G304: the file WriteMultiProc wrote in t.TempDir()
	require.NoError(t, err)
	defer func() { _ = f.Close() }() // read-only: a failed Close loses nothing
	img, err := png.Decode(f)
	require.NoError(t, err)
	assert.Greater(t, img.Bounds().Dx(), 600)

	files, err = WriteMultiProc(t.TempDir(), recs[1:])
	require.NoError(t, err)
	assert.Empty(t, files, "nothing measured: no plot")
}
