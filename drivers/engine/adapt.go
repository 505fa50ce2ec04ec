package engine

import (
	"context"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/redlock-go/redlock/drivers/wire"
)

// Helpers for the adapters of client packages that decode replies into Go
// values or take commands as ...any.

// Value returns the reply for v, a client's decoding of a reply: nil
// (KindNil), a string or []byte (String), an int64 (KindInt), anything
// else Other. An error reply is the client's to recognize (KindError).
func Value(v any) Reply {
	switch v := v.(type) {
	case nil:
		return Reply{Kind: KindNil}
	case string:
		return String(v)
	case []byte:
		return String(string(v))
	case int64:
		return Reply{Kind: KindInt, Int: v}
	}
	return Other(v)
}

// Boxes passes a command's words to a client that takes ...any without
// allocating: each word is copied into a buffer kept, already boxed as a
// []byte, for its position and length (keys, tokens, TTLs and scripts
// take a few lengths each). It suits a client that copies its arguments
// before the call returns (redigo's Send): the buffers are reused by the
// next call. It keeps at least twelve positions, the most any command of
// the engine has after its name (the Fair fenced acquire's eleven:
// script, 4, key, fence counter, queue, deadlines, token, TTL, waiter,
// ticket, life), and grows for a longer one. The zero value is ready.
type Boxes struct {
	byLen []map[int]any
	args  []any
}

// Of returns words as arguments, valid until the next call.
func (b *Boxes) Of(words []string) []any {
	if len(words) > len(b.args) {
		b.args = make([]any, max(len(words), 12))
		b.byLen = append(b.byLen, make([]map[int]any, len(b.args)-len(b.byLen))...)
	}
	for i, w := range words {
		if b.byLen[i] == nil {
			b.byLen[i] = make(map[int]any)
		}
		box, ok := b.byLen[i][len(w)]
		if !ok {
			box = make([]byte, len(w))
			b.byLen[i][len(w)] = box
		}
		copy(box.([]byte), w)
		b.args[i] = box
	}
	return b.args[:len(words)]
}

// OwnDeadlines is a socket whose deadlines its client no longer sets
// once Own is: an adapter that sets them itself, once per pipeline
// written and once per pipeline read, spares the timer update and clock
// reading a client makes for each command and each reply. Own is set
// before the connection is handed to the engine, and never cleared.
type OwnDeadlines struct {
	net.Conn
	Own bool
}

// SetDeadline sets the socket's deadlines until Own is set.
func (o *OwnDeadlines) SetDeadline(t time.Time) error {
	if o.Own {
		return nil
	}
	return o.Conn.SetDeadline(t)
}

// SetReadDeadline sets the socket's read deadline until Own is set.
func (o *OwnDeadlines) SetReadDeadline(t time.Time) error {
	if o.Own {
		return nil
	}
	return o.Conn.SetReadDeadline(t)
}

// SetWriteDeadline sets the socket's write deadline until Own is set.
func (o *OwnDeadlines) SetWriteDeadline(t time.Time) error {
	if o.Own {
		return nil
	}
	return o.Conn.SetWriteDeadline(t)
}

// ExchangeRuns is the Exchange of a Cluster member's Conn whose client
// pipelines commands of any slots but must send a write followed by WAIT
// on the write's master, since WAIT counts the replicas of its own
// connection's writes: it calls run for each run of commands without
// WAIT and waited for each write with its WAIT, in order, and returns
// the first error.
func ExchangeRuns(cmds [][]string, replies []Reply, run, waited func(cmds [][]string, replies []Reply) error) error {
	for i := 0; i < len(cmds); {
		if i+1 < len(cmds) && cmds[i+1][0] == "WAIT" {
			if err := waited(cmds[i:i+2], replies[i:i+2]); err != nil {
				return err
			}
			i += 2
			continue
		}
		j := i + 1
		for j < len(cmds) && (j+1 >= len(cmds) || cmds[j+1][0] != "WAIT") {
			j++
		}
		if err := run(cmds[i:j], replies[i:j]); err != nil {
			return err
		}
		i = j
	}
	return nil
}

// ClusterID makes a Cluster member's Conn an Identifier and a
// ShardedPublisher: embed it, with Masters asking every master of the
// Cluster for INFO server and INFO replication.
type ClusterID struct {
	Masters func(ctx context.Context) (wire.ClusterMasters, error)
	sharded bool // every master has sharded pub/sub, as Identify found
}

// Identify returns the run_id of each master of the Cluster, and the
// fewest connected replicas any has.
func (c *ClusterID) Identify(ctx context.Context) ([]string, int, error) {
	ms, err := c.Masters(ctx)
	if err != nil {
		return nil, 0, err
	}
	c.sharded = ms.Sharded
	return ms.IDs, ms.Fewest, nil
}

// ShardedPubSub reports whether every master has sharded pub/sub, as
// Identify found.
func (c *ClusterID) ShardedPubSub() bool { return c.sharded }

// ExchangeBySlot is the Exchange of a Cluster member's Conn whose client
// sends one command, or one write and its WAIT, at a time, routed by its
// key (wire.KeyIndex's, or else the first argument): it calls do for
// each such unit (key, and cmds[i:i+n]), in order within each hash slot
// (slot returns a key's) and the slots at once. It returns the first
// error once every slot's units are done, so that the other slots'
// replies are filled in: they ran, and their rounds count them.
func ExchangeBySlot(cmds [][]string, slot func(key string) uint16, do func(key string, i, n int) error) error {
	type unit struct {
		key  string
		i, n int
	}
	slots := map[uint16][]unit{}
	var order []uint16
	for i := 0; i < len(cmds); {
		n := 1
		if i+1 < len(cmds) && cmds[i+1][0] == "WAIT" {
			n = 2
		}
		key := "" // a command of no key: slot 0
		if k := wire.KeyIndex(cmds[i]); k > 0 {
			key = cmds[i][k]
		} else if len(cmds[i]) > 1 {
			key = cmds[i][1] // another command (GET, DEL): its first argument
		}
		s := slot(key)
		if _, ok := slots[s]; !ok {
			order = append(order, s)
		}
		slots[s] = append(slots[s], unit{key, i, n})
		i += n
	}
	run := func(us []unit) error {
		for _, u := range us {
			if err := do(u.key, u.i, u.n); err != nil {
				return err
			}
		}
		return nil
	}
	if len(order) == 1 {
		return run(slots[order[0]])
	}
	errs := make([]error, len(order))
	var wg sync.WaitGroup
	for k, s := range order {
		wg.Go(func() { errs[k] = run(slots[s]) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// RelayShard is the loop of a ShardRunner whose client reads one shard
// subscription's events with next: it relays them to push until the
// server ends the subscription (an sunsubscribe: the slot moved, nil),
// refuses it (an error reply, relayed when it is an ACL's NOPERM), or
// the connection fails.
func RelayShard(next func() (Event, error), push func(Event)) error {
	for {
		e, err := next()
		switch {
		case err != nil:
			return err
		case e.Kind == EventUnsubscribed:
			return nil
		case e.Kind == EventRefused:
			if strings.HasPrefix(e.Err.Error(), "NOPERM") {
				push(e)
			}
			return e.Err
		}
		push(e)
	}
}
