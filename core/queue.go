package core

// Queue is the wait decisions of one process's waiters of one key. Only
// the first waiter, the head, hears the key's announcements and attempts;
// the others wait their turn, so that a release wakes one attempt per
// process, not one per waiter. The caller keeps its waiters in order;
// Queue decides what the head has heard:
//
//   - announcements of releases reach the head (Announce);
//   - a release by this process is heard from every node at once, without
//     the announcement's round trip (Released);
//   - a head that leaves having taken the lock hands its successor a
//     clean slate, to wait for that lock's release or expiry; one that gave
//     up hands it every node, since it cannot pass on what it heard
//     (Handover).
//
// Its zero value hears nothing; Spec.Queue returns one for the Spec's
// nodes. It is a small value that allocates nothing.
type Queue struct {
	all   uint32 // every node's bit
	heard uint32 // heard by the head and not yet taken
}

// Queue returns an empty Queue over the Spec's nodes.
func (s Spec) Queue() Queue { return Queue{all: 1<<s.n - 1} }

// Announce records node's announcement (Announcer.Watch) for the head.
func (q *Queue) Announce(node int) {
	if node >= 0 && node < MaxNodes {
		q.heard |= 1 << node & q.all
	}
}

// Released records that this process released the key: the head hears
// every node.
func (q *Queue) Released() { q.heard = q.all }

// Handover records that the head left the queue, having taken the lock
// (locked) or not. The caller wakes the successor, if any, either way: it
// attempts at once after a head that gave up (it hears every node), and
// after one that took the lock it waits on its own WakeAt (the retry
// delay, or the holder's expiry), announcements bringing it forward, so
// that a holder that never unlocks cannot keep it waiting past that. The
// queue left empty keeps nothing for a later head.
func (q *Queue) Handover(locked bool) {
	if locked {
		q.heard = 0
		return
	}
	q.heard = q.all
}

// Take returns what the head has heard since it last took, bit i for node
// i, and clears it: feed each node to the head's Acquisition.Announce.
func (q *Queue) Take() uint32 {
	h := q.heard
	q.heard = 0
	return h
}
