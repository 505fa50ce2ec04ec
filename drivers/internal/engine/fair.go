package engine

import (
	"math/rand/v2"
	"strconv"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers/internal/wire"
)

// The waiter queue of core.Config.Fair: the engine is one waiter, named
// by an id of its own that its Fair commands carry (the scripts' ARGV)
// and whose turn channel (wire.TurnChannel) its watches subscribe to.

// keyCounts are the scripts' key counts as words.
var keyCounts = [...]string{"0", "1", "2", "3", "4"}

// newWaiterID returns a random waiter id: 16 hex digits.
func newWaiterID() string {
	return strconv.FormatUint(rand.Uint64()|1<<63, 16)
}

// appendQueueKeys appends the names of key's queue and deadlines
// (wire.QueueKeys) to args, written into text.
func (e *Engine) appendQueueKeys(text []byte, args []string, key string) ([]byte, []string) {
	start := len(text)
	text = append(text, "redlock:queue:"...)
	text = append(text, key...)
	args = append(args, view(text[start:]))
	start = len(text)
	text = append(text, "redlock:queue-due:"...)
	text = append(text, key...)
	return text, append(args, view(text[start:]))
}

// appendFairArgs appends a Fair acquire's or release's arguments after
// its others: the waiter id, and a release's ticket, entry life and
// handoff, in ms.
func (e *Engine) appendFairArgs(text []byte, args []string, cmd *core.Command) ([]byte, []string) {
	args = append(args, e.waiter)
	if cmd.Op != core.OpRelease {
		return text, args
	}
	start := len(text)
	text = strconv.AppendInt(text, cmd.Ticket, 10)
	args = append(args, view(text[start:]))
	start = len(text)
	text = strconv.AppendInt(text, wire.Millis(cmd.TTL), 10)
	args = append(args, view(text[start:]))
	start = len(text)
	text = strconv.AppendInt(text, max(wire.Millis(cmd.Handoff), 1), 10)
	return text, append(args, view(text[start:]))
}
