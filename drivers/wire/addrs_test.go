package wire

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock/core"
)

func TestCheckAddrs(t *testing.T) {
	for _, tc := range []struct {
		name  string
		addrs []string
		want  string
	}{
		{"nil", nil, "no node addresses"},
		{"empty entry", []string{"127.0.0.1:1", ""}, `address 1 ""`},
		{"no port", []string{"localhost"}, `address 0 "localhost" is not host:port`},
		{"no host", []string{":6379"}, `address 0 ":6379" has no host`},
		{"bad port", []string{"h:http"}, `invalid port "http"`},
		{"port zero", []string{"h:0"}, `invalid port "0"`},
		{"port too big", []string{"h:65536"}, `invalid port "65536"`},
		{"duplicate", []string{"a:1", "b:1", "a:1"}, `address 2 "a:1" repeats address 0 "a:1"`},
		{"duplicate host case", []string{"LocalHost:7001", "localhost:7001"}, "repeats"},
		{"duplicate leading zero", []string{"a:01", "a:1"}, `address 1 "a:1" repeats address 0 "a:01"`},
		{"too many", make([]string, core.MaxNodes+1), "more than core.MaxNodes"},
		// One server under two names: localhost resolves to 127.0.0.1.
		{"same server, two names", []string{"127.0.0.1:7001", "127.0.0.1:7002", "localhost:7001"},
			`address 2 "localhost:7001" is the same server as address 0 "127.0.0.1:7001" (127.0.0.1:7001)`},
		{"same server, ipv4-mapped", []string{"127.0.0.1:7001", "[::ffff:127.0.0.1]:7001"}, "same server"},
	} {
		err := CheckAddrs("drv", tc.addrs)
		require.ErrorIs(t, err, core.ErrInvalidConfig, tc.name)
		assert.ErrorContains(t, err, "drv: ", tc.name)
		assert.ErrorContains(t, err, tc.want, tc.name)
	}
	// Distinct servers; a name that does not resolve now is not refused
	// (the node may be down or its name not yet in DNS).
	assert.NoError(t, CheckAddrs("drv", []string{"127.0.0.1:7001", "127.0.0.1:7002", "[::1]:7001", "redis-a.invalid:6379"}))
}

func TestCheckNames(t *testing.T) {
	for _, tc := range []struct {
		name    string
		clients int
		names   []string
		want    string
	}{
		{"no clients", 0, nil, "no clients"},
		{"too many", core.MaxNodes + 1, make([]string, core.MaxNodes+1), "more than core.MaxNodes"},
		{"count mismatch", 2, []string{"a"}, "1 names for 2 clients"},
		{"empty name", 2, []string{"a", ""}, "name 1 is empty"},
		{"duplicate", 3, []string{"a", "b", "a"}, `clients 0 and 2 have the same name "a"`},
	} {
		err := CheckNames("drv", tc.clients, tc.names)
		require.ErrorIs(t, err, core.ErrInvalidConfig, tc.name)
		assert.True(t, strings.Contains(err.Error(), tc.want), "%s: %v", tc.name, err)
	}
	assert.NoError(t, CheckNames("drv", 2, []string{"a", "b"}))
}

func TestCheckClients(t *testing.T) {
	type pool struct{ n int }
	a, b := &pool{1}, &pool{2}
	name := func(i int, _ *pool) string { return "p" + strconv.Itoa(i) }
	names, err := CheckClients("d", []*pool{a, b}, nil, name)
	require.NoError(t, err)
	assert.Equal(t, []string{"p0", "p1"}, names)
	for _, tc := range []struct {
		clients []*pool
		names   []string
		want    string
	}{
		{nil, nil, "d: no clients"},
		{[]*pool{a, nil}, nil, "d: client 1 is nil"},
		{[]*pool{a, b, a}, nil, "d: client 2 is client 0 again"},
		{[]*pool{a, b}, []string{"x", "x"}, `d: clients 0 and 1 have the same name "x"`},
		{[]*pool{a, b}, []string{"x"}, "d: 1 names for 2 clients"},
	} {
		_, err := CheckClients("d", tc.clients, tc.names, name)
		require.ErrorIs(t, err, core.ErrInvalidConfig)
		assert.ErrorContains(t, err, tc.want)
	}
	// Values of a type that cannot be compared are never taken for one
	// another, and do not panic.
	type funcs struct{ _ func() }
	_, err = CheckClients("d", []any{funcs{}, funcs{}}, []string{"x", "y"}, nil)
	assert.NoError(t, err)
}
