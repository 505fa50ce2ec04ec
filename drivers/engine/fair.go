package engine

import (
	"math/rand/v2"
	"strconv"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers/wire"
)

// The waiter queue of core.Config.Fair: the engine is one waiter, named
// by an id of its own that its Fair commands carry (the scripts' ARGV)
// and whose turn channel (wire.TurnChannel) its watches subscribe to.

// keyCounts are the scripts' key counts as words.
var keyCounts = [...]string{"0", "1", "2", "3", "4"}

// newWaiterID returns a random waiter id: 16 hex digits.
func newWaiterID() string {
	return strconv.FormatUint(rand.Uint64()|1<<63, 16) //nolint:gosec // G404: an id unique among waiters, not a secret
}

// appendFairArgs appends a Fair acquire's or release's arguments after
// its others: the waiter id, and a release's ticket, entry life and
// handoff, in ms, and "r" for a release sent again (again: see
// node.resend and release.lua); an acquire's ticket and entry life, if it
// queues its waiter (core.Command.Ticket).
func (e *Engine) appendFairArgs(text []byte, args []string, cmd *core.Command, again bool) ([]byte, []string) {
	args = append(args, e.waiter)
	if cmd.Op != core.OpRelease {
		if cmd.Ticket <= 0 {
			return text, args
		}
		text, args = appendInt(text, args, cmd.Ticket)
		return appendInt(text, args, wire.Millis(cmd.EntryLife()))
	}
	text, args = appendInt(text, args, cmd.Ticket)
	text, args = appendInt(text, args, wire.Millis(cmd.TTL))
	text, args = appendInt(text, args, max(wire.Millis(cmd.Handoff), 1))
	if again {
		args = append(args, wire.Resent)
	}
	return text, args
}

// appendName appends prefix+key to args, written into text (see view).
func appendName(text []byte, args []string, prefix, key string) ([]byte, []string) {
	start := len(text)
	text = append(text, prefix...)
	text = append(text, key...)
	return text, append(args, view(text[start:]))
}

// appendInt appends v in decimal to args, written into text (see view).
func appendInt(text []byte, args []string, v int64) ([]byte, []string) {
	start := len(text)
	text = strconv.AppendInt(text, v, 10)
	return text, append(args, view(text[start:]))
}
