package measure

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"strconv"
	"strings"
	"time"
)

// CPU time: the client's, from getrusage(RUSAGE_SELF) in the process that
// runs the loop, and the servers', from their INFO cpu section, both read
// at the measured window's edges and divided by the pairs done in it.

// ProcessCPU returns the user and system CPU time this process has used,
// from getrusage(RUSAGE_SELF); ok is false where the platform has no
// getrusage.
func ProcessCPU() (cpu time.Duration, ok bool) { return processCPU() }

// CPUPerOpUs returns the CPU time between before and after divided by ops,
// in microseconds, or 0 when ops is not positive or the clock went back.
func CPUPerOpUs(before, after time.Duration, ops int64) float64 {
	if ops <= 0 || after < before {
		return 0
	}
	return float64(after-before) / 1e3 / float64(ops)
}

// ErrNoCPUInfo is returned by ParseInfoCPU for an INFO reply without
// used_cpu_sys and used_cpu_user (a server that does not report them,
// such as miniredis).
var ErrNoCPUInfo = errors.New("no used_cpu_sys and used_cpu_user in INFO")

// ParseInfoCPU returns used_cpu_sys + used_cpu_user, in seconds in the
// text of an INFO reply, as a duration. Other fields (the _children and
// _main_thread ones) are ignored.
func ParseInfoCPU(info string) (time.Duration, error) {
	var sum time.Duration
	found := 0
	for _, line := range strings.Split(info, "\n") {
		name, val, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || (name != "used_cpu_sys" && name != "used_cpu_user") {
			continue
		}
		v, err := strconv.ParseFloat(val, 64)
		if err != nil || v < 0 {
			return 0, fmt.Errorf("INFO cpu: %s: bad value %q", name, val)
		}
		sum += time.Duration(math.Round(v * 1e9))
		found++
	}
	if found != 2 {
		return 0, ErrNoCPUInfo
	}
	return sum, nil
}

// ServerOptions say how to reach the servers whose CPU is read: the
// credentials and TLS of the benchmark's clients.
type ServerOptions struct {
	Username, Password string
	TLS                *tls.Config // nil: plain TCP
	Timeout            time.Duration
}

// Conn is a minimal RESP2 connection to one Redis server, for INFO cpu
// and the pipelined limit: commands of bulk strings, replies of simple
// strings, errors, integers and bulk strings.
type Conn struct {
	Addr string
	c    net.Conn
	r    *bufio.Reader
	w    *bufio.Writer
	to   time.Duration
}

// Dial connects to addr and authenticates as o says.
func Dial(addr string, o ServerOptions) (*Conn, error) {
	to := o.Timeout
	if to <= 0 {
		to = 5 * time.Second
	}
	d := &net.Dialer{Timeout: to}
	var nc net.Conn
	var err error
	if o.TLS != nil {
		cfg := o.TLS.Clone()
		if cfg.ServerName == "" {
			cfg.ServerName, _, _ = net.SplitHostPort(addr)
		}
		nc, err = tls.DialWithDialer(d, "tcp", addr, cfg)
	} else {
		nc, err = d.Dial("tcp", addr)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", addr, err)
	}
	c := &Conn{Addr: addr, c: nc, r: bufio.NewReaderSize(nc, 64<<10), w: bufio.NewWriterSize(nc, 64<<10), to: to}
	if o.Password != "" {
		args := []string{"AUTH", o.Password}
		if o.Username != "" {
			args = []string{"AUTH", o.Username, o.Password}
		}
		if _, err := c.Do(args...); err != nil {
			_ = nc.Close() // the AUTH error is the one to report
			return nil, err
		}
	}
	return c, nil
}

// Close closes the connection.
func (c *Conn) Close() error { return c.c.Close() }

// Send buffers one command; Flush writes the buffered commands. The
// bufio.Writer keeps the first write error, which Flush returns.
func (c *Conn) Send(args ...string) {
	_, _ = c.w.WriteString("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		_, _ = c.w.WriteString("$" + strconv.Itoa(len(a)) + "\r\n")
		_, _ = c.w.WriteString(a)
		_, _ = c.w.WriteString("\r\n")
	}
}

// Flush writes the commands Send buffered.
func (c *Conn) Flush() error {
	if err := c.c.SetDeadline(time.Now().Add(c.to)); err != nil {
		return fmt.Errorf("%s: %w", c.Addr, err)
	}
	if err := c.w.Flush(); err != nil {
		return fmt.Errorf("%s: %w", c.Addr, err)
	}
	return nil
}

// Receive reads one reply: a simple string, an integer (in decimal) or a
// bulk string, "" for a nil bulk string; a Redis error is an error.
func (c *Conn) Receive() (string, error) {
	if err := c.c.SetDeadline(time.Now().Add(c.to)); err != nil {
		return "", fmt.Errorf("%s: %w", c.Addr, err)
	}
	s, err := readReply(c.r)
	if err != nil {
		return "", fmt.Errorf("%s: %w", c.Addr, err)
	}
	return s, nil
}

// AppendCommand appends args to buf as one RESP command.
func AppendCommand(buf []byte, args ...string) []byte {
	buf = append(strconv.AppendInt(append(buf, '*'), int64(len(args)), 10), "\r\n"...)
	for _, a := range args {
		buf = append(strconv.AppendInt(append(buf, '$'), int64(len(a)), 10), "\r\n"...)
		buf = append(append(buf, a...), "\r\n"...)
	}
	return buf
}

// Pipeline writes payload, commands already encoded (AppendCommand), and
// reads n replies, each one line (a simple string, an integer or an
// error), reply i being want[i%len(want)] without its CRLF, such as
// "+OK" or ":1". It allocates nothing: it is the cheapest client there
// is for the pipelined limit's loop. After an error the replies left
// unread are still on the connection: close it.
func (c *Conn) Pipeline(payload []byte, n int, want ...string) error {
	if n > 0 && len(want) == 0 {
		return fmt.Errorf("%s: Pipeline of %d replies with none expected", c.Addr, n)
	}
	if err := c.c.SetDeadline(time.Now().Add(c.to)); err != nil {
		return fmt.Errorf("%s: %w", c.Addr, err)
	}
	if _, err := c.c.Write(payload); err != nil {
		return fmt.Errorf("%s: %w", c.Addr, err)
	}
	for i := range n {
		line, err := c.r.ReadSlice('\n')
		if err != nil {
			return fmt.Errorf("%s: %w", c.Addr, err)
		}
		if w := want[i%len(want)]; len(line) != len(w)+2 || string(line[:len(w)]) != w {
			return fmt.Errorf("%s: reply %d is %q, want %q", c.Addr, i, strings.TrimSpace(string(line)), w)
		}
	}
	return nil
}

// Do sends one command and reads its reply.
func (c *Conn) Do(args ...string) (string, error) {
	c.Send(args...)
	if err := c.Flush(); err != nil {
		return "", err
	}
	return c.Receive()
}

// Usage is what servers have spent: CPU time, and the reads of their
// clients' input, which fall as each read carries more commands.
type Usage struct {
	CPU time.Duration
	// Reads is total_reads_processed (INFO stats), summed: the server's
	// reads of its clients' sockets, the one that brought the INFO
	// included (a read that finds the socket empty counts too, rarely).
	Reads int64
}

// Sub returns what was spent from before to u, Reads -1 where either
// did not count them (or the count went back: a restarted server).
func (u Usage) Sub(before Usage) Usage {
	d := Usage{CPU: u.CPU - before.CPU, Reads: -1}
	if before.Reads >= 0 && u.Reads >= before.Reads {
		d.Reads = u.Reads - before.Reads
	}
	return d
}

// ParseInfoReads returns total_reads_processed in the text of an INFO
// reply (Redis 6.2 and later, Valkey), and false without it.
func ParseInfoReads(info string) (int64, bool) {
	for _, line := range strings.Split(info, "\n") {
		name, val, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && name == "total_reads_processed" {
			n, err := strconv.ParseInt(val, 10, 64)
			return n, err == nil && n >= 0
		}
	}
	return 0, false
}

// Usage returns the server's CPU (used_cpu_sys + used_cpu_user) and its
// reads: INFO cpu
// and INFO stats, written at once, so that the server reads them in one
// read as a whole (one command of several sections needs Redis 7). A
// server that does not count its reads has Reads -1.
func (c *Conn) Usage() (Usage, error) {
	c.Send("INFO", "cpu")
	c.Send("INFO", "stats")
	if err := c.Flush(); err != nil {
		return Usage{}, err
	}
	cpu, err := c.Receive()
	stats, err2 := c.Receive() // read even after an error: the connection stays in step
	if err == nil {
		err = err2
	}
	if err != nil {
		return Usage{}, err
	}
	d, err := ParseInfoCPU(cpu)
	if err != nil {
		return Usage{}, fmt.Errorf("%s: %w", c.Addr, err)
	}
	u := Usage{CPU: d, Reads: -1}
	if n, ok := ParseInfoReads(stats); ok {
		u.Reads = n
	}
	return u, nil
}

// readReply reads one RESP2 reply that is not an array.
func readReply(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
	if line == "" {
		return "", errors.New("empty reply line")
	}
	switch line[0] {
	case '+', ':':
		return line[1:], nil
	case '-':
		return "", RedisError(line[1:])
	case '$':
		n, err := strconv.Atoi(line[1:])
		if err != nil {
			return "", fmt.Errorf("bad bulk length %q", line)
		}
		if n < 0 {
			return "", nil
		}
		b := make([]byte, n+2)
		if _, err := io.ReadFull(r, b); err != nil {
			return "", err
		}
		return string(b[:n]), nil
	}
	return "", fmt.Errorf("unexpected reply %q", line)
}

// RedisError is an error reply.
type RedisError string

func (e RedisError) Error() string { return string(e) }

// Servers is a connection to each server of a cell, to read their CPU.
type Servers []*Conn

// DialServers connects to every address; on an error it closes what it
// opened.
func DialServers(addrs []string, o ServerOptions) (Servers, error) {
	var s Servers
	for _, a := range addrs {
		c, err := Dial(a, o)
		if err != nil {
			s.Close()
			return nil, err
		}
		s = append(s, c)
	}
	return s, nil
}

// Usage returns the servers' summed Usage, Reads -1 if any server does
// not count them.
func (s Servers) Usage() (Usage, error) {
	var sum Usage
	for _, c := range s {
		u, err := c.Usage()
		if err != nil {
			return Usage{}, err
		}
		sum.CPU += u.CPU
		if u.Reads < 0 || sum.Reads < 0 {
			sum.Reads = -1
		} else {
			sum.Reads += u.Reads
		}
	}
	return sum, nil
}

// Close closes every connection. They only read INFO: a failed Close
// loses nothing, so it is not reported.
func (s Servers) Close() {
	for _, c := range s {
		_ = c.Close()
	}
}
