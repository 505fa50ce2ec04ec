package fencedstore

import (
	"bufio"
	"context"
	"errors"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/redlock-go/redlock/internal/testguard"
)

// TestMain arms the hang guard (internal/testguard), then runs the tests
// and checks that none left a goroutine behind.
func TestMain(m *testing.M) {
	testguard.Arm()
	goleak.VerifyTestMain(m)
}

func TestStore(t *testing.T) {
	s := New()
	_, ok := s.Latest()
	assert.False(t, ok)
	require.NoError(t, s.Write(1, "a"))
	require.NoError(t, s.Write(3, "b"))
	require.NoError(t, s.Write(3, "b again"), "equal is accepted: one holder, two writes")
	err := s.Write(2, "stale")
	require.ErrorIs(t, err, ErrStale)
	assert.EqualError(t, err, "fencedstore: stale fence: 2 is lower than 3, already accepted")
	require.NoError(t, s.Write(1<<63-1, "max"))
	assert.Equal(t, []Write{{1, "a"}, {3, "b"}, {3, "b again"}, {1<<63 - 1, "max"}}, s.Accepted())
	assert.Equal(t, []Write{{2, "stale"}}, s.Rejected())
	assert.Equal(t, uint64(1<<63-1), s.Highest())
	v, ok := s.Latest()
	assert.True(t, ok)
	assert.Equal(t, "max", v)
}

func TestUnfenced(t *testing.T) {
	s := Unfenced()
	require.NoError(t, s.Write(2, "new"))
	require.NoError(t, s.Write(1, "stale"), "an unfenced store cannot tell")
	require.NoError(t, s.Write(0, "no fence at all"))
	assert.Empty(t, s.Rejected())
	v, _ := s.Latest()
	assert.Equal(t, "no fence at all", v, "the stale writes landed last")
}

func serve(t *testing.T, s *Store) *Server {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := Serve(s, l)
	t.Cleanup(func() { _ = srv.Close() }) // a second Close fails: tests may close it first
	return srv
}

func dial(t *testing.T, srv *Server) *Client {
	c, err := Dial(context.Background(), srv.Addr(), 5*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, c.Close()) })
	return c
}

func TestOverTheNetwork(t *testing.T) {
	s := New()
	srv := serve(t, s)
	c := dial(t, srv)
	require.NoError(t, c.Write(5, "five\nwith a newline and \"quotes\""))
	require.NoError(t, c.Write(5, ""))
	err := c.Write(4, "stale")
	require.ErrorIs(t, err, ErrStale)
	assert.EqualError(t, err, "fencedstore: stale fence: 4 is lower than 5, already accepted")
	require.NoError(t, c.Write(1<<63, "big"))
	assert.Equal(t, []Write{{5, "five\nwith a newline and \"quotes\""}, {5, ""}, {1 << 63, "big"}}, s.Accepted())
	assert.Equal(t, []Write{{4, "stale"}}, s.Rejected())

	// A malformed line is answered, and the connection stays in step.
	raw, err := net.Dial("tcp", srv.Addr())
	require.NoError(t, err)
	defer func() { assert.NoError(t, raw.Close()) }()
	_, err = raw.Write([]byte("X 1 \"a\"\nW -1 \"a\"\n"))
	require.NoError(t, err)
	cl := &Client{c: raw, timeout: 5 * time.Second}
	cl.r = bufio.NewReader(raw)
	for range 2 {
		line, err := cl.r.ReadString('\n')
		require.NoError(t, err)
		assert.Regexp(t, `^ERR "`, line)
	}
	require.NoError(t, cl.Write(1<<63, "same"))
}

// TestConcurrentWriters: many clients, one store; the accepted fences
// never decrease, and every write is either accepted or rejected.
func TestConcurrentWriters(t *testing.T) {
	s := New()
	srv := serve(t, s)
	var wg sync.WaitGroup
	for w := range 8 {
		c := dial(t, srv)
		wg.Go(func() {
			for i := range 50 {
				err := c.Write(uint64(i), strconv.Itoa(w))
				if err != nil && !errors.Is(err, ErrStale) {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	acc := s.Accepted()
	assert.Equal(t, 8*50, len(acc)+len(s.Rejected()))
	for i := 1; i < len(acc); i++ {
		assert.LessOrEqual(t, acc[i-1].Fence, acc[i].Fence)
	}
}

func TestCloseEndsEverything(t *testing.T) {
	s := New()
	srv := serve(t, s)
	c := dial(t, srv)
	require.NoError(t, c.Write(1, "a"))
	require.NoError(t, srv.Close()) // with a connection open
	assert.Error(t, c.Write(2, "b"))
	_, err := Dial(context.Background(), srv.Addr(), time.Second)
	assert.Error(t, err)
}
