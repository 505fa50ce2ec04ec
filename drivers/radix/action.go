package radix

import (
	"bufio"
	"context"
	"errors"
	"io"
	"strconv"
	"strings"
	"sync"

	radixv4 "github.com/mediocregopher/radix/v4"
	"github.com/mediocregopher/radix/v4/resp"
	"github.com/mediocregopher/radix/v4/resp/resp3"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers/internal/wire"
)

// action is one Redlock command as a radix Action. It writes its RESP
// request straight from the core.Command and parses the reply itself, so a
// command costs no argument slices or reflection. It is pooled, and put
// back only after a successful round trip: after an error radix's reader or
// writer may still hold it.
type action struct {
	cmd  core.Command
	eval bool // EVAL with the script source instead of EVALSHA
	buf  []byte

	// reply
	kind byte // '+', ':', '_' (null)
	n    int64
}

var actions = sync.Pool{New: func() any { return &action{buf: make([]byte, 0, 256)} }}

func getAction(cmd core.Command) *action {
	a := actions.Get().(*action)
	a.cmd, a.eval, a.kind, a.n = cmd, false, 0, 0
	return a
}

func putAction(a *action) {
	a.cmd = core.Command{}
	actions.Put(a)
}

var _ radixv4.Action = (*action)(nil)

// Properties lets the pool share a connection between concurrent actions:
// radix then pipelines them. Keys is left empty: these are not cluster
// commands.
func (a *action) Properties() radixv4.ActionProperties {
	return radixv4.ActionProperties{CanShareConn: true, CanPipeline: true}
}

// Perform runs the action on c. Connections of the pools Dial makes
// release themselves when a command misses its deadline (see
// trackedConn.EncodeDecode). On other connections (pools given to New)
// Perform does the same from outside: it closes c, and marks it failed
// (the extra EncodeDecode) so that the pool replaces it.
func (a *action) Perform(ctx context.Context, c radixv4.Conn) error {
	err := c.EncodeDecode(ctx, a, a)
	if err != nil && ctx.Err() != nil && !isRedisErr(err) && !errors.As(err, new(*hungError)) {
		_ = c.Close()
		_ = c.EncodeDecode(context.Background(), nil, nil)
	}
	return err
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

// errUnexpected is returned (wrapped in resp.ErrConnUsable, the reply having
// been consumed whole) for a reply of a type these commands never get.
var errUnexpected = errors.New("unexpected reply")

// UnmarshalRESP reads one reply: +simple string, :integer, a null ($-1,
// *-1 or RESP3 _), or an error, which it returns as resp3.SimpleError as
// radix expects of a server error. Anything else is consumed whole and
// reported as errUnexpected.
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
			return resp3.SimpleError{S: msg}
		}
		return resp.ErrConnUsable{Err: errUnexpected}
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
		a.kind = '+'
		if string(body) != "OK" {
			return resp.ErrConnUsable{Err: errors.New("unexpected reply +" + string(body))}
		}
		return nil
	case '-':
		return resp3.SimpleError{S: string(body)}
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
		return resp.ErrConnUsable{Err: errUnexpected}
	}
	for i := int64(0); i < n; i++ {
		if err := resp3.Unmarshal(br, nil, o); err != nil && !isRedisErr(err) {
			return err
		}
	}
	return resp.ErrConnUsable{Err: errUnexpected}
}

// unexpected consumes one whole message of another type.
func (a *action) unexpected(br resp.BufferedReader, o *resp.Opts) error {
	if err := resp3.Unmarshal(br, nil, o); err != nil && !isRedisErr(err) {
		return err
	}
	return resp.ErrConnUsable{Err: errUnexpected}
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
