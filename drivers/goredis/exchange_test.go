package goredis_test

import (
	"bytes"
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock/drivers/engine"
	"github.com/redlock-go/redlock/drivers/goredis"
	"github.com/redlock-go/redlock/internal/redistest"
)

// dialConn dials srv as Dial does, with a minute for what follows.
func dialConn(t *testing.T, srv *redistest.Server) (context.Context, engine.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	c, err := goredis.DialConn(ctx, srv.Addr)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, c.Close()) })
	return ctx, c
}

// Every kind of reply comes back, from one command or a pipeline of
// several, and the commands made for one Exchange serve the next ones.
func TestExchangeReplies(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{})
	ctx, c := dialConn(t, srv)
	cmds := [][]string{{"SET", "k", "v"}, {"GET", "k"}, {"GET", "missing"}, {"INCR", "k"},
		{"RPUSH", "l", "a"}, {"LRANGE", "l", "0", "-1"}, {"INCR", "n"}, {"PING"}}
	replies := make([]engine.Reply, len(cmds))
	require.NoError(t, c.Exchange(ctx, cmds, replies))
	assert.Equal(t, engine.Reply{Kind: engine.KindOK}, replies[0])
	assert.Equal(t, engine.String("v"), replies[1])
	assert.Equal(t, engine.Reply{Kind: engine.KindNil}, replies[2])
	assert.Equal(t, engine.KindError, replies[3].Kind)
	assert.EqualError(t, replies[3].Err, "ERR value is not an integer or out of range")
	assert.Equal(t, engine.Reply{Kind: engine.KindInt, Int: 1}, replies[4])
	assert.Equal(t, engine.KindOther, replies[5].Kind, "an array: a reply, the connection in step")
	assert.ErrorContains(t, replies[5].Err, `"*1\r\n$1\r\na\r\n"`)
	assert.Equal(t, engine.Reply{Kind: engine.KindInt, Int: 1}, replies[6])
	assert.Equal(t, engine.String("PONG"), replies[7])

	// The same positions with other words, and of other lengths.
	cmds = [][]string{{"INCR", "n"}, {"GET", "n"}}
	replies = make([]engine.Reply, len(cmds))
	require.NoError(t, c.Exchange(ctx, cmds, replies))
	assert.Equal(t, []engine.Reply{{Kind: engine.KindInt, Int: 2}, engine.String("2")}, replies)
	one := make([]engine.Reply, 1)
	require.NoError(t, c.Exchange(ctx, [][]string{{"INCR", "n"}}, one))
	assert.Equal(t, engine.Reply{Kind: engine.KindInt, Int: 3}, one[0])
	require.NoError(t, c.Exchange(ctx, [][]string{{"SET", "n", "9", "XX"}}, one))
	assert.Equal(t, engine.Reply{Kind: engine.KindOK}, one[0])
	require.NoError(t, c.Exchange(ctx, [][]string{{"GET", "n"}}, one))
	assert.Equal(t, engine.String("9"), one[0])
}

// A connection that failed fails the Exchange, one command or several.
func TestExchangeFails(t *testing.T) {
	for _, cmds := range [][][]string{{{"PING"}}, {{"PING"}, {"PING"}}} {
		srv := redistest.Start(t, redistest.Options{})
		ctx, c := dialConn(t, srv)
		replies := make([]engine.Reply, len(cmds))
		require.NoError(t, c.Exchange(ctx, cmds, replies))
		srv.Kill()
		clear(replies)
		assert.Error(t, c.Exchange(ctx, cmds, replies), "%d commands", len(cmds))
		assert.Equal(t, make([]engine.Reply, len(cmds)), replies, "no reply")
	}
}

// go-redis does not send a command again when its reply is lost, whatever
// the client's MaxRetries: a SET NX sent again would find its own key.
func TestExchangeIsNotRetried(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer func() { assert.NoError(t, ln.Close()) }()
	var sets atomic.Int32
	go func() { // answers a HELLO as an old server, counts a SET, closes
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			buf := make([]byte, 4096)
			for {
				n, err := c.Read(buf)
				if bytes.Contains(buf[:n], []byte("SET")) {
					sets.Add(1)
				}
				if err != nil || !bytes.Contains(buf[:n], []byte("hello")) {
					break
				}
				_, _ = c.Write([]byte("-ERR unknown command 'hello'\r\n"))
			}
			_ = c.Close() // the test server's end: the client sees the connection go, as it should
		}
	}()
	client := redis.NewClient(&redis.Options{Addr: ln.Addr().String(), MaxRetries: 5, Protocol: 2,
		DisableIdentity: true, MinRetryBackoff: time.Millisecond, MaxRetryBackoff: time.Millisecond})
	defer func() { assert.NoError(t, client.Close()) }()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, cmds := range [][][]string{{{"SET", "k", "v", "NX"}}, {{"SET", "k", "v", "NX"}, {"PING"}}} {
		sets.Store(0)
		c, err := goredis.ClientConn(ctx, client)
		require.NoError(t, err)
		assert.Error(t, c.Exchange(ctx, cmds, make([]engine.Reply, len(cmds))))
		assert.NoError(t, c.Close())
		assert.Equal(t, int32(1), sets.Load(), "%d commands: the SET sent once", len(cmds))
	}
}
