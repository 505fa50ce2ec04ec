package core

// A node whose replicas must hold what it votes on (a Sentinel group's or
// a Cluster shard's master, drivers.Member.Replicas) counts a write only
// once WAIT says enough replicas hold it. Which writes, and how many
// replicas are enough, are decided here once: the drivers' engine asks
// Waited and Replicated of every write and every WAIT reply, and the
// simulation's replicated nodes (internal/sim, failover.go) ask the same,
// so that a defect in either shows in the campaign.

// Waited reports whether a write of op waits for WAIT before its vote
// counts: an acquisition, an extension and a fence raise, the writes a
// vote or a fence rests on. A failover that loses a raise lets a later
// quorum that meets the raised majority only on that node return a
// smaller fence. A release is not waited for: a key a failover brings
// back expires, as one whose release was lost does.
func Waited(op Op) bool {
	return op == OpAcquire || op == OpAcquireFenced || op == OpExtend || op == OpRaiseFence
}

// Replicated reports whether WAIT's reply, acked, the number of replicas
// that acknowledged a write, confirms it on a node that asks replicas of
// them: every replica a failover could promote must hold it.
func Replicated(acked int64, replicas int) bool { return acked >= int64(replicas) }
