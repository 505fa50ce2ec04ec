package memnode

import "github.com/redlock-go/redlock/core"

// Fair commands (core.Config.Fair) run as the drivers' scripts do, with
// the cluster as one waiter, the one driver of one process: a failed
// attempt that will wait, or its cleanup, queues it on a node, until the
// command's Command.EntryLife; a release or
// cleanup that leaves the key free there hands it to the waiter, if
// queued, for Command.Handoff, and announces that (its turn) to the
// key's watches; an acquire takes a key free or handed to the waiter,
// and leaves the queue. Nobody queued, a release announces nothing.

// applyFair runs a Fair acquire or release; n.mu is held. handed reports
// that the key was handed to the waiter.
func (n *node) applyFair(cmd *core.Command, now instant) (st core.Status, handed bool) {
	e := n.entry(cmd.Key)
	live := n.alive(e, now)
	switch cmd.Op {
	case core.OpAcquire, core.OpAcquireFenced:
		if live && !e.handed {
			if cmd.Ticket > 0 { // an attempt that will wait queues its waiter
				n.queue(cmd.Key, now.add(cmd.EntryLife()))
			}
			return core.StatusHeld, false
		}
		n.set(e, cmd.Key, cmd.Token, now.add(cmd.TTL)) // handed no more
		delete(n.queued, cmd.Key)
		return core.StatusOK, false
	case core.OpRelease:
		switch {
		case !live:
			st = core.StatusMissing
		case e.handed && !n.resending || !e.handed && e.token == cmd.Token:
			n.kill(e)
			st, live = core.StatusOK, false
		default:
			st = core.StatusHeld
		}
		// A resend (Cluster.Resend) has the effects of a first run only
		// if it deleted the token: its first run never ran.
		first := !n.resending || st == core.StatusOK
		if cmd.Ticket < 0 { // a waiter that gives up
			delete(n.queued, cmd.Key)
		}
		if until, ok := n.queued[cmd.Key]; cmd.Ticket > 0 && (first || ok && now < until) {
			n.queue(cmd.Key, now.add(cmd.EntryLife()))
		}
		if until, ok := n.queued[cmd.Key]; ok && !live && first {
			delete(n.queued, cmd.Key)
			if now < until {
				// n.data again: the kill above may have swept e out.
				n.set(n.entry(cmd.Key), cmd.Key, core.Token{}, now.add(cmd.Handoff)).handed = true
				return st, true
			}
		}
		return st, false
	}
	return 0, false
}

// queue queues the waiter for key, or renews its entry, until until; n.mu
// is held.
func (n *node) queue(key string, until instant) {
	if n.queued == nil {
		n.queued = make(map[string]instant)
	}
	n.queued[key] = until
}
