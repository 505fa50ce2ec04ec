package redistest

import (
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
)

// ClusterSlots is the number of hash slots of a Redis Cluster.
const ClusterSlots = 16384

// ClusterOptions configure a cluster.
type ClusterOptions struct {
	// Masters is the number of masters; 3 if zero. The slots are split
	// among them in contiguous ranges of nearly equal size, in order.
	Masters int
	// Replicas is the number of replicas of each master; 1 if zero, none
	// if negative.
	Replicas int
	// NodeTimeout is cluster-node-timeout, after which an unreachable
	// node is suspected failing; 2 s if zero.
	NodeTimeout time.Duration
	// Server are the nodes' options; MigrateSlot authenticates with them.
	// The replicas replicate as ReplUser whatever they are (see
	// dataNodeArgs). TLS is not supported.
	Server Options
}

func (o *ClusterOptions) defaults() {
	if o.Masters == 0 {
		o.Masters = 3
	}
	switch {
	case o.Replicas == 0:
		o.Replicas = 1
	case o.Replicas < 0:
		o.Replicas = 0
	}
	if o.NodeTimeout == 0 {
		o.NodeTimeout = 2 * time.Second
	}
}

// Cluster is a Redis Cluster of redis-server processes on loopback.
type Cluster struct {
	// Servers are the nodes: the Masters masters at start first, in slot
	// order, then their replicas, those of the first master first. Which
	// node is a master now is for the cluster to say: see Masters and
	// MasterForSlot.
	Servers []*Server
	// Opts are the options the cluster was started with, defaults filled.
	Opts ClusterOptions

	t   testing.TB
	ids map[*Server]string // node IDs, kept across restarts (nodes.conf)
	bus map[*Server]int    // cluster bus ports
}

// StartCluster starts opts.Masters masters with opts.Replicas replicas
// each, on free loopback ports (and free bus ports), assigns every slot and
// returns once every node reports cluster_state:ok, every node agrees on
// the slots' owners and each replica's link to its master is up. Every
// process is killed by t.Cleanup.
func StartCluster(t testing.TB, opts ClusterOptions) *Cluster {
	t.Helper()
	opts.defaults()
	if opts.Server.TLS {
		t.Fatalf("redistest: StartCluster does not support TLS servers")
	}
	c := &Cluster{Opts: opts, t: t, ids: map[*Server]string{}, bus: map[*Server]int{}}
	n := opts.Masters * (1 + opts.Replicas)
	auth := newReplAuth()
	for i := 0; i < n; i++ {
		s := launch(t, opts.Server, func(s *Server, port int) error {
			bus, err := freePort()
			for err == nil && bus == port {
				bus, err = freePort()
			}
			if err != nil {
				return err
			}
			s.extra = append(dataNodeArgs(opts.Server, auth),
				"--cluster-enabled", "yes",
				"--cluster-config-file", "nodes.conf",
				"--cluster-node-timeout", strconv.FormatInt(opts.NodeTimeout.Milliseconds(), 10),
				"--cluster-port", strconv.Itoa(bus),
				"--cluster-announce-ip", "127.0.0.1",
				"--cluster-allow-replica-migration", "no",
			)
			c.bus[s] = bus
			return nil
		})
		id, err := redis.String(s.Do("CLUSTER", "MYID"))
		if err != nil {
			t.Fatalf("redistest: CLUSTER MYID on %s: %v", s.Addr, err)
		}
		c.ids[s] = id
		c.Servers = append(c.Servers, s)
		// Distinct epochs from the start, as redis-cli --cluster create
		// sets them, so that no collision needs resolving.
		c.must(s, "CLUSTER", "SET-CONFIG-EPOCH", i+1)
	}
	for i := 0; i < opts.Masters; i++ {
		first, last := i*ClusterSlots/opts.Masters, (i+1)*ClusterSlots/opts.Masters-1
		c.must(c.Servers[i], "CLUSTER", "ADDSLOTSRANGE", first, last)
	}
	seed := c.Servers[0]
	for _, s := range c.Servers[1:] {
		c.must(s, "CLUSTER", "MEET", "127.0.0.1", seed.Port, c.bus[seed])
	}
	waitFor(t, "every node to know every other", func() error {
		for _, s := range c.Servers {
			nodes, err := clusterNodes(s)
			if err != nil {
				return err
			}
			if len(nodes) != n {
				return fmt.Errorf("%s knows %d of %d nodes", s.Addr, len(nodes), n)
			}
			for _, nd := range nodes {
				if nd.has("handshake") || nd.has("noaddr") || nd.link != "connected" {
					return fmt.Errorf("%s sees %s %v %s", s.Addr, nd.addr, nd.flags, nd.link)
				}
			}
		}
		return nil
	}, c.Servers...)
	for i, s := range c.Servers[opts.Masters:] {
		master := c.Servers[i/opts.Replicas]
		c.must(s, "CLUSTER", "REPLICATE", c.ids[master])
	}
	c.WaitHealthy(t)
	logOnFailure(t, c.Servers)
	return c
}

// must runs a command on s and fails the test on an error.
func (c *Cluster) must(s *Server, args ...any) any {
	c.t.Helper()
	r, err := s.Do(args...)
	if err != nil {
		c.t.Fatalf("redistest: %v on %s: %v", args, s.Addr, err)
	}
	return r
}

// Addrs returns every node's address, to seed a cluster client.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.Servers))
	for i, s := range c.Servers {
		out[i] = s.Addr
	}
	return out
}

// NodeID returns s's cluster node ID.
func (c *Cluster) NodeID(s *Server) string { return c.ids[s] }

// node returns the server with node ID id, or nil.
func (c *Cluster) node(id string) *Server {
	for s, sid := range c.ids {
		if sid == id {
			return s
		}
	}
	return nil
}

// alive returns the nodes whose process runs and is not stopped.
func (c *Cluster) alive() []*Server {
	var out []*Server
	for _, s := range c.Servers {
		if s.alive() {
			out = append(out, s)
		}
	}
	return out
}

// WaitHealthy waits until every running node reports cluster_state:ok and
// sees every slot assigned, all of them agree on each slot's owner and
// each replica's master, each
// owner reports ROLE master, and every running replica of a running master
// reports its link up. Killed and stopped nodes are not asked. After a
// master is killed or stopped, it also waits for the cluster's own
// failover: a replica is elected once the others deem the master failing
// (NodeTimeout and a vote).
func (c *Cluster) WaitHealthy(t testing.TB) {
	t.Helper()
	waitFor(t, "the cluster to be healthy on every running node", c.healthy, c.Servers...)
}

func (c *Cluster) healthy() error {
	var ref string
	owners := map[string]bool{}
	alive := c.alive()
	for _, s := range alive {
		info, err := redis.String(s.Do("CLUSTER", "INFO"))
		if err != nil {
			return fmt.Errorf("%s: %w", s.Addr, err)
		}
		if !strings.Contains(info, "cluster_state:ok") ||
			!strings.Contains(info, "cluster_slots_assigned:"+strconv.Itoa(ClusterSlots)) {
			return fmt.Errorf("%s: cluster not ok:\n%s", s.Addr, info)
		}
		nodes, err := clusterNodes(s)
		if err != nil {
			return fmt.Errorf("%s: %w", s.Addr, err)
		}
		view := slotView(nodes)
		if ref == "" {
			ref = view
		} else if view != ref {
			return fmt.Errorf("nodes disagree on the slots or replicas: %s\nversus %s", ref, view)
		}
		for _, nd := range nodes {
			if len(nd.slots) > 0 {
				owners[nd.id] = true
			}
		}
	}
	for id := range owners {
		s := c.node(id)
		if s == nil {
			return fmt.Errorf("slots owned by unknown node %s", id)
		}
		if !s.alive() {
			return fmt.Errorf("slots owned by %s, which is down", s.Addr)
		}
		role, err := Role(s)
		if err != nil {
			return fmt.Errorf("slot owner %s reports role %q (%w)", s.Addr, role, err)
		}
		if role != "master" {
			return fmt.Errorf("slot owner %s reports role %q", s.Addr, role)
		}
	}
	for _, s := range alive {
		if owners[c.ids[s]] {
			continue
		}
		info, err := redis.String(s.Do("INFO", "replication"))
		if err != nil {
			return fmt.Errorf("%s: %w", s.Addr, err)
		}
		if !strings.Contains(info, "role:slave") {
			continue // a master without slots
		}
		if !strings.Contains(info, "master_link_status:up") {
			return fmt.Errorf("replica %s: link to its master down", s.Addr)
		}
	}
	return nil
}

// clusterNode is one line of CLUSTER NODES.
type clusterNode struct {
	id, addr string
	flags    []string
	master   string // the master's ID for a replica, "-" otherwise
	link     string // "connected" or "disconnected"
	slots    [][2]int
}

func (n clusterNode) has(flag string) bool {
	for _, f := range n.flags {
		if f == flag {
			return true
		}
	}
	return false
}

// clusterNodes returns s's view of the cluster (CLUSTER NODES).
func clusterNodes(s *Server) ([]clusterNode, error) {
	text, err := redis.String(s.Do("CLUSTER", "NODES"))
	if err != nil {
		return nil, err
	}
	var out []clusterNode
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			return nil, fmt.Errorf("CLUSTER NODES line %q", line)
		}
		addr, _, _ := strings.Cut(f[1], "@")
		n := clusterNode{id: f[0], addr: addr, flags: strings.Split(f[2], ","), master: f[3], link: f[7]}
		for _, r := range f[8:] {
			if strings.HasPrefix(r, "[") {
				continue // a slot being imported or migrated
			}
			lo, hi, isRange := strings.Cut(r, "-")
			a, err := strconv.Atoi(lo)
			if err != nil {
				return nil, fmt.Errorf("CLUSTER NODES slot %q", r)
			}
			b := a
			if isRange {
				if b, err = strconv.Atoi(hi); err != nil {
					return nil, fmt.Errorf("CLUSTER NODES slot %q", r)
				}
			}
			n.slots = append(n.slots, [2]int{a, b})
		}
		out = append(out, n)
	}
	return out, nil
}

// slotView returns a canonical text of which node owns which slots and
// which node replicates which.
func slotView(nodes []clusterNode) string {
	var parts []string
	for _, n := range nodes {
		if n.has("slave") {
			parts = append(parts, fmt.Sprintf("%s<%s", n.id, n.master))
		}
		for _, r := range n.slots {
			parts = append(parts, fmt.Sprintf("%05d-%05d:%s", r[0], r[1], n.id))
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

// ownerIn returns the ID of the node that owns slot in nodes, or "".
func ownerIn(nodes []clusterNode, slot int) string {
	for _, n := range nodes {
		for _, r := range n.slots {
			if r[0] <= slot && slot <= r[1] {
				return n.id
			}
		}
	}
	return ""
}

// MasterForSlot returns the master that owns slot, waiting until every
// running node agrees on it.
func (c *Cluster) MasterForSlot(slot int) *Server {
	c.t.Helper()
	var s *Server
	waitFor(c.t, "the nodes to agree on slot "+strconv.Itoa(slot)+"'s owner", func() error {
		var owner string
		for _, n := range c.alive() {
			nodes, err := clusterNodes(n)
			if err != nil {
				return fmt.Errorf("%s: %w", n.Addr, err)
			}
			o := ownerIn(nodes, slot)
			if o == "" {
				return fmt.Errorf("%s: slot %d has no owner", n.Addr, slot)
			}
			if owner != "" && o != owner {
				return fmt.Errorf("slot %d owned by %s or %s", slot, owner, o)
			}
			owner = o
		}
		if s = c.node(owner); s == nil {
			return fmt.Errorf("slot %d owned by unknown node %q", slot, owner)
		}
		return nil
	}, c.Servers...)
	return s
}

// MasterForKey returns the master that owns key's slot (see
// MasterForSlot).
func (c *Cluster) MasterForKey(key string) *Server {
	c.t.Helper()
	return c.MasterForSlot(KeySlot(key))
}

// Masters returns the nodes that own slots now, in slot order.
func (c *Cluster) Masters() []*Server {
	c.t.Helper()
	var out []*Server
	seen := map[*Server]bool{}
	for slot := 0; slot < ClusterSlots; {
		m := c.MasterForSlot(slot)
		if !seen[m] {
			seen[m] = true
			out = append(out, m)
		}
		// Skip to the end of m's range holding slot.
		nodes, err := clusterNodes(m)
		if err != nil {
			c.t.Fatalf("redistest: CLUSTER NODES on %s: %v", m.Addr, err)
		}
		next := slot + 1
		for _, n := range nodes {
			if n.id != c.ids[m] {
				continue
			}
			for _, r := range n.slots {
				if r[0] <= slot && slot <= r[1] {
					next = r[1] + 1
				}
			}
		}
		slot = next
	}
	return out
}

// ReplicasOf returns the nodes that master's own view lists as its
// replicas, in the order of Servers.
func (c *Cluster) ReplicasOf(master *Server) []*Server {
	c.t.Helper()
	nodes, err := clusterNodes(master)
	if err != nil {
		c.t.Fatalf("redistest: CLUSTER NODES on %s: %v", master.Addr, err)
	}
	of := map[string]bool{}
	for _, n := range nodes {
		if n.master == c.ids[master] {
			of[n.id] = true
		}
	}
	var out []*Server
	for _, s := range c.Servers {
		if of[c.ids[s]] {
			out = append(out, s)
		}
	}
	return out
}

// MigrateSlot moves slot, with its keys, from its owner to master to, as
// redis-cli --cluster reshard does: CLUSTER SETSLOT IMPORTING on to,
// MIGRATING on the owner, MIGRATE of the keys in batches, then SETSLOT
// NODE on to, the old owner and every other master. It returns once every
// running node agrees that to owns the slot. It does nothing if to owns
// the slot already.
func (c *Cluster) MigrateSlot(t testing.TB, slot int, to *Server) {
	t.Helper()
	from := c.MasterForSlot(slot)
	if from == to {
		return
	}
	do := func(s *Server, args ...any) any {
		t.Helper()
		r, err := s.Do(args...)
		if err != nil {
			t.Fatalf("redistest: %v on %s: %v", args, s.Addr, err)
		}
		return r
	}
	do(to, "CLUSTER", "SETSLOT", slot, "IMPORTING", c.ids[from])
	do(from, "CLUSTER", "SETSLOT", slot, "MIGRATING", c.ids[to])
	for {
		keys, err := redis.Strings(from.Do("CLUSTER", "GETKEYSINSLOT", slot, 100))
		if err != nil {
			t.Fatalf("redistest: CLUSTER GETKEYSINSLOT %d on %s: %v", slot, from.Addr, err)
		}
		if len(keys) == 0 {
			break
		}
		host, port, _ := net.SplitHostPort(to.Addr)
		args := []any{"MIGRATE", host, port, "", 0, 10000}
		switch {
		case c.Opts.Server.User != "":
			args = append(args, "AUTH2", c.Opts.Server.User, c.Opts.Server.UserPassword)
		case c.Opts.Server.Password != "":
			args = append(args, "AUTH", c.Opts.Server.Password)
		}
		args = append(args, "KEYS")
		for _, k := range keys {
			args = append(args, k)
		}
		do(from, args...)
	}
	do(to, "CLUSTER", "SETSLOT", slot, "NODE", c.ids[to])
	do(from, "CLUSTER", "SETSLOT", slot, "NODE", c.ids[to])
	for _, m := range c.Masters() {
		if m != to && m != from && m.alive() {
			do(m, "CLUSTER", "SETSLOT", slot, "NODE", c.ids[to])
		}
	}
	waitFor(t, fmt.Sprintf("every node to see slot %d at %s", slot, to.Addr), func() error {
		for _, n := range c.alive() {
			nodes, err := clusterNodes(n)
			if err != nil {
				return fmt.Errorf("%s: %w", n.Addr, err)
			}
			if o := ownerIn(nodes, slot); o != c.ids[to] {
				return fmt.Errorf("%s sees slot %d at %q", n.Addr, slot, o)
			}
		}
		return nil
	}, c.Servers...)
}

// ForceFailover kills replica's master and makes replica take its slots
// over (see TakeOver). It returns the old master, killed: Restart brings
// it back as a replica of the new master.
func (c *Cluster) ForceFailover(t testing.TB, replica *Server) (oldMaster *Server) {
	t.Helper()
	oldMaster = c.masterOf(t, replica)
	oldMaster.Kill()
	c.TakeOver(t, replica)
	return oldMaster
}

// TakeOver makes replica take its master's slots over with CLUSTER
// FAILOVER TAKEOVER, which needs neither the master nor a vote of the
// other masters, then waits until replica reports ROLE master and the
// cluster is healthy on every running node (see WaitHealthy). The master
// is left as it is: kill or stop it first to model its failure. A master
// stopped (Stop) during the takeover still takes writes for a moment after
// Cont, until it learns of the newer configuration and becomes a replica.
func (c *Cluster) TakeOver(t testing.TB, replica *Server) {
	t.Helper()
	c.failover(t, replica, "TAKEOVER")
}

// Failover runs a manual failover (CLUSTER FAILOVER) on replica: its
// running master stops taking writes, replica catches up with it and takes
// its slots over, so that no acknowledged write is lost. It waits until
// replica reports ROLE master, the old master ROLE slave, and the cluster
// is healthy; it returns the old master.
func (c *Cluster) Failover(t testing.TB, replica *Server) (oldMaster *Server) {
	t.Helper()
	oldMaster = c.masterOf(t, replica)
	c.failover(t, replica)
	waitFor(t, oldMaster.Addr+" to be a replica", func() error { return hasRole(oldMaster, "slave") }, c.Servers...)
	c.WaitHealthy(t)
	return oldMaster
}

// failover runs CLUSTER FAILOVER with opts on replica and waits until it
// is master and the cluster healthy.
func (c *Cluster) failover(t testing.TB, replica *Server, opts ...any) {
	t.Helper()
	args := append([]any{"CLUSTER", "FAILOVER"}, opts...)
	if _, err := replica.Do(args...); err != nil {
		t.Fatalf("redistest: %v on %s: %v", args, replica.Addr, err)
	}
	waitFor(t, replica.Addr+" to be master", func() error { return hasRole(replica, "master") }, c.Servers...)
	c.WaitHealthy(t)
}

// masterOf returns the master replica replicates from, in its own view.
func (c *Cluster) masterOf(t testing.TB, replica *Server) *Server {
	t.Helper()
	nodes, err := clusterNodes(replica)
	if err != nil {
		t.Fatalf("redistest: CLUSTER NODES on %s: %v", replica.Addr, err)
	}
	var masterID string
	for _, n := range nodes {
		if n.id == c.ids[replica] && n.has("slave") {
			masterID = n.master
		}
	}
	m := c.node(masterID)
	if m == nil {
		t.Fatalf("redistest: %s is not a replica of a known node (master %q)", replica.Addr, masterID)
	}
	return m
}

// hasRole reports whether s reports role (ROLE).
func hasRole(s *Server, role string) error {
	got, err := Role(s)
	if err != nil {
		return fmt.Errorf("%s: %w", s.Addr, err)
	}
	if got != role {
		return fmt.Errorf("%s reports role %s, not %s", s.Addr, got, role)
	}
	return nil
}

// KeySlot returns key's hash slot as Redis computes it: CRC16 (XMODEM) of
// the key, or of its hash tag (the bytes between the first "{" and the
// next "}", if not empty), modulo 16384.
func KeySlot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	return int(crc16(key)) % ClusterSlots
}

// crc16 is CRC-16/XMODEM (polynomial 0x1021, initial value 0), Redis
// Cluster's key hash.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for b := 0; b < 8; b++ {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}
