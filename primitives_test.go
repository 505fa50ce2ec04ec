package redlock_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/core/memnode"
	"github.com/redlock-go/redlock/internal/testguard"
)

// recordingNodes is memnode with a record of every command sent, and,
// with refuse set, a core.KeysChecker that refuses keys as a cluster
// member would refuse keys of several hash slots.
type recordingNodes struct {
	*memnode.Cluster
	refuse error // CheckKeys's answer

	mu      sync.Mutex
	sent    []core.Command
	checked [][]string
}

func newRecordingNodes(refuse error) *recordingNodes {
	return &recordingNodes{Cluster: memnode.New(3, core.SystemClock{}), refuse: refuse}
}

func (d *recordingNodes) CheckKeys(keys []string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.checked = append(d.checked, append([]string(nil), keys...))
	return d.refuse
}

func (d *recordingNodes) Begin(ctx context.Context) core.Batch {
	return recordingBatch{d.Cluster.Begin(ctx), d}
}

// commands returns the commands sent so far.
func (d *recordingNodes) commands() []core.Command {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]core.Command(nil), d.sent...)
}

type recordingBatch struct {
	core.Batch
	d *recordingNodes
}

func (b recordingBatch) Send(node int, cmd core.Command, deadline time.Time) {
	b.d.mu.Lock()
	b.d.sent = append(b.d.sent, cmd)
	b.d.mu.Unlock()
	b.Batch.Send(node, cmd, deadline)
}

var _ core.KeysChecker = (*recordingNodes)(nil)

// oneKind fails the test unless err matches exactly one of the kinds
// (core's sentinels), want.
func oneKind(t *testing.T, err error, want error) {
	t.Helper()
	require.Error(t, err)
	var kinds []error
	for kind := range outcomeOfKind {
		if errors.Is(err, kind) {
			kinds = append(kinds, kind)
		}
	}
	assert.Equal(t, []error{want}, kinds, "the kinds of %v", err)
}

// TestPrimitivesRefuseBadInput: bad input to RLock, WLock, LockAll and
// their Try variants is refused with an error of one kind,
// ErrInvalidConfig, before anything is sent: an empty key, no keys, a
// key given twice, more than core.MaxKeys keys, and, on a Fair Client,
// any waiting acquisition of a kind other than the mutex, whose waiter
// queues they do not share. A Fair Client's Try variants run without
// Fair.
func TestPrimitivesRefuseBadInput(t *testing.T) {
	ctx := testguard.Context(t)
	many := make([]string, core.MaxKeys+1)
	for i := range many {
		many[i] = "k" + strconv.Itoa(i)
	}
	type call func(c *redlock.Client) (*redlock.Lock, error)
	for _, tc := range []struct {
		name string
		fair bool
		call call
	}{
		{"RLock of an empty key", false, func(c *redlock.Client) (*redlock.Lock, error) { return c.RLock(ctx, "") }},
		{"TryRLock of an empty key", false, func(c *redlock.Client) (*redlock.Lock, error) { return c.TryRLock(ctx, "") }},
		{"WLock of an empty key", false, func(c *redlock.Client) (*redlock.Lock, error) { return c.WLock(ctx, "") }},
		{"TryWLock of an empty key", false, func(c *redlock.Client) (*redlock.Lock, error) { return c.TryWLock(ctx, "") }},
		{"LockAll of no keys", false, func(c *redlock.Client) (*redlock.Lock, error) { return c.LockAll(ctx) }},
		{"TryLockAll of an empty list", false, func(c *redlock.Client) (*redlock.Lock, error) { return c.TryLockAll(ctx, []string{}...) }},
		{"LockAll of a key twice", false, func(c *redlock.Client) (*redlock.Lock, error) { return c.LockAll(ctx, "a", "b", "a") }},
		{"TryLockAll of a key twice", false, func(c *redlock.Client) (*redlock.Lock, error) { return c.TryLockAll(ctx, "a", "a") }},
		{"LockAll of an empty key", false, func(c *redlock.Client) (*redlock.Lock, error) { return c.LockAll(ctx, "a", "") }},
		{"LockAll of too many keys", false, func(c *redlock.Client) (*redlock.Lock, error) { return c.LockAll(ctx, many...) }},
		{"Fair RLock", true, func(c *redlock.Client) (*redlock.Lock, error) { return c.RLock(ctx, "k") }},
		{"Fair WLock", true, func(c *redlock.Client) (*redlock.Lock, error) { return c.WLock(ctx, "k") }},
		{"Fair LockAll", true, func(c *redlock.Client) (*redlock.Lock, error) { return c.LockAll(ctx, "a", "b") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newRecordingNodes(nil)
			c, err := redlock.NewClient(d, redlock.Options{Fair: tc.fair})
			require.NoError(t, err)
			l, err := tc.call(c)
			assert.Nil(t, l)
			oneKind(t, err, redlock.ErrInvalidConfig)
			assert.Empty(t, d.commands(), "commands sent for bad input")
			assert.Zero(t, callsTo(d.Cluster))
		})
	}
	t.Run("Fair Try variants run without Fair", func(t *testing.T) {
		d := newRecordingNodes(nil)
		c, err := redlock.NewClient(d, redlock.Options{Fair: true})
		require.NoError(t, err)
		for _, try := range []call{
			func(c *redlock.Client) (*redlock.Lock, error) { return c.TryRLock(ctx, "r") },
			func(c *redlock.Client) (*redlock.Lock, error) { return c.TryWLock(ctx, "w") },
			func(c *redlock.Client) (*redlock.Lock, error) { return c.TryLockAll(ctx, "a", "b") },
		} {
			l, err := try(c)
			require.NoError(t, err)
			require.NoError(t, l.Unlock(ctx))
		}
		for _, cmd := range d.commands() {
			assert.False(t, cmd.Fair, "%v of %v sent Fair", cmd.Op, cmd.Kind)
			assert.Zero(t, cmd.Ticket, "%v of %v queued", cmd.Op, cmd.Kind)
		}
	})
}

// TestLockAllAsksTheDriverFirst: LockAll and TryLockAll ask a driver
// that can tell (core.KeysChecker) whether its nodes take the keys in one
// script, before anything is sent. Its refusal is an error of one kind,
// ErrInvalidConfig, that wraps the driver's (naming the node) and names
// the first key; nothing is sent. Keys it accepts are locked.
func TestLockAllAsksTheDriverFirst(t *testing.T) {
	ctx := testguard.Context(t)
	crossSlot := errors.New("node 1 (cluster:7001): keys \"a\" and \"b\" are in hash slots 15495 and 3300")
	for _, try := range []bool{false, true} {
		t.Run("try="+strconv.FormatBool(try), func(t *testing.T) {
			d := newRecordingNodes(crossSlot)
			c, err := redlock.NewClient(d, redlock.Options{})
			require.NoError(t, err)
			lockAll := c.LockAll
			if try {
				lockAll = c.TryLockAll
			}
			l, err := lockAll(ctx, "a", "b")
			assert.Nil(t, l)
			oneKind(t, err, redlock.ErrInvalidConfig)
			assert.ErrorIs(t, err, crossSlot)
			assert.Contains(t, err.Error(), "cluster:7001")
			assert.Contains(t, err.Error(), `"a"`)
			assert.Empty(t, d.commands(), "commands sent for keys the driver refused")
			assert.Equal(t, [][]string{{"a", "b"}}, d.checked)

			d.refuse = nil
			l, err = lockAll(ctx, "a", "b")
			require.NoError(t, err)
			require.NoError(t, l.Unlock(ctx))
			assert.Len(t, d.checked, 2)
		})
	}
	t.Run("not for one key", func(t *testing.T) {
		d := newRecordingNodes(crossSlot)
		c, err := redlock.NewClient(d, redlock.Options{})
		require.NoError(t, err)
		for _, l := range []func() (*redlock.Lock, error){
			func() (*redlock.Lock, error) { return c.TryLock(ctx, "a") },
			func() (*redlock.Lock, error) { return c.TryRLock(ctx, "b") },
			func() (*redlock.Lock, error) { return c.TryWLock(ctx, "c") },
		} {
			lk, err := l()
			require.NoError(t, err)
			require.NoError(t, lk.Unlock(ctx))
		}
		assert.Empty(t, d.checked, "keys of one-key locks were checked")
	})
}

// TestPrimitivesCommandsCarryTheirKind: every command of a reader's, a
// writer's and a multi-key lock's acquisition, extension and release
// carries its kind (and a multi-key lock's keys, copied from the
// caller's, which the caller may then reuse); under Fencing a reader
// sends no fence raise, and the others do.
func TestPrimitivesCommandsCarryTheirKind(t *testing.T) {
	ctx := testguard.Context(t)
	type take func(c *redlock.Client) (*redlock.Lock, error)
	for _, tc := range []struct {
		kind  core.Kind
		key   string
		keys  []string
		take  take
		raise bool
	}{
		{core.KindRead, "r", nil, func(c *redlock.Client) (*redlock.Lock, error) { return c.RLock(ctx, "r") }, false},
		{core.KindRead, "r", nil, func(c *redlock.Client) (*redlock.Lock, error) { return c.TryRLock(ctx, "r") }, false},
		{core.KindWrite, "w", nil, func(c *redlock.Client) (*redlock.Lock, error) { return c.WLock(ctx, "w") }, true},
		{core.KindWrite, "w", nil, func(c *redlock.Client) (*redlock.Lock, error) { return c.TryWLock(ctx, "w") }, true},
		{core.KindAll, "a", []string{"a", "b", "c"}, func(c *redlock.Client) (*redlock.Lock, error) {
			keys := []string{"a", "b", "c"}
			l, err := c.LockAll(ctx, keys...)
			keys[0], keys[1] = "x", "y" // the caller reuses its slice
			return l, err
		}, true},
		{core.KindAll, "a", []string{"a", "b", "c"}, func(c *redlock.Client) (*redlock.Lock, error) {
			keys := []string{"a", "b", "c"}
			l, err := c.TryLockAll(ctx, keys...)
			keys[2] = "z"
			return l, err
		}, true},
	} {
		t.Run(tc.kind.String(), func(t *testing.T) {
			d := newRecordingNodes(nil)
			c, err := redlock.NewClient(d, redlock.Options{Fencing: true})
			require.NoError(t, err)
			l, err := tc.take(c)
			require.NoError(t, err)
			assert.Equal(t, tc.key, l.Key())
			require.NoError(t, l.Extend(ctx))
			require.NoError(t, l.Unlock(ctx))
			ops := map[core.Op]int{}
			for _, cmd := range d.commands() {
				ops[cmd.Op]++
				assert.Equal(t, tc.kind, cmd.Kind, "%v", cmd.Op)
				assert.Equal(t, tc.key, cmd.Key, "%v", cmd.Op)
				assert.Equal(t, tc.keys, cmd.Keys.All(), "%v", cmd.Op)
			}
			assert.Equal(t, 3, ops[core.OpAcquireFenced])
			assert.Equal(t, 3, ops[core.OpExtend])
			assert.Equal(t, 3, ops[core.OpRelease])
			if tc.raise {
				assert.Equal(t, 3, ops[core.OpRaiseFence])
			} else {
				assert.Zero(t, ops[core.OpRaiseFence], "a reader raised the fence")
			}
		})
	}
}

// TestPrimitivesObserved: the Observer's events of a multi-key lock name
// its first key, and of a reader or writer its key.
func TestPrimitivesObserved(t *testing.T) {
	ctx := testguard.Context(t)
	var mu sync.Mutex
	var acquired, released []string
	obs := redlock.Observer{
		Acquire: func(e redlock.AcquireEvent) { mu.Lock(); acquired = append(acquired, e.Key); mu.Unlock() },
		Release: func(e redlock.ReleaseEvent) { mu.Lock(); released = append(released, e.Key); mu.Unlock() },
	}
	c, err := redlock.NewClient(memnode.New(3, core.SystemClock{}), redlock.Options{Observer: obs})
	require.NoError(t, err)
	for _, take := range []func() (*redlock.Lock, error){
		func() (*redlock.Lock, error) { return c.LockAll(ctx, "first", "second") },
		func() (*redlock.Lock, error) { return c.TryRLock(ctx, "r") },
		func() (*redlock.Lock, error) { return c.WLock(ctx, "w") },
	} {
		l, err := take()
		require.NoError(t, err)
		require.NoError(t, l.Unlock(ctx))
	}
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"first", "r", "w"}, acquired)
	assert.Equal(t, []string{"first", "r", "w"}, released)
}

// TestPrimitivesAllocations: the uncontended Try and Unlock of a reader
// and of a writer, over memnode, allocate the Lock alone, as the mutex's
// do; a multi-key lock allocates its copy of the keys and core's
// KeyList of them besides.
func TestPrimitivesAllocations(t *testing.T) {
	c, err := redlock.NewClient(memnode.New(3, core.SystemClock{}), redlock.Options{})
	require.NoError(t, err)
	ctx := testguard.Context(t)
	for _, tc := range []struct {
		name   string
		take   func() (*redlock.Lock, error)
		allocs float64
	}{
		{"TryRLock", func() (*redlock.Lock, error) { return c.TryRLock(ctx, "r") }, 1},
		{"TryWLock", func() (*redlock.Lock, error) { return c.TryWLock(ctx, "w") }, 1},
		{"TryLockAll", func() (*redlock.Lock, error) { return c.TryLockAll(ctx, "a", "b") }, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			allocs := testing.AllocsPerRun(200, func() {
				l, err := tc.take()
				if err != nil {
					t.Fatal(err)
				}
				if err := l.Unlock(ctx); err != nil {
					t.Fatal(err)
				}
			})
			assert.Equal(t, tc.allocs, allocs, "allocations per %s+Unlock", tc.name)
		})
	}
}
