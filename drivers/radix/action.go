package radix

import (
	"bufio"
	"context"
	"errors"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	radixv4 "github.com/mediocregopher/radix/v4"
	"github.com/mediocregopher/radix/v4/resp"
	"github.com/mediocregopher/radix/v4/resp/resp3"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers/internal/wire"
)

// action is one Redlock command as a radix Action. It writes its RESP
// request straight from the core.Command and parses the reply itself, so a
// command costs no argument slices or reflection. Every reply read whole,
// server errors and unexpected types included, is recorded in the action
// (kind, n, err) and is a success for radix: UnmarshalRESP fails only when
// the stream is lost. So radix never mistakes a consumed reply for an
// unread one (it would discard the next command's reply), and in a
// pipeline one command's error reply does not stop the others' being read.
//
// It is pooled, and put back only after a successful round trip: after an
// error radix's reader or writer may still hold it.
type action struct {
	cmd  core.Command
	eval bool // EVAL with the script source instead of EVALSHA
	buf  []byte

	// reply
	kind byte  // '+', ':', '_' (null), '-' (error reply) or '?' (unexpected)
	n    int64 // for ':'
	err  error // for '-' and '?'
}

var actions = sync.Pool{New: func() any { return &action{buf: make([]byte, 0, 256)} }}

func getAction(cmd core.Command) *action {
	a := actions.Get().(*action)
	a.cmd, a.eval = cmd, false
	a.kind, a.n, a.err = 0, 0, nil
	return a
}

func putAction(a *action) {
	a.cmd, a.err = core.Command{}, nil
	actions.Put(a)
}

// scriptSet records which of the two scripts a node is known to have
// cached. Until a script has run on the node, and again after NOSCRIPT or
// after a failure that was not a timeout (a broken connection, a refused
// dial: probably a restart, which empties the cache), its commands carry
// the script's source (EVAL, which caches it) rather than its hash
// (EVALSHA). A NOSCRIPT reply is answered by EVAL, but only if somebody
// reads it: a release abandoned at its deadline on a hung node (queued
// behind the SET it undoes, and run once the node wakes) must not depend
// on that.
type scriptSet struct{ bits atomic.Uint32 }

func scriptBit(op core.Op) uint32 { return 1 << (op - core.OpRelease) }

// eval reports whether a command of op must carry its script's source.
// It is false for OpAcquire, which is no script.
func (s *scriptSet) eval(op core.Op) bool {
	return op != core.OpAcquire && s.bits.Load()&scriptBit(op) == 0
}

// observe learns from a's reply, read whole: a script command that
// answered an integer ran, so the node has its script cached.
func (s *scriptSet) observe(a *action) {
	if op := a.cmd.Op; op != core.OpAcquire && a.kind == ':' {
		if b := scriptBit(op); s.bits.Load()&b == 0 {
			s.bits.Or(b)
		}
	}
}

func (s *scriptSet) forget(op core.Op) { s.bits.And(^scriptBit(op)) }

// broken forgets every script after a failure that is not a timeout.
func (s *scriptSet) broken(err error) {
	if !errors.Is(err, context.DeadlineExceeded) && s.bits.Load() != 0 {
		s.bits.Store(0)
	}
}

// retryEval prepares an action whose EVALSHA met NOSCRIPT to be sent again
// as EVAL.
func (a *action) retryEval() {
	a.eval = true
	a.kind, a.n, a.err = 0, 0, nil
}

// noScript reports a NOSCRIPT error reply: SCRIPT FLUSH or a restart
// emptied the script cache.
func (a *action) noScript() bool {
	return a.kind == '-' && a.cmd.Op != core.OpAcquire && isNoScript(a.err)
}

// result maps the reply read.
func (a *action) result() (core.Status, error) {
	switch a.kind {
	case '-', '?':
		return core.StatusError, a.err
	}
	if a.cmd.Op == core.OpAcquire {
		switch a.kind {
		case '+':
			return core.StatusOK, nil
		case '_':
			return core.StatusHeld, nil // SET NX: the key exists
		}
		return core.StatusError, errUnexpected
	}
	if a.kind != ':' {
		return core.StatusError, errUnexpected
	}
	return wire.ScriptStatus(a.n)
}

var _ radixv4.Action = (*action)(nil)

// Properties lets the pool share its connection between concurrent
// actions (radix pipelines them) and lets the action join a
// radixv4.Pipeline. Keys is left empty: these are not cluster commands.
func (a *action) Properties() radixv4.ActionProperties {
	return radixv4.ActionProperties{CanShareConn: true, CanPipeline: true}
}

// Perform runs the action on c.
func (a *action) Perform(ctx context.Context, c radixv4.Conn) error {
	return bounded(ctx, c, c.EncodeDecode(ctx, a, a))
}

// bounded returns err, the outcome of an action on c, after releasing c if
// the action failed at its deadline. Connections of the pools Dial makes
// release themselves (see trackedConn.EncodeDecode). On other connections
// (pools given to New) bounded does the same from outside: it closes c,
// and marks it failed (the extra EncodeDecode) so that the pool replaces
// it.
func bounded(ctx context.Context, c radixv4.Conn, err error) error {
	if err != nil && ctx.Err() != nil && !isRedisErr(err) && !errors.As(err, new(*hungError)) {
		_ = c.Close()
		_ = c.EncodeDecode(context.Background(), nil, nil)
	}
	return err
}

// pipe is a radix Pipeline of actions, one node's batch, performed on one
// connection: all requests in one write, then every reply in order. It
// adds to radixv4.Pipeline the release of a connection that missed the
// deadline (see bounded).
type pipe struct{ *radixv4.Pipeline }

func (p pipe) Perform(ctx context.Context, c radixv4.Conn) error {
	return bounded(ctx, c, p.Pipeline.Perform(ctx, c))
}

func appendBulk(b []byte, s string) []byte {
	b = append(b, '$')
	b = strconv.AppendInt(b, int64(len(s)), 10)
	b = append(b, "\r\n"...)
	b = append(b, s...)
	return append(b, "\r\n"...)
}

func appendBulkInt(b []byte, n int64) []byte {
	var digits [20]byte
	d := strconv.AppendInt(digits[:0], n, 10)
	b = append(b, '$')
	b = strconv.AppendInt(b, int64(len(d)), 10)
	b = append(b, "\r\n"...)
	b = append(b, d...)
	return append(b, "\r\n"...)
}

// MarshalRESP writes SET key token NX PX ms, or EVALSHA/EVAL of the release
// or extend script.
func (a *action) MarshalRESP(w io.Writer, _ *resp.Opts) error {
	b := a.buf[:0]
	switch a.cmd.Op {
	case core.OpAcquire:
		b = append(b, "*6\r\n$3\r\nSET\r\n"...)
		b = appendBulk(b, a.cmd.Key)
		b = append(b, "$32\r\n"...)
		b = a.cmd.Token.AppendHex(b)
		b = append(b, "\r\n$2\r\nNX\r\n$2\r\nPX\r\n"...)
		b = appendBulkInt(b, wire.Millis(a.cmd.TTL))
	default:
		s := wire.ScriptFor(a.cmd.Op)
		if a.cmd.Op == core.OpExtend {
			b = append(b, "*6\r\n"...)
		} else {
			b = append(b, "*5\r\n"...)
		}
		if a.eval {
			b = append(b, "$4\r\nEVAL\r\n"...)
			b = appendBulk(b, s.Src)
		} else {
			b = append(b, "$7\r\nEVALSHA\r\n"...)
			b = appendBulk(b, s.SHA1)
		}
		b = append(b, "$1\r\n1\r\n"...)
		b = appendBulk(b, a.cmd.Key)
		b = append(b, "$32\r\n"...)
		b = a.cmd.Token.AppendHex(b)
		b = append(b, "\r\n"...)
		if a.cmd.Op == core.OpExtend {
			b = appendBulkInt(b, wire.Millis(a.cmd.TTL))
		}
	}
	a.buf = b
	_, err := w.Write(b)
	return err
}

// errUnexpected is the error of a reply of a type these commands never get.
var errUnexpected = errors.New("unexpected reply")

// UnmarshalRESP reads one reply: +OK, :integer, a null ($-1, *-1 or RESP3
// _), or an error reply, which it records as resp3.SimpleError. Anything
// else is consumed whole and recorded as errUnexpected. It returns an
// error only when the stream is lost (radix then closes the connection).
func (a *action) UnmarshalRESP(br resp.BufferedReader, o *resp.Opts) error {
	p, err := br.Peek(1)
	if err != nil {
		return err
	}
	switch p[0] {
	case '+', ':', '-', '_', '$', '*':
	default:
		return a.unexpected(br, o)
	}
	line, err := br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) && (p[0] == '-' || p[0] == '+') {
		// A line longer than the read buffer: only an error message could
		// be that long. Keep its start.
		msg := string(line[1:])
		for errors.Is(err, bufio.ErrBufferFull) {
			_, err = br.ReadSlice('\n')
		}
		if err != nil {
			return err
		}
		if p[0] == '-' {
			return a.fail('-', resp3.SimpleError{S: msg})
		}
		return a.fail('?', errUnexpected)
	}
	if err != nil {
		return err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return errors.New("malformed reply line") // the stream is lost: radix closes the conn
	}
	body := line[1 : len(line)-2]
	switch line[0] {
	case '+':
		if string(body) != "OK" {
			return a.fail('?', errors.New("unexpected reply +"+string(body)))
		}
		a.kind = '+'
		return nil
	case '-':
		return a.fail('-', resp3.SimpleError{S: string(body)})
	case '_':
		a.kind = '_'
		return nil
	case ':':
		n, err := strconv.ParseInt(string(body), 10, 64)
		if err != nil {
			return errors.New("malformed integer reply") // stream position is fine, but be strict
		}
		a.kind, a.n = ':', n
		return nil
	}
	// '$' or '*': only the null forms are expected.
	n, err := strconv.ParseInt(string(body), 10, 64)
	if err != nil {
		return errors.New("malformed length in reply")
	}
	if n < 0 {
		a.kind = '_'
		return nil
	}
	if line[0] == '$' {
		if _, err := br.Discard(int(n) + 2); err != nil {
			return err
		}
		return a.fail('?', errUnexpected)
	}
	for i := int64(0); i < n; i++ {
		if err := resp3.Unmarshal(br, nil, o); err != nil && !isRedisErr(err) {
			return err
		}
	}
	return a.fail('?', errUnexpected)
}

// fail records a reply read whole that is not a success: an error reply
// ('-') or an unexpected one ('?').
func (a *action) fail(kind byte, err error) error {
	a.kind, a.err = kind, err
	return nil
}

// unexpected consumes one whole message of another type: a RESP3 blob
// error is an error reply, anything else unexpected.
func (a *action) unexpected(br resp.BufferedReader, o *resp.Opts) error {
	err := resp3.Unmarshal(br, nil, o)
	switch {
	case err == nil:
		return a.fail('?', errUnexpected)
	case isRedisErr(err):
		return a.fail('-', resp.ErrConnUnusable(err))
	}
	return err
}

func isRedisErr(err error) bool {
	return errors.As(err, new(resp3.SimpleError)) || errors.As(err, new(resp3.BlobError))
}

// isNoScript reports a NOSCRIPT error reply; radix wraps server errors in
// its own context, so wire.IsNoScript's prefix test needs the inner error.
func isNoScript(err error) bool {
	var se resp3.SimpleError
	if errors.As(err, &se) {
		return strings.HasPrefix(se.S, "NOSCRIPT")
	}
	var be resp3.BlobError
	if errors.As(err, &be) {
		return strings.HasPrefix(string(be.B), "NOSCRIPT")
	}
	return wire.IsNoScript(err)
}
