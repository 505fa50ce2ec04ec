// Package redistest runs real redis-server processes for tests: on loopback
// only, on a free port, in a per-test temporary directory, without
// persistence unless asked (Options.Persist), optionally with a password,
// an ACL user or TLS. Servers can be killed, stopped (SIGSTOP), continued
// and restarted on the same port to inject faults. Every server is killed
// and reaped by t.Cleanup.
//
// StartSentinelGroup runs a master, its replicas and Sentinels, and
// StartCluster a Redis Cluster, with helpers to find the current master,
// fail over (by a kill, a Sentinel's or a manual failover, a takeover),
// migrate a slot and wait for the topology to settle. Their waits poll the
// servers' own account (ROLE, INFO, SENTINEL, CLUSTER NODES) until a
// condition holds, with a generous deadline, and never sleep blindly.
package redistest

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
)

// startTimeout bounds how long a server may take to answer PING. It is
// generous because the test machine may be heavily loaded.
const startTimeout = 15 * time.Second

// Options configure a server.
type Options struct {
	// Password is requirepass for the default user.
	Password string
	// Persist keeps the data across Restart: an append-only file synced
	// at every write (appendfsync always), so that a write the server
	// answered survives a SIGKILL.
	Persist bool
	// User and UserPassword create an ACL user with every permission
	// (+@all ~* &*). With User set the default user is disabled.
	User, UserPassword string
	// TLS serves TLS only (no plain port), with a certificate for
	// 127.0.0.1 issued by a CA generated in-process. Clients are not asked
	// for certificates.
	TLS bool
}

// Server is one redis-server process, or an in-process server standing in
// for one (see StartOr and package embedded).
type Server struct {
	// Addr is "127.0.0.1:Port".
	Addr string
	Port int
	Opts Options

	t    testing.TB
	path string
	dir  string

	inproc InProcess // set for an in-process server

	// conf, when set, is a configuration file passed as the first
	// argument (Sentinel needs one it can rewrite); extra are arguments
	// appended after the usual ones. Both are kept across restarts.
	conf  string
	extra []string

	ownsDir bool // from Launch: Close removes dir

	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{} // closed when cmd has been reaped
	waitErr error
	stopped bool // SIGSTOP sent and no SIGCONT since
}

// Start starts a redis-server process on a free loopback port, waits until
// it answers PING and registers its kill with t.Cleanup. Without
// redis-server on PATH the test is skipped, or fails with
// REDLOCK_REQUIRE_REDIS=1 (see RedisServerPath); package embedded's Start
// runs an in-process miniredis instead.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	return launch(t, opts, nil)
}

// launch starts a redis-server process as Start does. prepare, if not nil,
// runs before each try with the port the server will listen on, to set
// s.conf and s.extra; its error stops the tries.
func launch(t testing.TB, opts Options, prepare func(s *Server, port int) error) *Server {
	t.Helper()
	path := RedisServerPath(t)
	s := &Server{Opts: opts, t: t, path: path, dir: t.TempDir()}
	if opts.TLS {
		if err := writeTLSFiles(s.dir); err != nil {
			t.Fatalf("redistest: TLS files: %v", err)
		}
	}
	t.Cleanup(s.Kill)
	if err := s.startOnFreePort(prepare); err != nil {
		t.Fatalf("redistest: %v", err)
	}
	return s
}

// StartN starts n servers with the same options.
func StartN(t testing.TB, n int, opts Options) []*Server {
	t.Helper()
	out := make([]*Server, n)
	for i := range out {
		out[i] = Start(t, opts)
	}
	return out
}

// freePort returns a loopback port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("probing for a free port: %w", err)
	}
	defer func() { _ = l.Close() }() // only probed: the port is what matters
	return l.Addr().(*net.TCPAddr).Port, nil
}

var errAddrInUse = errors.New("address already in use")

func (s *Server) logPath() string    { return filepath.Join(s.dir, "redis.log") }
func (s *Server) stdoutPath() string { return filepath.Join(s.dir, "stdout.log") }

// args returns the server's command line. Redis quotes each argument into
// its configuration, so passwords need no escaping.
func (s *Server) args(port int) []string {
	var a []string
	if s.conf != "" {
		a = append(a, s.conf)
	}
	a = append(a,
		"--bind", "127.0.0.1",
		"--save", "",
		"--appendonly", "no",
		"--dir", s.dir,
		"--logfile", s.logPath(),
		"--daemonize", "no",
		"--databases", "1",
	)
	if s.Opts.TLS {
		a = append(a,
			"--port", "0",
			"--tls-port", strconv.Itoa(port),
			"--tls-cert-file", filepath.Join(s.dir, "server.crt"),
			"--tls-key-file", filepath.Join(s.dir, "server.key"),
			"--tls-ca-cert-file", filepath.Join(s.dir, "ca.crt"),
			"--tls-auth-clients", "no",
		)
	} else {
		a = append(a, "--port", strconv.Itoa(port))
	}
	if s.Opts.Password != "" {
		a = append(a, "--requirepass", s.Opts.Password)
	}
	if s.Opts.User != "" {
		a = append(a,
			"--user", "default", "off",
			"--user", s.Opts.User, "on", ">"+s.Opts.UserPassword, "+@all", "~*", "&*",
		)
	}
	if s.Opts.Persist { // later arguments win
		a = append(a, "--appendonly", "yes", "--appendfsync", "always")
	}
	return append(a, s.extra...)
}

// start runs the server on port and waits until it answers.
func (s *Server) start(port int) error {
	out, err := os.OpenFile(s.stdoutPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer func() { _ = out.Close() }() // the child has its own copy
	// Truncate the log so that a failure shows this start's lines only.
	_ = os.Truncate(s.logPath(), 0)

	cmd := exec.Command(s.path, s.args(port)...) //nolint:gosec // G204: the redis-server Options chose, or the one on PATH: starting it is the point
	cmd.Dir = s.dir
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", s.path, err)
	}
	exited := make(chan struct{})
	s.mu.Lock()
	s.cmd, s.exited, s.waitErr = cmd, exited, nil
	if s.Port != port { // a restart keeps them: tests read them unlocked
		s.Port, s.Addr = port, net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	}
	s.mu.Unlock()
	go func() {
		err := cmd.Wait()
		s.mu.Lock()
		s.waitErr = err
		s.mu.Unlock()
		close(exited)
	}()
	return s.waitReady(cmd, exited)
}

// waitReady polls PING until the server started by cmd answers it. It
// checks the answering process's id, so that a server another test started
// on the same port is never mistaken for ours.
func (s *Server) waitReady(cmd *exec.Cmd, exited chan struct{}) error {
	deadline := time.Now().Add(startTimeout)
	var last error
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			s.mu.Lock()
			werr := s.waitErr
			s.mu.Unlock()
			tail := s.logTail()
			if strings.Contains(tail, "in use") {
				return fmt.Errorf("port %d: %w\n%s", s.Port, errAddrInUse, tail)
			}
			if werr == nil { // exit status 0
				return fmt.Errorf("redis-server on port %d exited during startup; log:\n%s", s.Port, tail)
			}
			return fmt.Errorf("redis-server on port %d exited during startup (%w); log:\n%s", s.Port, werr, tail)
		default:
		}
		var pid int
		pid, last = s.pid()
		if last == nil {
			if pid == cmd.Process.Pid && !s.loading() {
				return nil
			}
			if pid == cmd.Process.Pid {
				last = fmt.Errorf("port %d: still loading its data", s.Port)
				time.Sleep(10 * time.Millisecond)
				continue
			}
			last = fmt.Errorf("port %d answered by another redis-server (pid %d, ours %d)", s.Port, pid, cmd.Process.Pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
	s.Kill()
	return fmt.Errorf("redis-server on port %d not ready after %v: %w; log:\n%s", s.Port, startTimeout, last, s.logTail())
}

// pid returns the process id of the server answering on Addr.
func (s *Server) pid() (int, error) {
	r, err := redis.String(s.Do("INFO", "server"))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(r, "\n") {
		if v, ok := strings.CutPrefix(line, "process_id:"); ok {
			return strconv.Atoi(strings.TrimSpace(v))
		}
	}
	return 0, errors.New("INFO server has no process_id")
}

// loading reports whether a server with Options.Persist is still
// loading its append-only file, when it answers commands with LOADING.
func (s *Server) loading() bool {
	if !s.Opts.Persist {
		return false
	}
	r, err := redis.String(s.Do("INFO", "persistence"))
	return err != nil || strings.Contains(r, "loading:1")
}

// logTail returns the last lines of the server's log and stdout.
func (s *Server) logTail() string {
	var b strings.Builder
	for _, p := range []string{s.stdoutPath(), s.logPath()} {
		data, err := os.ReadFile(p) //nolint:gosec // G304: the server's own log files, in its directory
		if err != nil || len(bytes.TrimSpace(data)) == 0 {
			continue
		}
		if len(data) > 4096 {
			data = data[len(data)-4096:]
		}
		fmt.Fprintf(&b, "--- %s ---\n%s\n", filepath.Base(p), bytes.TrimSpace(data))
	}
	return b.String()
}

// Kill sends SIGKILL and waits until the process is reaped: connections are
// refused afterwards. It works on a stopped server too, and does nothing if
// the server is not running.
func (s *Server) Kill() {
	if s.inproc != nil {
		s.inproc.Close()
		return
	}
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill() // fails only if already reaped
	<-exited
	s.mu.Lock()
	s.stopped = false
	s.mu.Unlock()
}

// NeedProcess skips t, counted in the package's summary, when s is an
// in-process server, which cannot be stopped (Stop). A subtest that stops
// a server its parent started calls it first: Stop skips the test that
// started the server, and skipping the parent from the subtest's
// goroutine would end the subtest as failed.
func (s *Server) NeedProcess(t testing.TB) {
	t.Helper()
	if s.inproc != nil {
		skip(t, reasonSIGSTOP)
	}
}

// Stop sends SIGSTOP: the server hangs and its connections stay open. On
// an in-process server it skips the test that started the server instead;
// call it from that test's goroutine (see NeedProcess).
func (s *Server) Stop() {
	if s.inproc != nil {
		skip(s.t, reasonSIGSTOP)
	}
	s.signal(syscall.SIGSTOP)
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
}

// Cont sends SIGCONT to a stopped server. An in-process server is never
// stopped: Cont does nothing there.
func (s *Server) Cont() {
	if s.inproc == nil {
		s.signal(syscall.SIGCONT)
		s.mu.Lock()
		s.stopped = false
		s.mu.Unlock()
	}
}

// alive reports whether the server's process runs and is not stopped, so
// that it answers commands. An in-process server is taken to be alive.
func (s *Server) alive() bool {
	if s.inproc != nil {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil || s.stopped {
		return false
	}
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

func (s *Server) signal(sig os.Signal) {
	s.t.Helper()
	s.mu.Lock()
	cmd := s.cmd
	s.mu.Unlock()
	if cmd == nil {
		s.t.Fatalf("redistest: signal %v to a server that never started", sig)
	}
	if err := cmd.Process.Signal(sig); err != nil {
		s.t.Fatalf("redistest: signal %v to %s: %v", sig, s.Addr, err)
	}
}

// Restart kills the server if it runs and starts it again on the same port
// with empty data (with Options.Persist, with the data it had written to
// its append-only file), waiting until it answers.
func (s *Server) Restart() {
	s.t.Helper()
	if s.inproc != nil {
		s.restartInProcess()
		return
	}
	s.Kill()
	// The kernel frees the listening port at once (Redis sets
	// SO_REUSEADDR), but retry a little in case something else grabbed it.
	var err error
	for deadline := time.Now().Add(5 * time.Second); ; {
		if err = s.start(s.Port); err == nil || !errors.Is(err, errAddrInUse) || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		s.t.Fatalf("redistest: restart: %v", err)
	}
}

// ClientTLS returns a client configuration that trusts the server's
// certificate, or nil for a plain server. Each call returns a new value.
func (s *Server) ClientTLS() *tls.Config {
	if !s.Opts.TLS {
		return nil
	}
	return clientTLS()
}

// Do runs one admin command over a fresh short-lived connection, with the
// server's authentication and TLS, such as Do("GET", k) or
// Do("SET", k, v, "PX", 5000). Bulk strings come back as string rather
// than []byte, in arrays too; Redis error replies are returned as error.
//
// Each call is a new connection, so a WAIT by Do waits for nothing: it
// counts the replicas that acknowledged this connection's writes, none.
// Send the write and its WAIT together with DoAll.
func (s *Server) Do(args ...any) (any, error) {
	if len(args) == 0 {
		return nil, errors.New("redistest: Do without a command")
	}
	name, ok := args[0].(string)
	if !ok {
		return nil, fmt.Errorf("redistest: Do: command name %v is not a string", args[0])
	}
	s.mu.Lock()
	addr := s.Addr
	s.mu.Unlock()
	c, err := redis.Dial("tcp", addr, s.dialOptions(
		redis.DialReadTimeout(5*time.Second), redis.DialWriteTimeout(5*time.Second))...)
	if err != nil {
		return nil, err
	}
	defer func() { _ = c.Close() }() // the reply is read: the close changes nothing
	r, err := c.Do(name, args[1:]...)
	return stringify(r), err
}

// DoAll runs commands in order over one fresh connection, as Do runs
// one, such as DoAll([]any{"SET", k, v}, []any{"WAIT", 2, 5000}), and
// returns their replies. It stops at the first error, a Redis error reply
// included, and returns the replies before it. Replies may take 15 s.
func (s *Server) DoAll(cmds ...[]any) ([]any, error) {
	s.mu.Lock()
	addr := s.Addr
	s.mu.Unlock()
	c, err := redis.Dial("tcp", addr, s.dialOptions(
		redis.DialReadTimeout(15*time.Second), redis.DialWriteTimeout(5*time.Second))...)
	if err != nil {
		return nil, err
	}
	defer func() { _ = c.Close() }() // the replies are read: the close changes nothing
	var out []any
	for _, cmd := range cmds {
		if len(cmd) == 0 {
			return out, errors.New("redistest: DoAll: an empty command")
		}
		name, ok := cmd[0].(string)
		if !ok {
			return out, fmt.Errorf("redistest: DoAll: command name %v is not a string", cmd[0])
		}
		r, err := c.Do(name, cmd[1:]...)
		if err != nil {
			return out, err
		}
		out = append(out, stringify(r))
	}
	return out, nil
}

// dialOptions returns redigo's options for a connection to s, with its
// authentication and TLS, a 2 s connect timeout, and more.
func (s *Server) dialOptions(more ...redis.DialOption) []redis.DialOption {
	opts := append([]redis.DialOption{redis.DialConnectTimeout(2 * time.Second)}, more...)
	switch {
	case s.Opts.User != "":
		opts = append(opts, redis.DialUsername(s.Opts.User), redis.DialPassword(s.Opts.UserPassword))
	case s.Opts.Password != "":
		opts = append(opts, redis.DialPassword(s.Opts.Password))
	}
	if s.Opts.TLS {
		opts = append(opts, redis.DialUseTLS(true), redis.DialTLSConfig(clientTLS()))
	}
	return opts
}

// stringify turns bulk strings into strings, recursively.
func stringify(r any) any {
	switch v := r.(type) {
	case []byte:
		return string(v)
	case []any:
		for i := range v {
			v[i] = stringify(v[i])
		}
	}
	return r
}

// Embedded reports whether s is an in-process server (the miniredis of
// package embedded) rather than a redis-server process.
func (s *Server) Embedded() bool { return s.inproc != nil }

// Subscriber is a connection subscribed to channels, for tests that
// observe what the server publishes.
type Subscriber struct {
	psc redis.PubSubConn
}

// Subscribe opens a connection subscribed to channels and returns once the
// server confirmed every subscription, so that what is published after it
// returns is received. It is closed at the end of the test.
func (s *Server) Subscribe(t testing.TB, channels ...string) *Subscriber {
	t.Helper()
	s.mu.Lock()
	addr := s.Addr
	s.mu.Unlock()
	c, err := redis.Dial("tcp", addr, s.dialOptions()...)
	if err != nil {
		t.Fatalf("redistest: subscribe: %v", err)
	}
	sub := &Subscriber{psc: redis.PubSubConn{Conn: c}}
	t.Cleanup(func() { _ = c.Close() }) // the connection's failure, if any, Next has met
	args := make([]any, len(channels))
	for i, ch := range channels {
		args[i] = ch
	}
	if err := sub.psc.Subscribe(args...); err != nil {
		t.Fatalf("redistest: subscribe: %v", err)
	}
	for range channels {
		switch v := sub.psc.ReceiveWithTimeout(10 * time.Second).(type) {
		case redis.Subscription:
		case error:
			t.Fatalf("redistest: subscribe: %v", v)
		default:
			t.Fatalf("redistest: subscribe: unexpected %T %v", v, v)
		}
	}
	return sub
}

// Next returns the next message's channel and payload. It fails the test
// if none comes within 10 s (a guard against a hang, not a wait).
func (s *Subscriber) Next(t testing.TB) []string {
	t.Helper()
	for {
		switch v := s.psc.ReceiveWithTimeout(10 * time.Second).(type) {
		case redis.Message:
			return []string{v.Channel, string(v.Data)}
		case error:
			t.Fatalf("redistest: receive: %v", v)
			return nil
		}
	}
}
