package redigo

import (
	"errors"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers/internal/wire"
)

// Arguments boxed once: passing them to redigo's ...interface{} costs no
// allocation.
var (
	argNX         any = "NX"
	argPX         any = "PX"
	argOne        any = "1"
	argReleaseSHA any = wire.Release.SHA1
	argExtendSHA  any = wire.Extend.SHA1
	argReleaseSrc any = wire.Release.Src
	argExtendSrc  any = wire.Extend.Src
)

// encoder writes commands on redigo connections. It keeps the boxed key,
// token and TTL while they stay the same from node to node and round to
// round, so that passing them to redigo's ...interface{} allocates nothing.
type encoder struct {
	// keys, if set, boxes keys by length over one reused buffer (see
	// keyBoxes): for a pipelined connection's writer, whose consecutive
	// commands rarely share a key.
	keys   *keyBoxes
	args   [5]any
	key    string
	keyBox any
	tok    core.Token
	tokHex [core.HexSize]byte
	tokBox any
	ttl    time.Duration
	ttlBox any
}

// write sends cmd on c, as EVAL instead of EVALSHA if eval is set, and
// flushes it.
func (e *encoder) write(c redis.Conn, cmd core.Command, eval bool) error {
	if err := e.send(c, cmd, eval); err != nil {
		return err
	}
	return c.Flush()
}

// send buffers cmd on c (redigo's Conn.Send), as EVAL instead of EVALSHA
// if eval is set. redigo copies the arguments into its write buffer, so
// the boxes may be reused as soon as send returns.
func (e *encoder) send(c redis.Conn, cmd core.Command, eval bool) error {
	a := &e.args
	var name string
	var n int
	switch cmd.Op {
	case core.OpAcquire:
		name = "SET"
		a[0], a[1], a[2], a[3], a[4] = e.boxKey(cmd.Key), e.boxToken(cmd.Token), argNX, argPX, e.boxTTL(cmd.TTL)
		n = 5
	case core.OpRelease, core.OpExtend:
		name, a[0] = "EVALSHA", argReleaseSHA
		switch {
		case cmd.Op == core.OpExtend && eval:
			name, a[0] = "EVAL", argExtendSrc
		case cmd.Op == core.OpExtend:
			a[0] = argExtendSHA
		case eval:
			name, a[0] = "EVAL", argReleaseSrc
		}
		a[1], a[2], a[3] = argOne, e.boxKey(cmd.Key), e.boxToken(cmd.Token)
		n = 4
		if cmd.Op == core.OpExtend {
			a[4] = e.boxTTL(cmd.TTL)
			n = 5
		}
	default:
		return errors.New("unknown op " + cmd.Op.String())
	}
	return c.Send(name, a[:n]...)
}

func (e *encoder) boxKey(k string) any {
	if e.keys != nil {
		return e.keys.box(k)
	}
	if e.keyBox == nil || k != e.key {
		e.key, e.keyBox = k, k
	}
	return e.keyBox
}

func (e *encoder) boxToken(t core.Token) any {
	if e.tokBox == nil || t != e.tok {
		e.tok = t
		wire.AppendToken(e.tokHex[:0], t)
		if e.keys == nil || e.tokBox == nil {
			e.tokBox = e.tokHex[:]
		} // else the box already refers to tokHex, rewritten in place
	}
	return e.tokBox
}

// maxBoxedKey is the longest key keyBoxes boxes without allocating.
const maxBoxedKey = 256

// keyBoxes boxes keys without allocating: the key is copied into buf, and
// the box for its length, a []byte over buf made the first time that length
// is seen, is returned. A box is valid until the next call.
type keyBoxes struct {
	buf   [maxBoxedKey]byte
	boxes [maxBoxedKey + 1]any
}

func (k *keyBoxes) box(key string) any {
	n := len(key)
	if n > maxBoxedKey {
		return key
	}
	copy(k.buf[:], key)
	if k.boxes[n] == nil {
		k.boxes[n] = k.buf[:n:n]
	}
	return k.boxes[n]
}

func (e *encoder) boxTTL(ttl time.Duration) any {
	if e.ttlBox == nil || ttl != e.ttl {
		e.ttl, e.ttlBox = ttl, wire.MillisString(ttl)
	}
	return e.ttlBox
}
