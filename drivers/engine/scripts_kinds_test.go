package engine

import (
	"context"
	"crypto/sha1" //nolint:gosec // G505: Redis names scripts by their SHA-1
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/core/memnode"
	"github.com/redlock-go/redlock/drivers/wire"
)

// The kinds beyond the mutex (core.KindRead, KindWrite, KindAll) get the
// same differential test as the mutex's scripts (TestScriptsMatchMemnode,
// see grid): seeded random sequences of their commands, mixed with the
// mutex's on the same keys, go through the engine to a redis-server and
// through core/memnode, which must agree on every reply and, after every
// command, on every key's holder and expiry, the fence counters, the
// reader set's unexpired readers and their expiries, and the waiting
// writer's mark. A multi-key command takes a subset of kindKeys, in any
// order, the reader/writer lock's key among them or not. Readers' scores
// are shifted with the other stored times.

// kindKeys are the keys of the kinds' sequences: the reader/writer lock's
// (diffKey) and two more for multi-key locks.
var kindKeys = []string{diffKey, "diff:a", "diff:b"}

// kindCommand draws one command of any kind as core makes them, or a
// time step (step > 0). brk is set for a release or extension sent again
// after its connection broke under it, as the engine resends them.
func (g *gen) kindCommand() (cmd core.Command, step time.Duration) {
	g.brk = 0
	cmd = core.Command{Key: diffKey, Token: g.tokens[g.rng.IntN(len(g.tokens))]}
	fenced := g.rng.IntN(3) == 0
	acquire := func() {
		cmd.Op, cmd.TTL = core.OpAcquire, g.span()
		if fenced {
			cmd.Op = core.OpAcquireFenced
		}
	}
	switch k := g.rng.IntN(20); {
	case k < 2:
		return core.Command{}, time.Duration(1+g.rng.IntN(3)) * grid
	case k < 6:
		cmd.Kind = core.KindRead
		acquire()
	case k < 8:
		cmd.Kind, cmd.Op = core.KindRead, core.OpRelease
	case k < 9:
		cmd.Kind, cmd.Op, cmd.TTL = core.KindRead, core.OpExtend, g.span()
	case k < 11:
		cmd.Kind = core.KindWrite
		acquire()
	case k < 12:
		cmd.Kind, cmd.Op = core.KindWrite, core.OpRelease
		if g.rng.IntN(3) == 0 {
			cmd.Ticket = 1 // the cleanup of an attempt whose writer waits on: the mark stays
		}
	case k < 13:
		cmd.Kind, cmd.Op, cmd.TTL = core.KindWrite, core.OpExtend, g.span()
	case k < 16:
		cmd.Kind = core.KindAll
		acquire()
	case k < 17:
		cmd.Kind, cmd.Op = core.KindAll, core.OpRelease
	case k < 18:
		cmd.Kind, cmd.Op = core.KindAll, []core.Op{core.OpExtend, core.OpRaiseFence}[g.rng.IntN(2)]
		cmd.TTL, cmd.Fence = g.span(), 1+g.rng.Uint64N(6)
		if cmd.Op == core.OpRaiseFence {
			cmd.TTL = 0
		}
	case k < 19:
		cmd.Kind, cmd.Op, cmd.Fence = core.KindWrite, core.OpRaiseFence, 1+g.rng.Uint64N(6)
	default: // the mutex, on the same keys
		cmd.Key = kindKeys[g.rng.IntN(len(kindKeys))]
		if g.rng.IntN(2) == 0 {
			cmd.Op = core.OpRelease
		} else {
			acquire()
			cmd.Probe = true
		}
	}
	if cmd.Kind == core.KindWrite && g.rng.IntN(2) == 0 {
		// Another attempt of the same writer (core.SameAcquisition):
		// its mark is the writer's own, to the scripts as to memnode.
		cmd.Token[12+g.rng.IntN(4)] ^= []byte{1, 0x10, 0x5a, 0xff}[g.rng.IntN(4)]
	}
	if cmd.Kind == core.KindAll {
		keys := slices.Clone(kindKeys)
		g.rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
		keys = keys[:1+g.rng.IntN(len(keys))]
		cmd.Keys, cmd.Key = core.NewKeyList(keys), keys[0]
	}
	if (cmd.Op == core.OpRelease || cmd.Op == core.OpExtend) && g.rng.IntN(4) == 0 {
		g.brk = breakRan + g.rng.Int32N(2)
	}
	return cmd, 0
}

// kindState is what a node holds of the kinds' keys.
type kindState struct {
	Keys    map[string]heldKey // by key: the live ones
	Fences  map[string]uint64  // by key: the non-zero ones
	Readers map[core.Token]time.Duration
	Mark    heldKey
}

// heldKey is a key's (or the mark's) token and when it expires, in the
// server's time; the zero value, a key that does not exist.
type heldKey struct {
	Token   core.Token
	Expires time.Duration
}

// kindState reads the server's state of kindKeys at now, its time: the
// readers whose score has passed are left out, as no command counts
// them.
func (env *diffEnv) kindState(now time.Duration) (kindState, error) {
	s := kindState{Keys: map[string]heldKey{}, Fences: map[string]uint64{}, Readers: map[core.Token]time.Duration{}}
	get := func(key string) (heldKey, error) {
		v, err := redis.String(env.c.Do("GET", key))
		if errors.Is(err, redis.ErrNil) {
			return heldKey{}, nil
		} else if err != nil {
			return heldKey{}, err
		}
		at, err := redis.Int64(env.c.Do("PEXPIRETIME", key))
		if err != nil {
			return heldKey{}, err
		}
		t, err := parseToken(v)
		return heldKey{t, time.Duration(at) * time.Millisecond}, err
	}
	for _, k := range kindKeys {
		h, err := get(k)
		if err != nil {
			return s, fmt.Errorf("%s: %w", k, err)
		}
		if h != (heldKey{}) {
			s.Keys[k] = h
		}
		f, err := redis.Uint64(env.c.Do("GET", core.FenceKeyPrefix+k))
		if err != nil && !errors.Is(err, redis.ErrNil) {
			return s, err
		}
		if f != 0 {
			s.Fences[k] = f
		}
	}
	var err error
	if s.Mark, err = get(core.WriterWaitPrefix + diffKey); err != nil {
		return s, err
	}
	rs, err := redis.Int64Map(env.c.Do("ZRANGE", core.ReadersPrefix+diffKey, 0, -1, "WITHSCORES"))
	if err != nil {
		return s, err
	}
	for v, score := range rs {
		t, err := parseToken(v)
		if err != nil {
			return s, err
		}
		if at := time.Duration(score) * time.Millisecond; at > now {
			s.Readers[t] = at
		}
	}
	if len(rs) > 0 {
		// The set lives at least as long as its last reader.
		at, err := redis.Int64(env.c.Do("PEXPIRETIME", core.ReadersPrefix+diffKey))
		if err != nil {
			return s, err
		}
		for _, exp := range s.Readers {
			if time.Duration(at)*time.Millisecond < exp {
				return s, fmt.Errorf("the reader set expires at %dms, before a reader's %v", at, exp)
			}
		}
	}
	return s, nil
}

// memnodeKindState reads model's node 0 as kindState, at now on the
// server's clock (the model's clock reads now too).
func memnodeKindState(model *memnode.Cluster, now time.Duration) kindState {
	s := kindState{Keys: map[string]heldKey{}, Fences: map[string]uint64{}, Readers: map[core.Token]time.Duration{}}
	for _, k := range kindKeys {
		if t, ttl, ok := model.Get(0, k); ok {
			s.Keys[k] = heldKey{t, now + ttl}
		}
		if f := model.Fence(0, k); f != 0 {
			s.Fences[k] = f
		}
	}
	if t, ttl, ok := model.Mark(0, diffKey); ok {
		s.Mark = heldKey{t, now + ttl}
	}
	for t, ttl := range model.Readers(0, diffKey) {
		s.Readers[t] = now + ttl
	}
	return s
}

// sameKindState reports whether srv and mod agree: the same holders and
// fences, and each expiry of srv's within window after mod's (the model
// ran the command at the start of its window).
func sameKindState(srv, mod kindState, window time.Duration) bool {
	near := func(s, m heldKey) bool {
		return s.Token == m.Token && s.Expires >= m.Expires && s.Expires <= m.Expires+window
	}
	if len(srv.Keys) != len(mod.Keys) || len(srv.Readers) != len(mod.Readers) || !near(srv.Mark, mod.Mark) {
		return false
	}
	for k, h := range srv.Keys {
		if !near(h, mod.Keys[k]) {
			return false
		}
	}
	for t, at := range srv.Readers {
		m, ok := mod.Readers[t]
		if !ok || !near(heldKey{t, at}, heldKey{t, m}) {
			return false
		}
	}
	return len(srv.Fences) == len(mod.Fences) && func() bool {
		for k, f := range srv.Fences {
			if mod.Fences[k] != f {
				return false
			}
		}
		return true
	}()
}

// shiftKinds moves every stored time of kindKeys' locks on the server d
// earlier: the keys' and the mark's expiries, the reader set's and its
// readers' scores.
func (env *diffEnv) shiftKinds(d time.Duration) error {
	readers := core.ReadersPrefix + diffKey
	for _, k := range append(slices.Clone(kindKeys), core.WriterWaitPrefix+diffKey, readers) {
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
	rs, err := redis.Int64Map(env.c.Do("ZRANGE", readers, 0, -1, "WITHSCORES"))
	if err != nil {
		return err
	}
	for t, at := range rs {
		if _, err := env.c.Do("ZADD", readers, "XX", at-d.Milliseconds(), t); err != nil {
			return err
		}
	}
	return nil
}

// kindModel is a model of the kinds' scripts that their sequences run
// through beside the server: core/memnode, or the simulation's nodes
// (sim.ScriptModel). Each runs at the server's time srv plus shifted,
// the times the server's stored times were moved earlier by.
type kindModel interface {
	// apply runs cmd, its connection broken under it as brk says, and
	// returns the reply.
	apply(cmd core.Command, brk int32, srv, shifted time.Duration) core.Reply
	// state returns what the model holds, its expiries in the server's
	// time.
	state(srv, shifted time.Duration) kindState
}

// memnodeKinds is core/memnode's node 0 as a kindModel.
type memnodeKinds struct {
	clock *memnode.ManualClock
	model *memnode.Cluster
}

func newMemnodeKinds() *memnodeKinds {
	clock := memnode.NewManualClock(time.UnixMilli(0))
	return &memnodeKinds{clock, memnode.New(1, clock)}
}

func (m *memnodeKinds) at(srv, shifted time.Duration) {
	m.clock.Advance(time.UnixMilli(0).Add(srv + shifted).Sub(m.clock.Now()))
}

func (m *memnodeKinds) apply(cmd core.Command, brk int32, srv, shifted time.Duration) core.Reply {
	m.at(srv, shifted)
	var want core.Reply
	if brk != breakUnsent {
		b := m.model.Begin(context.Background())
		b.Send(0, cmd, m.clock.Now().Add(10*time.Second))
		want, _ = b.Receive(nil)
		b.Close()
	}
	if brk != 0 {
		want = m.model.Resend(0, cmd)
	}
	return want
}

func (m *memnodeKinds) state(srv, shifted time.Duration) kindState {
	m.at(srv, shifted)
	return memnodeKindState(m.model, srv)
}

// diffKinds runs kinds sequence seed through core/memnode and the
// server, as diffMemnode does the mutex's, and returns the first
// difference, naming the seed and the step.
func (env *diffEnv) diffKinds(seed uint64) error {
	return env.diffKindsWith(seed, newMemnodeKinds(), "memnode")
}

// diffKindsWith is diffKinds through model, named name.
func (env *diffEnv) diffKindsWith(seed uint64, model kindModel, name string) error {
	if _, err := env.c.Do("FLUSHALL"); err != nil {
		return err
	}
	g := newGen(seed)
	env.window = 0
	var shifted, start time.Duration
	fail := func(step int, what string, args ...any) error {
		return fmt.Errorf("kinds: seed %d, step %d: "+what, append([]any{seed, step}, args...)...)
	}
	for i := range steps {
		cmd, step := g.kindCommand()
		if step > 0 {
			if err := env.shiftKinds(step); err != nil {
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
		mark := model.state(t1, shifted).Mark
		own := mark != (heldKey{}) && core.SameAcquisition(mark.Token, cmd.Token) && cmd.Kind == core.KindWrite && cmd.Op == core.OpRelease
		got := env.run(0, cmd, g.brk)
		want := model.apply(cmd, g.brk, t1, shifted)
		t2, err := env.now()
		if err != nil {
			return err
		}
		env.window = max(env.window, t2-t1)
		if t2-start > grid/4 {
			return fail(i, "the sequence has run %v on the server, too long for grid %v", t2-start, grid)
		}
		desc := fmt.Sprintf("%s %s %+v%s", cmd.Kind, cmd.Op, cmd, resentNames[g.brk])
		if env.seen != nil {
			env.seen[fmt.Sprintf("%s %s %s", cmd.Kind, cmd.Op, got.Status)]++
		}
		if got.Err != nil || want.Err != nil || got.Status != want.Status || got.Fence != want.Fence ||
			got.TTL > want.TTL+env.window || got.TTL < want.TTL-env.window {
			return fail(i, "%s: the scripts reply %v fence %d TTL %v (err %v), %s %v fence %d TTL %v (err %v)",
				desc, got.Status, got.Fence, got.TTL, got.Err, name, want.Status, want.Fence, want.TTL, want.Err)
		}
		srv, err := env.kindState(t2)
		if err != nil {
			return fail(i, "%s: %v", desc, err)
		}
		mod := model.state(t2, shifted)
		if !sameKindState(srv, mod, env.window) {
			return fail(i, "%s (reply %v): the server holds %+v, %s %+v (window %v)", desc, got.Status, srv, name, mod, env.window)
		}
		if env.seen != nil && own {
			env.seen[map[bool]string{true: "write release keeps its own mark", false: "write release deletes its own mark"}[mod.Mark != (heldKey{})]]++
		}
	}
	return nil
}

// firstKindsDiff returns the first difference of kinds sequences 1 to
// diffSeeds, or nil.
func (env *diffEnv) firstKindsDiff() error {
	for seed := uint64(1); seed <= diffSeeds; seed++ {
		if err := env.diffKinds(seed); err != nil {
			return err
		}
	}
	return nil
}

// kindsMatchMemnode is TestScriptsMatchMemnode of the kinds: see
// kindCommand. A failure names the seed and step that replay it.
func kindsMatchMemnode(t *testing.T, env *diffEnv) {
	env.seen = map[string]int{}
	defer func() { env.seen = nil }()
	require.NoError(t, env.firstKindsDiff())
	// Every outcome of every command was met, so that the sequences
	// cover what they compare.
	for _, kind := range []string{"read", "write", "all"} {
		for _, op := range []string{"acquire", "acquire-fenced"} {
			for _, st := range []string{"ok", "held"} {
				require.NotZero(t, env.seen[kind+" "+op+" "+st], "%s %s %s never met: %v", kind, op, st, env.seen)
			}
		}
	}
	for _, c := range []string{"read release ok", "read release missing", "read extend ok", "read extend missing",
		"write release ok", "write release held", "write release missing", "write extend ok", "write raise-fence ok",
		"write release keeps its own mark", "write release deletes its own mark",
		"all release ok", "all release held", "all release missing", "all extend ok", "all extend held", "all extend missing",
		"all raise-fence ok", "all raise-fence held", "all raise-fence missing"} {
		require.NotZero(t, env.seen[c], "%s never met: %v", c, env.seen)
	}
	t.Logf("outcomes: %v", env.seen)
}

// TestKindScriptDiffSeesPlantedDefects: a copy of a shipped script of the
// kinds with one defect planted (a few words replaced), sent in its
// place, differs from memnode, and the test says where.
func TestKindScriptDiffSeesPlantedDefects(t *testing.T) {
	for _, m := range []struct {
		name   string
		script *wire.Script
		swaps  []string // old, new, old, new...
	}{
		{"a script that admits a reader beside a writer", &wire.ReadAcquire,
			[]string{`redis.call("EXISTS", KEYS[1], KEYS[3])`, `redis.call("EXISTS", KEYS[3])`}},
		{"a multi-key script that takes a subset", &wire.AllAcquire,
			[]string{`if held then`, `if false then`, `redis.call("SET", KEYS[i], ARGV[1], "PX", ARGV[2])`, `redis.call("SET", KEYS[i], ARGV[1], "NX", "PX", ARGV[2])`}},
		{"a writer admitted beside a reader", &wire.WriteAcquire,
			[]string{`if last[1] then`, `if false then`}},
		{"a reader admitted past a waiting writer's mark", &wire.ReadAcquire,
			[]string{`redis.call("EXISTS", KEYS[1], KEYS[3])`, `redis.call("EXISTS", KEYS[1])`}},
		{"a writer's mark that outlives its writer", &wire.WriteAcquire,
			[]string{`redis.call("DEL", KEYS[3])`, `redis.call("PTTL", KEYS[3])`}},
		{"a writer that knows its own mark by hex digits", &wire.WriteAcquire,
			[]string{`string.sub(m, 1, -9) == string.sub(ARGV[1], 1, -9)`, `string.sub(m, 1, -5) == string.sub(ARGV[1], 1, -5)`}},
		{"a writer's release that leaves its own mark", &wire.WriteRelease,
			[]string{`if ARGV[2] ~= "w" then`, `if false then`}},
		{"a waiting writer's cleanup that drops its mark", &wire.WriteRelease,
			[]string{`if ARGV[2] ~= "w" then`, `if true then`}},
		{"a writer's release that drops another writer's mark", &wire.WriteRelease,
			[]string{`string.sub(m, 1, -9) == string.sub(ARGV[1], 1, -9)`, `true`}},
		{"a reader's release that removes another reader", &wire.ReadRelease,
			[]string{`redis.call("ZREM", KEYS[2], ARGV[1])`, `redis.call("ZPOPMIN", KEYS[2])`}},
		{"an expired reader extended", &wire.ReadExtend,
			[]string{`if not s or tonumber(s) <= now then`, `if not s then`}},
		{"a multi-key release that frees another's keys", &wire.AllRelease,
			[]string{`if v == ARGV[1] then`, `if v then`}},
		{"a multi-key extension of some of the keys", &wire.AllExtend,
			[]string{`elseif missing then`, `elseif false then`}},
		{"a multi-key fence from the first counter", &wire.AllAcquire,
			[]string{`top, best = KEYS[i], v`, `top, best = KEYS[n + 1], v`}},
		{"a multi-key raise of one counter", &wire.AllRaiseFence,
			[]string{`for i = n + 1, 2 * n do`, `for i = n + 1, n + 1 do`}},
	} {
		t.Run(m.name, func(t *testing.T) {
			saved := *m.script
			src := saved.Src
			for k := 0; k < len(m.swaps); k += 2 {
				require.Contains(t, src, m.swaps[k], "the script to mutate changed")
				src = strings.Replace(src, m.swaps[k], m.swaps[k+1], 1)
			}
			sum := sha1.Sum([]byte(src)) //nolint:gosec // G401: the script's name for EVALSHA
			*m.script = wire.Script{Src: src, SHA1: hex.EncodeToString(sum[:])}
			t.Cleanup(func() { *m.script = saved })
			env := startDiff(t)
			err := env.firstKindsDiff()
			require.Error(t, err, "the planted defect went unseen")
			require.Contains(t, err.Error(), "seed ")
			t.Logf("%v", err)
		})
	}
}
