package measure

import (
	"bufio"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// olderRedis serves INFO as Redis before 7.0 does: one section per
// command, and a syntax error for more; every other command is refused.
func olderRedis(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	t.Cleanup(func() {
		_ = ln.Close() // ends Accept
		<-done
	})
	go func() {
		defer close(done)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer func() { _ = c.Close() }() // the test is over
		r := bufio.NewReader(c)
		for {
			args, err := readCommand(r)
			if err != nil {
				return
			}
			reply := "-ERR syntax error\r\n"
			if len(args) == 2 && strings.EqualFold(args[0], "INFO") {
				s := map[string]string{
					"cpu":   "# CPU\r\nused_cpu_sys:1.5\r\nused_cpu_user:2.5\r\n",
					"stats": "# Stats\r\ntotal_commands_processed:9\r\ntotal_reads_processed:7\r\n",
				}[args[1]]
				reply = "$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n"
			}
			if _, err := io.WriteString(c, reply); err != nil {
				return
			}
		}
	}()
	return ln.Addr().String()
}

// readCommand reads one command of bulk strings.
func readCommand(r *bufio.Reader) ([]string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "*")))
	if err != nil {
		return nil, err
	}
	args := make([]string, n)
	for i := range args {
		if _, err := r.ReadString('\n'); err != nil { // $len
			return nil, err
		}
		a, err := r.ReadString('\n')
		if err != nil {
			return nil, err
		}
		args[i] = strings.TrimSuffix(a, "\r\n")
	}
	return args, nil
}

// A server that takes one INFO section per command (Redis 6) still has
// its CPU and its reads read: Usage asks for each section on its own.
func TestUsageOfAServerWithOneSectionPerInfo(t *testing.T) {
	s, err := DialServers([]string{olderRedis(t)}, ServerOptions{})
	require.NoError(t, err)
	defer s.Close()
	u, err := s.Usage()
	require.NoError(t, err)
	assert.Equal(t, Usage{CPU: 4 * time.Second, Reads: 7}, u)
	u, err = s.Usage()
	require.NoError(t, err, "the connection is still in step")
	assert.Equal(t, 4*time.Second, u.CPU)
}
