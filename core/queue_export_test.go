package core

import "time"

// Queue is the Room's unexported queue, for the tests of its decisions
// one by one; a Room's pump reaches them only through its events.
type Queue = queue

// Queue returns an empty queue over the Spec's nodes.
func (s Spec) Queue() Queue { return s.queue() }

func (q *queue) Announce(node int, now time.Time) { q.announce(node, now) }
func (q *queue) Hold(g Grant) uint64              { return q.hold(g) }
func (q *queue) Unhold(n uint64)                  { q.unhold(n) }
func (q *queue) Follow() bool                     { return q.follow() }
func (q *queue) Holding(now time.Time) bool       { return q.holding(now) }
func (q *queue) Handover(locked bool)             { q.handover(locked) }
func (q *queue) Look(a *Acquisition, now time.Time, listening uint32, followed bool) (heard uint32, fresh bool) {
	return q.look(a, now, listening, followed)
}
func (q *queue) Queued(ticket int64)                { q.queued(ticket) }
func (q *queue) Told(waiting bool) uint64           { return q.tellEarly(waiting) }
func (q *queue) Retell(n uint64, waiting bool) bool { return q.retell(n, waiting) }
func (q *queue) Reannounce(waiting bool, now time.Time) (handOn, try bool) {
	return q.reannounce(waiting, now)
}
func (q *queue) Left(waiting bool) (handOn, try bool)     { return q.left(waiting) }
func (q *queue) Freed(a *Acquisition, now time.Time) bool { return q.freed(a, now) }
func (q *queue) Take() (heard uint32, fresh bool)         { return q.take() }
func (q *queue) Behind(a *Acquisition)                    { q.behind(a) }
