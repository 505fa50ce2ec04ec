//go:build linux

package latproxy

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// delayTimer waits until an instant on a timerfd, read through the
// netpoller: the goroutine parks without holding a thread, and wakes within
// the kernel's timer slack (about 50 µs) rather than the netpoller's 1 ms
// granularity.
type delayTimer struct {
	fd int
	f  *os.File
}

func newDelayTimer() *delayTimer {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return &delayTimer{fd: -1}
	}
	return &delayTimer{fd: fd, f: os.NewFile(uintptr(fd), "timerfd")}
}

func (t *delayTimer) waitUntil(due time.Time) error {
	d := time.Until(due)
	if d <= 0 {
		return nil
	}
	if t.f == nil {
		time.Sleep(d)
		return nil
	}
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}
	if err := unix.TimerfdSettime(t.fd, 0, &spec, nil); err != nil {
		time.Sleep(d)
		return nil
	}
	var buf [8]byte
	_, err := t.f.Read(buf[:])
	return err
}

func (t *delayTimer) close() {
	if t.f != nil {
		_ = t.f.Close() // a timerfd, only read: nothing is lost if closing fails
	}
}
