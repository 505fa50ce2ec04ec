package wire

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/redlock-go/redlock/core"
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
