package core

import "strconv"

// maxKeyLen is the longest key a Spec accepts, in bytes. Every round sends
// the key to every node in every command, so a long key costs each round
// trip: a 1 MiB key misses the default node timeouts. 4 KiB is far beyond
// any resource name and well within them.
const maxKeyLen = 4096

// FenceKeyPrefix starts the name of every fence counter: the counter of
// key k is FenceKeyPrefix + k, on every node. A Spec with
// Config.Fencing refuses keys that start with it, so that a lock never
// lands on a counter.
const FenceKeyPrefix = "redlock:fence:"

// checkKey refuses an empty key and one longer than maxKeyLen.
func checkKey(key string) error {
	switch {
	case key == "":
		return invalid("key is empty")
	case len(key) > maxKeyLen:
		return invalid("key " + QuoteKey(key) + " is longer than the limit (" + strconv.Itoa(maxKeyLen) + " bytes)")
	}
	return nil
}

// Names of a key's waiter queue and its entries' deadlines on the nodes,
// with Config.Fair: the prefix, then the key.
const (
	queuePrefix    = "redlock:queue:"
	queueDuePrefix = "redlock:queue-due:"
)

// checkKey refuses what the package-level checkKey does; with Fair, a key
// that names another key's waiter queue; and with Fencing, a key that
// starts with FenceKeyPrefix or whose counter's name would be longer than
// maxKeyLen.
func (s *Spec) checkKey(key string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if s.cfg.Fair && (hasPrefix(key, queuePrefix) || hasPrefix(key, queueDuePrefix)) {
		return invalid("key " + QuoteKey(key) + " names a waiter queue: with Fair, keys under " + queuePrefix + " and " + queueDuePrefix + " are the queues'")
	}
	if !s.cfg.Fencing {
		return nil
	}
	switch {
	case hasPrefix(key, FenceKeyPrefix):
		return invalid("key " + QuoteKey(key) + " starts with FenceKeyPrefix: with Fencing it names a fence counter")
	case len(FenceKeyPrefix)+len(key) > maxKeyLen:
		return invalid("key " + QuoteKey(key) + " is too long for its fence counter's name (limit " + strconv.Itoa(maxKeyLen) + " bytes, prefix included)")
	}
	return nil
}

// hasPrefix is strings.HasPrefix, which core does not import.
func hasPrefix(s, prefix string) bool { return len(s) >= len(prefix) && s[:len(prefix)] == prefix }

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
