package core

// mutations re-introduce fixed bugs, so that tests can show that the
// simulation's checkers find them. Only tests set them (export_test.go);
// they are false in every program.
var mutations struct {
	// extendWithLockerDrift computes an extension's validity with the
	// drift of the extending Locker's TTL instead of the lock's own.
	extendWithLockerDrift bool
	// extendKeepsLostLock returns a lock unchanged, still valid, from an
	// extension that proved it lost.
	extendKeepsLostLock bool
	// skipFenceRaise hands a fenced lock to the caller with the largest
	// counter of its acquire round, without raising the counters of a
	// majority to it first.
	skipFenceRaise bool
}
