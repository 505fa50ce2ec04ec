package systest

import (
	"context"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers/wire"
	"github.com/redlock-go/redlock/internal/redistest"
)

// The primitives beyond the mutex (RLock/WLock, LockAll, LockPermit) on
// real servers: the same exercises on a standalone quorum here (every
// driver, both fan-out modes) and on a mixed one (a standalone master, a
// Sentinel group with WAIT and a Cluster) in members_primitives.go, each
// read back from the servers themselves; a writer SIGKILLed while
// readers wait and a permit holder SIGSTOPped past its validity
// (primitives_process.go); and bad input refused before anything is sent.
var primitiveCases = []realCase{
	{"rwlock-standalone", testRWStandalone},
	{"lockall-standalone", testLockAllStandalone},
	{"permits-standalone", testPermitsStandalone},
	{"rwlock-writer-killed", testWriterKilled},
	{"permits-holder-paused", testPermitHolderPaused},
	{"primitives-bad-input", testPrimitivesBadInput},
	{"rwlock-refused-reader-announces-nothing", testRefusedReaderAnnouncesNothing},
	{"rwlock-writer-clears-its-mark", testWriterClearsItsMark},
}

// RunPrimitives runs the primitives' cases over drivers f builds, in
// both fan-out modes, as subtests "mode=.../case". RunDial runs it; Run
// does not, for the suite's own reference driver (TestRefDriver) speaks
// the mutex's commands alone, and a driver of this module speaks every
// core.Kind through drivers/engine.
func RunPrimitives(t *testing.T, f Factory) {
	for _, mode := range modes {
		t.Run("mode="+mode.String(), func(t *testing.T) {
			for _, pc := range primitiveCases {
				t.Run(pc.name, func(t *testing.T) { pc.run(t, f, mode) })
			}
		})
	}
}

// Parameters of the primitives' cases.
const (
	// primPermits is the semaphore's K.
	primPermits = 3
	// primTTL is the TTL of the exercises' locks: short, because a
	// writer's mark (core.WriterWaitPrefix) may outlive the writer by up
	// to a TTL, and the exercises wait for it to expire.
	primTTL = 3 * time.Second
	// primShortTTL is the TTL of a holder that dies or pauses: the
	// others wait its keys out.
	primShortTTL = 2 * time.Second
	// primWait bounds a waiter of these cases, far above either TTL: a
	// waiter that hangs fails the case with a message.
	primWait = 30 * time.Second
)

// memberView is how the cases read one member of a quorum: the server
// that holds key now (a Cluster member's key's master), and the names
// there of key's auxiliary keys.
type memberView struct {
	name    string
	cluster bool
	server  func(key string) *redistest.Server
}

// aux returns the name of key's auxiliary key under prefix on m: as the
// engine names it (a Cluster member's shares key's slot).
func (m memberView) aux(t *testing.T, prefix, key string) string {
	t.Helper()
	if !m.cluster {
		return prefix + key
	}
	name, err := wire.ClusterName(prefix, key)
	require.NoError(t, err)
	return name
}

// do runs a command on the server that holds key.
func (m memberView) do(t *testing.T, key string, args ...any) any {
	t.Helper()
	s := m.server(key)
	r, err := s.Do(args...)
	require.NoError(t, err, "%v on member %s (%s)", args, m.name, s.Addr)
	return r
}

// get returns key's value on m.
func (m memberView) get(t *testing.T, key string) (string, bool) {
	t.Helper()
	v := m.do(t, key, "GET", key)
	s, ok := v.(string)
	return s, ok
}

// pttl returns key's remaining time to live on m: negative without one.
func (m memberView) pttl(t *testing.T, key string) time.Duration {
	t.Helper()
	ms, _ := m.do(t, key, "PTTL", key).(int64)
	return time.Duration(ms) * time.Millisecond
}

// reader returns tok's entry in key's reader set on m: the member (the
// token in its wire form, or its raw bytes) and its score, the entry's
// expiry in the server's milliseconds.
func (m memberView) reader(t *testing.T, key string, tok core.Token) (member string, score int64, ok bool) {
	t.Helper()
	set := m.aux(t, core.ReadersPrefix, key)
	for _, member := range []string{tok.String(), string(tok[:])} {
		v := m.do(t, key, "ZSCORE", set, member)
		if s, isStr := v.(string); isStr {
			f, err := strconv.ParseFloat(s, 64)
			require.NoError(t, err, "ZSCORE %s on %s: %q", set, m.name, s)
			return member, int64(f), true
		}
	}
	return "", 0, false
}

// readers returns how many entries key's reader set holds on m,
// expired ones included.
func (m memberView) readers(t *testing.T, key string) int64 {
	t.Helper()
	n, _ := m.do(t, key, "ZCARD", m.aux(t, core.ReadersPrefix, key)).(int64)
	return n
}

// quorumView is a quorum's members, and every server a lock may leave
// data on.
type quorumView struct {
	members []memberView
	servers func() []*redistest.Server
}

// standaloneView is c's servers as a quorumView.
func standaloneView(c *realCluster) quorumView {
	v := quorumView{servers: func() []*redistest.Server { return c.srv }}
	for _, s := range c.srv {
		v.members = append(v.members, memberView{name: s.Addr, server: func(string) *redistest.Server { return s }})
	}
	return v
}

// requireEvery waits up to settle until check returns "" on every member
// (a multiplexed round returns at its quorum, with commands still on
// their way to the others), and fails with the last complaint otherwise.
func (v quorumView) requireEvery(t *testing.T, check func(m memberView) string) {
	t.Helper()
	v.requireWithin(t, settle, check)
}

// requireWithin is requireEvery with a bound of its own.
func (v quorumView) requireWithin(t *testing.T, bound time.Duration, check func(m memberView) string) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for {
		bad, msg := "", ""
		for _, m := range v.members {
			if msg = check(m); msg != "" {
				bad = m.name
				break
			}
		}
		if msg == "" {
			return
		}
		if time.Now().After(deadline) {
			require.FailNow(t, "member "+bad+": "+msg)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// requireQuorum waits up to settle until check returns "" on a quorum
// of the members: a waiter admitted where its holder's keys had expired
// may have been refused by a node whose copy had not yet.
func (v quorumView) requireQuorum(t *testing.T, check func(m memberView) string) {
	t.Helper()
	deadline := time.Now().Add(settle)
	for {
		var bad []string
		for _, m := range v.members {
			if msg := check(m); msg != "" {
				bad = append(bad, m.name+": "+msg)
			}
		}
		if len(v.members)-len(bad) >= core.Quorum(len(v.members)) {
			return
		}
		if time.Now().After(deadline) {
			require.FailNow(t, "no quorum", "%v", bad)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// holds is a check for requireEvery: every key of keys holds tok, for
// more than minTTL.
func holds(t *testing.T, tok core.Token, minTTL time.Duration, keys ...string) func(m memberView) string {
	return func(m memberView) string {
		for _, key := range keys {
			got, ok := m.get(t, key)
			switch {
			case !ok:
				return strconv.Quote(key) + " is missing, want it held by " + tok.String()
			case got != tok.String():
				return strconv.Quote(key) + " holds " + got + ", want " + tok.String()
			}
			if pttl := m.pttl(t, key); pttl <= minTTL {
				return "PTTL of " + strconv.Quote(key) + " is " + pttl.String() + ", want above " + minTTL.String()
			}
		}
		return ""
	}
}

// absent is a check for requireEvery: no key of keys exists.
func absent(t *testing.T, keys ...string) func(m memberView) string {
	return func(m memberView) string {
		for _, key := range keys {
			if got, ok := m.get(t, key); ok {
				return strconv.Quote(key) + " is still there, holding " + got
			}
		}
		return ""
	}
}

// keys returns every key on every server but fence counters (which
// outlive their locks by design), by server address, sorted.
func (v quorumView) keys(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, s := range v.servers() {
		r, err := s.Do("KEYS", "*")
		require.NoError(t, err, "KEYS on %s", s.Addr)
		var ks []string
		for _, k := range r.([]any) {
			if k := k.(string); !strings.HasPrefix(k, core.FenceKeyPrefix) {
				ks = append(ks, k)
			}
		}
		sort.Strings(ks)
		out[s.Addr] = ks
	}
	return out
}

// requireNothingLeft waits until every server holds exactly the keys of
// before, and fails otherwise. What a lock leaves goes at once, but a
// writer's mark (core.WriterWaitPrefix) may stay until it expires: the
// mark of a writer that stopped waiting, or that won without the node
// that its winning attempt marked. With marks (marks true), marks alone
// are waited for until their expiry.
func (v quorumView) requireNothingLeft(t *testing.T, before map[string][]string, marks bool) {
	t.Helper()
	deadline := time.Now().Add(settle)
	for {
		now := v.keys(t)
		var extra []string
		onlyMarks := marks
		for _, srv := range v.servers() {
			for _, k := range now[srv.Addr] {
				if slices.Contains(before[srv.Addr], k) {
					continue
				}
				extra = append(extra, srv.Addr+": "+k)
				if !strings.HasPrefix(k, core.WriterWaitPrefix) {
					onlyMarks = false
				} else if onlyMarks {
					ms, _ := srv.Do("PTTL", k)
					if ms, ok := ms.(int64); ok && ms > 0 {
						deadline = maxTime(deadline, time.Now().Add(time.Duration(ms)*time.Millisecond+settle))
					}
				}
			}
		}
		if len(extra) == 0 {
			for addr, ks := range before {
				assert.Subset(t, now[addr], ks, "keys there before the case are gone from %s", addr)
			}
			return
		}
		if time.Now().After(deadline) {
			require.FailNow(t, "keys left behind", "%v", extra)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// primEnv is a quorum for the exercises: its view, and new Clients over
// its driver, plain (client) or watched (its acquire attempts counted).
type primEnv struct {
	view    quorumView
	client  func(t *testing.T, opts redlock.Options) *redlock.Client
	watched func(t *testing.T, opts redlock.Options) (*redlock.Client, *attemptWatch)
}

// standaloneEnv is c as a primEnv, its Clients in mode.
func standaloneEnv(c *realCluster, mode core.FanOut) primEnv {
	return primEnv{
		view: standaloneView(c),
		client: func(t *testing.T, opts redlock.Options) *redlock.Client {
			t.Helper()
			return newClient(t, c, mode, opts)
		},
		watched: func(t *testing.T, opts redlock.Options) (*redlock.Client, *attemptWatch) {
			t.Helper()
			w := watchAttemptsLossy(t, c.Driver())
			return clientOver(t, w, mode, opts), w
		},
	}
}

// watchAttemptsLossy is watchAttemptsOn for waiters that may attempt
// more often than anyone counts: an attempt past the channel's buffer
// is dropped, not waited for, so that the waiter never blocks on it.
func watchAttemptsLossy(t *testing.T, d core.Driver) *attemptWatch {
	t.Helper()
	ann := requireAnnouncer(t, d)
	w := &attemptWatch{ann: ann, sent: make(chan struct{}, 1024)}
	w.hookDriver = &hookDriver{Driver: ann, before: func(node int, cmd core.Command) {
		if node == 0 && (cmd.Op == core.OpAcquire || cmd.Op == core.OpAcquireFenced) {
			select {
			case w.sent <- struct{}{}:
			default:
			}
		}
	}}
	return w
}

// async runs take bounded by primWait and delivers its result.
func async(t *testing.T, take func(ctx context.Context) (*redlock.Lock, error)) <-chan lockResult {
	got := make(chan lockResult, 1)
	ctx, cancel := context.WithTimeout(t.Context(), primWait)
	go func() {
		defer cancel()
		l, err := take(ctx)
		got <- lockResult{l, err}
	}()
	return got
}

// await returns the result of async, failing t if it failed.
func await(t *testing.T, got <-chan lockResult, what string) *redlock.Lock {
	t.Helper()
	r := <-got // async bounds it by primWait
	require.NoError(t, r.err, what)
	return r.l
}

// notYet fails t if got has a result already.
func notYet(t *testing.T, got <-chan lockResult, what string) {
	t.Helper()
	select {
	case r := <-got:
		require.FailNow(t, what+" returned early", "%v", r.err)
	default:
	}
}

func testRWStandalone(t *testing.T, f Factory, mode core.FanOut) {
	exerciseRW(t, standaloneEnv(startReal(t, f, 3, redistest.Options{}, nil), mode), testKey(t, ""))
}

func testLockAllStandalone(t *testing.T, f Factory, mode core.FanOut) {
	exerciseLockAll(t, standaloneEnv(startReal(t, f, 3, redistest.Options{}, nil), mode), "{"+testKey(t, "")+"}:")
}

func testPermitsStandalone(t *testing.T, f Factory, mode core.FanOut) {
	exercisePermits(t, standaloneEnv(startReal(t, f, 3, redistest.Options{}, nil), mode), testKey(t, ""))
}

// exerciseRW: two readers share key; a writer is refused while they
// hold, and leaves no writer key; a writer that waits (WLock) keeps new
// readers out; a reader extends while the writer waits; the readers'
// releases wake the writer, which then holds the key alone, extends it,
// and whose release lets readers in again. Fenced, a writer's fence is
// a reader's and the next writer's is higher. Readers and writers in
// many goroutines: no writer overlaps another holder, readers do
// overlap. Nothing is left on any server.
func exerciseRW(t *testing.T, env primEnv, key string) {
	ctx, v := testContext(t), env.view
	before := v.keys(t)
	opts := redlock.Options{TTL: primTTL}
	r1, r2, r3 := env.client(t, opts), env.client(t, opts), env.client(t, opts)

	rl1, err := r1.TryRLock(ctx, key)
	require.NoError(t, err, "a first reader")
	rl2, err := r2.TryRLock(ctx, key)
	require.NoError(t, err, "a second reader shares the lock")
	require.NotEqual(t, rl1.Token(), rl2.Token())
	v.requireEvery(t, func(m memberView) string {
		for _, l := range []*redlock.Lock{rl1, rl2} {
			if _, _, ok := m.reader(t, key, l.Token()); !ok {
				return "no reader entry for " + l.Token().String()
			}
		}
		return absent(t, key)(m)
	})

	// A writer is refused by the readers, and leaves no writer key.
	wc, w := env.watched(t, opts)
	_, err = wc.TryWLock(ctx, key)
	require.ErrorIs(t, err, redlock.ErrTaken, "a writer beside readers")
	v.requireEvery(t, absent(t, key))

	// A writer that waits keeps new readers out; a reader of the lock
	// still extends.
	w.count()
	got := async(t, func(ctx context.Context) (*redlock.Lock, error) { return wc.WLock(ctx, key) })
	// The second attempt is sent only once the first's round has ended,
	// its marks set on the nodes that refused it, a majority: the first's
	// send alone may come before them (a sequential round's last node).
	w.attempts(t, 2)
	_, err = r3.TryRLock(ctx, key)
	require.ErrorIs(t, err, redlock.ErrTaken, "a new reader while a writer waits")
	lowered := map[string]int64{}
	for _, m := range v.members {
		member, score, ok := m.reader(t, key, rl1.Token())
		require.True(t, ok, "member %s: the reader's entry", m.name)
		lowered[m.name] = score - primTTL.Milliseconds()/2
		m.do(t, key, "ZADD", m.aux(t, core.ReadersPrefix, key), "XX", lowered[m.name], member)
	}
	require.NoError(t, rl1.Extend(ctx), "a reader extends while a writer waits")
	v.requireEvery(t, func(m memberView) string {
		if _, score, ok := m.reader(t, key, rl1.Token()); !ok || score <= lowered[m.name] {
			return "the extension did not push the reader's expiry past " + strconv.FormatInt(lowered[m.name], 10)
		}
		return ""
	})
	notYet(t, got, "the writer's WLock")

	// The readers' releases let the writer in.
	require.NoError(t, rl1.Unlock(ctx))
	notYet(t, got, "the writer's WLock, with a reader left")
	require.NoError(t, rl2.Unlock(ctx))
	wl := await(t, got, "the writer takes the lock once the readers are gone")
	// A quorum: a reader's release may still have been on its way to the
	// last member when the writer's attempt reached it (Unlock returns at
	// its quorum), and that member refused the writer.
	v.requireQuorum(t, func(m memberView) string {
		if n := m.readers(t, key); n != 0 {
			return strconv.FormatInt(n, 10) + " reader entries beside the writer"
		}
		return holds(t, wl.Token(), 0, key)(m)
	})
	_, err = r3.TryRLock(ctx, key)
	require.ErrorIs(t, err, redlock.ErrTaken, "a reader beside the writer")
	_, err = r2.TryWLock(ctx, key)
	require.ErrorIs(t, err, redlock.ErrTaken, "a second writer")
	v.requireEvery(t, func(m memberView) string {
		if n := m.readers(t, key); n != 0 {
			return strconv.FormatInt(n, 10) + " reader entries left by the refused reader"
		}
		return ""
	})

	// The writer extends as the mutex does.
	for _, m := range v.members {
		m.do(t, key, "PEXPIRE", key, primTTL.Milliseconds()/4)
	}
	require.NoError(t, wl.Extend(ctx), "the writer extends")
	v.requireQuorum(t, holds(t, wl.Token(), primTTL/2, key))
	require.NoError(t, wl.Unlock(ctx))
	v.requireEvery(t, absent(t, key))

	// Readers again, once the writer is gone (and its mark, if the
	// second writer's refused attempt left one).
	rl3 := await(t, async(t, func(ctx context.Context) (*redlock.Lock, error) { return r3.RLock(ctx, key) }),
		"a reader after the writer's release")
	require.NoError(t, rl3.Unlock(ctx))

	rwFences(t, env, key+":fenced")
	rwExclusion(t, env, key+":contended")
	v.requireNothingLeft(t, before, true)
}

// rwFences: with Fencing, a writer's fence grows as the mutex's; a
// reader's is the last writer's, and leaves the counter alone; the next
// writer's is higher.
func rwFences(t *testing.T, env primEnv, key string) {
	t.Helper()
	ctx := testContext(t)
	fc := env.client(t, redlock.Options{TTL: primTTL, Fencing: true})
	w1, err := fc.TryWLock(ctx, key)
	require.NoError(t, err)
	f1 := fenceOf(t, w1)
	require.NoError(t, w1.Unlock(ctx))
	r, err := fc.TryRLock(ctx, key)
	require.NoError(t, err)
	assert.Equal(t, f1, fenceOf(t, r), "a reader's fence is the last writer's")
	r2, err := fc.TryRLock(ctx, key)
	require.NoError(t, err)
	assert.Equal(t, f1, fenceOf(t, r2), "readers do not raise the fence")
	require.NoError(t, r.Unlock(ctx))
	require.NoError(t, r2.Unlock(ctx))
	w2, err := fc.TryWLock(ctx, key)
	require.NoError(t, err)
	assert.Greater(t, fenceOf(t, w2), f1, "the next writer's fence")
	require.NoError(t, w2.Unlock(ctx))
}

// rwExclusion: readers and writers in goroutines of two Clients. A
// writer never overlaps another holder; readers overlap each other (two
// readers hold at once, both waiting for the other to arrive); a counter
// writers increment with a load then a store loses nothing.
func rwExclusion(t *testing.T, env primEnv, key string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*primWait)
	defer cancel()
	opts := redlock.Options{TTL: primTTL, Backoff: redlock.RandomDelay(time.Millisecond, 10*time.Millisecond)}
	clients := []*redlock.Client{env.client(t, opts), env.client(t, opts)}

	// Two readers at once, each holding until the other holds.
	var both sync.WaitGroup
	both.Add(2)
	var pair sync.WaitGroup
	for i := range 2 {
		pair.Go(func() {
			l, err := clients[i].RLock(ctx, key)
			if !assert.NoError(t, err, "reader %d", i) {
				both.Done()
				return
			}
			both.Done()
			both.Wait() // both hold: readers share
			assert.NoError(t, l.Unlock(ctx))
		})
	}
	pair.Wait()

	const writers, readers, rounds = 2, 3, 3
	var mu sync.Mutex
	active, writing, violations := 0, 0, 0
	enter := func(writer bool) {
		mu.Lock()
		defer mu.Unlock()
		if writing > 0 || (writer && active > 0) {
			violations++
		}
		active++
		if writer {
			writing++
		}
	}
	leave := func(writer bool) {
		mu.Lock()
		defer mu.Unlock()
		active--
		if writer {
			writing--
		}
	}
	var counter atomic.Int64
	var wg sync.WaitGroup
	for g := range writers + readers {
		writer := g < writers
		c := clients[g%2]
		wg.Go(func() {
			for range rounds {
				take := c.RLock
				if writer {
					take = c.WLock
				}
				l, err := take(ctx, key)
				if !assert.NoError(t, err, "goroutine %d (writer %v)", g, writer) {
					return
				}
				enter(writer)
				if writer {
					v := counter.Load()
					time.Sleep(time.Millisecond) // an overlapping writer would lose an update
					counter.Store(v + 1)
				} else {
					time.Sleep(time.Millisecond)
				}
				leave(writer)
				assert.NoError(t, l.Unlock(ctx))
			}
		})
	}
	wg.Wait()
	assert.Zero(t, violations, "a writer overlapped another holder")
	assert.Equal(t, int64(writers*rounds), counter.Load(), "the writers' increments")
}

// exerciseLockAll: LockAll takes every key on every member; an
// overlapping set is refused and leaves none of its keys; a single key
// of the set is refused; a disjoint set is not; Extend resets every
// key's expiry; Unlock removes every key. Goroutines with overlapping
// sets never hold intersecting sets at once. Nothing is left on any
// server. The keys are prefix + a letter: prefix carries a hash tag on
// a mixed quorum, whose Cluster member takes only keys of one slot.
func exerciseLockAll(t *testing.T, env primEnv, prefix string) {
	ctx, v := testContext(t), env.view
	a, b, c, d, e := prefix+"a", prefix+"b", prefix+"c", prefix+"d", prefix+"e"
	before := v.keys(t)
	opts := redlock.Options{TTL: primTTL}
	c1, c2 := env.client(t, opts), env.client(t, opts)

	l, err := c1.TryLockAll(ctx, a, b, c)
	require.NoError(t, err)
	v.requireEvery(t, holds(t, l.Token(), 0, a, b, c))

	_, err = c2.TryLockAll(ctx, c, d)
	require.ErrorIs(t, err, redlock.ErrTaken, "an overlapping set")
	v.requireEvery(t, absent(t, d)) // all or nothing: d was not taken alone
	v.requireEvery(t, holds(t, l.Token(), 0, a, b, c))
	_, err = c2.TryLock(ctx, b)
	require.ErrorIs(t, err, redlock.ErrTaken, "a key of the set, as a mutex")
	l2, err := c2.TryLockAll(ctx, d, e)
	require.NoError(t, err, "a disjoint set")
	v.requireEvery(t, holds(t, l2.Token(), 0, d, e))
	require.NoError(t, l2.Unlock(ctx))
	v.requireEvery(t, absent(t, d, e))

	for _, m := range v.members {
		for _, k := range []string{a, b, c} {
			m.do(t, k, "PEXPIRE", k, primTTL.Milliseconds()/4)
		}
	}
	require.NoError(t, l.Extend(ctx))
	v.requireEvery(t, holds(t, l.Token(), primTTL/2, a, b, c))
	require.NoError(t, l.Unlock(ctx))
	v.requireEvery(t, absent(t, a, b, c))

	allFences(t, env, prefix)
	allExclusion(t, env, [][]string{{a, b}, {b, c}, {c, a}, {a, b, c}})
	v.requireNothingLeft(t, before, false)
}

// allFences: with Fencing, a LockAll's fence is one more than the
// highest counter of its keys, set on every key's counter of a quorum;
// a mutex of any of its keys then gets a higher one.
func allFences(t *testing.T, env primEnv, prefix string) {
	t.Helper()
	ctx, v := testContext(t), env.view
	a, b, c := prefix+"fenced-a", prefix+"fenced-b", prefix+"fenced-c"
	fc := env.client(t, redlock.Options{TTL: primTTL, Fencing: true})
	var fb uint64
	for range 2 { // b's counter goes to 2, the others stay at 0
		l, err := fc.TryLock(ctx, b)
		require.NoError(t, err)
		fb = fenceOf(t, l)
		require.NoError(t, l.Unlock(ctx))
	}
	l, err := fc.TryLockAll(ctx, a, b, c)
	require.NoError(t, err)
	f := fenceOf(t, l)
	assert.Equal(t, fb+1, f, "one more than the highest counter of the keys")
	v.requireQuorum(t, func(m memberView) string {
		for _, k := range []string{a, b, c} {
			name := m.aux(t, core.FenceKeyPrefix, k)
			if got, _ := m.do(t, k, "GET", name).(string); got != strconv.FormatUint(f, 10) {
				return "the counter " + name + " is " + strconv.Quote(got) + ", want " + strconv.FormatUint(f, 10)
			}
		}
		return ""
	})
	require.NoError(t, l.Unlock(ctx))
	for _, k := range []string{a, c} {
		m, err := fc.TryLock(ctx, k)
		require.NoError(t, err)
		assert.Greater(t, fenceOf(t, m), f, "a mutex of %s after the LockAll", k)
		require.NoError(t, m.Unlock(ctx))
	}
}

// allExclusion: a goroutine per set, each locking its set with LockAll a
// few times; sets that intersect are never held at once, and a counter
// per key, incremented with a load then a store, loses nothing.
func allExclusion(t *testing.T, env primEnv, sets [][]string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*primWait)
	defer cancel()
	opts := redlock.Options{TTL: primTTL, Backoff: redlock.RandomDelay(time.Millisecond, 10*time.Millisecond)}
	clients := []*redlock.Client{env.client(t, opts), env.client(t, opts)}
	const rounds = 3
	var mu sync.Mutex
	held := map[string]int{}
	counters := map[string]*atomic.Int64{}
	want := map[string]int64{}
	for _, s := range sets {
		for _, k := range s {
			if counters[k] == nil {
				counters[k] = new(atomic.Int64)
			}
			want[k] += rounds
		}
	}
	violations := 0
	var wg sync.WaitGroup
	for g, set := range sets {
		wg.Go(func() {
			for range rounds {
				l, err := clients[g%2].LockAll(ctx, set...)
				if !assert.NoError(t, err, "set %v", set) {
					return
				}
				mu.Lock()
				for _, k := range set {
					if held[k]++; held[k] > 1 {
						violations++
					}
				}
				mu.Unlock()
				loaded := make([]int64, len(set))
				for i, k := range set {
					loaded[i] = counters[k].Load()
				}
				time.Sleep(time.Millisecond) // an overlapping holder would lose an update
				for i, k := range set {
					counters[k].Store(loaded[i] + 1)
				}
				mu.Lock()
				for _, k := range set {
					held[k]--
				}
				mu.Unlock()
				assert.NoError(t, l.Unlock(ctx))
			}
		})
	}
	wg.Wait()
	assert.Zero(t, violations, "intersecting sets held at once")
	for k, n := range want {
		assert.Equal(t, n, counters[k].Load(), "increments of %s", k)
	}
}

// permitSlot returns the name of slot i of semaphore key.
func permitSlot(key string, i int) string { return core.PermitKey(key, i) }

// permitSlots returns the names of key's k slots.
func permitSlots(key string, k int) []string {
	out := make([]string, k)
	for i := range out {
		out[i] = permitSlot(key, i)
	}
	return out
}

// slotOf returns the slot of key (k permits) that holds tok on m, or -1;
// it fails t if more than one does.
func slotOf(t *testing.T, m memberView, key string, k int, tok core.Token) int {
	t.Helper()
	at := -1
	for i, s := range permitSlots(key, k) {
		if got, ok := m.get(t, s); ok && got == tok.String() {
			require.Equal(t, -1, at, "member %s: token %s holds slots %d and %d", m.name, tok, at, i)
			at = i
		}
	}
	return at
}

// holdsSlots is a check for requireEvery: each of locks holds a slot of
// key's k, each its own.
func holdsSlots(t *testing.T, key string, k int, locks ...*redlock.Lock) func(m memberView) string {
	return func(m memberView) string {
		seen := map[int]bool{}
		for _, l := range locks {
			i := slotOf(t, m, key, k, l.Token())
			switch {
			case i < 0:
				return "no slot holds " + l.Token().String()
			case seen[i]:
				return "two holders of slot " + strconv.Itoa(i)
			}
			seen[i] = true
		}
		return ""
	}
}

// exercisePermits: K holders take K permits, each its own slot on every
// member; one more is refused and takes no slot; a waiter in
// LockPermit is woken by a holder's release and takes the freed slot;
// Extend resets a slot's expiry; goroutines of two Clients never hold
// more than K permits at once, and do hold more than one (K > 1, two
// holders wait for each other). Nothing is left on any server.
func exercisePermits(t *testing.T, env primEnv, key string) {
	ctx, v := testContext(t), env.view
	const k = primPermits
	before := v.keys(t)
	opts := redlock.Options{TTL: primTTL}
	var hs []*redlock.Lock
	for i := range k {
		l, err := env.client(t, opts).TryLockPermit(ctx, key, k)
		require.NoError(t, err, "permit %d of %d", i+1, k)
		hs = append(hs, l)
	}
	v.requireEvery(t, holdsSlots(t, key, k, hs...))

	extra, w := env.watched(t, opts)
	_, err := extra.TryLockPermit(ctx, key, k)
	require.ErrorIs(t, err, redlock.ErrTaken, "permit %d of %d", k+1, k)
	v.requireEvery(t, holdsSlots(t, key, k, hs...)) // every slot still its holder's

	// A waiter, refused a whole sweep, takes the slot a release frees.
	w.count()
	got := async(t, func(ctx context.Context) (*redlock.Lock, error) { return extra.LockPermit(ctx, key, k) })
	w.attempts(t, k)
	notYet(t, got, "LockPermit with every permit held")
	freed := slotOf(t, v.members[0], key, k, hs[0].Token())
	require.NoError(t, hs[0].Unlock(ctx))
	hs[0] = await(t, got, "the waiter takes the freed permit")
	// A quorum: the release may still have been on its way to the last
	// member when the waiter's attempt reached it.
	v.requireQuorum(t, holdsSlots(t, key, k, hs...))
	for _, m := range v.members {
		if i := slotOf(t, m, key, k, hs[0].Token()); i >= 0 {
			assert.Equal(t, freed, i, "member %s: the waiter's slot is the one freed", m.name)
		}
	}

	// Extend resets the holder's slot alone.
	slot := permitSlot(key, slotOf(t, v.members[0], key, k, hs[1].Token()))
	for _, m := range v.members {
		m.do(t, slot, "PEXPIRE", slot, primTTL.Milliseconds()/4)
	}
	require.NoError(t, hs[1].Extend(ctx))
	v.requireEvery(t, holds(t, hs[1].Token(), primTTL/2, slot))

	for _, l := range hs {
		require.NoError(t, l.Unlock(ctx))
	}
	v.requireEvery(t, absent(t, permitSlots(key, k)...))
	permitExclusion(t, env, key+":contended")
	v.requireNothingLeft(t, before, false)
}

// permitExclusion: goroutines of two Clients take permits of a
// semaphore of 2 in turn: never more than 2 hold at once, and two do
// (the first two wait for each other before they release).
func permitExclusion(t *testing.T, env primEnv, key string) {
	t.Helper()
	const k, workers, rounds = 2, 5, 3
	ctx, cancel := context.WithTimeout(t.Context(), 2*primWait)
	defer cancel()
	opts := redlock.Options{TTL: primTTL, Backoff: redlock.RandomDelay(time.Millisecond, 10*time.Millisecond)}
	clients := []*redlock.Client{env.client(t, opts), env.client(t, opts)}

	var both sync.WaitGroup
	both.Add(k)
	var pair sync.WaitGroup
	for i := range k {
		pair.Go(func() {
			l, err := clients[i%2].LockPermit(ctx, key, k)
			if !assert.NoError(t, err, "holder %d", i) {
				both.Done()
				return
			}
			both.Done()
			both.Wait() // K holders at once
			assert.NoError(t, l.Unlock(ctx))
		})
	}
	pair.Wait()

	var active, most atomic.Int32
	var wg sync.WaitGroup
	for g := range workers {
		wg.Go(func() {
			for range rounds {
				l, err := clients[g%2].LockPermit(ctx, key, k)
				if !assert.NoError(t, err, "worker %d", g) {
					return
				}
				n := active.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				time.Sleep(time.Millisecond)
				active.Add(-1)
				assert.NoError(t, l.Unlock(ctx))
			}
		})
	}
	wg.Wait()
	assert.LessOrEqual(t, most.Load(), int32(k), "more holders than permits")
}

// testPrimitivesBadInput: K < 1, no keys, a key given twice, more than
// core.MaxKeys keys and an empty key are refused with ErrInvalidConfig
// before any command is sent, and nothing is on any server; the same
// Client then locks, through the same counting wrapper.
func testPrimitivesBadInput(t *testing.T, f Factory, mode core.FanOut) {
	c := startReal(t, f, 3, redistest.Options{}, nil)
	v := standaloneView(c)
	before := v.keys(t)
	var sent atomic.Int64
	h := &hookDriver{Driver: c.Driver(), before: func(int, core.Command) { sent.Add(1) }}
	client := clientOver(t, h, mode, redlock.Options{})
	requireBadInput(t, client, testKey(t, ""), &sent)
	v.requireNothingLeft(t, before, false)

	l, err := client.TryLockAll(testContext(t), testKey(t, ":a"), testKey(t, ":b"))
	require.NoError(t, err)
	assert.Positive(t, sent.Load(), "the counter counts what is sent")
	require.NoError(t, l.Unlock(testContext(t)))
}

// requireBadInput runs every bad call on client: each must return an
// ErrInvalidConfig error with sent unchanged (when not nil).
func requireBadInput(t *testing.T, client *redlock.Client, key string, sent *atomic.Int64) {
	t.Helper()
	ctx := testContext(t)
	many := make([]string, core.MaxKeys+1)
	for i := range many {
		many[i] = key + ":" + strconv.Itoa(i)
	}
	for _, tc := range []struct {
		name string
		call func() (*redlock.Lock, error)
	}{
		{"LockPermit K=0", func() (*redlock.Lock, error) { return client.LockPermit(ctx, key, 0) }},
		{"LockPermit K=-1", func() (*redlock.Lock, error) { return client.LockPermit(ctx, key, -1) }},
		{"TryLockPermit K=0", func() (*redlock.Lock, error) { return client.TryLockPermit(ctx, key, 0) }},
		{"LockPermit K above MaxPermits", func() (*redlock.Lock, error) { return client.LockPermit(ctx, key, core.MaxPermits+1) }},
		{"LockAll of no keys", func() (*redlock.Lock, error) { return client.LockAll(ctx) }},
		{"TryLockAll of no keys", func() (*redlock.Lock, error) { return client.TryLockAll(ctx) }},
		{"LockAll of an empty list", func() (*redlock.Lock, error) { return client.LockAll(ctx, []string{}...) }},
		{"LockAll of a key twice", func() (*redlock.Lock, error) { return client.LockAll(ctx, key+":a", key+":b", key+":a") }},
		{"TryLockAll of a key twice", func() (*redlock.Lock, error) { return client.TryLockAll(ctx, key, key) }},
		{"LockAll of too many keys", func() (*redlock.Lock, error) { return client.LockAll(ctx, many...) }},
		{"LockAll of an empty key", func() (*redlock.Lock, error) { return client.LockAll(ctx, key, "") }},
	} {
		var was int64
		if sent != nil {
			was = sent.Load()
		}
		l, err := tc.call()
		require.ErrorIs(t, err, redlock.ErrInvalidConfig, tc.name)
		assert.Nil(t, l, tc.name)
		if sent != nil {
			assert.Equal(t, was, sent.Load(), "%s: commands sent", tc.name)
		}
	}
}

// testRefusedReaderAnnouncesNothing: a reader refused for a writer (its
// attempt's cleanup releases a reader entry it never got) announces no
// release: the waiters of the key, readers among them, would wake and
// try again at once, and their own refused attempts would wake them
// again, a storm of attempts for as long as the writer holds. Each
// server counts the PUBLISH and SPUBLISH calls of scripts.
func testRefusedReaderAnnouncesNothing(t *testing.T, f Factory, mode core.FanOut) {
	c := startReal(t, f, 3, redistest.Options{}, nil)
	if c.srv[0].Embedded() {
		t.Skip("counting the scripts' PUBLISH calls (CONFIG RESETSTAT, INFO commandstats) needs redis-server")
	}
	env, key, ctx := standaloneEnv(c, mode), testKey(t, ""), testContext(t)
	wl, err := env.client(t, redlock.Options{}).TryWLock(ctx, key)
	require.NoError(t, err)
	env.view.requireEvery(t, holds(t, wl.Token(), 0, key))
	for _, s := range c.srv {
		_, err := s.Do("CONFIG", "RESETSTAT")
		require.NoError(t, err)
	}
	_, err = env.client(t, redlock.Options{}).TryRLock(ctx, key)
	require.ErrorIs(t, err, redlock.ErrTaken)
	// A quorum of nodes ran the attempt's cleanup, its release script,
	// after its acquire (a sequential round may not reach the last node).
	eventually(t, settle, func() bool {
		cleaned := 0
		for _, s := range c.srv {
			if scriptCalls(t, s) >= 2 {
				cleaned++
			}
		}
		return cleaned >= core.Quorum(c.N())
	}, "the refused attempt's cleanup must run on a quorum")
	for i, s := range c.srv {
		assert.Empty(t, publishes(t, s), "node %d (%s): the refused reader's cleanup announced a release", i, s.Addr)
	}
	require.NoError(t, wl.Unlock(ctx))
	announced := 0
	for _, s := range c.srv {
		if len(publishes(t, s)) > 0 {
			announced++
		}
	}
	assert.Equal(t, len(c.srv), announced, "the writer's release is announced: the count is not blind")
}

// scriptCalls returns how many scripts srv ran since its stats were
// reset: EVAL and EVALSHA calls.
func scriptCalls(t *testing.T, srv *redistest.Server) int {
	t.Helper()
	r, err := srv.Do("INFO", "commandstats")
	require.NoError(t, err)
	n := 0
	for line := range strings.Lines(r.(string)) {
		for _, cmd := range []string{"eval", "evalsha"} {
			if rest, ok := strings.CutPrefix(line, "cmdstat_"+cmd+":calls="); ok {
				calls, _, _ := strings.Cut(rest, ",")
				k, err := strconv.Atoi(calls)
				require.NoError(t, err, "%q", line)
				n += k
			}
		}
	}
	return n
}

// publishes returns the lines of srv's INFO commandstats that count
// PUBLISH or SPUBLISH calls.
func publishes(t *testing.T, srv *redistest.Server) []string {
	t.Helper()
	r, err := srv.Do("INFO", "commandstats")
	require.NoError(t, err)
	var out []string
	for line := range strings.Lines(r.(string)) {
		if strings.HasPrefix(line, "cmdstat_publish:") || strings.HasPrefix(line, "cmdstat_spublish:") {
			out = append(out, strings.TrimSpace(line))
		}
	}
	return out
}

// testWriterClearsItsMark: a writer that waited for a reader (its
// refused attempts marked the key as waited for) and then won leaves no
// mark on a quorum: once it unlocks, a new reader is admitted at once,
// not a TTL later when the mark expires. The TTL is the suite's
// default, 10 s, far longer than the case.
func testWriterClearsItsMark(t *testing.T, f Factory, mode core.FanOut) {
	c := startReal(t, f, 3, redistest.Options{}, nil)
	env, key, ctx := standaloneEnv(c, mode), testKey(t, ""), testContext(t)
	v := env.view
	before := v.keys(t)
	reader := env.client(t, redlock.Options{})
	rl, err := reader.TryRLock(ctx, key)
	require.NoError(t, err)
	v.requireEvery(t, func(m memberView) string {
		if _, _, ok := m.reader(t, key, rl.Token()); !ok {
			return "no reader entry"
		}
		return ""
	})
	wc, w := env.watched(t, redlock.Options{})
	w.count()
	got := async(t, func(ctx context.Context) (*redlock.Lock, error) { return wc.WLock(ctx, key) })
	w.attempts(t, 1)
	marked := func(m memberView) string {
		if n, _ := m.do(t, key, "EXISTS", m.aux(t, core.WriterWaitPrefix, key)).(int64); n != 1 {
			return "not marked as waited for"
		}
		return ""
	}
	v.requireQuorum(t, marked) // the writer's refused attempt marked a quorum (a sequential round ends at its decision)
	require.NoError(t, rl.Unlock(ctx))
	wl := await(t, got, "the writer after the reader's release")
	v.requireQuorum(t, holds(t, wl.Token(), 0, key))
	v.requireQuorum(t, func(m memberView) string {
		if marked(m) == "" {
			return "still marked as waited for, by the writer that holds the key"
		}
		return ""
	})
	require.NoError(t, wl.Unlock(ctx))
	v.requireEvery(t, absent(t, key))
	rl, err = env.client(t, redlock.Options{}).TryRLock(ctx, key)
	require.NoError(t, err, "a reader once the writer that waited has gone")
	require.NoError(t, rl.Unlock(ctx))
	// A node the winning attempt was refused by (the reader's release
	// still on its way) was marked by that attempt: the writer's release,
	// which every node answered before Unlock returned, deleted that
	// mark, its own, too.
	v.requireNothingLeft(t, before, false)
}
