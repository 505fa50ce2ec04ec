//go:build redlock_mutations

package core

// The mutation switches re-introduce fixed bugs, so that tests can show
// that the simulation's checkers find them. They exist only in builds
// with the redlock_mutations tag (go test -tags redlock_mutations
// ./core/), where only tests set them (export_mutations_test.go); in
// every other build they are constants false (mutations_off.go) and the
// branches they guard compile away.
var (
	// mutExtendWithSpecDrift computes an extension's validity with the
	// drift of the extending Spec's TTL instead of the lock's own.
	mutExtendWithSpecDrift bool
	// mutExtendKeepsLostLock returns a lock unchanged, still valid, from an
	// extension that proved it lost.
	mutExtendKeepsLostLock bool
	// mutSkipFenceRaise hands a fenced lock to the caller with the largest
	// counter of its acquire round, without raising the counters of a
	// majority to it first.
	mutSkipFenceRaise bool
	// mutLeaseLosesAtValidity declares a lease's loss at the end of the
	// validity itself, with its last extension round ending there: the
	// loss reaches the holder when the lock is no longer valid.
	mutLeaseLosesAtValidity bool
	// mutValidityWithoutDrift leaves the drift allowance out of validity.
	mutValidityWithoutDrift bool
	// mutWakeOnHeldOnly wakes a waiter only on announcements from nodes its
	// failed attempt found held, as before a quorum announced free counted.
	mutWakeOnHeldOnly bool
	// mutMarkLapses lets a writer waiting for readers (KindWrite) sleep
	// until their expiry, past its mark's: readers admitted as the mark
	// lapses refuse it again, a TTL at a time (WakeAt).
	mutMarkLapses bool
	// mutOutOfTriesKeepsMark makes a writer's last cleanup, when it has
	// no try left, keep its mark as a waiting writer's does: readers are
	// kept out for the mark's life by a writer that no longer waits.
	mutOutOfTriesKeepsMark bool
	// mutChainNeverOpens makes queue.follow hand every release on within the
	// process: a process that always has a waiter keeps the key for ever.
	mutChainNeverOpens bool
	// mutPlaceIgnored makes a head ignore its place (queue.look): it queues its
	// process at the back at its first failed attempt (the bug the
	// processes' campaign found).
	mutPlaceIgnored bool
	// mutNeededOverstates makes Round.Needed ask for one reply more than can
	// change the round: a gathering caller decides later than it could.
	mutNeededOverstates bool
	// mutCancelStaysQueued ends a Fair waiter cancelled before its attempt
	// was sent, or during the cleanup that queued it, without its leave
	// round: it stays in the nodes' queues (the bug bece5cd fixed).
	mutCancelStaysQueued bool
	// mutPlaceOutlivesHead makes queue.look record a head's ticket as its
	// process's place even when nobody follows it: a waiter that comes
	// after the head left queues the process under that old ticket.
	mutPlaceOutlivesHead bool
	// mutBehindKeepsTicket makes queue.behind keep the waiter's own ticket:
	// a waiter behind the head that gives up takes the process out of the
	// nodes' queue while its head waits.
	mutBehindKeepsTicket bool
	// mutNeverReannounce makes queue.reannounce say no: a quiet release whose
	// waiter left without the key leaves the other processes' waiters to
	// wait for the old key's expiry.
	mutNeverReannounce bool
	// mutNeverReannounceAtLeave makes queue.left say no: a quiet release
	// whose waiter leaves without the key after it is done stays unheard.
	mutNeverReannounceAtLeave bool
	// mutFreedUnheard makes queue.freed say no: a key that a Lock of the
	// process freed with the cleanup of an attempt it made at once is left
	// to the head's timed retry (seed 16809 of the Fair processes of two).
	mutFreedUnheard bool
	// mutLastAttemptQueues makes a Fair attempt with no try left queue its
	// waiter too, and, finding the key held on every node, end without a
	// cleanup: the acquisition ends still queued.
	mutLastAttemptQueues bool
)
