// Package servers gives a benchmark its Redis servers, outside of package
// testing: real redis-server processes on free loopback ports, or
// in-process miniredis servers when redis-server is not installed, both
// started by internal/redistest (the one package that starts servers,
// for tests and tools alike, miniredis in its subpackage embedded); or
// servers the caller runs. Servers listen
// on 127.0.0.1 only.
package servers

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/redlock-go/redlock/internal/redistest"
	"github.com/redlock-go/redlock/internal/redistest/embedded"
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
	p, err := redistest.LookPath()
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

// Redis is n redis-server processes, each started by internal/redistest's
// Launch: the test servers' one launcher, here outside a test.
type Redis struct {
	version string
	addrs   []string
	srv     []*redistest.Server
}

// StartRedis starts n redis-server processes from binary (Binary() when
// empty), each on a free 127.0.0.1 port with no persistence, in a fresh
// temporary directory, as the tests' servers are. It waits until each
// answers.
func StartRedis(binary string, n int) (*Redis, error) {
	if binary == "" {
		binary = Binary()
	}
	if binary == "" {
		return nil, errors.New("servers: redis-server is not on PATH")
	}
	r := &Redis{version: Version(binary)}
	for i := 0; i < n; i++ {
		s, err := redistest.Launch(binary, redistest.Options{})
		if err != nil {
			return nil, errors.Join(fmt.Errorf("servers: %w", err), r.Close())
		}
		r.srv = append(r.srv, s)
		r.addrs = append(r.addrs, s.Addr)
	}
	return r, nil
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

// Close stops every server and removes its files.
func (r *Redis) Close() error {
	var errs []error
	for _, s := range r.srv {
		errs = append(errs, s.Close())
	}
	r.srv = nil
	return errors.Join(errs...)
}

// Mini is n in-process miniredis servers (embedded.Launch). Their
// numbers do not represent a real deployment: they run in the client's
// process, share its CPU and garbage collector, and implement Redis in Go.
type Mini struct {
	srv   []*redistest.Server
	addrs []string
}

// StartMini starts n miniredis servers on free 127.0.0.1 ports.
func StartMini(n int) (*Mini, error) {
	m := &Mini{}
	for i := 0; i < n; i++ {
		s, err := embedded.Launch(redistest.Options{})
		if err != nil {
			return nil, errors.Join(err, m.Close())
		}
		m.srv = append(m.srv, s)
		m.addrs = append(m.addrs, s.Addr)
	}
	return m, nil
}

// Addrs returns the servers' addresses.
func (m *Mini) Addrs() []string { return m.addrs }

// Kind returns "miniredis".
func (m *Mini) Kind() string { return "miniredis (in-process)" }

// Close stops the servers.
func (m *Mini) Close() error {
	var errs []error
	for _, s := range m.srv {
		errs = append(errs, s.Close())
	}
	m.srv = nil
	return errors.Join(errs...)
}

// External is servers the caller runs; Close does nothing.
type External struct{ List []string }

// Addrs returns the list.
func (e External) Addrs() []string { return e.List }

// Kind returns "external".
func (e External) Kind() string { return "external" }

// Close does nothing.
func (e External) Close() error { return nil }

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
func PingRTT(addr string, n int) (time.Duration, error) { return PingRoundRTT([]string{addr}, n) }

// PingRoundRTT sends a PING to every one of addrs at once, on one
// connection each, n times, and returns the median time until the last
// reply of a round: the floor of a round that fans out to all of them and
// waits for every answer, as a multiplexed lock round does. Any reply
// line counts, -NOAUTH included: it is a round trip too.
func PingRoundRTT(addrs []string, n int) (time.Duration, error) {
	if n < 1 || len(addrs) == 0 {
		return 0, fmt.Errorf("servers: PING rounds: need servers and at least one round, got %d servers, %d rounds", len(addrs), n)
	}
	conns := make([]net.Conn, len(addrs))
	readers := make([]*bufio.Reader, len(addrs))
	defer func() {
		for _, c := range conns {
			if c != nil {
				_ = c.Close() // the replies are read, or the error returned: nothing to lose
			}
		}
	}()
	for i, a := range addrs {
		c, err := net.DialTimeout("tcp", a, 5*time.Second)
		if err != nil {
			return 0, err
		}
		conns[i], readers[i] = c, bufio.NewReader(c)
	}
	ping := []byte("*1\r\n$4\r\nPING\r\n")
	rtts := make([]time.Duration, 0, n)
	for range n {
		deadline := time.Now().Add(5 * time.Second)
		t0 := time.Now()
		for _, c := range conns {
			if err := c.SetDeadline(deadline); err != nil {
				return 0, err
			}
			if _, err := c.Write(ping); err != nil {
				return 0, err
			}
		}
		for _, r := range readers {
			if _, err := r.ReadString('\n'); err != nil {
				return 0, err
			}
		}
		rtts = append(rtts, time.Since(t0))
	}
	slices.Sort(rtts)
	return rtts[len(rtts)/2], nil
}
