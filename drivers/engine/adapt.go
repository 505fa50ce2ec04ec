package engine

import (
	"net"
	"time"
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
// next call. Twelve positions: the most any command has after its name is
// the Fair fenced acquire's eleven (script, 4, key, fence counter, queue,
// deadlines, token, TTL, waiter, ticket, life). The zero value is ready.
type Boxes struct {
	byLen [12]map[int]any
	args  [12]any
}

// Of returns words as arguments, valid until the next call.
func (b *Boxes) Of(words []string) []any {
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

func (o *OwnDeadlines) SetDeadline(t time.Time) error {
	if o.Own {
		return nil
	}
	return o.Conn.SetDeadline(t)
}

func (o *OwnDeadlines) SetReadDeadline(t time.Time) error {
	if o.Own {
		return nil
	}
	return o.Conn.SetReadDeadline(t)
}

func (o *OwnDeadlines) SetWriteDeadline(t time.Time) error {
	if o.Own {
		return nil
	}
	return o.Conn.SetWriteDeadline(t)
}
