package core

import (
	"errors"
	"math/bits"
	"strconv"
	"time"
)

// A K-permit semaphore over N masters is K slots, each a plain Redlock
// mutex key (KindMutex): slot i of key K is PermitKey(K, i). A holder
// holds one slot, and each slot has at most one holder, so the semaphore
// has at most K holders, with the mutex's guarantees and assumptions.
// The client names the one slot each round tries: were the nodes to pick
// a free slot each, or count holders, a vote could split, and a count
// per node admitted by a majority is unsound (3 nodes, K = 2: holders of
// nodes AB, BC and AC each hold a majority while each node counts 2).

// MaxPermits is the most permits a semaphore has: a sweep makes one
// attempt per permit.
const MaxPermits = 1024

// permitInfix separates a semaphore's key from a slot's number in the
// slot's key.
const permitInfix = ":permit:"

// HashTag returns the text of key's hash tag and true, or "" and false if
// key has none: the text between its first '{' and the first '}' after
// it, when that text is not empty. A Redis cluster hashes a key with a tag
// by the tag alone, so keys that share a tag share a hash slot.
func HashTag(key string) (string, bool) {
	for open := 0; open < len(key); open++ {
		if key[open] != '{' {
			continue
		}
		for end := open + 1; end < len(key); end++ {
			if key[end] == '}' {
				if end == open+1 {
					return "", false
				}
				return key[open+1 : end], true
			}
		}
		return "", false
	}
	return "", false
}

// PermitKey returns the key of slot (from 0) of the semaphore key: key +
// ":permit:" + slot when key has a hash tag, else "{" + key + "}:permit:"
// + slot, so that every slot of one semaphore shares a hash slot on a
// cluster member (and the slots of a tagged key share the key's).
func PermitKey(key string, slot int) string {
	if _, ok := HashTag(key); ok {
		return key + permitInfix + strconv.Itoa(slot)
	}
	return "{" + key + "}" + permitInfix + strconv.Itoa(slot)
}

// PermitKeys returns the keys of the permits slots of the semaphore key
// (PermitKey), as AcquirePermit and TryPermit take them, or an
// ErrInvalidConfig error for permits below 1 or above MaxPermits.
func PermitKeys(key string, permits int) ([]string, error) {
	if err := checkPermits(permits); err != nil {
		return nil, err
	}
	slots := make([]string, permits)
	for i := range slots {
		slots[i] = PermitKey(key, i)
	}
	return slots, nil
}

func checkPermits(permits int) error {
	switch {
	case permits < 1:
		return invalid("a semaphore of " + itoa(permits) + " permits: it needs at least 1")
	case permits > MaxPermits:
		return invalid("a semaphore of " + itoa(permits) + " permits: more than MaxPermits (" + itoa(MaxPermits) + ")")
	}
	return nil
}

// checkSlots refuses slots that are not the slots of one semaphore, in
// order (PermitKeys): too few or too many, a slot key that is not
// PermitKey's of the first slot's semaphore (so that no slot is given
// twice, every client of a semaphore names its slots alike, and they
// share a hash slot), or a bad key (checkKey).
func (s *Spec) checkSlots(slots []string) error {
	if err := checkPermits(len(slots)); err != nil {
		return err
	}
	base, ok := cutSuffix(slots[0], permitInfix+"0")
	if _, tagged := HashTag(base); !ok || !tagged {
		return invalid("slot " + QuoteKey(slots[0]) + " is not slot 0 of a semaphore (PermitKey)")
	}
	for i, slot := range slots {
		if !isPermitKey(slot, base, i) {
			return invalid("slot " + itoa(i) + " " + QuoteKey(slot) + " is not PermitKey of the semaphore of " + QuoteKey(slots[0]) + " and " + itoa(i))
		}
		if err := s.checkKey(slot); err != nil {
			return err
		}
	}
	return nil
}

// cutSuffix returns s without suffix, and whether s ended with it.
func cutSuffix(s, suffix string) (string, bool) {
	if len(s) < len(suffix) || s[len(s)-len(suffix):] != suffix {
		return s, false
	}
	return s[:len(s)-len(suffix)], true
}

// isPermitKey reports whether slot is base + permitInfix + i, without
// building that string.
func isPermitKey(slot, base string, i int) bool {
	if !hasPrefix(slot, base) || !hasPrefix(slot[len(base):], permitInfix) {
		return false
	}
	digits := slot[len(base)+len(permitInfix):]
	if len(digits) == 0 || len(digits) > 1 && digits[0] == '0' {
		return false
	}
	n := 0
	for j := 0; j < len(digits); j++ {
		c := digits[j]
		if c < '0' || c > '9' || n > MaxPermits {
			return false
		}
		n = n*10 + int(c-'0')
	}
	return n == i
}

// permitSlot maps tok onto [0, k): the slot a holder of tok tries first,
// so that contenders with random tokens start their sweeps apart. It
// mixes all 16 bytes (splitmix64's finalizer), then multiply-shifts.
func permitSlot(tok Token, k int) int {
	var hi, lo uint64
	for i := 0; i < 8; i++ {
		hi = hi<<8 | uint64(tok[i])
		lo = lo<<8 | uint64(tok[8+i])
	}
	x := hi ^ bits.RotateLeft64(lo, 29)
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	s, _ := bits.Mul64(x, uint64(k)) //nolint:gosec // G115: 1 <= k <= MaxPermits
	return int(s)                    //nolint:gosec // G115: s < k
}

// permitHeard is how many slots' announcements a Permits keeps track of
// at once during a wait (Permits.Announce): few slots are released at
// once, and one more than that wakes the wait.
const permitHeard = 8

// Permits is the acquisition of one permit of a K-permit semaphore, step
// by step: sweeps of one attempt per slot, and waits between the sweeps.
// An attempt is an Acquisition of the slot's key that makes one attempt
// (Spec.Try): a whole Redlock round on that key, with its fence raise
// (Config.Fencing) and, if it fails, its cleanup. The first sweep starts
// at a slot drawn from the first attempt's token and tries every slot in
// turn; once a sweep was refused, it waits for the retry delay, for the
// earliest expiry of the slots' holders (Reply.TTL), or for an announced
// release of any slot (Announce), and sweeps again (Wake: the slot
// released alone, or every slot), until Config.Retry's tries, counted in
// sweeps, run out or its caller gives up. Its grant is an ordinary grant
// of the slot's key: release, extend and lease it as any.
//
// A Permits allocates nothing on the way to a grant. It holds an
// Acquisition, and is larger than TinyGo's 1 KiB for values kept on the
// stack: there, start one in place (AcquirePermitIn) to allocate
// nothing. The zero Permits
// is in Phase 0 and does nothing; its Result is an ErrInvalidConfig
// error.
type Permits struct {
	spec   Spec // the slots' attempts': Fair off and one try (Spec.Try)
	slots  []string
	base   Token // the caller's token; zero: each attempt draws one from Config.Tokens
	first  Token // the first attempt's token, whichever
	sweeps retrier
	att    Acquisition // the current slot's attempt

	err   *Error // the result, or the failure that counts of the sweep so far
	cause error  // set by Cancel

	// What the last sweep learnt, for the wait after it.
	wake      time.Time // the retry delay's end
	expiry    time.Time // the earliest expiry of a refused slot's holder; zero: none known
	woke      time.Time // the wake an announcement brought forward; zero: none
	swept     time.Time // when the current sweep's first attempt started
	spread    time.Duration
	listening uint32
	heard     [permitHeard]heardSlot // announcements of slots since their attempts started
	nheard    int
	flood     int // a slot announced with the table full, plus 1; 0: none

	attempts int // attempts made, every sweep's
	home     int // the slot drawn from the first token
	start    int // the slot the current sweep started at
	slot     int // the current attempt's slot
	tried    int // attempts of the current sweep
	span     int // slots the current sweep tries
	expSlot  int // the slot of expiry
	wokeSlot int // the slot of woke
	unknown  bool
	woken    bool // the current sweep was started by an announcement
	wokeAll  bool // woke is for a sweep of every slot
	phase    Phase
}

// heardSlot is the nodes that announced a slot's release.
type heardSlot struct {
	slot  int32
	nodes uint32
}

// AcquirePermit begins the acquisition of one permit of a semaphore
// whose slots' keys are slots (PermitKeys: the semaphore's K permits
// are len(slots)), at now. Attempt 1 holds tok, attempt k > 1 holds tok
// with its last four bytes XORed with k−1, as Acquire's; a zero tok
// draws every attempt's token from Config.Tokens. Every client of a
// semaphore must give it the same number of permits: a client of K+1
// permits may hold slot K beside the K holders of the others.
//
// Bad input is refused with an ErrInvalidConfig error before anything is
// sent: no slots or more than MaxPermits; slots that are not the slots of
// one key in order (PermitKeys); a bad slot key (as Acquire's); a token
// whose first 8 bytes are zero; and Config.Fair, whose waiter queues are
// the mutex's (TryPermit runs without it, as Try does).
//
// A Permits is larger than the 1 KiB TinyGo keeps on the stack: there,
// AcquirePermitIn starts one in the caller's, allocating nothing.
func (s Spec) AcquirePermit(slots []string, tok Token, now time.Time) (p Permits, err error) {
	err = s.AcquirePermitIn(&p, slots, tok, now)
	return p, err
}

// TryPermit is AcquirePermit with one sweep: one attempt per slot, and
// no wait. With Config.Fair, its attempts are those of a Spec without
// Fair, as Try's are; slots are checked under the Spec's own rules.
func (s Spec) TryPermit(slots []string, tok Token, now time.Time) (p Permits, err error) {
	err = s.TryPermitIn(&p, slots, tok, now)
	return p, err
}

// AcquirePermitIn is AcquirePermit into *p, whatever *p held: on an
// error, *p is the zero Permits.
func (s Spec) AcquirePermitIn(p *Permits, slots []string, tok Token, now time.Time) error {
	if s.cfg.Fair {
		*p = Permits{}
		return invalid("Fair waits only for a mutex, not a semaphore's permit")
	}
	return s.permits(p, slots, tok, now, s.cfg.Retry)
}

// TryPermitIn is TryPermit into *p, as AcquirePermitIn.
func (s Spec) TryPermitIn(p *Permits, slots []string, tok Token, now time.Time) error {
	return s.permits(p, slots, tok, now, s.cfg.Retry.WithTries(1))
}

// permits starts *p in place: a Permits built here and copied out would
// be allocated under TinyGo.
func (s Spec) permits(p *Permits, slots []string, tok Token, now time.Time, policy RetryPolicy) error {
	*p = Permits{}
	if err := s.checkSlots(slots); err != nil {
		return err
	}
	if tok != (Token{}) && !tok.safe() {
		return invalid("token " + tok.String() + " has its first 8 bytes zero: fewer than 64 unpredictable bits")
	}
	p.sweeps = policy.start()
	s.cfg.Fair, s.cfg.Retry.tries = false, 1
	p.spec, p.slots, p.base = s, slots, tok
	if tok != (Token{}) {
		p.first = tok
	} else {
		p.first = s.cfg.Tokens.NewToken()
	}
	p.home = permitSlot(p.first, len(slots))
	p.startSweep(p.home, len(slots), now)
	return nil
}

// startSweep starts a sweep of span slots from slot, at now. A whole
// sweep (span K) learns the holders' expiries afresh; a sweep of the
// slot an announcement woke it for (span 1) adds to what the last whole
// sweep learnt.
func (p *Permits) startSweep(slot, span int, now time.Time) {
	p.sweeps.attempt()
	p.start, p.span, p.tried, p.swept, p.flood, p.err = slot, span, 0, now, 0, nil
	if span == len(p.slots) {
		p.expiry, p.unknown = time.Time{}, false
	}
	p.startSlot(slot, now)
}

// startSlot starts the attempt on slot, at now.
func (p *Permits) startSlot(slot int, now time.Time) {
	p.attempts++
	p.tried++
	p.slot = slot
	tok := p.first
	switch {
	case p.attempts == 1:
	case p.base != Token{}:
		tok = deriveToken(p.base, p.attempts)
	default:
		tok = p.spec.cfg.Tokens.NewToken()
	}
	// Announcements of the slot count from its attempt on, as an
	// Acquisition's do.
	for i := 0; i < p.nheard; i++ {
		if p.heard[i].slot == int32(slot) { //nolint:gosec // G115: slot < MaxPermits
			p.nheard--
			p.heard[i] = p.heard[p.nheard]
			break
		}
	}
	p.phase = PhaseRound
	var err error
	p.att, err = p.spec.acquire(p.slots[slot], tok, now, KindMutex, nil)
	if err != nil { // a token of Config.Tokens with its first 8 bytes zero
		p.att = Acquisition{}
		p.finish(&Error{Op: OpAcquire, Kind: ErrInvalidConfig, Key: p.slots[slot], Attempts: p.attempts, Cause: err})
		return
	}
	// Once an attempt was refused the semaphore is contended: every next
	// attempt asks for the holder's remaining TTL (Command.Probe), for
	// the wait after the sweep, as an Acquisition's retries do.
	p.att.round.cmd.Probe = p.attempts > 1
}

// Phase returns what the acquisition waits for.
func (p *Permits) Phase() Phase { return p.phase }

// Round returns the round to drive in PhaseRound: the current slot's
// attempt, its fence raise (Config.Fencing) or its cleanup.
func (p *Permits) Round() *Round { return p.att.Round() }

// Slot returns the slot of the current attempt, or of the grant once
// done: an index into the slots given.
func (p *Permits) Slot() int { return p.slot }

// RoundDone moves on once Round().Done(), at now on the caller's clock:
// the current slot's attempt moves on (Acquisition.RoundDone); once it has
// ended, a grant ends the acquisition, and a refusal moves on to the next
// slot, or, after a whole sweep, to the wait, or ends the acquisition
// when no sweep is left.
func (p *Permits) RoundDone(now time.Time) {
	if p.phase != PhaseRound {
		return
	}
	a := &p.att
	a.RoundDone(now)
	if a.phase != PhaseDone {
		return
	}
	if a.grant.key != "" {
		p.phase = PhaseDone
		return
	}
	err := a.err
	err.Attempts = p.attempts
	if p.cause != nil || a.cause != nil {
		p.finish(err)
		return
	}
	// A sweep fails as taken only if every slot was taken; otherwise with
	// a slot's other failure, which says the sweep could not tell.
	if p.err == nil || errors.Is(p.err.Kind, ErrTaken) {
		p.err = err
	}
	if a.expiry.IsZero() {
		p.unknown = true
	} else if p.expiry.IsZero() || a.expiry.Before(p.expiry) {
		p.expiry, p.expSlot = a.expiry, p.slot
	}
	if p.tried < p.span {
		p.startSlot((p.slot+1)%len(p.slots), now)
		return
	}
	p.err.Attempts = p.attempts
	if p.woken {
		// A woken sweep lost a race: spread the next wake over twice an
		// attempt's time, as an Acquisition does.
		p.spread = 2 * now.Sub(p.swept) / time.Duration(p.tried)
	} else {
		p.spread = 0
	}
	delay, ok := p.sweeps.next(p.spec.cfg.Jitter.Uint64())
	if !ok {
		p.finish(p.err)
		return
	}
	p.phase, p.wake, p.woke = PhaseWait, now.Add(delay), time.Time{}
	p.maybeWake(now) // announcements heard during the sweep count
}

// Announce records that node announced a release of slot's key at now,
// or that its announcements of it may have been missed (Announcer.Watch).
// Once a quorum of nodes has announced one slot since its attempt
// started, or more slots than a Permits keeps track of were announced,
// WakeAt comes forward to now (spread, after a woken sweep lost a race),
// for a sweep of that slot (every slot, from it, for the latter). It is
// a hint: the next attempt is an ordinary round.
func (p *Permits) Announce(slot, node int, now time.Time) {
	if slot < 0 || slot >= len(p.slots) || node < 0 || node >= p.spec.n || p.phase == PhaseDone || p.phase == 0 {
		return
	}
	i := 0
	for i < p.nheard && p.heard[i].slot != int32(slot) { //nolint:gosec // G115: slot < MaxPermits
		i++
	}
	if i == p.nheard {
		if p.nheard == permitHeard {
			p.flood = slot + 1 // many releases: one of them is worth a sweep
			p.maybeWake(now)
			return
		}
		p.heard[i] = heardSlot{slot: int32(slot)} //nolint:gosec // G115: slot < MaxPermits
		p.nheard++
	}
	p.heard[i].nodes |= 1 << node
	p.maybeWake(now)
}

// maybeWake brings the wake forward, in PhaseWait, once a slot heard
// from a quorum of nodes.
func (p *Permits) maybeWake(now time.Time) {
	if p.phase != PhaseWait || !p.woke.IsZero() {
		return
	}
	if p.flood > 0 {
		p.wakeFor(p.flood-1, true, now) // more slots than kept track of: sweep them all
		return
	}
	for i := 0; i < p.nheard; i++ {
		if bits.OnesCount32(p.heard[i].nodes) >= p.spec.quorum {
			p.wakeFor(int(p.heard[i].slot), false, now)
			return
		}
	}
}

// wakeFor brings the wake forward for slot, in PhaseWait, never past the
// retry delay's end; all: for a sweep of every slot from it.
func (p *Permits) wakeFor(slot int, all bool, now time.Time) {
	if p.phase != PhaseWait || !p.woke.IsZero() {
		return
	}
	p.woke, p.wokeSlot, p.wokeAll = now.Add(uniform(p.spread, p.spec.cfg.Jitter.Uint64())), slot, all
	if p.woke.After(p.wake) {
		p.woke = p.wake
	}
}

// SetListening tells the acquisition which nodes' announcements of every
// slot the caller hears: bit i for node i. While that is every node, and
// the last sweep learnt when each slot's holder expires, a wait lasts
// until Announce brings it forward or the earliest of those expiries;
// otherwise it ends at the earlier of that expiry and the retry delay.
func (p *Permits) SetListening(nodes uint32) { p.listening = nodes }

func (p *Permits) relying() bool {
	all := uint32(1)<<p.spec.n - 1
	return p.listening&all == all && !p.unknown
}

// WakeAt returns when the wait of PhaseWait ends: at the retry delay's
// end, or at the earliest holder's expiry when that comes first or while
// listening (SetListening), or earlier once Announce brought it forward.
func (p *Permits) WakeAt() time.Time {
	at := p.wake
	if !p.expiry.IsZero() && (p.relying() || p.expiry.Before(at)) {
		at = p.expiry
	}
	if !p.woke.IsZero() && p.woke.Before(at) {
		at = p.woke
	}
	return at
}

// Wake starts the next sweep at now, in PhaseWait. Woken by the
// announcements of one slot (Announce), it tries that slot alone: the
// others were taken at the last sweep and nothing was heard of them, and
// each of the waiters that heard the release would otherwise sweep them
// all after losing the race for it. Otherwise it tries every slot: from
// the slot whose holder expired first once that expiry has passed, or
// else from where the first sweep started. It may come before WakeAt: an
// attempt is always safe.
func (p *Permits) Wake(now time.Time) {
	if p.phase != PhaseWait {
		return
	}
	slot, span := p.home, len(p.slots)
	p.woken = !p.woke.IsZero() && !now.Before(p.woke)
	switch {
	case p.woken:
		slot = p.wokeSlot
		if !p.wokeAll {
			span = 1
		}
	case !p.expiry.IsZero() && !now.Before(p.expiry):
		slot = p.expSlot
	}
	p.startSweep(slot, span, now)
}

// GiveUp ends the acquisition in PhaseWait with the last sweep's error,
// as a deadline does that leaves no time for the next sweep.
func (p *Permits) GiveUp(now time.Time) {
	if p.phase == PhaseWait {
		p.finish(p.err)
	}
}

// Cancel ends the acquisition because its caller gave up, with cause as
// the error's Cause: an attempt in progress is abandoned and its cleanup
// starts, which must still be driven to its end (PhaseRound), as
// Acquisition.Cancel's. Result then matches ErrCancelled.
func (p *Permits) Cancel(now time.Time, cause error) {
	if p.phase == PhaseDone || p.phase == 0 || p.cause != nil {
		return
	}
	p.cause = cause
	if p.phase == PhaseWait {
		p.finish(&Error{Op: OpAcquire, Kind: ErrCancelled, Key: p.slots[p.slot], Attempts: p.attempts, Cause: cause})
		return
	}
	p.att.Cancel(now, cause)
	if p.att.phase == PhaseDone {
		err := p.att.err
		err.Attempts = p.attempts
		p.finish(err)
	}
}

func (p *Permits) finish(err *Error) {
	p.phase, p.err = PhaseDone, err
}

// Attempts returns the attempts made so far, every sweep's.
func (p *Permits) Attempts() int { return p.attempts }

// Result returns the grant of the slot won (Slot), or why the
// acquisition failed: ErrTaken when every slot of the last sweep was
// taken, or else the failure of a slot that was not (ErrQuorumUnreachable,
// ErrNotHeld), with that slot's key and nodes; or ErrCancelled. It is
// meaningful in PhaseDone only.
func (p *Permits) Result() (Grant, error) {
	if p.phase != PhaseDone {
		return Grant{}, invalid("acquisition of a permit is not done")
	}
	if p.att.grant.key != "" {
		return p.att.grant, nil
	}
	if p.err == nil {
		return Grant{}, invalid("acquisition of a permit was never started")
	}
	return Grant{}, p.err
}
