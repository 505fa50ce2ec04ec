package core

import (
	"strconv"
	"time"
)

// Clock is the Locker's only source of time. Validity is measured as the
// difference of two Now readings, so Now must be monotonic: it never goes
// back, and it advances at the rate of real time within the drift
// allowance. time.Now's monotonic reading is (SystemClock). A Clock stepped
// back during a round by less than the round took makes the round look
// shorter and its validity too long: no check can see that, so a custom
// Clock must not do it. What can be seen fails safe: a round that ends
// before it started has no validity, and a lock read at a time before its
// round ended has none left.
type Clock interface {
	Now() time.Time
	// Sleep waits for d and reports true, or reports false as soon as cancel
	// is closed. cancel may be nil.
	Sleep(d time.Duration, cancel <-chan struct{}) bool
}

// Rand is a source of 64 random bits. It must be safe for concurrent use.
// Locker uses it for retry jitter only; it need not be cryptographic.
type Rand interface{ Uint64() uint64 }

// TokenSource makes lock tokens. It must be safe for concurrent use and
// unpredictable: a guessed token lets another client release the lock.
type TokenSource interface{ NewToken() Token }

// TokenSize is the size of a Token in bytes: 128 bits.
const TokenSize = 16

// Token identifies one holder of one lock. The zero Token is never issued
// by a good TokenSource and is refused by Locker.
type Token [TokenSize]byte

// HexSize is the length of a Token's wire form.
const HexSize = 2 * TokenSize

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
	var buf [HexSize]byte
	return string(t.AppendHex(buf[:0]))
}

// TokenFromUint64s builds a token from two 64-bit words, for TokenSources
// built on a Rand.
func TokenFromUint64s(hi, lo uint64) Token {
	var t Token
	for i := 0; i < 8; i++ {
		t[i] = byte(hi >> (56 - 8*i))
		t[8+i] = byte(lo >> (56 - 8*i))
	}
	return t
}

// SystemClock is the real clock: time.Now and a timer. Its zero value is
// ready to use.
type SystemClock struct{}

// Now returns time.Now(), which carries a monotonic reading.
func (SystemClock) Now() time.Time { return time.Now() }

// Sleep waits for d on a timer, or until cancel is closed.
func (SystemClock) Sleep(d time.Duration, cancel <-chan struct{}) bool {
	if d <= 0 {
		select {
		case <-cancel:
			return false
		default:
			return true
		}
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-cancel:
		return false
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
