package systest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/internal/redistest"
)

// primChildEnv carries a primChild, as JSON, to a child process of
// testWriterKilled or testPermitHolderPaused: its presence makes the
// case run the child's side.
const primChildEnv = "REDLOCK_SYSTEST_PRIMITIVE_CHILD"

// primHeldLine starts the line a child prints, with its lock's token,
// once it holds its lock; primDoneLine the line it prints at its end.
const (
	primHeldLine = "redlock-systest-held "
	primDoneLine = "redlock-systest-done"
)

// primChild is what a child holder is told.
type primChild struct {
	// Test is the full name of the subtest the child must run: the
	// parent's.
	Test  string
	Mode  string
	Nodes []string
	Key   string
	TTL   time.Duration
	// Permits is 0 for a writer (WLock), else the semaphore's K
	// (LockPermit).
	Permits int
}

// childProc is a child holder started by startPrimChild.
type childProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string // the child's output, a line at a time, closed at its end
	out   *bytes.Buffer
	mu    *sync.Mutex
	exit  chan error
}

// startPrimChild starts the test binary as spec's child, logging its
// output if the test fails, and killing it (if it still runs) at the
// test's end.
func startPrimChild(t *testing.T, spec primChild) *childProc {
	t.Helper()
	env, err := json.Marshal(spec)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, os.Args[0], //nolint:gosec // G204: the test binary itself, run as a child
		"-test.run="+runPattern(t.Name()), "-test.count=1", "-test.v=true",
		"-test.timeout="+mpTimeout.String())
	cmd.Env = append(os.Environ(), primChildEnv+"="+string(env))
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = cmd.Stdout // the pipe's writer: one stream, in order
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	cmd.WaitDelay = 5 * time.Second
	p := &childProc{cmd: cmd, stdin: stdin, lines: make(chan string, 1024), out: new(bytes.Buffer), mu: new(sync.Mutex), exit: make(chan error, 1)}
	require.NoError(t, cmd.Start())
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.mu.Lock()
			p.out.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			p.lines <- sc.Text()
		}
		close(p.lines)
		p.exit <- cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT) // a stopped child dies of SIGKILL too, but let its pipes drain
		cancel()
		if t.Failed() {
			p.mu.Lock()
			t.Logf("child output:\n%s", p.out.String())
			p.mu.Unlock()
		}
	})
	return p
}

// held waits for the child to hold its lock and returns its token.
func (p *childProc) held(t *testing.T) string {
	t.Helper()
	return p.await(t, primHeldLine, "the child must take its lock")
}

// await waits for the child's line that starts with prefix and returns
// the rest of it; the child's end or primWait first fails t with msg.
func (p *childProc) await(t *testing.T, prefix, msg string) string {
	t.Helper()
	timeout := time.After(primWait)
	for {
		select {
		case line, ok := <-p.lines:
			if !ok {
				require.FailNow(t, msg, "the child ended first")
			}
			if rest, found := strings.CutPrefix(line, prefix); found {
				return rest
			}
		case <-timeout:
			require.FailNow(t, msg, "nothing within %v", primWait)
		}
	}
}

// wait waits for the child's exit and returns its error.
func (p *childProc) wait(t *testing.T) error {
	t.Helper()
	for range p.lines { // drain: the exit comes after the output's end
	}
	select {
	case err := <-p.exit:
		return err
	case <-time.After(primWait):
		require.FailNow(t, "the child did not exit")
		return nil
	}
}

// runPrimChild is a child's side: a Client over a driver from f on the
// spec's nodes, that takes its lock, says so with its token, and then,
// for a writer, waits to be killed; for a permit holder, waits for a
// line on its stdin (the parent sends it once the child, stopped past
// its validity, was continued), finds its lock lost, and releases it
// without touching the new holder's slot (the parent checks).
func runPrimChild(t *testing.T, f Factory, mode core.FanOut, raw string) {
	var s primChild
	require.NoError(t, json.Unmarshal([]byte(raw), &s), "%s", primChildEnv)
	require.Equal(t, s.Test, t.Name(), "the child must run the subtest its parent named")
	require.Equal(t, s.Mode, mode.String())
	eps := make([]Endpoint, len(s.Nodes))
	for i, a := range s.Nodes {
		eps[i] = Endpoint{Addr: a}
	}
	c, err := redlock.NewClient(f(t, eps), keepable(clientOptions(mode, redlock.Options{TTL: s.TTL}), len(s.Nodes)))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), primWait)
	defer cancel()
	if s.Permits == 0 {
		l, err := c.WLock(ctx, s.Key)
		require.NoError(t, err)
		fmt.Println(primHeldLine + l.Token().String())
		<-ctx.Done() // the parent kills the child before
		t.Error("the writer was not killed")
		return
	}
	l, err := c.LockPermit(ctx, s.Key, s.Permits)
	require.NoError(t, err)
	until := l.Until()
	fmt.Println(primHeldLine + l.Token().String())
	_, err = bufio.NewReader(os.Stdin).ReadString('\n')
	require.NoError(t, err, "the parent's go-ahead")
	// The parent saw the slot expire on every node: the validity, which
	// ends before the key's TTL, had ended.
	assert.True(t, time.Now().After(until), "the pause outlasted the validity")
	err = l.Extend(ctx)
	require.Error(t, err, "a permit held past its validity cannot be extended")
	assert.True(t, errIsAny(err, redlock.ErrNotHeld, redlock.ErrTaken), "%v", err)
	assert.True(t, l.Until().IsZero() || time.Now().After(l.Until()), "a lost lock is not valid")
	_ = l.Unlock(ctx) // the parent checks that the new holder's slot stays
	fmt.Println(primDoneLine)
}

func errIsAny(err error, kinds ...error) bool {
	for _, k := range kinds {
		if errors.Is(err, k) {
			return true
		}
	}
	return false
}

// testWriterKilled: a writer in another process holds key (a short
// TTL); readers of two Clients wait in RLock, their attempts refused;
// the writer is SIGKILLed, without a release. The readers take the
// lock once its key expires, together (they share it), without
// waiting past primWait; nothing is left once they unlock.
func testWriterKilled(t *testing.T, f Factory, mode core.FanOut) {
	if raw := os.Getenv(primChildEnv); raw != "" {
		runPrimChild(t, f, mode, raw)
		return
	}
	c := startReal(t, f, 3, redistest.Options{}, nil)
	env, key := standaloneEnv(c, mode), testKey(t, "")
	v := env.view
	before := v.keys(t)
	child := startPrimChild(t, primChild{Test: t.Name(), Mode: mode.String(), Nodes: addrsOf(c.srv), Key: key, TTL: primShortTTL})
	tok := child.held(t)
	v.requireEvery(t, func(m memberView) string {
		if got, ok := m.get(t, key); !ok || got != tok {
			return "the writer's key must hold " + tok
		}
		return ""
	})

	var got []<-chan lockResult
	var watches []*attemptWatch
	for range 2 {
		r, w := env.watched(t, redlock.Options{TTL: primTTL})
		got = append(got, async(t, func(ctx context.Context) (*redlock.Lock, error) { return r.RLock(ctx, key) }))
		w.attempts(t, 1)
		watches = append(watches, w)
	}
	for _, g := range got {
		notYet(t, g, "RLock beside a live writer")
	}
	// Logged, not asserted (it depends on time): waiting readers that
	// woke one another would make hundreds of attempts here.
	beforeKill := []int{watches[0].count(), watches[1].count()}
	require.NoError(t, child.cmd.Process.Kill())
	err := child.wait(t)
	require.Error(t, err, "the writer died of SIGKILL")

	// Both readers hold at once: each returned before either unlocked.
	var locks []*redlock.Lock
	for i, g := range got {
		locks = append(locks, await(t, g, fmt.Sprintf("reader %d after the writer's death", i)))
	}
	t.Logf("attempts of the readers: %v before the kill, %d and %d after", beforeKill, watches[0].count(), watches[1].count())
	v.requireQuorum(t, func(m memberView) string {
		for _, l := range locks {
			if _, _, ok := m.reader(t, key, l.Token()); !ok {
				return "no reader entry for " + l.Token().String()
			}
		}
		return absent(t, key)(m)
	})
	for _, l := range locks {
		require.NoError(t, l.Unlock(testContext(t)))
	}
	v.requireNothingLeft(t, before, false)
}

// testPermitHolderPaused: of K = 3 permits, two are held here and one by
// another process, which is then SIGSTOPped until its slot expires on
// every node. The two holders here are unaffected: their slots keep
// their tokens, their Contexts stay open, and they extend. A newcomer
// takes the expired slot, and one more is refused. The paused holder,
// continued, finds its permit lost (it cannot extend), and its release
// leaves the newcomer's slot alone.
func testPermitHolderPaused(t *testing.T, f Factory, mode core.FanOut) {
	if raw := os.Getenv(primChildEnv); raw != "" {
		runPrimChild(t, f, mode, raw)
		return
	}
	const k = primPermits
	c := startReal(t, f, 3, redistest.Options{}, nil)
	env, key := standaloneEnv(c, mode), testKey(t, "")
	v := env.view
	before := v.keys(t)
	ctx := testContext(t)
	opts := redlock.Options{TTL: defaultTTL}
	var hs []*redlock.Lock
	var ctxs []context.Context
	for range k - 1 {
		l, err := env.client(t, opts).TryLockPermit(ctx, key, k)
		require.NoError(t, err)
		hs = append(hs, l)
		ctxs = append(ctxs, l.Context())
	}

	child := startPrimChild(t, primChild{Test: t.Name(), Mode: mode.String(), Nodes: addrsOf(c.srv), Key: key, TTL: primShortTTL, Permits: k})
	tok := child.held(t)
	v.requireEvery(t, func(m memberView) string {
		for _, s := range permitSlots(key, k) {
			if got, ok := m.get(t, s); ok && got == tok {
				return holdsSlots(t, key, k, hs...)(m)
			}
		}
		return "no slot holds the child's token " + tok
	})
	require.NoError(t, child.cmd.Process.Signal(syscall.SIGSTOP))
	slot := -1
	for i, s := range permitSlots(key, k) {
		if got, ok := v.members[0].get(t, s); ok && got == tok {
			slot = i
		}
	}
	require.GreaterOrEqual(t, slot, 0)
	v.requireWithin(t, primWait, absent(t, permitSlot(key, slot))) // its TTL runs out while it is stopped

	// The other holders are unaffected.
	v.requireEvery(t, holdsSlots(t, key, k, hs...))
	for i, l := range hs {
		require.NoError(t, ctxs[i].Err(), "holder %d's Context", i)
		require.NoError(t, l.Extend(ctx), "holder %d extends", i)
	}
	newcomer, err := env.client(t, opts).TryLockPermit(ctx, key, k)
	require.NoError(t, err, "the expired permit is free")
	hs = append(hs, newcomer)
	v.requireEvery(t, holdsSlots(t, key, k, hs...))
	assert.Equal(t, slot, slotOf(t, v.members[0], key, k, newcomer.Token()), "the newcomer has the paused holder's slot")
	_, err = env.client(t, opts).TryLockPermit(ctx, key, k)
	require.ErrorIs(t, err, redlock.ErrTaken, "still K holders")

	// The paused holder resumes, finds its permit lost and releases it.
	require.NoError(t, child.cmd.Process.Signal(syscall.SIGCONT))
	_, err = io.WriteString(child.stdin, "go\n")
	require.NoError(t, err)
	child.await(t, primDoneLine, "the resumed holder must end its checks")
	require.NoError(t, child.wait(t), "the resumed holder's checks")
	v.requireEvery(t, holdsSlots(t, key, k, hs...))
	for i, l := range hs {
		require.NoError(t, l.Context().Err(), "holder %d's Context", i)
		require.NoError(t, l.Unlock(ctx))
	}
	v.requireNothingLeft(t, before, false)
}
