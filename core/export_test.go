package core

// ExtendWithLockerDrift re-introduces the bug of an extension validity
// computed with the extending Locker's drift, and returns the function
// that fixes it again. Tests only: it is not safe for concurrent use with
// running Lockers.
func ExtendWithLockerDrift() (restore func()) {
	mutations.extendWithLockerDrift = true
	return func() { mutations.extendWithLockerDrift = false }
}

// ExtendKeepsLostLock re-introduces the bug of a lock left valid by an
// extension that proved it lost, and returns the function that fixes it.
func ExtendKeepsLostLock() (restore func()) {
	mutations.extendKeepsLostLock = true
	return func() { mutations.extendKeepsLostLock = false }
}

// SkipFenceRaise re-introduces a fenced acquisition without its raise
// round, and returns the function that puts the round back.
func SkipFenceRaise() (restore func()) {
	mutations.skipFenceRaise = true
	return func() { mutations.skipFenceRaise = false }
}
