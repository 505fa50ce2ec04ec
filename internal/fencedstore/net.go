package fencedstore

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The protocol, one line each way per write:
//
//	W <fence> <value, quoted as strconv.Quote does>\n
//	OK\n  or  STALE <highest fence>\n  or  ERR <message>\n

// Server serves a Store on a listener, so that lock holders in other
// processes write to it (Dial). Close stops it.
type Server struct {
	s *Store
	l net.Listener

	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
}

// Serve serves s on l until Close, which closes l.
func Serve(s *Store, l net.Listener) *Server {
	srv := &Server{s: s, l: l, conns: map[net.Conn]struct{}{}}
	srv.wg.Add(1)
	go srv.accept()
	return srv
}

// Addr returns the listener's address.
func (srv *Server) Addr() string { return srv.l.Addr().String() }

// Close closes the listener and every connection, and waits until the
// server's goroutines have returned.
func (srv *Server) Close() error {
	srv.mu.Lock()
	srv.closed = true
	for c := range srv.conns {
		_ = c.Close() // serve closes it too: whichever is second fails, by design
	}
	srv.mu.Unlock()
	err := srv.l.Close()
	srv.wg.Wait()
	return err
}

func (srv *Server) accept() {
	defer srv.wg.Done()
	for {
		c, err := srv.l.Accept()
		if err != nil {
			return // closed
		}
		srv.mu.Lock()
		if srv.closed {
			srv.mu.Unlock()
			_ = c.Close() // refused: nothing was read or written on it
			return
		}
		srv.conns[c] = struct{}{}
		srv.wg.Add(1)
		srv.mu.Unlock()
		go srv.serve(c)
	}
}

// serve answers one connection's writes, in order, until it closes.
func (srv *Server) serve(c net.Conn) {
	defer srv.wg.Done()
	defer func() {
		srv.mu.Lock()
		delete(srv.conns, c)
		srv.mu.Unlock()
		_ = c.Close() // Server.Close may have closed it first
	}()
	r, w := bufio.NewReader(c), bufio.NewWriter(c)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		fence, value, err := parse(strings.TrimSuffix(line, "\n"))
		if err == nil {
			err = srv.s.Write(fence, value)
		}
		var stale *staleError
		// w is a bufio.Writer: it keeps the first write error, which the
		// Flush below returns.
		switch {
		case err == nil:
			_, _ = w.WriteString("OK\n")
		case errors.As(err, &stale):
			_, _ = fmt.Fprintf(w, "STALE %d\n", stale.highest)
		default:
			_, _ = fmt.Fprintf(w, "ERR %s\n", strconv.Quote(err.Error()))
		}
		if w.Flush() != nil {
			return
		}
	}
}

func parse(line string) (uint64, string, error) {
	rest, ok := strings.CutPrefix(line, "W ")
	f, q, ok2 := strings.Cut(rest, " ")
	if !ok || !ok2 {
		return 0, "", errors.New("not a write: " + strconv.Quote(line))
	}
	fence, err := strconv.ParseUint(f, 10, 64)
	if err != nil {
		return 0, "", err
	}
	value, err := strconv.Unquote(q)
	return fence, value, err
}

// Client writes to a Server's store. It is not safe for concurrent use:
// give each writer its own.
type Client struct {
	c       net.Conn
	r       *bufio.Reader
	timeout time.Duration
}

var _ Writer = (*Client)(nil)

// Dial connects to the Server at addr; timeout bounds the dial and each
// write.
func Dial(ctx context.Context, addr string, timeout time.Duration) (*Client, error) {
	d := net.Dialer{Timeout: timeout}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	return &Client{c: c, r: bufio.NewReader(c), timeout: timeout}, nil
}

// Write sends the write and waits for the store's answer: nil, an error
// matching ErrStale, or the connection's failure.
func (c *Client) Write(fence uint64, value string) error {
	if err := c.c.SetDeadline(time.Now().Add(c.timeout)); err != nil {
		return err
	}
	if _, err := fmt.Fprintf(c.c, "W %d %s\n", fence, strconv.Quote(value)); err != nil {
		return err
	}
	line, err := c.r.ReadString('\n')
	if err != nil {
		return err
	}
	answer, arg, _ := strings.Cut(strings.TrimSuffix(line, "\n"), " ")
	switch answer {
	case "OK":
		return nil
	case "STALE":
		highest, err := strconv.ParseUint(arg, 10, 64)
		if err != nil {
			return fmt.Errorf("fencedstore: bad answer %q", line)
		}
		return &staleError{fence: fence, highest: highest}
	case "ERR":
		msg, _ := strconv.Unquote(arg)
		return errors.New("fencedstore: server: " + msg)
	}
	return fmt.Errorf("fencedstore: bad answer %q", line)
}

// Close closes the connection.
func (c *Client) Close() error { return c.c.Close() }
