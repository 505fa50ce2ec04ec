// Package wire holds what every Redis driver sends and checks: the
// embedded Lua scripts with their SHA1, the TTL encoding, the scripts'
// replies, the validation of addresses, options and clients, and the
// node-naming error type.
package wire

import (
	"context"
	"crypto/sha1"
	_ "embed"
	"encoding/hex"
	"errors"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/redlock-go/redlock/core"
)

// Script is a Lua script with its SHA1, computed in-process once.
type Script struct {
	Src  string
	SHA1 string
}

func newScript(src string) Script {
	sum := sha1.Sum([]byte(src))
	return Script{Src: src, SHA1: hex.EncodeToString(sum[:])}
}

var (
	//go:embed release.lua
	releaseSrc string
	//go:embed extend.lua
	extendSrc string

	// Release is the compare-and-delete script: KEYS[1] key, ARGV[1] token.
	Release = newScript(releaseSrc)
	// Extend is the compare-and-PEXPIRE script: KEYS[1] key, ARGV[1] token,
	// ARGV[2] TTL in milliseconds.
	Extend = newScript(extendSrc)
)

// ScriptFor returns the script of a release or extend command.
func ScriptFor(op core.Op) Script {
	if op == core.OpExtend {
		return Extend
	}
	return Release
}

// Millis returns ttl in whole milliseconds, as PX and PEXPIRE take it.
func Millis(ttl time.Duration) int64 { return int64(ttl / time.Millisecond) }

// ScriptStatus maps a release or extend script's integer reply.
func ScriptStatus(n int64) (core.Status, error) {
	switch n {
	case 1:
		return core.StatusOK, nil
	case 0:
		return core.StatusMissing, nil
	case -1:
		return core.StatusHeld, nil
	}
	return core.StatusError, errors.New("unexpected script reply " + strconv.FormatInt(n, 10))
}

// IsNoScript reports whether err is Redis's NOSCRIPT error, after which
// the driver must fall back to EVAL.
func IsNoScript(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT")
}

// IsTimeout reports whether err is a deadline being reached: a context
// deadline, or a network timeout.
func IsTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// NodeError is a failure on one node; it names the node by index and
// address and unwraps to the client's error.
type NodeError struct {
	Node int
	Addr string
	Op   core.Op
	Err  error
}

func (e *NodeError) Error() string {
	return "node " + strconv.Itoa(e.Node) + " (" + e.Addr + "): " + e.Op.String() + ": " + e.Err.Error()
}

func (e *NodeError) Unwrap() error { return e.Err }

// Fail returns the reply for a failed command: StatusTimeout when err is a
// deadline, StatusError otherwise, with a NodeError either way.
func Fail(node int, addr string, op core.Op, err error) core.Reply {
	s := core.StatusError
	if IsTimeout(err) {
		s = core.StatusTimeout
	}
	return core.Reply{Node: node, Status: s, Err: &NodeError{Node: node, Addr: addr, Op: op, Err: err}}
}
