package radix_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock/drivers"
	"github.com/redlock-go/redlock/drivers/internal/engine"
	"github.com/redlock-go/redlock/drivers/radix"
	"github.com/redlock-go/redlock/internal/redistest"
)

// TestClusterExchange: one pipeline over two masters, through the
// member's Conn. Commands on one key run in order (a release behind the
// SET it undoes); with one master dead, the pipeline fails and the live
// master's replies are still returned, for their rounds (their SETs ran).
func TestClusterExchange(t *testing.T) {
	cl := redistest.StartCluster(t, redistest.ClusterOptions{Replicas: -1})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := radix.MemberConn(ctx, drivers.NewCluster(cl.Addrs()...))
	require.NoError(t, err)
	defer func() { assert.NoError(t, conn.Close()) }()
	_, _, err = conn.(engine.Identifier).Identify(ctx)
	require.NoError(t, err)
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
	_, err = cl.MasterForKey(dead).Do("DEL", dead)
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
