package core

import (
	"strconv"
	"time"
)

// Clock is the one source of time of a Client and of its Driver's
// deadlines. Package core never reads it: every step takes now as an
// input. Validity is the difference of two Now readings, so Now must be
// monotonic: it never goes back, and it advances at the rate of real time
// within the drift allowance. time.Now's monotonic reading is
// (SystemClock). A Clock stepped back during a round by less than the
// round took makes the round look shorter and its validity too long: no
// check can see that, so a custom Clock must not do it. What can be seen
// fails safe: a round that ends before it started has no validity, and a
// grant read at a time before its round ended has none left.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine once d has passed on this
	// clock, as time.AfterFunc does.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a Clock's timer, as time.AfterFunc's *time.Timer.
type Timer interface {
	Stop() bool
	Reset(d time.Duration) bool
}

// Rand is a source of 64 random bits. It must be safe for concurrent use.
// An Acquisition uses it for retry jitter only; it need not be cryptographic.
type Rand interface{ Uint64() uint64 }

// TokenSource makes lock tokens. It must be safe for concurrent use and
// unpredictable: a guessed token lets another client release the lock.
type TokenSource interface{ NewToken() Token }

// tokenSize is the size of a Token in bytes: 128 bits.
const tokenSize = 16

// Token identifies one holder of one lock. The zero Token is never issued
// by a good TokenSource and is refused by Spec.Acquire.
type Token [tokenSize]byte

// hexSize is the length of a Token's wire form.
const hexSize = 2 * tokenSize

// AppendHex appends the wire form of t, lower-case hex, to dst. Every driver
// sends tokens in this form, so that locks taken through one driver can be
// released through another.
func (t Token) AppendHex(dst []byte) []byte {
	const digits = "0123456789abcdef"
	for _, b := range t {
		dst = append(dst, digits[b>>4], digits[b&15])
	}
	return dst
}

// String returns the wire form of t.
func (t Token) String() string {
	var buf [hexSize]byte
	return string(t.AppendHex(buf[:0]))
}

// TokenFromUint64s builds a token from two 64-bit words, for TokenSources
// built on a Rand.
//
//nolint:gosec // G115: each byte(w >> n) takes one byte of the word on purpose
func TokenFromUint64s(hi, lo uint64) Token {
	var t Token
	for i := 0; i < 8; i++ {
		t[i] = byte(hi >> (56 - 8*i))
		t[8+i] = byte(lo >> (56 - 8*i))
	}
	return t
}

// SystemClock is the real clock: time.Now and time.AfterFunc. Its zero
// value is ready to use.
type SystemClock struct{}

// Now returns time.Now(), which carries a monotonic reading. Its wall
// reading matters too: Config.Fair's tickets are wall-clock
// milliseconds, compared across processes, so a reading must follow
// the wall clock when it is stepped or the host resumes from suspend
// (during which the monotonic clock stops).
func (SystemClock) Now() time.Time { return time.Now() }

// AfterFunc is time.AfterFunc.
func (SystemClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

func itoa(i int) string { return strconv.Itoa(i) }
