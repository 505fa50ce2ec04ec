package goredis

import (
	"bytes"
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-go/redlock/drivers/engine"
)

// conn is one node's connection, a go-redis Conn (Client.Conn) holding one
// connection of its client's pool: the engine's Conn. Its commands are
// made once and sent again with new words: RawWriteToCmd, whose arguments
// are *string (boxed once, pointing at words) and whose reply go-redis
// copies, unparsed, into a buffer that the engine's RESP reader decodes.
type conn struct {
	rc    *redis.Conn
	pipe  redis.Pipeliner // rc's, for pipelines of several commands
	close func() error
	slots [][]*command // slots[i][n]: the command at position i with n words
	batch []redis.Cmder
}

func newConn(rc *redis.Conn, close func() error) *conn {
	return &conn{rc: rc, pipe: rc.Pipeline(), close: close}
}

func (c *conn) Close() error { return c.close() }

// Exchange sends cmds, one as a command (Process), several as a pipeline.
// go-redis returns an error only when the connection failed: the commands
// keep error replies in their replies, as the raw RESP they are.
func (c *conn) Exchange(ctx context.Context, cmds [][]string, replies []engine.Reply) error {
	c.batch = c.batch[:0]
	for i, words := range cmds {
		c.batch = append(c.batch, c.command(i, words).cmd)
	}
	var err error
	switch len(c.batch) {
	case 0:
	case 1:
		err = c.rc.Process(ctx, c.batch[0])
	default:
		_ = c.pipe.BatchProcess(ctx, c.batch...)
		_, err = c.pipe.Exec(ctx)
	}
	for i, words := range cmds {
		cmd := c.slots[i][len(words)]
		if err == nil {
			replies[i] = cmd.reply.decode()
		}
		clear(cmd.words) // the engine's memory, reused after Exchange
	}
	return err
}

// command returns the command at position i of a pipeline, for words.
func (c *conn) command(i int, words []string) *command {
	if i == len(c.slots) {
		c.slots = append(c.slots, nil)
	}
	n := len(words)
	if n >= len(c.slots[i]) {
		c.slots[i] = append(c.slots[i], make([]*command, n+1-len(c.slots[i]))...)
	}
	cmd := c.slots[i][n]
	if cmd == nil {
		cmd = newCommand(n)
		c.slots[i][n] = cmd
	}
	copy(cmd.words, words)
	cmd.reply.Reset()
	return cmd
}

// command is a go-redis command of n words, made once and sent again.
type command struct {
	cmd   *redis.RawWriteToCmd
	words []string
	reply reply
}

func newCommand(n int) *command {
	c := &command{words: make([]string, n)}
	args := make([]any, n)
	for k := range args {
		args[k] = &c.words[k]
	}
	c.cmd = redis.NewRawWriteToCmd(context.Background(), &c.reply, args...)
	return c
}

// reply holds one raw RESP reply, as go-redis read it, and reads it back as
// the engine's RESPReader (bytes.Buffer lacks ReadSlice).
type reply struct{ bytes.Buffer }

func (r *reply) ReadSlice(delim byte) ([]byte, error) {
	if i := bytes.IndexByte(r.Bytes(), delim); i >= 0 {
		return r.Next(i + 1), nil
	}
	return nil, engine.ErrProtocol
}

// decode returns the reply. go-redis read it whole, so a reply of a type
// the engine does not decode (an array, a double) leaves the connection in
// step: it is a reply (KindOther), not a failure.
func (r *reply) decode() engine.Reply {
	raw := r.Bytes()
	v, err := engine.ReadReply(r)
	if err != nil {
		return engine.Reply{Kind: engine.KindOther, Err: fmt.Errorf("unexpected reply %q", raw)}
	}
	return v
}
