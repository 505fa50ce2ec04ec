package wire

import (
	"context"
	"fmt"
	"net"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers/internal/dialspec"
)

// CheckAddrs validates a driver's node addresses before anything connects:
// the list must not be empty or longer than core.MaxNodes, every entry must
// be host:port with a non-empty host and a port in 1..65535, and no server
// may appear twice, whether by the same address (host compared
// case-insensitively) or by two names that resolve to it: a node listed
// twice would count twice towards the quorum. The error wraps
// core.ErrInvalidConfig and names the offending entries.
func CheckAddrs(driver string, addrs []string) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", core.ErrInvalidConfig, driver, fmt.Sprintf(format, args...))
	}
	switch {
	case len(addrs) == 0:
		return bad("no node addresses")
	case len(addrs) > core.MaxNodes:
		return bad("%d node addresses, more than core.MaxNodes (%d)", len(addrs), core.MaxNodes)
	}
	seen := make(map[string]int, len(addrs))
	for i, a := range addrs {
		host, port, err := net.SplitHostPort(a)
		if err != nil {
			return bad("address %d %q is not host:port: %v", i, a, err)
		}
		if host == "" {
			return bad("address %d %q has no host", i, a)
		}
		p, err := strconv.ParseUint(port, 10, 16)
		if err != nil || p == 0 {
			return bad("address %d %q has an invalid port %q", i, a, port)
		}
		// "A:01" and "a:1" are one server, which must not vote twice.
		k := net.JoinHostPort(strings.ToLower(host), strconv.FormatUint(p, 10))
		if j, dup := seen[k]; dup {
			return bad("address %d %q repeats address %d %q", i, a, j, addrs[j])
		}
		seen[k] = i
	}
	return checkSameServer(addrs, bad)
}

// resolveTimeout bounds the name lookups of checkSameServer.
const resolveTimeout = 2 * time.Second

// checkSameServer refuses two addresses that name one server: the same
// port on hosts that resolve to a common IP ("localhost:6379" and
// "127.0.0.1:6379"). A host that does not resolve now is not refused: the
// node may be down or not yet in DNS, and the driver reports it when it
// dials. Aliases that no lookup can see (NAT, proxies) stay undetected.
func checkSameServer(addrs []string, bad func(string, ...any) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), resolveTimeout)
	defer cancel()
	owner := map[string]int{} // "ip:port" -> address index
	for i, a := range addrs {
		host, port, _ := net.SplitHostPort(a)
		p, _ := strconv.ParseUint(port, 10, 16)
		for _, ip := range resolve(ctx, host) {
			ep := net.JoinHostPort(ip.String(), strconv.FormatUint(p, 10))
			if j, dup := owner[ep]; dup && j != i {
				return bad("address %d %q is the same server as address %d %q (%s)", i, a, j, addrs[j], ep)
			}
			owner[ep] = i
		}
	}
	return nil
}

// resolve returns host's IPs, IPv4-mapped IPv6 ones unmapped, or nothing.
func resolve(ctx context.Context, host string) []net.IP {
	if ip := net.ParseIP(host); ip != nil {
		return []net.IP{unmap(ip)}
	}
	ips, err := net.DefaultResolver.LookupIP(ctx, "ip", host)
	if err != nil {
		return nil
	}
	for i := range ips {
		ips[i] = unmap(ips[i])
	}
	return ips
}

func unmap(ip net.IP) net.IP {
	if v4 := ip.To4(); v4 != nil {
		return v4
	}
	return ip
}

// CheckNames validates the node names given to a driver's New: one per
// client, none empty, no duplicates.
func CheckNames(driver string, clients int, names []string) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", core.ErrInvalidConfig, driver, fmt.Sprintf(format, args...))
	}
	switch {
	case clients == 0:
		return bad("no clients")
	case clients > core.MaxNodes:
		return bad("%d clients, more than core.MaxNodes (%d)", clients, core.MaxNodes)
	case len(names) != clients:
		return bad("%d names for %d clients", len(names), clients)
	}
	seen := make(map[string]int, len(names))
	for i, n := range names {
		if n == "" {
			return bad("name %d is empty", i)
		}
		if j, dup := seen[n]; dup {
			return bad("clients %d and %d have the same name %q", j, i, n)
		}
		seen[n] = i
	}
	return nil
}

// CheckDial validates a driver's Dial arguments: addrs as CheckAddrs does,
// and opts. It returns a copy of addrs, for the driver to dial from (a
// caller may reuse its slice), and the dial timeout to use.
func CheckDial(driver string, addrs []string, opts dialspec.Options) ([]string, time.Duration, error) {
	if err := CheckAddrs(driver, addrs); err != nil {
		return nil, 0, err
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", core.ErrInvalidConfig, driver, fmt.Sprintf(format, args...))
	}
	switch {
	case opts.DialTimeout < 0:
		return nil, 0, bad("DialTimeout %v is negative", opts.DialTimeout)
	case opts.DB < 0:
		return nil, 0, bad("DB %d is negative", opts.DB)
	case opts.Username != "" && opts.Password == "":
		return nil, 0, bad("Username %q has no Password", opts.Username)
	case opts.DialTimeout == 0:
		return slices.Clone(addrs), dialspec.DefaultDialTimeout, nil
	}
	return slices.Clone(addrs), opts.DialTimeout, nil
}

// CheckClients validates the clients given to a driver's New, one per node:
// none nil, none twice (one server would vote twice), and their names as
// CheckNames does. When names is nil, name gives each client's. It returns
// the names.
func CheckClients[C any](driver string, clients []C, names []string, name func(i int, c C) string) ([]string, error) {
	for i, c := range clients {
		if isNil(c) {
			return nil, fmt.Errorf("%w: %s: client %d is nil", core.ErrInvalidConfig, driver, i)
		}
		for j := range i {
			if same(c, clients[j]) {
				return nil, fmt.Errorf("%w: %s: client %d is client %d again", core.ErrInvalidConfig, driver, i, j)
			}
		}
	}
	if names == nil {
		names = make([]string, len(clients))
		for i, c := range clients {
			names[i] = name(i, c)
		}
	}
	return names, CheckNames(driver, len(clients), names)
}

func isNil(c any) bool {
	if c == nil {
		return true
	}
	switch v := reflect.ValueOf(c); v.Kind() {
	case reflect.Pointer, reflect.Interface, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan:
		return v.IsNil()
	}
	return false
}

// same reports whether a and b are one client. Values of a type that is
// not comparable are never the same.
func same(a, b any) bool {
	ta := reflect.TypeOf(a)
	return ta == reflect.TypeOf(b) && ta.Comparable() && a == b
}

// CheckMembers validates a driver's quorum members before anything
// connects: one to core.MaxNodes members, each of a topology in supported
// (the driver's client has no Sentinel or Cluster client otherwise), with
// valid addresses (as CheckAddrs), a master name for a Sentinel group,
// exactly one address for a standalone master, and a WAIT with a positive
// timeout; no server address may appear in two members, since a member
// listed twice would vote twice. The error wraps core.ErrInvalidConfig and
// names the offending members.
func CheckMembers(driver string, members []dialspec.Member, supported ...dialspec.Topology) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", core.ErrInvalidConfig, driver, fmt.Sprintf(format, args...))
	}
	switch {
	case len(members) == 0:
		return bad("no members")
	case len(members) > core.MaxNodes:
		return bad("%d members, more than core.MaxNodes (%d)", len(members), core.MaxNodes)
	}
	var all []string
	owner := []int{}
	for i, m := range members {
		switch {
		case m.Topology < dialspec.Standalone || m.Topology > dialspec.ClusterGroup:
			return bad("member %d has no topology (make it with dialspec.NewStandalone, NewSentinel or NewCluster)", i)
		case !slices.Contains(supported, m.Topology):
			return bad("member %d %s: this driver's client has no %s client", i, m, topologyName(m.Topology))
		case len(m.Addrs) == 0:
			return bad("member %d %s has no addresses", i, m)
		case m.Topology == dialspec.Standalone && len(m.Addrs) != 1:
			return bad("member %d %s: a standalone master has one address, not %d", i, m, len(m.Addrs))
		case m.Topology == dialspec.SentinelGroup && m.MasterName == "":
			return bad("member %d %s: a Sentinel group needs its master name", i, m)
		case m.Replicas < 0:
			return bad("member %d %s: Replicas %d is negative", i, m, m.Replicas)
		case m.Replicas > 0 && m.WaitTimeout <= 0:
			return bad("member %d %s: WAIT for %d replicas needs a positive WaitTimeout, not %v", i, m, m.Replicas, m.WaitTimeout)
		case m.Replicas == 0 && m.WaitTimeout != 0:
			return bad("member %d %s: WaitTimeout %v without Replicas", i, m, m.WaitTimeout)
		}
		if err := CheckAddrs(driver, m.Addrs); err != nil {
			return fmt.Errorf("member %d %s: %w", i, m, err)
		}
		for range m.Addrs {
			owner = append(owner, i)
		}
		all = append(all, m.Addrs...)
	}
	if err := CheckAddrs(driver, all); err != nil {
		// Within a member the addresses were distinct: two members share one.
		return fmt.Errorf("%w: %s: two members reach one server (a member would vote twice): %v", core.ErrInvalidConfig, driver, memberOwners(err, all, owner, members))
	}
	return nil
}

// memberOwners rewrites CheckAddrs's error on the members' addresses
// together so that it names members rather than positions in the list.
func memberOwners(err error, all []string, owner []int, members []dialspec.Member) string {
	msg := err.Error()
	var which []string
	for k, a := range all {
		if strings.Contains(msg, strconv.Quote(a)) {
			which = append(which, fmt.Sprintf("member %d %s", owner[k], members[owner[k]]))
		}
	}
	return strings.Join(slices.Compact(which), " and ")
}

func topologyName(t dialspec.Topology) string {
	switch t {
	case dialspec.SentinelGroup:
		return "Sentinel"
	case dialspec.ClusterGroup:
		return "Cluster"
	}
	return "standalone"
}
