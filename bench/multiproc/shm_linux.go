//go:build linux

package multiproc

import (
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Now reads CLOCK_MONOTONIC in nanoseconds: one clock for every process
// of the machine, unlike time.Now's monotonic reading, which counts from
// each process's start.
func Now() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic("multiproc: clock_gettime(CLOCK_MONOTONIC): " + err.Error()) // cannot fail on Linux
	}
	return ts.Nano()
}

// Supported reports whether this platform runs the scenario.
const Supported = true

// The words of the shared page, at these indexes of int64s.
const (
	wInside   = iota // sections inside now
	wEntered         // sections entered
	wCounter         // the read-modify-write counter
	wOverlaps        // sections entered while another was inside
	wSeq             // the last section's ticket
	words
)

// Shared is the exclusion check shared by every process of a cell: a
// page of a file mapped by each (MAP_SHARED), whose words are updated
// with sync/atomic, so that two critical sections inside at once are
// caught whichever processes they run in.
type Shared struct {
	mem []byte
	w   *[words]int64
}

// CreateShared creates a zeroed shared page in a new file under dir ("":
// the temporary directory) and maps it; its path is for OpenShared in the
// other processes.
func CreateShared(dir string) (*Shared, string, error) {
	f, err := os.CreateTemp(dir, "redlock-multiproc-*.shm")
	if err != nil {
		return nil, "", err
	}
	// The mapping outlives the file, and nothing is written through f: a
	// failed Close loses nothing. A failure's own error is the one to
	// report, not the removal's of the file it leaves.
	defer func() { _ = f.Close() }()
	if err := f.Truncate(int64(os.Getpagesize())); err != nil {
		_ = os.Remove(f.Name())
		return nil, "", err
	}
	s, err := mapFile(f)
	if err != nil {
		_ = os.Remove(f.Name())
		return nil, "", err
	}
	return s, f.Name(), nil
}

// OpenShared maps the shared page at path, which CreateShared made.
func OpenShared(path string) (*Shared, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0) //nolint:gosec // G304: the page CreateShared made, named by the parent
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // the mapping outlives the file: see CreateShared
	return mapFile(f)
}

func mapFile(f *os.File) (*Shared, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() < int64(words*8) {
		return nil, fmt.Errorf("multiproc: %s: %d bytes, not a shared page", f.Name(), st.Size())
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("multiproc: mmap %s: %w", f.Name(), err)
	}
	// A mapping is page-aligned: its words are 8-byte aligned, as
	// sync/atomic needs.
	return &Shared{mem: mem, w: (*[words]int64)(unsafe.Pointer(&mem[0]))}, nil //nolint:gosec // G103: the mapped page viewed as its words, checked long enough above
}

// Close unmaps the page.
func (s *Shared) Close() error {
	if s.mem == nil {
		return nil
	}
	err := unix.Munmap(s.mem)
	s.mem, s.w = nil, nil
	return err
}
