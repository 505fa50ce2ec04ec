package core

import "time"

// Kind says which primitive a command serves: the mutex, one side of a
// reader/writer lock, or a multi-key lock. Every Command of an
// acquisition, its cleanup, its extensions and its release carries the
// acquisition's Kind, and a driver runs the script of that Kind; the
// rounds, quorums and validities are the mutex's whatever the Kind.
type Kind uint8

const (
	// KindMutex is the mutex: one key, SET NX and compare-and-delete.
	KindMutex Kind = iota
	// KindRead is a reader of a reader/writer lock on Key. A node admits a
	// reader only while Key (the writer's key) is absent and no writer
	// waits (ReadersPrefix, WriterWaitPrefix): it adds the token to the
	// key's reader set with an expiry of its own, kept in the set's data
	// (the server's time plus TTL). A held reply's TTL is the writer's, or
	// the waiting writer's mark's, remaining time. With Config.Fencing an
	// OpAcquireFenced reader reads the key's fence counter (0 if none) and
	// never raises it, and the acquisition sends no OpRaiseFence; its
	// grant's fence is the highest counter of its quorum's replies: at
	// least the fence of every writer that held the key before it, and
	// maybe above the last one's, since a writer's failed attempts
	// increment the counters of the nodes that admitted them. It is a
	// reading, not a write fence: a later writer's fence may be lower.
	KindRead
	// KindWrite is the writer of a reader/writer lock on Key: the mutex's
	// SET NX on Key, admitted only while the key's reader set holds no
	// unexpired reader. A writer refused for readers marks the key as
	// waited for (WriterWaitPrefix), for a bound, so that the node admits
	// no new reader meanwhile. Its release is the mutex's, and deletes
	// the key's mark too where it is the writer's own (SameAcquisition),
	// unless its Command.Ticket is positive: the cleanup of a failed
	// attempt whose writer waits on keeps it. A writer that gives up
	// (cancelled, or no try left) deletes it, in its last cleanup or in
	// one more release of its last token. Extension and fence raise are
	// the mutex's.
	KindWrite
	// KindAll is a multi-key lock of Command.Keys: on each node one script
	// takes every key or none, and releases and extends every key that
	// holds the token. With Config.Fencing the fenced acquire sets every
	// key's counter to one more than the highest of them, and
	// OpRaiseFence raises each of them.
	KindAll
)

// String returns "mutex", "read", "write" or "all".
func (k Kind) String() string {
	switch k {
	case KindMutex:
		return "mutex"
	case KindRead:
		return "read"
	case KindWrite:
		return "write"
	case KindAll:
		return "all"
	}
	return "kind(" + itoa(int(k)) + ")"
}

// Names of a reader/writer lock's auxiliary keys on the nodes: the
// prefix, then the key (on a cluster member, named so as to share the
// key's hash slot, as fence counters are). The reader set is a sorted set
// of reader tokens by their expiry, in the server's milliseconds; the
// writer's mark holds the waiting writer's token, and expires.
const (
	ReadersPrefix    = "redlock:readers:"
	WriterWaitPrefix = "redlock:writer-waits:"
)

// MaxKeys is the most keys one multi-key lock takes.
const MaxKeys = 64

// Target is what an acquisition takes: a key of a given Kind, or, for
// KindAll, every key of Keys.
type Target struct {
	Kind Kind
	// Key is the key. For KindAll it is Keys[0], and may be left empty.
	Key string
	// Keys are the keys of a KindAll target, in the order given, Key
	// first; nil for the other kinds. The caller must not modify the
	// slice once given: commands and grants share it.
	Keys []string
}

// KeyList is the key list of a KindAll target, shared read-only by its
// acquisition's commands and its grant. A pointer to it keeps a Command
// and a Grant small and comparable.
type KeyList struct{ keys []string }

// NewKeyList returns a KeyList of keys, which the caller must not modify
// after.
func NewKeyList(keys []string) *KeyList { return &KeyList{keys: keys} }

// Len returns how many keys l holds; 0 for a nil l.
func (l *KeyList) Len() int {
	if l == nil {
		return 0
	}
	return len(l.keys)
}

// At returns key i.
func (l *KeyList) At(i int) string { return l.keys[i] }

// All returns the keys, which the caller must not modify; nil for a nil l.
func (l *KeyList) All() []string {
	if l == nil {
		return nil
	}
	return l.keys
}

// Target returns what g holds.
func (g Grant) Target() Target { return Target{Kind: g.kind, Key: g.key, Keys: g.keys.All()} }

// AcquireTarget is Acquire of t. A KindAll target allocates its KeyList,
// once per acquisition; the others allocate nothing.
func (s Spec) AcquireTarget(t Target, tok Token, now time.Time) (Acquisition, error) {
	t, err := s.checkTarget(t, true)
	if err != nil {
		return Acquisition{}, err
	}
	return s.acquire(t.Key, tok, now, t.Kind, t.list())
}

// TryTarget is Try of t.
func (s Spec) TryTarget(t Target, tok Token, now time.Time) (Acquisition, error) {
	t, err := s.checkTarget(t, false)
	if err != nil {
		return Acquisition{}, err
	}
	s.cfg.Fair, s.cfg.Retry.tries = false, 1
	return s.acquire(t.Key, tok, now, t.Kind, t.list())
}

// list returns t's keys as a KeyList; nil but for KindAll.
func (t Target) list() *KeyList {
	if t.Kind != KindAll {
		return nil
	}
	return NewKeyList(t.Keys)
}

// checkTarget refuses a bad target with an ErrInvalidConfig error: a bad
// Kind; a bad key (checkKey); for KindAll, no keys, more than MaxKeys, a
// key given twice, or a Key other than Keys[0]; Keys for another Kind;
// and, for an acquisition that waits (wait), Config.Fair for a Kind other
// than KindMutex, whose waiter queues are the mutex's alone.
func (s *Spec) checkTarget(t Target, wait bool) (Target, error) {
	switch t.Kind {
	case KindMutex, KindRead, KindWrite:
		if t.Keys != nil {
			return t, invalid("Keys given for a " + t.Kind.String() + " target")
		}
	case KindAll:
		switch {
		case len(t.Keys) == 0:
			return t, invalid("no keys to lock")
		case len(t.Keys) > MaxKeys:
			return t, invalid(itoa(len(t.Keys)) + " keys: more than MaxKeys (" + itoa(MaxKeys) + ")")
		case t.Key != "" && t.Key != t.Keys[0]:
			return t, invalid("Key " + QuoteKey(t.Key) + " is not Keys[0]")
		}
		for i, k := range t.Keys {
			if err := s.checkKey(k); err != nil {
				return t, err
			}
			for j := 0; j < i; j++ {
				if t.Keys[j] == k {
					return t, invalid("key " + QuoteKey(k) + " is given twice")
				}
			}
		}
		t.Key = t.Keys[0]
	default:
		return t, invalid("unknown " + t.Kind.String())
	}
	if err := s.checkKey(t.Key); err != nil {
		return t, err
	}
	if wait && s.cfg.Fair && t.Kind != KindMutex {
		return t, invalid("Fair waits only for a mutex, not a " + t.Kind.String() + " lock")
	}
	return t, nil
}
