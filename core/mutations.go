package core

// mutations re-introduce fixed bugs, so that tests can show that the
// simulation's checkers find them. Only tests set them (export_test.go);
// they are false in every program.
var mutations struct {
	// extendWithSpecDrift computes an extension's validity with the
	// drift of the extending Spec's TTL instead of the lock's own.
	extendWithSpecDrift bool
	// extendKeepsLostLock returns a lock unchanged, still valid, from an
	// extension that proved it lost.
	extendKeepsLostLock bool
	// skipFenceRaise hands a fenced lock to the caller with the largest
	// counter of its acquire round, without raising the counters of a
	// majority to it first.
	skipFenceRaise bool
	// leaseLosesAtValidity declares a lease's loss at the end of the
	// validity itself, with its last extension round ending there: the
	// loss reaches the holder when the lock is no longer valid.
	leaseLosesAtValidity bool
	// validityWithoutDrift leaves the drift allowance out of validity.
	validityWithoutDrift bool
	// wakeOnHeldOnly wakes a waiter only on announcements from nodes its
	// failed attempt found held, as before a quorum announced free counted.
	wakeOnHeldOnly bool
	// chainNeverOpens makes Queue.Follow hand every release on within the
	// process: a process that always has a waiter keeps the key for ever.
	chainNeverOpens bool
	// placeIgnored makes a head ignore its place (Queue.Look): it queues its
	// process at the back at its first failed attempt (the bug the
	// processes' campaign found).
	placeIgnored bool
	// neededOverstates makes Round.Needed ask for one reply more than can
	// change the round: a gathering caller decides later than it could.
	neededOverstates bool
	// cancelStaysQueued ends a Fair waiter cancelled before its attempt
	// was sent, or during the cleanup that queued it, without its leave
	// round: it stays in the nodes' queues (the bug bece5cd fixed).
	cancelStaysQueued bool
	// placeOutlivesHead makes Queue.Look record a head's ticket as its
	// process's place even when nobody follows it: a waiter that comes
	// after the head left queues the process under that old ticket.
	placeOutlivesHead bool
	// behindKeepsTicket makes Queue.Behind keep the waiter's own ticket:
	// a waiter behind the head that gives up takes the process out of the
	// nodes' queue while its head waits.
	behindKeepsTicket bool
	// neverReannounce makes Queue.Reannounce say no: a quiet release whose
	// waiter left without the key leaves the other processes' waiters to
	// wait for the old key's expiry.
	neverReannounce bool
	// neverReannounceAtLeave makes Queue.Left say no: a quiet release
	// whose waiter leaves without the key after it is done stays unheard.
	neverReannounceAtLeave bool
	// freedUnheard makes Queue.Freed say no: a key that a Lock of the
	// process freed with the cleanup of an attempt it made at once is left
	// to the head's timed retry (seed 16809 of the Fair processes of two).
	freedUnheard bool
}
