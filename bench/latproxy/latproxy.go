// Package latproxy is a TCP proxy that delays every byte by a fixed time in
// each direction, so that loopback Redis servers answer as if they were on
// other machines. A write issued at t reaches the other side at t+Delay;
// writes are not serialised behind each other's delay, so pipelined and
// concurrent requests overlap as they would on a real network. One round
// trip through the proxy therefore costs 2×Delay plus the loopback floor.
//
// On Linux the delay is timed with a timerfd read through the Go netpoller,
// which is accurate to tens of microseconds; time.Sleep rounds sub-
// millisecond waits up to the netpoller's millisecond granularity and would
// add about a quarter of a millisecond per hop. Elsewhere it falls back to
// time.Sleep.
package latproxy

import (
	"errors"
	"net"
	"sync"
	"time"
)

// Proxy forwards connections from its loopback listener to one target.
type Proxy struct {
	target string
	delay  time.Duration
	ln     net.Listener

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// Start listens on a free 127.0.0.1 port and forwards every connection to
// target, delaying each direction by delay.
func Start(target string, delay time.Duration) (*Proxy, error) {
	if delay < 0 {
		return nil, errors.New("latproxy: negative delay")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{target: target, delay: delay, ln: ln, conns: make(map[net.Conn]struct{})}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr returns the proxy's listening address, host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Target returns the address the proxy forwards to.
func (p *Proxy) Target() string { return p.target }

// Delay returns the delay added in each direction.
func (p *Proxy) Delay() time.Duration { return p.delay }

// Close stops accepting, closes every proxied connection and waits for the
// proxy's goroutines to end.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	err := p.ln.Close()
	p.wg.Wait()
	return err
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	c.Close()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go p.serve(client)
	}
}

func (p *Proxy) serve(client net.Conn) {
	defer p.wg.Done()
	if !p.track(client) {
		return
	}
	defer p.untrack(client)
	server, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		return
	}
	if !p.track(server) {
		return
	}
	defer p.untrack(server)
	for _, c := range []net.Conn{client, server} {
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetNoDelay(true)
		}
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); p.pipe(server, client) }()
	go func() { defer wg.Done(); p.pipe(client, server) }()
	wg.Wait()
}

// chunk is data read at some instant, to be written at due.
type chunk struct {
	data []byte
	due  time.Time
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// pipe copies src to dst, each read delayed by p.delay from the instant it
// was read. A reader goroutine stamps chunks; this goroutine writes them in
// order once due. When either side ends, both connections are closed.
func (p *Proxy) pipe(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	queue := make(chan chunk, 1024)
	go func() {
		defer close(queue)
		for {
			bp := bufPool.Get().(*[]byte)
			n, err := src.Read(*bp)
			if n > 0 {
				queue <- chunk{data: (*bp)[:n], due: time.Now().Add(p.delay)}
			} else {
				bufPool.Put(bp)
			}
			if err != nil {
				return
			}
		}
	}()
	t := newDelayTimer()
	defer t.close()
	failed := false
	for c := range queue {
		if !failed {
			if err := t.waitUntil(c.due); err != nil {
				failed = true
			} else if _, err := dst.Write(c.data); err != nil {
				failed = true
			}
			if failed {
				src.Close() // unblock the reader; keep draining the queue
			}
		}
		b := c.data[:cap(c.data)]
		bufPool.Put(&b)
	}
}
