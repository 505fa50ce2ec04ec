package radix_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	radixv4 "github.com/mediocregopher/radix/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock/drivers"
	"github.com/redlock-go/redlock/drivers/engine"
	"github.com/redlock-go/redlock/drivers/radix"
	"github.com/redlock-go/redlock/internal/redistest"
)

// TestClusterExchange: one pipeline over two masters, through the
// member's Conn. Commands on one key run in order (a release behind the
// SET it undoes); with one master dead, the pipeline fails and the live
// master's replies are still returned, for their rounds (their SETs ran).
func TestClusterExchange(t *testing.T) {
	cl, conn, ctx := dialCluster(t)
	dead, live := "k0", ""
	for i := 1; live == ""; i++ {
		if k := "k" + strconv.Itoa(i); cl.MasterForKey(k) != cl.MasterForKey(dead) {
			live = k
		}
	}
	set := func(k, tok string) []string { return []string{"SET", k, tok, "NX", "PX", "10000"} }
	replies := make([]engine.Reply, 4)
	require.NoError(t, conn.Exchange(ctx, [][]string{set(dead, "a"), {"DEL", dead}, set(dead, "b"), set(live, "c")}, replies))
	assert.Equal(t, []engine.Kind{engine.KindOK, engine.KindInt, engine.KindOK, engine.KindOK},
		[]engine.Kind{replies[0].Kind, replies[1].Kind, replies[2].Kind, replies[3].Kind}, "%v", replies)
	assert.Equal(t, "b", get(t, cl.MasterForKey(dead), dead), "in order on one key")
	_, err := cl.MasterForKey(dead).Do("DEL", dead)
	require.NoError(t, err)
	_, err = cl.MasterForKey(live).Do("DEL", live)
	require.NoError(t, err)

	cl.MasterForKey(dead).Kill()
	replies = make([]engine.Reply, 2)
	err = conn.Exchange(ctx, [][]string{set(dead, "t"), set(live, "t")}, replies)
	require.Error(t, err, "a master is dead")
	assert.Equal(t, engine.KindNone, replies[0].Kind)
	assert.Equal(t, engine.KindOK, replies[1].Kind, "the live master's reply")
	assert.Equal(t, "t", get(t, cl.MasterForKey(live), live))
}

// TestClusterExchangeFollowsASK: while a slot migrates, a command on a
// key the old master no longer has is answered ASK, and radix sends it
// again to the new master behind ASKING, two replies read as one. The
// write lands on the new master, its reply is the command's, and the
// connection stays in step: the next command on that master, in the
// same pipeline and in the next, reads its own reply.
func TestClusterExchangeFollowsASK(t *testing.T) {
	cl, conn, ctx := dialCluster(t)

	moving := "ask-k0"
	from := cl.MasterForKey(moving)
	var to *redistest.Server
	for _, m := range cl.Masters() {
		if m != from {
			to = m
			break
		}
	}
	stays := "" // a key of another slot, on the new master
	for i := 1; stays == ""; i++ {
		if k := "ask-k" + strconv.Itoa(i); cl.MasterForKey(k) == to {
			stays = k
		}
	}
	slot := radixv4.ClusterSlot([]byte(moving))
	_, err := to.Do("CLUSTER", "SETSLOT", slot, "IMPORTING", cl.NodeID(from))
	require.NoError(t, err)
	_, err = from.Do("CLUSTER", "SETSLOT", slot, "MIGRATING", cl.NodeID(to))
	require.NoError(t, err)

	set := func(k, tok string) []string { return []string{"SET", k, tok, "NX", "PX", "10000"} }
	replies := make([]engine.Reply, 3)
	require.NoError(t, conn.Exchange(ctx, [][]string{set(moving, "a"), set(stays, "b"), {"GET", stays}}, replies))
	assert.Equal(t, []engine.Kind{engine.KindOK, engine.KindOK, engine.KindString},
		[]engine.Kind{replies[0].Kind, replies[1].Kind, replies[2].Kind}, "%v", replies)
	assert.Equal(t, "b", replies[2].Text, "the GET's own reply")
	got, err := to.DoAll([]any{"ASKING"}, []any{"GET", moving})
	require.NoError(t, err)
	assert.Equal(t, "a", got[1], "the write went to the new master")

	replies = make([]engine.Reply, 2)
	require.NoError(t, conn.Exchange(ctx, [][]string{{"GET", stays}, set(moving, "c")}, replies))
	assert.Equal(t, engine.KindString, replies[0].Kind, "%v", replies)
	assert.Equal(t, "b", replies[0].Text)
	assert.Equal(t, engine.KindNil, replies[1].Kind, "NX on the key the ASK wrote: %v", replies)
}

// dialCluster starts a Cluster of three masters and returns a member's
// Conn to it, identified, and a context for the test; both end with it.
func dialCluster(t *testing.T) (*redistest.Cluster, engine.Conn, context.Context) {
	cl := redistest.StartCluster(t, redistest.ClusterOptions{Replicas: -1})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	conn, err := radix.MemberConn(ctx, drivers.NewCluster(cl.Addrs()...))
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, conn.Close()) })
	_, _, err = conn.(engine.Identifier).Identify(ctx)
	require.NoError(t, err)
	return cl, conn, ctx
}
