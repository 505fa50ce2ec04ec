// Package servers starts and stops the Redis servers a benchmark runs
// against, outside of package testing: real redis-server processes on free
// loopback ports, or in-process miniredis servers when redis-server is not
// installed. Servers listen on 127.0.0.1 only.
package servers

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/alicebob/miniredis/v2"
)

// Set is a group of running servers.
type Set interface {
	// Addrs returns the servers' host:port addresses.
	Addrs() []string
	// Kind names what the servers are: "redis-server 7.0.15", "miniredis".
	Kind() string
	// Close stops the servers and removes their files.
	Close() error
}

// Binary returns the path of redis-server on PATH, or "" if there is none.
func Binary() string {
	p, err := exec.LookPath("redis-server")
	if err != nil {
		return ""
	}
	return p
}

var versionRE = regexp.MustCompile(`v=([0-9][0-9.]*)`)

// Version returns the version of the redis-server binary at path, such as
// "7.0.15", or "" if it cannot be read.
func Version(path string) string {
	out, err := exec.Command(path, "--version").Output()
	if err != nil {
		return ""
	}
	if m := versionRE.FindSubmatch(out); m != nil {
		return string(m[1])
	}
	return ""
}

// Redis is n redis-server processes.
type Redis struct {
	dir     string
	version string
	addrs   []string
	procs   []*exec.Cmd
}

// StartRedis starts n redis-server processes from binary (Binary() when
// empty), each on a free 127.0.0.1 port with no persistence (save disabled,
// appendonly no), in a fresh temporary directory. It waits until each
// answers PING.
func StartRedis(binary string, n int) (*Redis, error) {
	if binary == "" {
		binary = Binary()
	}
	if binary == "" {
		return nil, errors.New("servers: redis-server is not on PATH")
	}
	dir, err := os.MkdirTemp("", "redlock-bench-")
	if err != nil {
		return nil, err
	}
	r := &Redis{dir: dir, version: Version(binary)}
	for i := 0; i < n; i++ {
		if err := r.startOne(binary, i); err != nil {
			_ = r.Close() // the start's error is the one to report
			return nil, err
		}
	}
	return r, nil
}

// startOne starts server i. A port picked free may be taken before the
// server binds it, so a failed start is retried on another port.
func (r *Redis) startOne(binary string, i int) error {
	var last error
	for try := 0; try < 5; try++ {
		port, err := freePort()
		if err != nil {
			return err
		}
		sub := filepath.Join(r.dir, strconv.Itoa(i))
		if err := os.MkdirAll(sub, 0o750); err != nil {
			return err
		}
		logf := filepath.Join(sub, "redis.log")
		cmd := exec.Command(binary, //nolint:gosec // G204: the redis-server the caller chose, or the one on PATH: starting it is the point
			"--bind", "127.0.0.1",
			"--port", strconv.Itoa(port),
			"--dir", sub,
			"--save", "",
			"--appendonly", "no",
			"--protected-mode", "yes",
			"--daemonize", "no",
			"--logfile", logf,
		)
		if err := cmd.Start(); err != nil {
			return err
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if err := waitPing(addr, 5*time.Second); err != nil {
			// A server that never answered: the ping's error and its log
			// say why, not its exit status.
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			log, _ := os.ReadFile(logf) //nolint:gosec // G304: the log file this function named, in its temporary directory; none is fine
			last = fmt.Errorf("servers: redis-server on %s: %w: %s", addr, err, lastLines(log, 3))
			continue
		}
		r.addrs = append(r.addrs, addr)
		r.procs = append(r.procs, cmd)
		return nil
	}
	return last
}

// Addrs returns the servers' addresses.
func (r *Redis) Addrs() []string { return r.addrs }

// Kind returns "redis-server" and its version.
func (r *Redis) Kind() string {
	if r.version == "" {
		return "redis-server"
	}
	return "redis-server " + r.version
}

// Version returns the servers' version, or "".
func (r *Redis) Version() string { return r.version }

// Close stops every server (SIGTERM, then SIGKILL after 5 s) and removes
// the temporary directory.
func (r *Redis) Close() error {
	// Signal and Kill fail only once the process has exited, and then
	// Wait returns; the exit status of a server told to stop says nothing.
	for _, p := range r.procs {
		_ = p.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = p.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = p.Process.Kill()
			<-done
		}
	}
	r.procs = nil
	return os.RemoveAll(r.dir)
}

// Mini is n in-process miniredis servers. Their numbers do not represent a
// real deployment: they run in the client's process, share its CPU and
// garbage collector, and implement Redis in Go.
type Mini struct {
	servers []*miniredis.Miniredis
	addrs   []string
}

// StartMini starts n miniredis servers on free 127.0.0.1 ports.
func StartMini(n int) (*Mini, error) {
	m := &Mini{}
	for i := 0; i < n; i++ {
		s := miniredis.NewMiniRedis()
		if err := s.StartAddr("127.0.0.1:0"); err != nil {
			_ = m.Close() // always nil
			return nil, err
		}
		m.servers = append(m.servers, s)
		m.addrs = append(m.addrs, s.Addr())
	}
	return m, nil
}

// Addrs returns the servers' addresses.
func (m *Mini) Addrs() []string { return m.addrs }

// Kind returns "miniredis".
func (m *Mini) Kind() string { return "miniredis (in-process)" }

// Close stops the servers.
func (m *Mini) Close() error {
	for _, s := range m.servers {
		s.Close()
	}
	m.servers = nil
	return nil
}

// External is servers the caller runs; Close does nothing.
type External struct{ List []string }

// Addrs returns the list.
func (e External) Addrs() []string { return e.List }

// Kind returns "external".
func (e External) Kind() string { return "external" }

// Close does nothing.
func (e External) Close() error { return nil }

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	if err := ln.Close(); err != nil {
		return 0, err
	}
	return port, nil
}

// waitPing dials addr until it answers +PONG, for up to d.
func waitPing(addr string, d time.Duration) error {
	deadline := time.Now().Add(d)
	var last error
	for time.Now().Before(deadline) {
		if last = Ping(addr, time.Second); last == nil {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return last
}

// Ping sends one PING to addr on a new connection and checks for
// +PONG (or a -NOAUTH error, which also proves the server is up).
func Ping(addr string, timeout time.Duration) error {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return err
	}
	defer func() { _ = c.Close() }() // the reply is read, or the error returned: nothing to lose
	if err := c.SetDeadline(time.Now().Add(timeout)); err != nil {
		return err
	}
	if _, err := c.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if strings.HasPrefix(line, "+PONG") || strings.HasPrefix(line, "-NOAUTH") {
		return nil
	}
	return fmt.Errorf("unexpected reply %q", strings.TrimSpace(line))
}

// PingRTT sends n PINGs to addr, one at a time on one connection, and
// returns the median round trip. A -NOAUTH reply counts: it is a round
// trip too.
func PingRTT(addr string, n int) (time.Duration, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return 0, err
	}
	defer func() { _ = c.Close() }() // the replies are read, or the error returned: nothing to lose
	r := bufio.NewReader(c)
	rtts := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		if err := c.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
			return 0, err
		}
		t0 := time.Now()
		if _, err := c.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
			return 0, err
		}
		if _, err := r.ReadString('\n'); err != nil {
			return 0, err
		}
		rtts = append(rtts, time.Since(t0))
	}
	slices.Sort(rtts)
	return rtts[len(rtts)/2], nil
}

func lastLines(b []byte, n int) string {
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte(" | ")))
}
