//go:build !linux

package latproxy

import "time"

// delayTimer falls back to time.Sleep, which the netpoller may round up to
// a millisecond.
type delayTimer struct{}

func newDelayTimer() *delayTimer { return &delayTimer{} }

func (*delayTimer) waitUntil(due time.Time) error {
	if d := time.Until(due); d > 0 {
		time.Sleep(d)
	}
	return nil
}

func (*delayTimer) close() {}
