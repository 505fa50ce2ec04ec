package systest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers"
	"github.com/redlock-go/redlock/internal/fencedstore"
	"github.com/redlock-go/redlock/internal/redistest"
)

// childEnv carries a childSpec, as JSON, to a child process of
// testMultiProcess. Its presence is what makes the case run the child's
// loop instead of the parent's.
const childEnv = "REDLOCK_CONFORMANCE_CHILD"

// childSpec is what a child process of testMultiProcess is told.
type childSpec struct {
	// Test is the full name of the subtest the child must run: the
	// parent's.
	Test string
	Mode string
	// Child numbers the child, from 0.
	Child int
	// Nodes are the lock's servers, or Members its members (dialled with
	// Members.Dial, in a member case); Data is the server with the counter,
	// the list of critical sections and the start barrier.
	Nodes   []string
	Members []drivers.Member
	Data    string
	// Key is the lock's key; Counter, Sections and Ready are keys on Data.
	Key, Counter, Sections, Ready string
	// Rounds is each goroutine's critical sections; Total, when not
	// zero, is instead every goroutine's together, shared out as evenly
	// as they go (see sectionsOf).
	Children, Goroutines, Rounds, Total int
	TTL                                 time.Duration
	// Store is the address of the parent's fenced store
	// (testMultiProcessFenced), or empty. When it is set the children lock
	// with Fencing, and each critical section writes its fence there.
	Store string
	// Wake makes the children's Lock wait for release announcements, with
	// hour-long retry delays (testMultiProcessWake): polling would time
	// them out. Otherwise Lock polls (Options.Poll), every few
	// milliseconds.
	Wake bool
	// Failover says that the lock's servers fail over while the children
	// run: a failed Lock is tried again and a failed Unlock only counted
	// (throughFailover).
	Failover bool
}

// sectionsOf returns the critical sections child runs.
func (s childSpec) sectionsOf(child int) int {
	if s.Total == 0 {
		return s.Goroutines * s.Rounds
	}
	return share(s.Total, s.Children, child)
}

// roundsOf returns the critical sections goroutine g of child runs.
func (s childSpec) roundsOf(child, g int) int {
	return share(s.sectionsOf(child), s.Goroutines, g)
}

// total returns the critical sections of every child together.
func (s childSpec) total() int {
	n := 0
	for i := range s.Children {
		n += s.sectionsOf(i)
	}
	return n
}

// share returns the i-th of n nearly equal shares of total, the larger
// ones first.
func share(total, n, i int) int {
	if i < total%n {
		return total/n + 1
	}
	return total / n
}

// Multi-process case parameters: 3 processes × 4 goroutines × 8 rounds,
// 96 critical sections on one key.
const (
	mpChildren   = 3
	mpGoroutines = 4
	mpRounds     = 8
	// mpTTL is long against a critical section (a few round trips), so
	// that no holder outlives its validity even on a loaded machine.
	mpTTL = 5 * time.Second
	// mpTimeout bounds a child's run; children that hang are killed.
	mpTimeout = 2 * time.Minute
)

// testMultiProcess: many goroutines in several OS processes take one key,
// each process with its own driver from the Factory. Under the lock each
// critical section increments a counter on a separate redis-server by a
// deliberately non-atomic GET then SET, and records its [start, end]
// wall-clock interval in a Redis list. The counter must equal the number
// of critical sections (no lost update), and no two intervals of
// different holders may overlap.
//
// The children are the test binary itself (os.Args[0]), re-executed with
// -test.run selecting this very subtest and childEnv set: the case then
// runs the child's loop (runChild) instead.
func testMultiProcess(t *testing.T, f Factory, mode core.FanOut) {
	multiProcess(t, f, mode, false, false)
}

// testMultiProcessWake is testMultiProcess with every child's goroutines
// waiting in their Client's Lock until woken by announcements.
func testMultiProcessWake(t *testing.T, f Factory, mode core.FanOut) {
	if os.Getenv(childEnv) == "" {
		requireAnnouncer(t, startReal(t, f, 1, redistest.Options{}, nil).Driver())
	}
	multiProcess(t, f, mode, false, true)
}

// multiProcess runs testMultiProcess, with fenced testMultiProcessFenced,
// with wake testMultiProcessWake.
func multiProcess(t *testing.T, f Factory, mode core.FanOut, fenced, wake bool) {
	if raw := os.Getenv(childEnv); raw != "" {
		runChild(t, f, mode, raw)
		return
	}
	nodes := startServers(t, 3, redistest.Options{})
	data := startServers(t, 1, redistest.Options{})[0]
	spec := childSpec{
		Test: t.Name(), Mode: mode.String(),
		Nodes: addrsOf(nodes), Data: data.Addr,
		Key: testKey(t, ""), Counter: "counter", Sections: "sections", Ready: "ready",
		Children: mpChildren, Goroutines: mpGoroutines, Rounds: mpRounds, TTL: mpTTL,
		Wake: wake,
	}
	var store *fencedstore.Store
	if fenced {
		store, spec.Store = serveFencedStore(t)
	}
	if runChildren(t, spec, nil) {
		checkSections(t, data, spec, store)
	}
}

// serveFencedStore starts a fenced store on loopback, closed with the
// test, and returns it and its address.
func serveFencedStore(t *testing.T) (*fencedstore.Store, string) {
	t.Helper()
	store := fencedstore.New()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := fencedstore.Serve(store, ln)
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("fenced store: close: %v", err)
		}
	})
	return store, srv.Addr()
}

// runChildren runs spec.Children children of the test binary, each with
// spec numbered, and reports whether they all exited cleanly. During, if
// not nil, runs meanwhile, on the test's goroutine; done is closed once
// every child has exited. A failing child's output is logged.
func runChildren(t *testing.T, spec childSpec, during func(done <-chan struct{})) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), mpTimeout)
	outs := make([]bytes.Buffer, spec.Children)
	errs := make([]error, spec.Children)
	var wg sync.WaitGroup
	done := make(chan struct{})
	defer func() {
		cancel() // kills the children still running, if during failed
		<-done
	}()
	t.Cleanup(func() { // after the checks too
		if t.Failed() {
			for i := range outs {
				t.Logf("child %d output:\n%s", i, outs[i].String())
			}
		}
	})
	for i := range spec.Children {
		s := spec
		s.Child = i
		env, err := json.Marshal(s)
		require.NoError(t, err)
		cmd := exec.CommandContext(ctx, os.Args[0], //nolint:gosec // G204: the test binary itself, run as a child
			"-test.run="+runPattern(t.Name()), "-test.count=1", "-test.v=true",
			"-test.timeout="+mpTimeout.String())
		cmd.Env = append(os.Environ(), childEnv+"="+string(env))
		cmd.Stdout, cmd.Stderr = &outs[i], &outs[i]
		cmd.WaitDelay = 5 * time.Second
		require.NoError(t, cmd.Start())
		wg.Go(func() { errs[i] = cmd.Wait() })
	}
	go func() { wg.Wait(); close(done) }()
	if during != nil {
		during(done)
	}
	<-done
	ok := true
	for i, err := range errs {
		ok = assert.NoError(t, err, "child %d must exit cleanly (its output is below)", i) && ok
	}
	return ok
}

// checkSections checks what the children of spec recorded on data: every
// child's critical sections, the counter exact, no two sections
// overlapping, and with store its fences strictly increasing.
func checkSections(t *testing.T, data *redistest.Server, spec childSpec, store *fencedstore.Store) {
	t.Helper()
	raw, err := redis.Strings(data.Do("LRANGE", spec.Sections, 0, -1))
	require.NoError(t, err)
	secs := make([]section, 0, len(raw))
	perChild := make([]int, spec.Children)
	for _, r := range raw {
		var s section
		_, err := fmt.Sscan(r, &s.child, &s.g, &s.start, &s.end)
		require.NoError(t, err, "section record %q", r)
		require.Less(t, s.start, s.end, "section record %q", r)
		require.True(t, s.child >= 0 && s.child < spec.Children, "section record %q", r)
		perChild[s.child]++
		secs = append(secs, s)
	}
	want := spec.total()
	for i, got := range perChild {
		assert.Equal(t, spec.sectionsOf(i), got, "critical sections recorded by child %d", i)
	}
	v, err := redis.String(data.Do("GET", spec.Counter))
	require.NoError(t, err)
	counter, err := strconv.Atoi(v)
	require.NoError(t, err)
	assert.Equal(t, len(secs), counter, "the counter must count every critical section: an update was lost")
	assert.Equal(t, want, counter)

	// No two intervals overlap. Sorted by start, each must begin after
	// every earlier one ended.
	sort.Slice(secs, func(i, j int) bool { return secs[i].start < secs[j].start })
	handovers, overlaps := 0, 0
	for i, last := 1, 0; i < len(secs); i++ { // last: the earlier section that ends last
		if cur := secs[i]; cur.start < secs[last].end {
			if overlaps++; overlaps <= 5 {
				t.Errorf("overlapping critical sections: %v and %v overlap by %v",
					secs[last], cur, time.Duration(secs[last].end-cur.start))
			}
		}
		if secs[i].end > secs[last].end {
			last = i
		}
		if secs[i].child != secs[i-1].child {
			handovers++
		}
	}
	assert.Zero(t, overlaps, "critical sections of different holders overlap")
	if store != nil {
		// Every section wrote its fence once; the store saw them in the
		// order the lock passed, so strictly increasing.
		assert.Empty(t, store.Rejected(), "the fenced store refused writes")
		acc := store.Accepted()
		assert.Len(t, acc, want, "fenced writes")
		disorders := 0
		for i := 1; i < len(acc); i++ {
			if acc[i].Fence > acc[i-1].Fence {
				continue
			}
			if disorders++; disorders <= 5 {
				t.Errorf("fence %d (%s) came after fence %d (%s)", acc[i].Fence, acc[i].Value, acc[i-1].Fence, acc[i-1].Value)
			}
		}
		assert.Zero(t, disorders, "fences that did not increase")
	}
	// Not a property of the driver: a check that the processes did
	// contend, without which the case would prove little.
	assert.Positive(t, handovers, "the lock never passed from one process to another")
	t.Logf("%d critical sections, %d handovers between processes", len(secs), handovers)
}

// section is one recorded critical section: child process, goroutine, and
// wall-clock nanoseconds at its start and end.
type section struct {
	child, g   int
	start, end int64
}

func (s section) String() string {
	return fmt.Sprintf("child %d goroutine %d [%d, %d]", s.child, s.g, s.start, s.end)
}

// runPattern returns the -test.run pattern that selects exactly the test
// named name ("TestX/sub/case"): each element anchored and quoted.
func runPattern(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(parts, "/")
}

// runChild is a child process's side of testMultiProcess: a driver from
// f, and Goroutines goroutines doing Rounds lock, increment, unlock
// cycles each, started together with the other children's.
func runChild(t *testing.T, f Factory, mode core.FanOut, raw string) {
	s := parseChildSpec(t, raw)
	require.Equal(t, s.Mode, mode.String())

	eps := make([]Endpoint, len(s.Nodes))
	for i, a := range s.Nodes {
		eps[i] = Endpoint{Addr: a}
	}
	opts := redlock.Options{
		TTL: s.TTL, NodeTimeout: defaultNodeTimeout, FanOut: mode, Fencing: s.Store != "",
		Backoff: redlock.RandomDelay(time.Millisecond, 5*time.Millisecond), Poll: !s.Wake,
	}
	drv := f(t, eps)
	if s.Wake {
		opts.Backoff = redlock.RandomDelay(time.Hour, time.Hour)
	}
	c, err := redlock.NewClient(drv, keepable(opts, len(s.Nodes)))
	require.NoError(t, err)
	childLoop(t, s, clientTaker(c, s.Key))
}

// parseChildSpec decodes a child's spec and checks that the child runs
// the subtest its parent named.
func parseChildSpec(t *testing.T, raw string) childSpec {
	var s childSpec
	require.NoError(t, json.Unmarshal([]byte(raw), &s), "%s", childEnv)
	require.Equal(t, s.Test, t.Name(), "the child must run the subtest its parent named")
	return s
}

// childLoop runs a child's goroutines, each taking the lock with take for
// its rounds (childSpec.roundsOf), started together with the other
// children's.
func childLoop(t *testing.T, s childSpec, take taker) {
	ctx, cancel := context.WithTimeout(t.Context(), mpTimeout)
	defer cancel()

	dial := func() redis.Conn {
		c, err := redis.Dial("tcp", s.Data, redis.DialConnectTimeout(5*time.Second),
			redis.DialReadTimeout(10*time.Second), redis.DialWriteTimeout(10*time.Second))
		require.NoError(t, err)
		return c
	}
	conns := make([]redis.Conn, s.Goroutines)
	stores := make([]fencedstore.Writer, s.Goroutines) // nil without fencing
	for g := range conns {
		conns[g] = dial()
		defer func() { _ = conns[g].Close() }() // a failed connection's error, already reported, comes again
		if s.Store != "" {
			c, err := fencedstore.Dial(ctx, s.Store, 10*time.Second)
			require.NoError(t, err)
			defer func() {
				if err := c.Close(); err != nil {
					t.Errorf("child %d goroutine %d: fenced store: close: %v", s.Child, g, err)
				}
			}()
			stores[g] = c
		}
	}

	// Start barrier: every child has its driver and connections, so that
	// the processes contend from the first round.
	_, err := conns[0].Do("RPUSH", s.Ready, s.Child)
	require.NoError(t, err)
	eventually(t, time.Minute, func() bool {
		n, err := redis.Int(conns[0].Do("LLEN", s.Ready))
		require.NoError(t, err)
		return n >= s.Children
	}, "the other children must start")

	var wg sync.WaitGroup
	for g, conn := range conns {
		wg.Go(func() {
			for range s.roundsOf(s.Child, g) {
				if !criticalSection(ctx, t, take, conn, stores[g], s, g) {
					return
				}
			}
		})
	}
	wg.Wait()
	t.Logf("child %d: %d goroutines, %d critical sections done", s.Child, s.Goroutines, s.sectionsOf(s.Child))
}

// criticalSection takes the lock, increments the counter with a GET then a
// SET, writes the lock's fence to store if there is one, records the
// section and releases the lock. It reports failures with t.Errorf and
// returns false after one.
func criticalSection(ctx context.Context, t *testing.T, take taker, conn redis.Conn, store fencedstore.Writer, s childSpec, g int) bool {
	lock, err := take(ctx)
	if err != nil {
		t.Errorf("child %d goroutine %d: acquire: %v", s.Child, g, err)
		return false
	}
	defer func() {
		if err := lock.release(); err != nil {
			t.Errorf("child %d goroutine %d: release: %v", s.Child, g, err)
		}
	}()
	start := time.Now().UnixNano()
	v, err := redis.Int(conn.Do("GET", s.Counter))
	if err != nil && !errors.Is(err, redis.ErrNil) {
		t.Errorf("child %d goroutine %d: GET: %v", s.Child, g, err)
		return false
	}
	if _, err := conn.Do("SET", s.Counter, v+1); err != nil {
		t.Errorf("child %d goroutine %d: SET: %v", s.Child, g, err)
		return false
	}
	if store != nil {
		if err := store.Write(lock.fence, fmt.Sprintf("child %d goroutine %d", s.Child, g)); err != nil {
			t.Errorf("child %d goroutine %d: write with fence %d: %v", s.Child, g, lock.fence, err)
			return false
		}
	}
	end := time.Now().UnixNano()
	if !time.Now().Before(lock.until) {
		// Not the driver's fault: the holder overran its validity, after
		// which another holder may legitimately overlap.
		t.Errorf("child %d goroutine %d: the critical section outlived the lock's validity (TTL %v)", s.Child, g, s.TTL)
		return false
	}
	if _, err := conn.Do("RPUSH", s.Sections, fmt.Sprintf("%d %d %d %d", s.Child, g, start, end)); err != nil {
		t.Errorf("child %d goroutine %d: RPUSH: %v", s.Child, g, err)
		return false
	}
	return true
}

// taker takes the children's lock; held is a lock taken: its fence, the
// end of its validity, and its release.
type taker func(ctx context.Context) (held, error)

type held struct {
	fence   uint64
	until   time.Time
	release func() error
}

// clientTaker takes key with c's Lock; the fence is 0 without fencing.
func clientTaker(c *redlock.Client, key string) taker {
	return func(ctx context.Context) (held, error) {
		lock, err := c.Lock(ctx, key)
		if err != nil {
			return held{}, err
		}
		fence, _ := lock.Fence()
		return held{fence, lock.Until(), func() error { return lock.Unlock(context.Background()) }}, nil
	}
}
