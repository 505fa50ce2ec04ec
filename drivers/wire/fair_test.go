package wire

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/internal/redistest"
)

// TestFairQueueOnRedis runs the scripts' waiter queue (core.Config.Fair)
// on redis-server: failed attempts' cleanups queue their waiters by
// ticket, keeping their place; a release hands the key to the first
// waiter alone, announced on its turn channel; only that waiter's acquire
// takes the handed key, and may queue it again; stale entries are
// skipped; nobody waiting, nothing is announced.
func TestFairQueueOnRedis(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{})
	do := func(args ...any) any {
		t.Helper()
		r, err := srv.Do(args...)
		require.NoError(t, err, "%v", args)
		return r
	}
	q, due := QueueKeys("k")
	queue := func() []string {
		t.Helper()
		r := do("ZRANGE", q, 0, -1).([]any)
		ids := make([]string, len(r))
		for i, v := range r {
			ids[i] = v.(string)
		}
		return ids
	}
	// cleanup is a failed attempt's release that queues id with ticket.
	cleanup := func(tok, id string, ticket int) any {
		return do("EVAL", Release.Src, 3, "k", q, due, tok, id, ticket, 60000, 500)
	}
	release := func(tok string) any { return do("EVAL", Release.Src, 3, "k", q, due, tok, "", 0, 60000, 500) }
	probe := func(tok, id string) any { return do("EVAL", AcquireProbe.Src, 3, "k", q, due, tok, 60000, id) }

	do("SET", "k", "a", "PX", 60000)
	assert.Equal(t, int64(-1), cleanup("t1", "w1", 100))
	assert.Equal(t, int64(-1), cleanup("t2", "w2", 50))
	assert.Equal(t, int64(-1), cleanup("t1b", "w1", 300), "a waiter keeps its place")
	assert.Equal(t, []string{"w2", "w1"}, queue(), "by ticket")

	turns := srv.Subscribe(t, TurnChannel("w1", "k"), TurnChannel("w2", "k"), ReleaseChannel("k"))
	assert.Equal(t, int64(1), release("a"))
	assert.Equal(t, "~w2", do("GET", "k"), "handed to the first waiter")
	assert.LessOrEqual(t, do("PTTL", "k"), int64(500))
	assert.Equal(t, []string{"w1"}, queue(), "which left the queue")
	assert.Equal(t, []string{TurnChannel("w2", "k"), ""}, turns.Next(t), "told alone")

	assert.Nil(t, do("SET", "k", "x", "NX", "PX", 60000), "a plain SET NX cannot take a handed key")
	assert.Less(t, probe("t1", "w1"), int64(0), "nor another waiter")
	assert.Equal(t, "OK", probe("t2", "w2"))
	assert.Equal(t, "t2", do("GET", "k"))
	assert.InDelta(t, 60000, do("PTTL", "k"), 5000)

	assert.Equal(t, int64(1), release("t2"))
	assert.Equal(t, "~w1", do("GET", "k"))
	assert.Equal(t, []string{TurnChannel("w1", "k"), ""}, turns.Next(t))
	assert.Equal(t, "OK", probe("t1", "w1"))
	assert.Empty(t, queue())
	// A release that others of the process follow queues it again first:
	// nobody else waits, so the key is handed straight back to it.
	assert.Equal(t, int64(1), do("EVAL", Release.Src, 3, "k", q, due, "t1", "w1", 700, 60000, 500))
	assert.Equal(t, "~w1", do("GET", "k"))
	assert.Empty(t, queue())
	assert.Equal(t, []string{TurnChannel("w1", "k"), ""}, turns.Next(t))
	assert.Equal(t, "OK", probe("t1", "w1"))

	// A stale entry (its deadline passed) is skipped and dropped.
	assert.Equal(t, int64(-1), cleanup("t1x", "w1", 800))
	do("ZADD", q, 1, "gone")
	do("ZADD", due, 1, "gone")
	assert.Equal(t, int64(1), release("t1"))
	assert.Equal(t, "~w1", do("GET", "k"), "the stale first entry is skipped")
	assert.Empty(t, queue())
	assert.Equal(t, []string{TurnChannel("w1", "k"), ""}, turns.Next(t))

	// A waiter that takes a free key (its holder's expired) leaves the
	// queue there too.
	do("SET", "k", "other", "PX", 60000)
	assert.Equal(t, int64(-1), cleanup("t10", "w10", 40))
	assert.Equal(t, []string{"w10"}, queue())
	do("DEL", "k")
	assert.Equal(t, "OK", probe("t10b", "w10"))
	assert.Empty(t, queue())
	assert.Equal(t, int64(1), release("t10b"))
	do("SET", "k", "~w1", "PX", 500) // as the stale test left it

	// A waiter that won its quorum without a node where the key was then
	// handed to it releases the handed key there, to the next waiter.
	do("SET", "k", "~w11", "PX", 60000)
	assert.Equal(t, int64(-1), cleanup("t12", "w12", 50))
	assert.Equal(t, int64(1), do("EVAL", Release.Src, 3, "k", q, due, "t11", "w11", 0, 60000, 500), "w11's release")
	assert.Equal(t, "~w12", do("GET", "k"))
	do("DEL", "k")
	do("SET", "k", "~w1", "PX", 500)

	// A waiter that gives up leaves the queue (ticket -1), and frees a key
	// handed to it, to the next.
	do("DEL", "k")
	do("SET", "k", "other", "PX", 60000)
	assert.Equal(t, int64(-1), cleanup("t13", "w13", 60))
	assert.Equal(t, int64(-1), cleanup("t14", "w14", 70))
	assert.Equal(t, []string{"w13", "w14"}, queue())
	assert.Equal(t, int64(-1), cleanup("t13", "w13", -1), "the key is another's: only the entry goes")
	assert.Equal(t, []string{"w14"}, queue())
	do("SET", "k", "~w14", "PX", 60000)
	assert.Equal(t, int64(-1), cleanup("t15", "w15", 80))
	assert.Equal(t, int64(1), cleanup("t14", "w14", -1), "its handed key is freed, to the next")
	assert.Equal(t, "~w15", do("GET", "k"))
	assert.Empty(t, queue())
	do("DEL", "k")
	do("SET", "k", "~w1", "PX", 500)

	// Nobody waits: a release deletes and announces nothing.
	assert.Equal(t, "OK", probe("t3", "w1"))
	assert.Equal(t, int64(1), release("t3"))
	assert.Equal(t, int64(0), do("EXISTS", "k"))
	do("PUBLISH", ReleaseChannel("k"), "end")
	assert.Equal(t, []string{ReleaseChannel("k"), "end"}, turns.Next(t), "nothing was announced before")

	// A free key with waiters (a handed key that expired unused) goes to
	// the first of them at the next release or cleanup that finds it free.
	assert.Equal(t, int64(0), cleanup("t4", "w4", 10))
	assert.Equal(t, "~w4", do("GET", "k"), "the cleaner itself, first in line")

	// The fenced acquire takes a key handed to its waiter, and only then.
	fq, fdue := QueueKeys("k")
	fenced := func(tok, id string) any { return do("EVAL", AcquireFenced.Src, 4, "k", "fk", fq, fdue, tok, 60000, id) }
	assert.Less(t, fenced("t5", "w5"), int64(0))
	assert.Equal(t, int64(1), fenced("t4", "w4"))
	assert.Equal(t, "t4", do("GET", "k"))

	// The queue is bounded: a new waiter is not queued past 4096 entries.
	do("EVAL", "for i = 1, 4096 do redis.call('ZADD', KEYS[1], i, 'x' .. i) end", 1, q)
	assert.Equal(t, int64(-1), cleanup("t6", "late", 5000))
	assert.Nil(t, do("ZSCORE", q, "late"))
}

// TestQueueKeysAreRefused: core refuses, with Config.Fair, the keys that
// name the queues the scripts keep: its own names for them are these.
func TestQueueKeysAreRefused(t *testing.T) {
	spec, err := core.NewSpec(threeNodes{}, core.Config{Fair: true, Tokens: oneToken{}, Jitter: zeroRand{}})
	require.NoError(t, err)
	for _, key := range []string{QueuePrefix + "k", QueueDuePrefix + "k"} {
		_, err := spec.Acquire(key, core.Token{}, time.Unix(1, 0))
		assert.ErrorIs(t, err, core.ErrInvalidConfig, key)
	}
}

type threeNodes struct{}

func (threeNodes) Nodes() int                       { return 3 }
func (threeNodes) NodeName(i int) string            { return "n" + strconv.Itoa(i) }
func (threeNodes) Begin(context.Context) core.Batch { return nil }

type oneToken struct{}

func (oneToken) NewToken() core.Token { return core.TokenFromUint64s(1, 1) }

type zeroRand struct{}

func (zeroRand) Uint64() uint64 { return 0 }

// TestFairReleaseResentOnRedis: a Fair release sent again (Resent) has
// the effects of a first run only if it deletes the caller's token, so
// that run after a first run it changes nothing, and in its place it
// does all a first run would.
func TestFairReleaseResentOnRedis(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{})
	do := func(args ...any) any {
		t.Helper()
		r, err := srv.Do(args...)
		require.NoError(t, err, "%v", args)
		return r
	}
	q, due := QueueKeys("k")
	queue := func() []any {
		t.Helper()
		return do("ZRANGE", q, 0, -1).([]any)
	}
	release := func(tok, id string, ticket int, resent bool) any {
		args := []any{"EVAL", Release.Src, 3, "k", q, due, tok, id, ticket, 60000, 500}
		if resent {
			args = append(args, Resent)
		}
		return do(args...)
	}

	// Run twice: a release that others of w1's process follow hands the
	// key to w1 itself; the second run neither frees that key nor puts
	// w1 back in the queue.
	do("SET", "k", "a", "PX", 60000)
	assert.Equal(t, int64(1), release("a", "w1", 7, false))
	assert.Equal(t, "~w1", do("GET", "k"), "handed to the caller's process")
	assert.Empty(t, queue())
	assert.Equal(t, int64(-1), release("a", "w1", 7, true), "the resend")
	assert.Equal(t, "~w1", do("GET", "k"), "still the process's")
	assert.Empty(t, queue(), "w1 not queued again")

	// The first run lost: the resend has all its effects.
	do("SET", "k", "b", "PX", 60000)
	do("ZADD", q, 5, "w2")
	do("ZADD", due, 1<<50, "w2")
	turns := srv.Subscribe(t, TurnChannel("w2", "k"))
	assert.Equal(t, int64(1), release("b", "w1", 0, true))
	assert.Equal(t, "~w2", do("GET", "k"), "handed on")
	assert.Equal(t, []string{TurnChannel("w2", "k"), ""}, turns.Next(t), "and announced")
	assert.Empty(t, queue())

	// The key gone, a waiter queued: the resend cannot tell whether its
	// first run freed the key, and hands nothing on; a leave still leaves.
	do("DEL", "k")
	do("ZADD", q, 5, "w2", 6, "w1")
	do("ZADD", due, 1<<50, "w2", 1<<50, "w1")
	assert.Equal(t, int64(0), release("c", "w1", -1, true))
	assert.Equal(t, int64(0), do("EXISTS", "k"), "not handed on")
	assert.Equal(t, []any{"w2"}, queue(), "w1 left")
	assert.Equal(t, int64(0), release("c", "w3", 9, true))
	assert.Equal(t, []any{"w2"}, queue(), "w3 not queued: its first run may have been handed the key")
	assert.Equal(t, int64(0), release("c", "w2", 9, true))
	assert.Equal(t, []any{"w2"}, queue(), "w2 keeps its place")
	assert.Equal(t, int64(0), release("c", "w2", 0, false), "a first run")
	assert.Equal(t, "~w2", do("GET", "k"), "hands the free key on")
}
