package wire

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/redlock-go/redlock/core"
)

// CheckAddrs validates a driver's node addresses before anything connects:
// the list must not be empty or longer than core.MaxNodes, every entry must
// be host:port with a non-empty host and a port in 1..65535, and no address
// may appear twice (host compared case-insensitively): a node listed twice
// would count twice towards the quorum. The error wraps
// core.ErrInvalidConfig and names the offending entry.
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
	return nil
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
