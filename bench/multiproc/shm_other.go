//go:build !linux

package multiproc

import (
	"errors"
	"time"
)

var start = time.Now()

// Now is the process's monotonic clock here: not shared between
// processes, which is why the scenario runs on Linux only.
func Now() int64 { return int64(time.Since(start)) }

// Supported reports whether this platform runs the scenario.
const Supported = false

var errUnsupported = errors.New("multiproc: the multi-process scenario runs on Linux only (a shared clock and a shared memory page)")

const words = 5

// Shared is the exclusion check shared by every process of a cell; see
// the Linux implementation.
type Shared struct {
	w *[words]int64
}

// CreateShared is not supported here.
func CreateShared(dir string) (*Shared, string, error) { return nil, "", errUnsupported }

// OpenShared is not supported here.
func OpenShared(path string) (*Shared, error) { return nil, errUnsupported }

// Close does nothing.
func (s *Shared) Close() error { return nil }

const (
	wInside = iota
	wEntered
	wCounter
	wOverlaps
	wSeq
)
