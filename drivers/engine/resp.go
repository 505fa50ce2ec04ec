package engine

import (
	"errors"
	"io"
	"strconv"
)

// AppendCommand appends cmd to dst in RESP, as an array of bulk strings,
// for clients that write requests themselves (radix's EncodeDecode).
func AppendCommand(dst []byte, cmd []string) []byte {
	dst = append(dst, '*')
	dst = strconv.AppendInt(dst, int64(len(cmd)), 10)
	dst = append(dst, '\r', '\n')
	for _, a := range cmd {
		dst = append(dst, '$')
		dst = strconv.AppendInt(dst, int64(len(a)), 10)
		dst = append(dst, '\r', '\n')
		dst = append(dst, a...)
		dst = append(dst, '\r', '\n')
	}
	return dst
}

// RESPReader is what ReadReply needs of a buffered reader; *bufio.Reader
// and radix's resp.BufferedReader have it.
type RESPReader interface {
	io.Reader
	ReadSlice(delim byte) ([]byte, error)
}

// ErrProtocol is the error of a reply that ReadReply cannot skip.
var ErrProtocol = errors.New("unexpected RESP reply")

// ReadReply reads one RESP2 or RESP3 reply of the kinds the engine's
// commands get: a simple or bulk string, an error, an integer or a null.
// Any other type is an error (ErrProtocol) that leaves the stream
// unusable, as a read error does.
func ReadReply(r RESPReader) (Reply, error) {
	line, err := r.ReadSlice('\n')
	if err != nil {
		return Reply{}, err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return Reply{}, ErrProtocol
	}
	body := line[1 : len(line)-2]
	switch line[0] {
	case '+':
		if string(body) == "OK" {
			return Reply{Kind: KindOK}, nil
		}
		return String(string(body)), nil
	case '-':
		return Reply{Kind: KindError, Err: errors.New(string(body))}, nil
	case ':':
		n, ok := parseInt(body)
		if !ok {
			return Reply{}, ErrProtocol
		}
		return Reply{Kind: KindInt, Int: n}, nil
	case '_':
		return Reply{Kind: KindNil}, nil
	case '$', '*':
		n, ok := parseInt(body)
		switch {
		case !ok || n > 1<<30:
			return Reply{}, ErrProtocol
		case n < 0:
			return Reply{Kind: KindNil}, nil
		case line[0] == '*':
			return Reply{}, ErrProtocol
		}
		text := make([]byte, n+2)
		if _, err := io.ReadFull(r, text); err != nil {
			return Reply{}, err
		}
		return String(string(text[:n])), nil
	}
	return Reply{}, ErrProtocol
}

// parseInt parses a RESP integer without allocating (strconv's would, for
// its error).
func parseInt(b []byte) (int64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}
