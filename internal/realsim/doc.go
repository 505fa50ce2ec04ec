// Package realsim is the simulation campaign of the real Client: it runs
// the root package's redlock.Client itself — Lock, TryLock, Unlock,
// Extend, the lease watcher, the wait room and Fair, and the reader/writer
// lock, the multi-key lock and the semaphore — one Client per
// process, a few goroutines each, over memnode's in-memory nodes behind a
// network of its own that loses, delays and duplicates commands, replies
// and release announcements, forges announcements, crashes nodes (with
// their keys, or without them: a failover to a replica that missed them),
// and pauses them. Package sim drives core's step values with a copy of
// the runner's choreography; this package has no copy: what it checks is
// what ships.
//
// # Virtual time
//
// A schedule runs inside a testing/synctest bubble, with the Client and
// the nodes on core.SystemClock: time.Now, timers and sleeps in the
// bubble read a virtual clock that jumps to the next timer whenever every
// goroutine of the bubble is durably blocked (on a channel, a timer, a
// select), so a schedule of seconds runs in milliseconds, and nothing of
// the Client is stubbed. The alternative, a manual clock advanced when
// every participant is blocked, would need the Client's goroutines
// counted from the outside, which its blocking on channels and mutexes
// does not allow soundly. synctest.Test needs a *testing.T: the package's
// test has one, and cmd/redlock-realsim takes one from testing.Main.
//
// A schedule cannot hang the campaign: every Lock and TryLock has a
// virtual deadline (but in the broken configuration that omits them), and
// past the schedule's horizon in virtual time, or past its
// bound of commands, it is torn down (every command fails at once, every
// ctx is cancelled) and reported as a "stuck" violation with its seed; a
// bubble left with goroutines blocked for good is reported stuck too;
// and a schedule in which virtual time stops (a goroutine blocked where
// synctest cannot see it, on a mutex or a channel made outside the
// bubble, or spinning) is reported stuck after RealTimeLimit of real
// time, its goroutines left behind.
//
// # Checkers
//
// The history is the schedule's holdings in virtual time, one clock for
// every Client and node (so the checks are exact): when each Lock or
// TryLock returned a lock, when its holder stopped working under it (its
// Context's cancellation, or the end of its work before Unlock), the last
// Until it was told (after acquiring, Extend, or a Lease's extension,
// heard through Options.Observer), when its Context was cancelled and
// why, and its fence. Exclusion: no two holders of a key worked at once.
// Fences: with Fencing, each holder's fence exceeds every earlier one's.
// The primitives beyond the mutex (Config.Prim) have theirs: no writer
// overlaps another holder of its key (readers share); no two holders of
// intersecting key sets (LockAll, a Lock being a set of one key) worked
// at once; no more than K holders of a semaphore's permits worked at
// once; a reader's fence is at least that of every writer that
// returned before its RLock began; and, where Config.WriterWait is set,
// no writer's WLock waited past that bound behind a stream of readers
// each holding under a TTL.
// Late loss: a Context is cancelled no later than its Until. Long wait,
// where announcements arrive and no command is lost: no Lock waits past
// a retry delay and a failed attempt's rounds while a quorum of nodes has
// its key free by an announced release (the nodes are sampled every 2 ms
// of virtual time).
//
// The step-level campaign's skipped-waiter checker has no counterpart
// here: memnode's Fair scripts queue the cluster as one waiter (one
// process), so several Clients over one cluster are not queued apart,
// and their order says nothing of the drivers' queues. The Fair
// configurations check exclusion, fences and late loss.
//
// # Replay
//
// A schedule is its configuration and seed: the workload's choices come
// from generators seeded per goroutine, and each message's fate from the
// seed, what the message is and when it is sent, so a replay gives it the
// fate it had. The goroutines' interleaving at one virtual instant is the
// Go scheduler's, and each Client draws its retry delays from its own
// jitter (redlock.Options takes no seeded source), so a replay repeats its
// schedule closely, not always exactly; on one thread (GOMAXPROCS 1, the
// command's default) it mostly does.
package realsim
