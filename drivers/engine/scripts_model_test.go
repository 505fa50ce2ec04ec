package engine

import (
	"context"
	"crypto/sha1" //nolint:gosec // G505: Redis names scripts by their SHA-1
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/core/memnode"
	"github.com/redlock-go/redlock/drivers/wire"
	"github.com/redlock-go/redlock/internal/redistest"
	"github.com/redlock-go/redlock/internal/sim"
)

// The simulation's nodes are a Go model of the scripts (sim.ScriptModel).
// TestScriptsMatchSimModel runs seeded random sequences of every command
// core sends, through the engine (its encoding, the shipped scripts, its
// decoding) to a real redis-server, and through the model, and requires
// the same replies and, after every command, the same state: the key's
// value (a token, or handed to a waiter) and expiry, its fence counter,
// its waiter queue's entries, tickets and deadlines, and when the queue's
// keys expire. Entries past their deadline are left out of the
// comparison: both keep them until a Fair release sweeps them, but the
// server also drops them with the queue's keys, and nothing reads them.
// A Fair release is also sent again, as the engine resends one whose
// connection broke under it (node.resend; sim.ScriptModel.ApplyResent),
// its first send run on the server or not (breakConn).
// One key, as a simulated node holds one; three waiters, four tokens.
// Not covered: the script's bounds (4096 entries, 64 swept a release),
// ReleaseSharded's channels, and a Cluster's names.
//
// Time on the server cannot be stopped, and the test never sleeps:
//   - the model runs each command at the server's TIME read just before
//     it; the server ran it within the window up to TIME read just after,
//     so a held acquire's TTL must lie within that window of the model's,
//     and an expiry or deadline the command set within it after the
//     model's, which then takes the server's;
//   - time passes by shifting every stored time earlier, on both sides
//     (PEXPIREAT, ZADD XX on the deadlines), by whole multiples of grid;
//   - every TTL, entry life and handoff is a whole multiple of grid plus
//     half of one, so that no stored time ever lies within grid/2 of the
//     present: no command's outcome depends on where in its window the
//     server ran it (the sequences take far less than grid/2).
const grid = 10 * time.Second

// waiterIDs name the sequences' waiters, one engine each.
var waiterIDs = []string{"a000000000000001", "b000000000000002", "c000000000000003"}

const diffKey = "diff:k"

// redigoConn is the engine's Conn over a redigo connection.
type redigoConn struct {
	c   redis.Conn
	brk *atomic.Int32 // the engine's breakConn, if any
}

// breakConn is what a redigoConn does to its next pipeline of scripts:
// sends it and breaks before the replies (breakRan), breaks before
// sending it (breakUnsent), or nothing (0).
const (
	breakRan = 1 + iota
	breakUnsent
)

// errBroken is the failure of a connection that breakConn breaks.
var errBroken = errors.New("test: connection reset under the pipeline")

func (r redigoConn) Exchange(_ context.Context, cmds [][]string, replies []Reply) error {
	if r.brk != nil && len(cmds[0]) > 1 && strings.HasPrefix(cmds[0][0], "EVAL") {
		switch r.brk.Swap(0) {
		case breakRan:
			_ = r.exchange(cmds, replies)
			clear(replies)
			return errBroken
		case breakUnsent:
			return errBroken
		}
	}
	return r.exchange(cmds, replies)
}

func (r redigoConn) exchange(cmds [][]string, replies []Reply) error {
	for _, cmd := range cmds {
		args := make([]any, len(cmd)-1)
		for i, a := range cmd[1:] {
			args[i] = a
		}
		if err := r.c.Send(cmd[0], args...); err != nil {
			return err
		}
	}
	if err := r.c.Flush(); err != nil {
		return err
	}
	for i := range cmds {
		v, err := r.c.Receive()
		var re redis.Error
		switch {
		case errors.As(err, &re):
			replies[i] = Reply{Kind: KindError, Err: re}
			continue
		case err != nil:
			return err
		}
		switch v := v.(type) {
		case nil:
			replies[i] = Reply{Kind: KindNil}
		case int64:
			replies[i] = Reply{Kind: KindInt, Int: v}
		case string:
			replies[i] = String(v)
		case []byte:
			replies[i] = Reply{Kind: KindString, Text: string(v)}
		default:
			replies[i] = Other(v)
		}
	}
	return nil
}

func (r redigoConn) Close() error { return r.c.Close() }

// diffEnv is one redis-server with an engine per waiter and a connection
// of the test's own.
type diffEnv struct {
	t       *testing.T
	engines []*Engine
	brk     []atomic.Int32 // each engine's connections' breakConn
	c       redis.Conn
	// window is the widest window a command of the sequence ran in, so
	// far: the server's TIME read before and after it.
	window time.Duration
	// seen counts the outcomes of the kinds' commands (diffKinds), by
	// kind, op and status, when not nil.
	seen map[string]int
}

func newDiffEnv(t *testing.T, addr string) *diffEnv {
	t.Helper()
	env := &diffEnv{t: t, brk: make([]atomic.Int32, len(waiterIDs))}
	for w, id := range waiterIDs {
		e := mustNew(t, Config{Names: []string{addr}, Dial: func(ctx context.Context, _ int) (Conn, error) {
			c, err := redis.DialContext(ctx, "tcp", addr)
			return redigoConn{c, &env.brk[w]}, err
		}})
		e.waiter = id // before any command: the test names the waiters
		t.Cleanup(e.Close)
		env.engines = append(env.engines, e)
	}
	c, err := redis.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	env.c = c
	return env
}

// now returns the server's TIME in whole ms, as the scripts and expiries
// read it.
func (env *diffEnv) now() (time.Duration, error) {
	v, err := redis.Int64s(env.c.Do("TIME"))
	if err != nil {
		return 0, err
	}
	return time.Duration(v[0]*1000+v[1]/1000) * time.Millisecond, nil
}

// run sends cmd through waiter's engine, its connection broken under it
// as brk says (breakConn).
func (env *diffEnv) run(waiter int, cmd core.Command, brk int32) core.Reply {
	env.brk[waiter].Store(brk)
	defer env.brk[waiter].Store(0)
	b := env.engines[waiter].Begin(context.Background())
	defer b.Close()
	b.Send(0, cmd, time.Now().Add(10*time.Second))
	r, _ := b.Receive(nil)
	return r
}

// state reads the server's state in the model's terms.
func (env *diffEnv) state() (sim.ScriptState, error) {
	s := sim.ScriptState{Handed: -1}
	queue, due := wire.QueueKeys(diffKey)
	c := env.c
	for _, cmd := range [][]any{{"GET", diffKey}, {"PEXPIRETIME", diffKey}, {"GET", core.FenceKeyPrefix + diffKey},
		{"ZRANGE", queue, 0, -1, "WITHSCORES"}, {"ZRANGE", due, 0, -1, "WITHSCORES"}, {"PEXPIRETIME", queue}, {"PEXPIRETIME", due}} {
		if err := c.Send(cmd[0].(string), cmd[1:]...); err != nil {
			return s, err
		}
	}
	if err := c.Flush(); err != nil {
		return s, err
	}
	val, err := redis.String(c.Receive())
	if err != nil && !errors.Is(err, redis.ErrNil) {
		return s, err
	}
	exp, err := redis.Int64(c.Receive())
	if err != nil {
		return s, err
	}
	fence, err := redis.Uint64(c.Receive())
	if err != nil && !errors.Is(err, redis.ErrNil) {
		return s, err
	}
	tickets, err := redis.Int64Map(c.Receive())
	if err != nil {
		return s, err
	}
	dues, err := redis.Int64Map(c.Receive())
	if err != nil {
		return s, err
	}
	qexp, err := redis.Int64(c.Receive())
	if err != nil {
		return s, err
	}
	dexp, err := redis.Int64(c.Receive())
	if err != nil {
		return s, err
	}
	// The script PEXPIREs both keys by one life, the deadlines' second,
	// on the server's clock of each call: a ms apart at times.
	if (qexp > 0) != (dexp > 0) || dexp < qexp || time.Duration(dexp-qexp)*time.Millisecond > env.window {
		return s, fmt.Errorf("the queue expires at %d, its deadlines at %d (window %v)", qexp, dexp, env.window)
	}
	if qexp > 0 {
		s.QueueExpires = time.Duration(qexp) * time.Millisecond
	}
	s.Fence = fence
	if val != "" {
		s.Held, s.Expires = true, time.Duration(exp)*time.Millisecond
		if id, ok := strings.CutPrefix(val, "~"); ok {
			s.Handed = slices.Index(waiterIDs, id)
			if s.Handed < 0 {
				return s, fmt.Errorf("key handed to unknown waiter %q", id)
			}
		} else if s.Token, err = parseToken(val); err != nil {
			return s, err
		}
	}
	if len(tickets) != len(dues) {
		return s, fmt.Errorf("queue %v and deadlines %v disagree", tickets, dues)
	}
	for id, ticket := range tickets {
		w := slices.Index(waiterIDs, id)
		d, ok := dues[id]
		if w < 0 || !ok {
			return s, fmt.Errorf("queue entry %q: unknown waiter, or no deadline (%v)", id, dues)
		}
		s.Queue = append(s.Queue, sim.QueueEntry{Waiter: w, Ticket: ticket, Due: time.Duration(d) * time.Millisecond})
	}
	slices.SortFunc(s.Queue, func(a, b sim.QueueEntry) int { return a.Waiter - b.Waiter })
	return s, nil
}

func parseToken(s string) (core.Token, error) {
	b, err := hex.DecodeString(s)
	var t core.Token
	if err != nil || len(b) != len(t) {
		return t, fmt.Errorf("key holds %q, not a token", s)
	}
	copy(t[:], b)
	return t, nil
}

// shift moves every stored time on the server d earlier.
func (env *diffEnv) shift(d time.Duration) error {
	queue, due := wire.QueueKeys(diffKey)
	for _, k := range []string{diffKey, queue, due} {
		at, err := redis.Int64(env.c.Do("PEXPIRETIME", k))
		if err != nil {
			return err
		}
		if at > 0 {
			if _, err := env.c.Do("PEXPIREAT", k, at-d.Milliseconds()); err != nil {
				return err
			}
		}
	}
	dues, err := redis.Int64Map(env.c.Do("ZRANGE", due, 0, -1, "WITHSCORES"))
	if err != nil {
		return err
	}
	for id, at := range dues {
		if _, err := env.c.Do("ZADD", due, "XX", at-d.Milliseconds(), id); err != nil {
			return err
		}
	}
	return nil
}

// gen draws commands as core makes them, over a few tokens and tickets.
type gen struct {
	rng    *rand.Rand
	tokens []core.Token
	// brk: the last command drawn goes on a connection that breaks under
	// it (breakConn), and so is sent again: a Fair release.
	brk int32
}

func newGen(seed uint64) *gen {
	g := &gen{rng: rand.New(rand.NewPCG(seed, 0xd1ff))} //nolint:gosec // G404: a seeded, reproducible sequence
	for range 4 {
		g.tokens = append(g.tokens, core.TokenFromUint64s(g.rng.Uint64()|1, g.rng.Uint64()))
	}
	return g
}

// span returns a TTL, life or handoff: a whole number of grids and a half.
func (g *gen) span() time.Duration { return time.Duration(g.rng.IntN(4))*grid + grid/2 }

// command draws one command, or a time step (ok == false, by step).
func (g *gen) command() (waiter int, cmd core.Command, step time.Duration) {
	waiter = g.rng.IntN(len(waiterIDs))
	g.brk = 0
	tok := g.tokens[g.rng.IntN(len(g.tokens))]
	cmd = core.Command{Key: diffKey, Token: tok}
	switch k := g.rng.IntN(16); {
	case k < 2:
		return 0, core.Command{}, time.Duration(1+g.rng.IntN(3)) * grid
	case k < 4: // a plain or probing acquire
		cmd.Op, cmd.TTL, cmd.Probe = core.OpAcquire, g.span(), g.rng.IntN(2) == 0
	case k < 5:
		cmd.Op, cmd.TTL, cmd.Probe = core.OpAcquireFenced, g.span(), g.rng.IntN(2) == 0
	case k < 8: // Fair attempts probe; one that will wait queues its waiter
		cmd.Op, cmd.TTL, cmd.Probe, cmd.Fair = core.OpAcquire, g.span(), true, true
		if g.rng.IntN(3) == 0 {
			cmd.Op = core.OpAcquireFenced
		}
		if g.rng.IntN(2) == 0 {
			cmd.Ticket, cmd.Handoff = 1+g.rng.Int64N(5), g.span()
		}
	case k < 10:
		cmd.Op, cmd.Quiet = core.OpRelease, g.rng.IntN(3) == 0
	case k < 13: // a Fair release: a cleanup that queues, one that leaves, a plain one, a hand-on
		cmd.Op, cmd.Fair, cmd.TTL, cmd.Handoff = core.OpRelease, true, g.span(), g.span()
		switch g.rng.IntN(4) {
		case 0:
			cmd.Ticket = 1 + g.rng.Int64N(5)
		case 1:
			cmd.Ticket = -1
		case 2:
			cmd.Token = core.Token{} // Spec.HandOn
		}
		if g.rng.IntN(2) == 0 { // sent again, its first send run or not
			g.brk = breakRan + g.rng.Int32N(2)
		}
	case k < 15:
		cmd.Op, cmd.TTL = core.OpExtend, g.span()
	default:
		cmd.Op, cmd.Fence = core.OpRaiseFence, 1+g.rng.Uint64N(6)
	}
	return waiter, cmd, 0
}

// steps is the length of one sequence.
const steps = 40

// diffSequence runs sequence seed through model and the server, and
// returns the first difference, naming the seed and the step.
func (env *diffEnv) diffSequence(seed uint64, model *sim.ScriptModel) error {
	if _, err := env.c.Do("FLUSHALL"); err != nil {
		return err
	}
	g := newGen(seed)
	env.window = 0
	var start time.Duration // the server's time at the first command
	fail := func(step int, what string, args ...any) error {
		return fmt.Errorf("seed %d, step %d: "+what, append([]any{seed, step}, args...)...)
	}
	for i := range steps {
		waiter, cmd, step := g.command()
		if step > 0 {
			if err := env.shift(step); err != nil {
				return err
			}
			model.Shift(step)
			continue
		}
		t1, err := env.now()
		if err != nil {
			return err
		}
		if start == 0 {
			start = t1
		}
		if t1-start > grid/4 {
			return fail(i, "the sequence has run %v on the server, too long for grid %v: its outcomes are no longer exact", t1-start, grid)
		}
		got := env.run(waiter, cmd, g.brk)
		t2, err := env.now()
		if err != nil {
			return err
		}
		window := t2 - t1
		env.window = max(env.window, window)
		var want core.Reply
		switch g.brk {
		case 0:
			want = model.Apply(waiter, cmd, t1)
		case breakRan:
			model.Apply(waiter, cmd, t1)
			fallthrough
		default:
			want = model.ApplyResent(waiter, cmd, t1)
		}
		desc := fmt.Sprintf("waiter %d: %s %+v%s", waiter, cmd.Op, cmd, resentNames[g.brk])
		if got.Err != nil || got.Status != want.Status || got.Fence != want.Fence ||
			got.TTL > want.TTL || got.TTL < want.TTL-window {
			return fail(i, "%s: the scripts reply %v fence %d TTL %v (err %v), the model %v fence %d TTL %v",
				desc, got.Status, got.Fence, got.TTL, got.Err, want.Status, want.Fence, want.TTL)
		}
		srv, err := env.state()
		if err != nil {
			return fail(i, "%s: %v", desc, err)
		}
		// The times the command set: the server's, within its window
		// after the model's.
		mod := model.State(t2)
		if srv.Held && mod.Held && srv.Expires != mod.Expires && srv.Expires >= mod.Expires && srv.Expires <= mod.Expires+window {
			model.SetExpires(srv.Expires)
		}
		if srv.QueueExpires != mod.QueueExpires && srv.QueueExpires >= mod.QueueExpires && srv.QueueExpires <= mod.QueueExpires+window {
			model.SetQueueExpires(srv.QueueExpires)
		}
		for _, e := range srv.Queue {
			for _, m := range mod.Queue {
				if e.Waiter == m.Waiter && e.Due != m.Due && e.Due >= m.Due && e.Due <= m.Due+window {
					model.SetDue(e.Waiter, e.Due)
				}
			}
		}
		if mod = model.State(t2); !equalState(live(srv, t2), live(mod, t2)) {
			return fail(i, "%s (reply %v): the server holds %+v, the model %+v", desc, got.Status, srv, mod)
		}
	}
	return nil
}

// resentNames say how a command drawn went (gen.brk).
var resentNames = [...]string{"", " (sent again after its first run)", " (sent again, its first send lost)"}

// live returns s without the queue's entries past their deadline at
// now: the model keeps them until a Fair release sweeps them, as the
// script does, but the server also drops the whole queue when its own
// expiry (the last entry's life) passes. Either way a release sweeps
// them before it hands the key on, and no command reads them.
func live(s sim.ScriptState, now time.Duration) sim.ScriptState {
	s.Queue = slices.DeleteFunc(slices.Clone(s.Queue), func(e sim.QueueEntry) bool { return e.Due <= now })
	return s
}

func equalState(a, b sim.ScriptState) bool {
	return a.Held == b.Held && a.Token == b.Token && a.Handed == b.Handed && a.Expires == b.Expires && a.QueueExpires == b.QueueExpires &&
		a.Fence == b.Fence && slices.Equal(a.Queue, b.Queue)
}

func startDiff(t *testing.T) *diffEnv {
	t.Helper()
	s := redistest.Start(t, redistest.Options{})
	return newDiffEnv(t, s.Addr)
}

// diffSeeds is how many sequences TestScriptsMatchSimModel runs.
const diffSeeds = 150

// TestScriptsMatchSimModel: see grid; its kinds subtest runs the kinds'
// sequences (kindCommand) through the model too. A failure names the seed and step
// that replay it (sequences are drawn from the seed alone).
func TestScriptsMatchSimModel(t *testing.T) {
	env := startDiff(t)
	for seed := uint64(1); seed <= diffSeeds; seed++ {
		if err := env.diffSequence(seed, sim.NewScriptModel(len(waiterIDs), sim.Faults{})); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("kinds", func(t *testing.T) { kindsMatchSimModel(t, env) }) // scripts_kinds_sim_test.go
}

// firstDiff returns the first difference of sequences 1 to diffSeeds,
// or nil.
func (env *diffEnv) firstDiff(faults sim.Faults) error {
	for seed := uint64(1); seed <= diffSeeds; seed++ {
		if err := env.diffSequence(seed, sim.NewScriptModel(len(waiterIDs), faults)); err != nil {
			return err
		}
	}
	return nil
}

// TestScriptDiffSeesPlantedModelDefects: the model with a queue that
// skips its head, or a fence raise that does not raise, differs from
// the scripts, and the test says where.
func TestScriptDiffSeesPlantedModelDefects(t *testing.T) {
	env := startDiff(t)
	for name, f := range map[string]sim.Faults{"skip head": {SkipHead: true}, "skip raise": {SkipRaise: true}} {
		err := env.firstDiff(f)
		require.Error(t, err, "%s: the model's defect went unseen", name)
		require.Contains(t, err.Error(), "seed ")
		t.Logf("%s: %v", name, err)
	}
}

// TestScriptDiffSeesPlantedScriptDefects: a copy of a shipped script
// with one defect planted, sent in its place, differs from the model.
func TestScriptDiffSeesPlantedScriptDefects(t *testing.T) {
	for _, m := range []struct {
		name     string
		script   *wire.Script
		old, new string
		memnode  bool // memnode, with its one waiter, sees it too
	}{
		{"release hands the key to the last waiter", &wire.Release, `redis.call("ZRANGE", KEYS[2], 0, 0)[1]`, `redis.call("ZRANGE", KEYS[2], -1, -1)[1]`, false},
		{"a resend hands on although its token was gone", &wire.Release, `if st == 1 or (st == 0 and not resent) then`, `if st ~= -1 then`, true},
		{"a resend frees a key handed to the caller", &wire.Release, `not resent and v == "~"`, `v == "~"`, false},
		{"a resend queues the caller again", &wire.Release, `((st == 1 or not resent) and`, `((true) and`, false},
		{"release keeps stale waiters", &wire.Release, `"-inf", now,`, `"-inf", now - 600000,`, false},
		{"fenced acquire ignores a handed key", &wire.AcquireFenced, `if t ~= -2 and fair and`, `if false and`, true},
		{"a held attempt does not queue", &wire.AcquireProbe, `if fair and ARGV[4] and`, `if false and`, true},
		{"a held fenced attempt queues at the back", &wire.AcquireFenced, `"ZADD", KEYS[3], "NX", ARGV[4]`, `"ZADD", KEYS[3], "NX", ARGV[4] + 3`, false},
		{"probe reports the TTL a ms short", &wire.AcquireProbe, `return -math.max(t, 1)`, `return -math.max(t - 1, 1)`, false},
		{"extend re-sets a foreign key", &wire.Extend, `if v == ARGV[1] then`, `if v then`, true},
		{"raise lowers the counter", &wire.RaiseFence, `(#c == #f and c < f)`, `(#c == #f and c ~= f)`, true},
	} {
		t.Run(m.name, func(t *testing.T) {
			require.Contains(t, m.script.Src, m.old, "the script to mutate changed")
			saved := *m.script
			src := strings.Replace(saved.Src, m.old, m.new, 1)
			sum := sha1.Sum([]byte(src)) //nolint:gosec // G401: the script's name for EVALSHA
			*m.script = wire.Script{Src: src, SHA1: hex.EncodeToString(sum[:])}
			t.Cleanup(func() { *m.script = saved })
			env := startDiff(t)
			err := env.firstDiff(sim.Faults{})
			require.Error(t, err, "the planted defect went unseen")
			t.Logf("%v", err)
			if m.memnode {
				err = nil
				for seed := uint64(1); seed <= diffSeeds && err == nil; seed++ {
					err = env.diffMemnode(seed)
				}
				require.Error(t, err, "memnode: the planted defect went unseen")
				t.Logf("%v", err)
			}
		})
	}
}

// diffMemnode runs sequence seed, from waiter 0 alone, through
// core/memnode's model of the scripts (one waiter: the cluster's) and
// the server, and returns the first difference. memnode keeps its
// times to itself, so the test moves its manual clock instead: it reads
// the server's time plus every shift so far, and its expiries may lie
// up to the sequence's widest window before the server's.
func (env *diffEnv) diffMemnode(seed uint64) error {
	if _, err := env.c.Do("FLUSHALL"); err != nil {
		return err
	}
	g := newGen(seed)
	env.window = 0
	clock := memnode.NewManualClock(time.UnixMilli(0)) // time.Time{} is too far back for memnode's instants
	model := memnode.New(1, clock)
	var shifted, start time.Duration
	fail := func(step int, what string, args ...any) error {
		return fmt.Errorf("memnode: seed %d, step %d: "+what, append([]any{seed, step}, args...)...)
	}
	at := func(srv time.Duration) { clock.Advance(time.UnixMilli(0).Add(srv + shifted).Sub(clock.Now())) }
	for i := range steps {
		_, cmd, step := g.command()
		if step > 0 {
			if err := env.shift(step); err != nil {
				return err
			}
			shifted += step
			continue
		}
		t1, err := env.now()
		if err != nil {
			return err
		}
		if start == 0 {
			start = t1
		}
		at(t1)
		got := env.run(0, cmd, g.brk)
		var want core.Reply
		if g.brk != breakUnsent {
			b := model.Begin(context.Background())
			b.Send(0, cmd, clock.Now().Add(10*time.Second))
			want, _ = b.Receive(nil)
			b.Close()
		}
		if g.brk != 0 {
			want = model.Resend(0, cmd)
		}
		t2, err := env.now()
		if err != nil {
			return err
		}
		env.window = max(env.window, t2-t1)
		if t2-start > grid/4 {
			return fail(i, "the sequence has run %v on the server, too long for grid %v", t2-start, grid)
		}
		desc := fmt.Sprintf("%s %+v%s", cmd.Op, cmd, resentNames[g.brk])
		if got.Err != nil || want.Err != nil || got.Status != want.Status || got.Fence != want.Fence ||
			got.TTL > want.TTL+env.window || got.TTL < want.TTL-env.window {
			return fail(i, "%s: the scripts reply %v fence %d TTL %v (err %v), memnode %v fence %d TTL %v (err %v)",
				desc, got.Status, got.Fence, got.TTL, got.Err, want.Status, want.Fence, want.TTL, want.Err)
		}
		srv, err := env.state()
		if err != nil {
			return fail(i, "%s: %v", desc, err)
		}
		at(t2)
		tok, ttl, held := model.Get(0, diffKey)
		handed := held && tok == (core.Token{})
		switch {
		case srv.Held != held, srv.Held && handed != (srv.Handed == 0), srv.Held && !handed && srv.Token != tok:
			return fail(i, "%s: the server holds %+v, memnode %v (held %v)", desc, srv, tok, held)
		case srv.Held && (srv.Expires < t2+ttl || srv.Expires > t2+ttl+env.window):
			return fail(i, "%s: the key expires at %v on the server, at %v on memnode (window %v)", desc, srv.Expires, t2+ttl, env.window)
		case srv.Fence != model.Fence(0, diffKey):
			return fail(i, "%s: fence counter %d on the server, %d on memnode", desc, srv.Fence, model.Fence(0, diffKey))
		}
	}
	return nil
}

// TestScriptsMatchMemnode: core/memnode, the reference driver of core's
// and the root package's tests, is a model of the scripts too, for one
// waiter; it must agree with them as the simulation's does, for the
// mutex and for the kinds beyond it (kindsMatchMemnode).
func TestScriptsMatchMemnode(t *testing.T) {
	env := startDiff(t)
	for seed := uint64(1); seed <= diffSeeds; seed++ {
		if err := env.diffMemnode(seed); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("kinds", func(t *testing.T) { kindsMatchMemnode(t, env) })
}
