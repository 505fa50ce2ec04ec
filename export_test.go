package redlock

// WatcherExited reports whether l's watcher goroutine has finished its
// work: it closes exited as its last act. Counting goroutines instead
// races with the few instructions the goroutine runs after that close.
func WatcherExited(l *Lock) bool {
	select {
	case <-l.exited:
		return true
	default:
		return false
	}
}
