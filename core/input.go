package core

import "strconv"

// MaxKeyLen is the longest key a Locker accepts, in bytes. Every round sends
// the key to every node in every command, so a long key costs each round
// trip: a 1 MiB key misses the default node timeouts. 4 KiB is far beyond
// any resource name and well within them.
const MaxKeyLen = 4096

// FenceKeyPrefix starts the name of every fence counter: the counter of
// key k is FenceKeyPrefix + k, on every node. A Locker with
// Config.Fencing refuses keys that start with it, so that a lock never
// lands on a counter.
const FenceKeyPrefix = "redlock:fence:"

// FenceKey returns the name of key's fence counter. It allocates: drivers
// that write commands into buffers of their own append FenceKeyPrefix and
// key instead.
func FenceKey(key string) string { return FenceKeyPrefix + key }

// errNilContext is returned, before anything is sent, for a nil context:
// the same error from Acquire, AcquireToken, Extend and Release.
var errNilContext = invalid("context is nil (use context.Background())")

// checkKey refuses an empty key and one longer than MaxKeyLen.
func checkKey(key string) error {
	switch {
	case key == "":
		return invalid("key is empty")
	case len(key) > MaxKeyLen:
		return invalid("key " + QuoteKey(key) + " is longer than MaxKeyLen (" + strconv.Itoa(MaxKeyLen) + " bytes)")
	}
	return nil
}

// checkKey refuses what the package-level checkKey does and, with
// Fencing, a key that starts with FenceKeyPrefix or whose counter's name
// would be longer than MaxKeyLen.
func (l *Locker) checkKey(key string) error {
	if err := checkKey(key); err != nil || !l.cfg.Fencing {
		return err
	}
	switch {
	case len(key) >= len(FenceKeyPrefix) && key[:len(FenceKeyPrefix)] == FenceKeyPrefix:
		return invalid("key " + QuoteKey(key) + " starts with FenceKeyPrefix: with Fencing it names a fence counter")
	case len(FenceKeyPrefix)+len(key) > MaxKeyLen:
		return invalid("key " + QuoteKey(key) + " is too long for its fence counter's name (MaxKeyLen " + strconv.Itoa(MaxKeyLen) + " bytes, prefix included)")
	}
	return nil
}

// quotedKeyMax is how much of a key error texts quote.
const quotedKeyMax = 64

// QuoteKey quotes key for an error text, cut to 64 bytes with its full
// length stated, so that an error never carries a huge key. Every error
// text of this module quotes keys with it.
func QuoteKey(key string) string {
	return string(appendQuotedKey(nil, key))
}

func appendQuotedKey(b []byte, key string) []byte {
	if len(key) <= quotedKeyMax {
		return strconv.AppendQuote(b, key)
	}
	b = strconv.AppendQuote(b, key[:quotedKeyMax])
	b = append(b, "... ("...)
	b = strconv.AppendInt(b, int64(len(key)), 10)
	return append(b, " bytes)"...)
}

// safe reports whether t has at least one non-zero byte among its first
// eight: a token that is a small integer (a counter, say) is guessable, and
// a guessed token lets another client release the lock.
func (t Token) safe() bool {
	for _, b := range t[:8] {
		if b != 0 {
			return true
		}
	}
	return false
}
