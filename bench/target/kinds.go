package target

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/bench/matrix"
	"github.com/redlock-go/redlock/bench/measure"
	"github.com/redlock-go/redlock/core"
)

// The primitives beyond the mutex as benchmark subjects (the Kinds
// scenario of bench/matrix): pairs of the reader/writer lock and the
// multi-key lock, each beside the mutex pair it is compared with, and
// the contenders of the hot cells, whose sections a measure.Ledger
// checks.

// allKeys returns the LockAll keys of a pair worker on key: n keys that
// share key's hash tag, so that one Cluster slot holds them all.
func allKeys(key string, n int) []string {
	ks := make([]string, n)
	for i := range ks {
		ks[i] = "{" + key + "}:" + strconv.Itoa(i)
	}
	return ks
}

// KindPair is the subject of a Kinds pair cell: a redlock.Client whose
// workers run one variant's pair (matrix.KindRLock, KindLock, KindLockAll,
// KindLock3, KindReaders, KindMutexKeys), one attempt each. Its Ledger
// checks the contended ones' sections.
//
// It counts the rounds its driver runs (a RoundCounter), so that a
// measurement has the rounds per pair: a pair's cost in rounds, beside
// its time.
type KindPair struct {
	*RoundCounter
	C       *redlock.Client
	Variant string
	Ledger  *measure.Ledger
}

// NewKindPair returns the pair subject of variant over drv, which it
// wraps in a RoundCounter, multiplexed, with the given TTL.
func NewKindPair(drv core.Driver, variant string, ttl time.Duration) (*KindPair, error) {
	switch variant {
	case matrix.KindRLock, matrix.KindLock, matrix.KindLockAll, matrix.KindLock3, matrix.KindReaders, matrix.KindMutexKeys:
	default:
		return nil, fmt.Errorf("target: %q is not a pair cell of the kinds", variant)
	}
	counter := CountRounds(drv)
	c, err := redlock.NewClient(counter.driver(), redlock.Options{TTL: ttl, FanOut: core.Multiplexed})
	if err != nil {
		return nil, err
	}
	return &KindPair{RoundCounter: counter, C: c, Variant: variant, Ledger: measure.NewLedger()}, nil
}

// Worker implements measure.Subject.
func (k *KindPair) Worker(key string) measure.Worker {
	w := &kindWorker{c: k.C, variant: k.Variant, key: key}
	switch k.Variant {
	case matrix.KindLockAll, matrix.KindLock3:
		w.keys = allKeys(key, matrix.LockAllKeys)
	case matrix.KindReaders:
		w.ledger, w.claims = k.Ledger, []measure.Claim{{Resource: key, Shared: true}}
	case matrix.KindMutexKeys:
		w.ledger, w.claims = k.Ledger, []measure.Claim{{Resource: key, Limit: 1}}
	}
	return w
}

// Check returns the Ledger's findings over a measurement r of the
// subject: for the readers' cell, the pairs that lost (a reader refused
// where no writer ever was) are Refused.
func (k *KindPair) Check(r measure.Result) measure.Exclusion {
	e := k.Ledger.Check()
	if k.Variant == matrix.KindReaders {
		e.Refused = r.Ops - r.Acquired
	}
	return e
}

type kindWorker struct {
	c       *redlock.Client
	variant string
	key     string
	keys    []string
	ledger  *measure.Ledger
	claims  []measure.Claim
	held    [matrix.LockAllKeys]*redlock.Lock
}

// Pair runs the worker's variant once. ErrTaken is a lost contest, not
// an error.
func (w *kindWorker) Pair(ctx context.Context) (bool, error) {
	var (
		l   *redlock.Lock
		err error
	)
	switch w.variant {
	case matrix.KindRLock, matrix.KindReaders:
		l, err = w.c.TryRLock(ctx, w.key)
	case matrix.KindLock, matrix.KindMutexKeys:
		l, err = w.c.TryLock(ctx, w.key)
	case matrix.KindLockAll:
		l, err = w.c.TryLockAll(ctx, w.keys...)
	case matrix.KindLock3:
		return w.lockInTurn(ctx)
	}
	if err != nil {
		return false, lost(err)
	}
	if w.ledger != nil {
		w.section(l)
	}
	return true, l.Unlock(ctx)
}

// section enters the ledger with the worker's claims and leaves it, an
// expiry counted.
func (w *kindWorker) section(l *redlock.Lock) {
	s := w.ledger.Enter(w.claims)
	if time.Now().After(l.Until()) {
		w.ledger.Expired()
	}
	s.Leave()
}

// lockInTurn takes the worker's keys with one TryLock each, in turn,
// then unlocks them in turn: what LockAll replaces. A key lost unlocks
// those taken.
func (w *kindWorker) lockInTurn(ctx context.Context) (bool, error) {
	for i, k := range w.keys {
		l, err := w.c.TryLock(ctx, k)
		if err != nil {
			errs := []error{lost(err)}
			for _, h := range w.held[:i] {
				errs = append(errs, h.Unlock(ctx))
			}
			return false, errors.Join(errs...)
		}
		w.held[i] = l
	}
	var errs []error
	for i := range w.keys {
		errs = append(errs, w.held[i].Unlock(ctx))
		w.held[i] = nil
	}
	return true, errors.Join(errs...)
}

// Sections returns the contenders of hot Kinds cell c (matrix.KindPermits,
// KindMutexPermits, KindWriterWait, KindLockAllHot) on key, over one
// Client of drv shared by them all, woken by release announcements, with
// TTL ttl; for KindWriterWait, c.Clients readers and one writer, with
// the cell's own TTL (writerTTL) and a node timeout of a tenth of it.
// The Client runs over a RoundCounter of drv, which it returns too.
func Sections(drv core.Driver, c matrix.Cell, key string, ttl, writerTTL time.Duration) ([]measure.SectionContender, *RoundCounter, error) {
	counter := CountRounds(drv)
	opts := redlock.Options{TTL: ttl, FanOut: core.Multiplexed}
	if c.Variant == matrix.KindWriterWait {
		// The default node timeout of so short a TTL is the least, 5 ms,
		// which a loaded machine's loopback exceeds now and then: a
		// tenth of the TTL keeps the cell's figure the writer's wait
		// rather than its timeouts, and leaves the loss margin.
		ttl = writerTTL
		opts.TTL, opts.NodeTimeout = ttl, ttl/10
	}
	cl, err := redlock.NewClient(counter.driver(), opts)
	if err != nil {
		return nil, nil, err
	}
	var out []measure.SectionContender
	add := func(s *sectionContender) { out = append(out, s) }
	switch c.Variant {
	case matrix.KindPermits:
		for range c.Clients {
			add(&sectionContender{
				take: func(ctx context.Context) (*redlock.Lock, error) {
					return cl.LockPermit(ctx, key, matrix.Permits)
				},
				claims: func(l *redlock.Lock) []measure.Claim {
					cs := []measure.Claim{{Resource: key, Limit: matrix.Permits}}
					if k := l.Key(); k != key { // the permit's slot: one holder
						cs = append(cs, measure.Claim{Resource: k, Limit: 1})
					}
					return cs
				},
			})
		}
	case matrix.KindMutexPermits:
		for i := range c.Clients {
			k := key + ":" + strconv.Itoa(i%matrix.Permits)
			cs := []measure.Claim{{Resource: k, Limit: 1}}
			add(&sectionContender{
				take:   func(ctx context.Context) (*redlock.Lock, error) { return cl.Lock(ctx, k) },
				claims: func(*redlock.Lock) []measure.Claim { return cs },
			})
		}
	case matrix.KindWriterWait:
		// Readers hold between a tenth and half of the TTL, and start a
		// new section at once: a stream of short readers that, without
		// the writer's mark, would never leave the key free.
		lo, hi := ttl/10, ttl/2
		rc := []measure.Claim{{Resource: key, Shared: true}}
		for i := range c.Clients {
			rng := rand.New(rand.NewPCG(uint64(i), 36)) //nolint:gosec // G404: hold times, not secrets
			add(&sectionContender{
				take:   func(ctx context.Context) (*redlock.Lock, error) { return cl.RLock(ctx, key) },
				claims: func(*redlock.Lock) []measure.Claim { return rc },
				hold:   func() time.Duration { return lo + time.Duration(rng.Int64N(int64(hi-lo))) },
			})
		}
		// The writer pauses half a TTL between sections, so that the
		// readers' stream is back when it comes.
		wc := []measure.Claim{{Resource: key, Limit: 1}}
		add(&sectionContender{
			take:   func(ctx context.Context) (*redlock.Lock, error) { return cl.WLock(ctx, key) },
			claims: func(*redlock.Lock) []measure.Claim { return wc },
			pause:  ttl / 2,
			timed:  true,
		})
	case matrix.KindLockAllHot:
		// LockAllKeys of a pool of LockAllKeys+1: contender i leaves out
		// key i mod the pool, so that every two sets intersect.
		pool := allKeys(key, matrix.LockAllKeys+1)
		for i := range c.Clients {
			var ks []string
			var cs []measure.Claim
			for j, k := range pool {
				if j != i%len(pool) {
					ks = append(ks, k)
					cs = append(cs, measure.Claim{Resource: k, Limit: 1})
				}
			}
			add(&sectionContender{
				take:   func(ctx context.Context) (*redlock.Lock, error) { return cl.LockAll(ctx, ks...) },
				claims: func(*redlock.Lock) []measure.Claim { return cs },
			})
		}
	default:
		return nil, nil, fmt.Errorf("target: %q is not a hot cell of the kinds", c.Variant)
	}
	return out, counter, nil
}

// sectionContender is one contender of a hot Kinds cell.
type sectionContender struct {
	take   func(context.Context) (*redlock.Lock, error)
	claims func(*redlock.Lock) []measure.Claim
	hold   func() time.Duration
	pause  time.Duration
	timed  bool
	l      *redlock.Lock
}

func (s *sectionContender) Lock(ctx context.Context) error {
	if s.l != nil {
		return errors.New("target: Lock while holding the lock")
	}
	l, err := s.take(ctx)
	if err != nil {
		return err
	}
	s.l = l
	return nil
}

func (s *sectionContender) Unlock(ctx context.Context) error {
	if s.l == nil {
		return errors.New("target: Unlock without a lock")
	}
	l := s.l
	s.l = nil
	return l.Unlock(ctx)
}

func (s *sectionContender) Claims() []measure.Claim { return s.claims(s.l) }
func (s *sectionContender) Until() time.Time        { return s.l.Until() }
func (s *sectionContender) Pause() time.Duration    { return s.pause }
func (s *sectionContender) Timed() bool             { return s.timed }

func (s *sectionContender) Hold() time.Duration {
	if s.hold == nil {
		return 0
	}
	return s.hold()
}
