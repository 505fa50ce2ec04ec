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
//
// A proxy can also cut its node off the network, to stand for a network
// partition: SetPartition(Drop) closes every proxied connection and
// resets new ones as soon as they are accepted; SetPartition(BlackHole)
// keeps accepting and reading but forwards nothing, so requests hang; Heal
// (SetPartition(Healed)) forwards again.
package latproxy

import (
	"errors"
	"io"
	"net"
	"strconv"
	"sync"
	"time"
)

// Partition is what a proxy does with the traffic it carries.
type Partition uint8

const (
	// Healed forwards traffic, delayed by the proxy's delay: no partition.
	Healed Partition = iota
	// Drop closes every proxied connection at once and resets each new one
	// as soon as it is accepted (SO_LINGER 0), so clients see their
	// connections end and their reconnections fail with a reset, as when
	// a firewall rejects the node's packets. Nothing is forwarded.
	Drop
	// BlackHole accepts connections and reads what either side sends but
	// forwards nothing in either direction, so requests hang until the
	// client gives up, as when the network silently loses the node's
	// packets. What it read is held, in order, and forwarded once the
	// partition heals, as TCP retransmission would deliver it when a
	// partition ends before the connection is abandoned; a connection the
	// client closed meanwhile is closed towards the target after that.
	// Switching from BlackHole to Drop discards what was held.
	BlackHole
)

// String returns "healed", "drop" or "black-hole".
func (m Partition) String() string {
	switch m {
	case Healed:
		return "healed"
	case Drop:
		return "drop"
	case BlackHole:
		return "black-hole"
	}
	return "Partition(" + strconv.Itoa(int(m)) + ")"
}

// Proxy forwards connections from its loopback listener to one target.
type Proxy struct {
	target string
	delay  time.Duration
	ln     net.Listener

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	part   Partition
	// changed is closed, and replaced, whenever part or closed changes, to
	// wake the writers that wait out a black hole.
	changed chan struct{}
	wg      sync.WaitGroup
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
	p := &Proxy{target: target, delay: delay, ln: ln, conns: make(map[net.Conn]struct{}), changed: make(chan struct{})}
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

// Close stops accepting, closes every proxied connection, discarding what
// a black hole held, and waits for the proxy's goroutines to end.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	p.notifyLocked()
	for c := range p.conns {
		_ = c.Close() // a reset side is closed already; either way it is gone
	}
	p.mu.Unlock()
	err := p.ln.Close()
	p.wg.Wait()
	return err
}

// SetPartition switches the proxy to m: see Partition. It takes effect at
// once for every connection, open or new, and may be called at any time,
// from any goroutine.
func (p *Proxy) SetPartition(m Partition) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.part == m || p.closed {
		return
	}
	p.part = m
	p.notifyLocked()
	if m == Drop {
		for c := range p.conns {
			reset(c)
		}
	}
}

// Heal ends a partition: SetPartition(Healed).
func (p *Proxy) Heal() { p.SetPartition(Healed) }

// Partitioned returns the partition in force.
func (p *Proxy) Partitioned() Partition {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.part
}

func (p *Proxy) notifyLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// forwarding waits while the proxy is a black hole. It returns true once
// data may be forwarded, false if it must be dropped (Drop, or Close).
func (p *Proxy) forwarding() bool {
	for {
		p.mu.Lock()
		part, closed, changed := p.part, p.closed, p.changed
		p.mu.Unlock()
		switch {
		case closed || part == Drop:
			return false
		case part == Healed:
			return true
		}
		<-changed
	}
}

// reset closes c with SO_LINGER 0, so that its peer gets a reset rather
// than an orderly end of stream.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0) // failing, the peer sees an orderly end instead
	}
	_ = c.Close() // an error means closed already: closeBoth and untrack both close
}

// track registers c, or closes it and returns false once the proxy is
// closed or dropping.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.part == Drop {
		reset(c)
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	_ = c.Close() // an error means closed already, by reset or closeBoth
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
			_ = tc.SetNoDelay(true) // Go's default already; failing costs latency, not correctness
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
// order once due, and while the proxy is a black hole holds them, the
// reader still reading. An end of stream from src is passed on as one
// towards dst (a half close), as TCP would carry the FIN, so that dst's
// peer still sees it if it writes meanwhile; serve closes both connections
// once both directions have ended. Any other failure closes both at once.
func (p *Proxy) pipe(dst, src net.Conn) {
	queue := make(chan chunk, 1024)
	var readErr error // set before queue closes
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
				readErr = err
				return
			}
		}
	}()
	t := newDelayTimer()
	defer t.close()
	failed := false
	for c := range queue {
		if !failed {
			if err := t.waitUntil(c.due); err != nil || !p.forwarding() {
				failed = true
			} else if _, err := dst.Write(c.data); err != nil {
				failed = true
			}
			if failed {
				_ = src.Close() // unblock the reader; keep draining the queue (an error: closed already)
			}
		}
		b := c.data[:cap(c.data)]
		bufPool.Put(&b)
	}
	// src ended: a black hole holds the end of stream too, so that the
	// other side does not see it before the partition heals.
	if !failed && errors.Is(readErr, io.EOF) && p.forwarding() {
		if tc, ok := dst.(*net.TCPConn); ok && tc.CloseWrite() == nil {
			return
		}
	}
	p.closeBoth(dst, src)
}

// closeBoth ends a proxied connection's two sides at once: with resets
// under Drop (whose own resets may be what ended the pipe), else closed.
func (p *Proxy) closeBoth(a, b net.Conn) {
	if p.Partitioned() == Drop {
		reset(a)
		reset(b)
		return
	}
	_ = a.Close() // an error means the other pipe closed it first
	_ = b.Close()
}
