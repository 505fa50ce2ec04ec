package redigo

import (
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlock-go/redlock/core"
)

// MaxParked is the number of unfinished lines (see the package
// documentation) a node keeps for the drainer or the next round. Beyond
// it, Batch.Close discards lines instead: that costs a reconnect, never a
// wait.
const MaxParked = 64

// park hands over an unfinished line: the next round with a command for one
// of its keys on that node pipelines behind it (adopt), and the drainer
// finishes it otherwise. When the node has MaxParked lines already, or the
// driver is closed, the line is discarded at once.
func (d *Driver) park(l *line) {
	for k := 0; k < l.n; k++ {
		l.calls[k].mine = false
	}
	n := &d.nodes[l.node]
	d.mu.RLock()
	if !d.closed.Load() {
		n.smu.Lock()
		if len(n.parked) < MaxParked {
			n.parked = append(n.parked, *l)
			n.smu.Unlock()
			d.mu.RUnlock()
			select {
			case d.kick <- struct{}{}:
			default:
			}
			*l = line{}
			return
		}
		n.smu.Unlock()
	}
	d.mu.RUnlock()
	discard(l)
}

// repark parks again, as a line of their own, the releases of l (which
// has no connection: nothing of it is written) that were not given their
// time yet (see line.grant); the rest of l is left to the caller.
func (d *Driver) repark(l *line) {
	r := line{node: l.node}
	for k := 0; k < l.n; k++ {
		if p := l.calls[k]; p.cmd.Op == core.OpRelease && p.budget > 0 {
			p.mine = false
			r.push(p)
		}
	}
	if r.n > 0 {
		d.park(&r)
	}
}

// adopt moves into l (empty) the parked line of node i that holds a command
// for key, so that the caller's command for key is pipelined behind it and
// runs after it on the server. Replies on one connection come in order, so
// a round never overtakes the stragglers of the previous round on the same
// lock (a release overtaking its acquire's SET would leave the key behind
// until its TTL).
//
// If there is no such line but the drainer is finishing one, adopt returns
// busy without waiting when wait is false; with wait, it waits until the
// drainer is done, if that line's deadlines are not later than the
// caller's (so that the wait fits in the caller's deadline). Otherwise it
// adopts the newest parked line that has room, to reuse its connection.
func (d *Driver) adopt(l *line, i int, key string, deadline time.Time, wait bool) (busy bool) {
	n := &d.nodes[i]
	l.node = i
	for try := 0; try < 2; try++ {
		n.smu.Lock()
		j := -1
		for k := len(n.parked) - 1; k >= 0; k-- {
			if n.parked[k].has(key) {
				j = k
				break
			}
		}
		if j < 0 && try == 0 && n.busy.has(key) {
			if !wait {
				n.smu.Unlock()
				return true
			}
			if !n.busy.until.After(deadline) {
				n.smu.Unlock()
				n.drainMu.Lock() // held by the drainer while it works on that line
				n.drainMu.Unlock()
				continue
			}
		}
		if j < 0 {
			for k := len(n.parked) - 1; k >= 0; k-- {
				if p := &n.parked[k]; p.conn != nil && p.n < maxChain {
					j = k
					break
				}
			}
		}
		if j >= 0 {
			*l = n.parked[j]
			last := len(n.parked) - 1
			copy(n.parked[j:], n.parked[j+1:])
			n.parked[last] = line{}
			n.parked = n.parked[:last]
		}
		n.smu.Unlock()
		return false
	}
	return false
}

// drainLoop is the driver's one goroutine. It finishes the parked lines,
// oldest first on each node, the nodes in turn: writes a line's commands
// if it has none on the wire (a suspect node's), then reads every reply,
// each bounded by its deadline, answering NOSCRIPT with EVAL (so that a
// release the round did not wait for still takes effect), and returns the
// connection to its pool (or lets the pool drop it if a read failed). The
// outcomes update the nodes' suspect flags, so a node that recovers is
// noticed without a round waiting for it. A node's lines are parked in the
// order their rounds ended, so their deadlines are nearly in order: a read
// that waits for one deadline finds the later lines' replies arrived.
func (d *Driver) drainLoop() {
	defer close(d.drained)
	for {
		select {
		case <-d.stop:
			d.discardParked()
			return
		default:
		}
		worked := false
		for i := range d.nodes {
			if d.drainOne(i) {
				worked = true
			}
		}
		if !worked {
			select {
			case <-d.kick:
			case <-d.stop:
				d.discardParked()
				return
			}
		}
	}
}

// drainOne finishes node i's oldest parked line, if it has one.
func (d *Driver) drainOne(i int) bool {
	n := &d.nodes[i]
	n.drainMu.Lock()
	defer n.drainMu.Unlock()
	n.smu.Lock()
	if len(n.parked) == 0 {
		n.smu.Unlock()
		return false
	}
	l := n.parked[0]
	last := len(n.parked) - 1
	copy(n.parked, n.parked[1:])
	n.parked[last] = line{}
	n.parked = n.parked[:last]
	n.busy.set(&l)
	n.smu.Unlock()

	d.drainer.settle(d, &l, time.Time{})
	if l.conn != nil {
		l.conn.Close()
	}
	n.smu.Lock()
	n.busy.clear()
	n.smu.Unlock()
	return true
}

func (d *Driver) discardParked() {
	for i := range d.nodes {
		n := &d.nodes[i]
		n.smu.Lock()
		lines := n.parked
		n.parked = nil
		n.smu.Unlock()
		for k := range lines {
			discard(&lines[k])
		}
	}
}

// discard ends a line without blocking. Unwritten commands are dropped.
// Replies already buffered are taken (the connection is then idle and goes
// back to its pool); otherwise the read times out at once, which makes
// redigo close the connection, and the pool drops it.
func discard(l *line) {
	if l.conn != nil {
		for k := 0; k < l.n; k++ {
			if _, err := redis.ReceiveWithTimeout(l.conn, discardRead); err != nil {
				if _, answered := err.(redis.Error); !answered {
					break
				}
			}
		}
		l.conn.Close()
	}
	*l = line{}
}

// keySet is the keys of the line the drainer is working on, and the
// deadline that bounds its work.
type keySet struct {
	keys  [maxChain]string
	n     int
	until time.Time
}

func (s *keySet) set(l *line) {
	s.n, s.until = l.n, l.deadline()
	for k := 0; k < l.n; k++ {
		s.keys[k] = l.calls[k].cmd.Key
	}
}

func (s *keySet) clear() { *s = keySet{} }

func (s *keySet) has(key string) bool {
	for k := 0; k < s.n; k++ {
		if s.keys[k] == key {
			return true
		}
	}
	return false
}
