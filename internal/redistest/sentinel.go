package redistest

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
)

// topologyTimeout bounds the waits for a replication, Sentinel or Cluster
// topology to settle or to fail over. It is generous because the test
// machine may be heavily loaded; the waits poll and return as soon as the
// condition holds.
const topologyTimeout = 60 * time.Second

// pollInterval is how often the topology waits poll.
const pollInterval = 20 * time.Millisecond

// SentinelOptions configure a Sentinel group.
type SentinelOptions struct {
	// MasterName is the name the Sentinels monitor the master under;
	// "mymaster-" and random hex digits if empty, so that another test's
	// Sentinels that reach a server here (its port reused) do not join
	// this group's.
	MasterName string
	// Replicas is the number of replicas of the master; 2 if zero.
	Replicas int
	// Sentinels is the number of Sentinels; 3 if zero.
	Sentinels int
	// Quorum is the number of Sentinels that must agree that the master
	// is down; a majority of Sentinels if zero.
	Quorum int
	// DownAfter is down-after-milliseconds: how long the master may be
	// unreachable before a Sentinel deems it down; 1.5 s if zero. Less
	// risks spurious failovers on a loaded machine: a Sentinel that just
	// switched masters has DownAfter to connect to the new one and get
	// an answer to PING, and 500 ms was seen to run out.
	DownAfter time.Duration
	// FailoverTimeout is failover-timeout, which also spaces two failovers
	// of the same master (twice the timeout) and retried elections; 2 s if
	// zero.
	FailoverTimeout time.Duration
	// Server are the data servers' options. The replicas and the
	// Sentinels authenticate as ReplUser whatever they are (see
	// dataNodeArgs); the Sentinels themselves ask for no password. TLS
	// is not supported.
	Server Options
}

func (o *SentinelOptions) defaults() {
	if o.MasterName == "" {
		o.MasterName = "mymaster-" + string(newReplAuth())[:8]
	}
	if o.Replicas == 0 {
		o.Replicas = 2
	}
	if o.Sentinels == 0 {
		o.Sentinels = 3
	}
	if o.Quorum == 0 {
		o.Quorum = o.Sentinels/2 + 1
	}
	if o.DownAfter == 0 {
		o.DownAfter = 1500 * time.Millisecond
	}
	if o.FailoverTimeout == 0 {
		o.FailoverTimeout = 2 * time.Second
	}
}

// SentinelGroup is a master, its replicas and the Sentinels that monitor
// them, every one a redis-server process on loopback.
type SentinelGroup struct {
	// Name is the master's name at the Sentinels.
	Name string
	// Servers are the data servers; Servers[0] was the master at start.
	// Which one is the master now is for the Sentinels to say: see
	// Master.
	Servers []*Server
	// Sentinels are the Sentinel processes.
	Sentinels []*Server
	// Opts are the options the group was started with, defaults filled.
	Opts SentinelOptions

	t testing.TB
}

// StartSentinelGroup starts a master, opts.Replicas replicas and
// opts.Sentinels Sentinels monitoring them, on free loopback ports. It
// returns once every replica's link to the master is up and every Sentinel
// knows the master, every replica and every other Sentinel, so that a
// failover can start at once. Every process is killed by t.Cleanup.
func StartSentinelGroup(t testing.TB, opts SentinelOptions) *SentinelGroup {
	t.Helper()
	opts.defaults()
	if opts.Server.TLS {
		t.Fatalf("redistest: StartSentinelGroup does not support TLS servers")
	}
	g := &SentinelGroup{Name: opts.MasterName, Opts: opts, t: t}
	auth := newReplAuth()
	master := launch(t, opts.Server, func(s *Server, port int) error {
		s.extra = dataNodeArgs(opts.Server, auth)
		return nil
	})
	g.Servers = append(g.Servers, master)
	for i := 0; i < opts.Replicas; i++ {
		g.Servers = append(g.Servers, launch(t, opts.Server, func(s *Server, port int) error {
			s.extra = append(dataNodeArgs(opts.Server, auth), "--replicaof", "127.0.0.1", strconv.Itoa(master.Port))
			return nil
		}))
	}
	waitFor(t, "replicas in sync with "+master.Addr, func() error {
		return replicasOnline(master, opts.Replicas)
	}, g.Servers...)
	for i := 0; i < opts.Sentinels; i++ {
		g.Sentinels = append(g.Sentinels, launch(t, Options{}, func(s *Server, port int) error {
			return writeSentinelConf(s, port, master, opts, auth)
		}))
	}
	for _, sen := range g.Sentinels {
		waitFor(t, "Sentinel "+sen.Addr+" to know the group", func() error {
			return sentinelKnowsGroup(sen, opts)
		}, g.all()...)
	}
	logOnFailure(t, g.all())
	return g
}

// logOnFailure logs the last lines of the servers' logs at the end of a
// failed test, before they are killed and their directories removed.
func logOnFailure(t testing.TB, servers []*Server) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		var b strings.Builder
		for _, s := range servers {
			b.WriteString(s.lastLogLines(40))
		}
		t.Logf("redistest: the test failed; the servers' logs end:\n%s", b.String())
	})
}

// ReplUser is the ACL user the data servers of a Sentinel group or a
// Cluster replicate as (masteruser), and the Sentinels authenticate as.
// Its password is random per group or cluster.
const ReplUser = "redistest-repl"

// replAuth is the password of ReplUser shared by one group or cluster.
type replAuth string

// newReplAuth returns a random password.
func newReplAuth() replAuth {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return replAuth(hex.EncodeToString(b[:]))
}

// dataNodeArgs returns the arguments every data server of a group or a
// cluster gets: an announced loopback address, replication starting at
// once, and replication fenced off from other tests' servers.
//
// The machine is shared: a replica of another test whose master died
// keeps dialing its master's port, which a server here may now hold, and
// would attach to it, be counted by WAIT, and take its writes; a replica
// here whose master died could likewise sync another test's data. So the
// servers of one group or cluster replicate as ReplUser with a password
// of their own, and the default user may not run the replication
// handshake (PSYNC, SYNC, REPLCONF). With Options.Password or User set,
// the default user already needs a password or is off.
func dataNodeArgs(o Options, auth replAuth) []string {
	a := []string{
		"--replica-announce-ip", "127.0.0.1",
		"--repl-diskless-sync-delay", "0",
		"--user", ReplUser, "on", ">" + string(auth), "~*", "&*", "+@all",
		"--masteruser", ReplUser,
		"--masterauth", string(auth),
	}
	if o.User == "" && o.Password == "" {
		a = append(a, "--user", "default", "on", "nopass", "~*", "&*", "+@all", "-psync", "-sync", "-replconf")
	}
	return a
}

// writeSentinelConf writes the configuration file of a Sentinel that will
// listen on port and monitor master, and makes s run in Sentinel mode.
func writeSentinelConf(s *Server, port int, master *Server, o SentinelOptions, auth replAuth) error {
	var b strings.Builder
	fmt.Fprintf(&b, "port %d\nbind 127.0.0.1\n", port)
	b.WriteString("sentinel resolve-hostnames no\nsentinel announce-hostnames no\n")
	b.WriteString("sentinel announce-ip 127.0.0.1\n")
	fmt.Fprintf(&b, "sentinel monitor %s 127.0.0.1 %d %d\n", o.MasterName, master.Port, o.Quorum)
	fmt.Fprintf(&b, "sentinel down-after-milliseconds %s %d\n", o.MasterName, o.DownAfter.Milliseconds())
	fmt.Fprintf(&b, "sentinel failover-timeout %s %d\n", o.MasterName, o.FailoverTimeout.Milliseconds())
	fmt.Fprintf(&b, "sentinel parallel-syncs %s %d\n", o.MasterName, max(o.Replicas, 1))
	fmt.Fprintf(&b, "sentinel auth-user %s %s\n", o.MasterName, ReplUser)
	fmt.Fprintf(&b, "sentinel auth-pass %s %s\n", o.MasterName, auth)
	s.conf = filepath.Join(s.dir, "sentinel.conf")
	s.extra = []string{"--sentinel"}
	return os.WriteFile(s.conf, []byte(b.String()), 0o600)
}

// replicasOnline reports whether master sees n replicas whose link is
// online.
func replicasOnline(master *Server, n int) error {
	info, err := redis.String(master.Do("INFO", "replication"))
	if err != nil {
		return err
	}
	online := strings.Count(info, "state=online")
	if online < n {
		return fmt.Errorf("%d of %d replicas online", online, n)
	}
	return nil
}

// sentinelKnowsGroup reports whether sentinel sees the master up, with
// every replica up and every other Sentinel.
func sentinelKnowsGroup(sentinel *Server, o SentinelOptions) error {
	m, err := redisMap(sentinel.Do("SENTINEL", "MASTER", o.MasterName))
	if err != nil {
		return err
	}
	if m["flags"] != "master" {
		return fmt.Errorf("master flags %q", m["flags"])
	}
	if m["num-other-sentinels"] != strconv.Itoa(o.Sentinels-1) {
		return fmt.Errorf("knows %s other Sentinels of %d", m["num-other-sentinels"], o.Sentinels-1)
	}
	reps, err := redis.Values(sentinel.Do("SENTINEL", "REPLICAS", o.MasterName))
	if err != nil {
		return err
	}
	up := 0
	for _, r := range reps {
		rm, err := redisMap(r, nil)
		if err != nil {
			return err
		}
		if rm["flags"] == "slave" && rm["master-link-status"] == "ok" {
			up++
		}
	}
	if up != o.Replicas {
		return fmt.Errorf("sees %d of %d replicas up", up, o.Replicas)
	}
	return nil
}

// redisMap turns a flat reply of field, value pairs, as Server.Do returns
// it, into a map.
func redisMap(r any, err error) (map[string]string, error) {
	vs, err := redis.Strings(r, err)
	if err != nil {
		return nil, err
	}
	if len(vs)%2 != 0 {
		return nil, fmt.Errorf("odd number of fields and values: %q", vs)
	}
	m := make(map[string]string, len(vs)/2)
	for i := 0; i < len(vs); i += 2 {
		m[vs[i]] = vs[i+1]
	}
	return m, nil
}

// waitFor polls cond until it returns nil, failing the test with what is
// waited for, cond's last error and the last lines of the logs of
// servers after topologyTimeout.
func waitFor(t testing.TB, what string, cond func() error, servers ...*Server) {
	t.Helper()
	if err := poll(topologyTimeout, cond); err != nil {
		var logs strings.Builder
		for _, s := range servers {
			logs.WriteString(s.lastLogLines(20))
		}
		t.Fatalf("redistest: waiting for %s: %v\n%s", what, err, logs.String())
	}
}

// lastLogLines returns the last n lines of the server's log, headed by its
// address and role in the test.
func (s *Server) lastLogLines(n int) string {
	data, err := os.ReadFile(s.logPath())
	if err != nil {
		return fmt.Sprintf("--- %s: %v\n", s.Addr, err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return fmt.Sprintf("--- %s log ---\n%s\n", s.Addr, strings.Join(lines, "\n"))
}

// all returns the group's data servers and Sentinels.
func (g *SentinelGroup) all() []*Server {
	return append(append([]*Server{}, g.Servers...), g.Sentinels...)
}

// poll calls cond every pollInterval until it returns nil or timeout has
// passed, and returns its last error.
func poll(timeout time.Duration, cond func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %v: %w", timeout, err)
		}
		time.Sleep(pollInterval)
	}
}

// SentinelAddrs returns the Sentinels' addresses.
func (g *SentinelGroup) SentinelAddrs() []string {
	out := make([]string, len(g.Sentinels))
	for i, s := range g.Sentinels {
		out[i] = s.Addr
	}
	return out
}

// ServerAt returns the group's data server at addr, or nil.
func (g *SentinelGroup) ServerAt(addr string) *Server {
	for _, s := range g.Servers {
		if s.Addr == addr {
			return s
		}
	}
	return nil
}

// MasterAddr returns the address that a majority of the Sentinels give for
// the master (SENTINEL GET-MASTER-ADDR-BY-NAME), waiting until a majority
// agree. Killed, stopped and unreachable Sentinels count as disagreeing.
func (g *SentinelGroup) MasterAddr() string {
	g.t.Helper()
	var addr string
	waitFor(g.t, "a majority of Sentinels to agree on "+g.Name+"'s master", func() (err error) {
		addr, err = g.majorityMaster()
		return err
	}, g.all()...)
	return addr
}

// majorityMaster returns the master address a majority of the Sentinels
// give.
func (g *SentinelGroup) majorityMaster() (string, error) {
	votes := map[string]int{}
	var errs []error
	for _, sen := range g.Sentinels {
		if !sen.alive() {
			continue // a stopped Sentinel would hang the call
		}
		a, err := SentinelMasterAddr(sen, g.Name)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", sen.Addr, err))
			continue
		}
		votes[a]++
		if votes[a] > len(g.Sentinels)/2 {
			return a, nil
		}
	}
	if len(errs) == 0 {
		return "", fmt.Errorf("no majority: %v", votes)
	}
	return "", fmt.Errorf("no majority: %v %w", votes, errors.Join(errs...))
}

// SentinelMasterAddr asks one Sentinel for the address of master name.
func SentinelMasterAddr(sentinel *Server, name string) (string, error) {
	r, err := redis.Strings(sentinel.Do("SENTINEL", "GET-MASTER-ADDR-BY-NAME", name))
	if err != nil {
		return "", err
	}
	if len(r) != 2 {
		return "", fmt.Errorf("SENTINEL GET-MASTER-ADDR-BY-NAME %s: %q", name, r)
	}
	return r[0] + ":" + r[1], nil
}

// Master returns the data server that a majority of the Sentinels name as
// the master. It does not ask the server itself, which may be dead; see
// WaitFailover.
func (g *SentinelGroup) Master() *Server {
	g.t.Helper()
	addr := g.MasterAddr()
	s := g.ServerAt(addr)
	if s == nil {
		g.t.Fatalf("redistest: the Sentinels name %s as %s's master, which is none of the group's servers", addr, g.Name)
	}
	return s
}

// Replicas returns the data servers other than Master, running or not, in
// the order of Servers.
func (g *SentinelGroup) Replicas() []*Server {
	g.t.Helper()
	m := g.Master()
	var out []*Server
	for _, s := range g.Servers {
		if s != m {
			out = append(out, s)
		}
	}
	return out
}

// KillMaster kills the current master (see Master) and returns it.
func (g *SentinelGroup) KillMaster() *Server {
	g.t.Helper()
	m := g.Master()
	m.Kill()
	return m
}

// WaitFailover waits until a majority of the Sentinels name a master other
// than oldMasterAddr and that server reports the master role, and returns
// it.
func (g *SentinelGroup) WaitFailover(t testing.TB, oldMasterAddr string) *Server {
	t.Helper()
	var s *Server
	waitFor(t, "a failover of "+g.Name+" away from "+oldMasterAddr, func() error {
		addr, err := g.majorityMaster()
		if err != nil {
			return err
		}
		if addr == oldMasterAddr {
			return fmt.Errorf("the Sentinels still name %s", addr)
		}
		if s = g.ServerAt(addr); s == nil {
			return fmt.Errorf("the Sentinels name %s, none of the group's servers", addr)
		}
		role, err := Role(s)
		if err != nil {
			return err
		}
		if role != "master" {
			return fmt.Errorf("%s reports role %s", addr, role)
		}
		return nil
	}, g.all()...)
	return s
}

// Role returns the role s reports (ROLE): "master", "slave" or
// "sentinel".
func Role(s *Server) (string, error) {
	r, err := redis.Values(s.Do("ROLE"))
	if err != nil {
		return "", err
	}
	if len(r) == 0 {
		return "", errors.New("empty ROLE reply")
	}
	return redis.String(r[0], nil)
}

// Failover asks a Sentinel for a failover (SENTINEL FAILOVER), which needs
// no agreement that the master is down. It waits as WaitFailover does and
// returns the new master. The old master, if it runs, stays a writable
// master until the Sentinels convert it to a replica, about 10 s later
// (they wait for it to report its role for a while): WaitReplicas waits
// for that.
func (g *SentinelGroup) Failover(t testing.TB) *Server {
	t.Helper()
	old := g.MasterAddr()
	// A Sentinel refuses while it sees no good replica yet (NOGOODSLAVE)
	// or a failover runs (INPROG): ask again until one accepts.
	waitFor(t, "a Sentinel to accept SENTINEL FAILOVER "+g.Name, func() error {
		var errs []error
		for _, sen := range g.Sentinels {
			if !sen.alive() {
				continue
			}
			_, err := sen.Do("SENTINEL", "FAILOVER", g.Name)
			if err == nil {
				return nil
			}
			errs = append(errs, fmt.Errorf("%s: %w", sen.Addr, err))
		}
		if len(errs) == 0 {
			return errors.New("no Sentinel runs")
		}
		return errors.Join(errs...)
	}, g.all()...)
	return g.WaitFailover(t, old)
}

// RestartAsReplica restarts s, killing it first if it runs, with empty
// data, makes it a replica of the current master (REPLICAOF) without
// waiting for the Sentinels to do it, and waits until its link is up and a
// majority of the Sentinels see it as an up replica of the master.
// Without it, a restarted former master serves as an empty master until
// the Sentinels convert it, which takes them several seconds.
func (g *SentinelGroup) RestartAsReplica(t testing.TB, s *Server) {
	t.Helper()
	m := g.Master()
	if m == s {
		t.Fatalf("redistest: RestartAsReplica: %s is the master", s.Addr)
	}
	s.Restart()
	if _, err := s.Do("REPLICAOF", "127.0.0.1", m.Port); err != nil {
		t.Fatalf("redistest: REPLICAOF on %s: %v", s.Addr, err)
	}
	g.WaitReplicas(t)
}

// WaitReplicas waits until every running data server other than the
// master replicates from it with its link up and has its replication
// offset, and a majority of the Sentinels see each as an up replica of the
// master. Call it after a failover or a restart to let the group settle.
func (g *SentinelGroup) WaitReplicas(t testing.TB) {
	t.Helper()
	waitFor(t, "the replicas of "+g.Name+"'s master to be in sync", func() error {
		// Asked each time: the Sentinels may fail over meanwhile.
		addr, err := g.majorityMaster()
		if err != nil {
			return err
		}
		m := g.ServerAt(addr)
		if m == nil {
			return fmt.Errorf("the Sentinels name %s, none of the group's servers", addr)
		}
		var want []*Server
		for _, s := range g.Servers {
			if s != m && s.alive() {
				want = append(want, s)
			}
		}
		if err := replicasSynced(m, want); err != nil {
			return err
		}
		seeing := 0
		var last error
		for _, sen := range g.Sentinels {
			if !sen.alive() {
				continue
			}
			if err := sentinelSeesReplicas(sen, g.Name, m, want); err != nil {
				last = err
			} else {
				seeing++
			}
		}
		if seeing <= len(g.Sentinels)/2 {
			if last == nil { // too few are up
				return fmt.Errorf("%d of %d Sentinels see the replicas", seeing, len(g.Sentinels))
			}
			return fmt.Errorf("%d of %d Sentinels see the replicas: %w", seeing, len(g.Sentinels), last)
		}
		return nil
	}, g.all()...)
}

// replicasSynced reports whether each of want replicates from master with
// its link up, at master's replication offset.
func replicasSynced(master *Server, want []*Server) error {
	info, err := redis.String(master.Do("INFO", "replication"))
	if err != nil {
		return fmt.Errorf("%s: %w", master.Addr, err)
	}
	offset := infoField(info, "master_repl_offset")
	for _, r := range want {
		rinfo, err := redis.String(r.Do("INFO", "replication"))
		if err != nil {
			return fmt.Errorf("%s: %w", r.Addr, err)
		}
		if got := infoField(rinfo, "master_port"); got != strconv.Itoa(master.Port) {
			return fmt.Errorf("%s replicates from port %q, not %d", r.Addr, got, master.Port)
		}
		if infoField(rinfo, "master_link_status") != "up" {
			return fmt.Errorf("%s: link to %s down", r.Addr, master.Addr)
		}
		if got := infoField(rinfo, "slave_repl_offset"); got != offset {
			return fmt.Errorf("%s at offset %s, master at %s", r.Addr, got, offset)
		}
	}
	return nil
}

// sentinelSeesReplicas reports whether sentinel lists each of want as an
// up replica of master.
func sentinelSeesReplicas(sentinel *Server, name string, master *Server, want []*Server) error {
	reps, err := redis.Values(sentinel.Do("SENTINEL", "REPLICAS", name))
	if err != nil {
		return err
	}
	up := map[string]bool{}
	for _, r := range reps {
		rm, err := redisMap(r, nil)
		if err != nil {
			return err
		}
		if rm["flags"] == "slave" && rm["master-link-status"] == "ok" && rm["master-port"] == strconv.Itoa(master.Port) {
			up[rm["ip"]+":"+rm["port"]] = true
		}
	}
	for _, r := range want {
		if !up[r.Addr] {
			return fmt.Errorf("sentinel %s does not see %s up as a replica of %s", sentinel.Addr, r.Addr, master.Addr)
		}
	}
	return nil
}

// infoField returns the value of field in an INFO reply, or "".
func infoField(info, field string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
