// Package dialtest holds the suites of this module's own conventions,
// which its drivers run beside the public driver contract
// (drivers/conformance) and which a third-party driver need not follow:
// the validation of drivers.Options and of New's clients with this
// module's error messages, credentials and TLS given in Options, the
// Options.Clock a driver reads its deadlines on, one server refused
// under two names, and the contract's cases against each member
// (drivers.Member) of a mixed quorum of standalone masters, Sentinel
// groups and a Cluster. A driver of this module's test calls it as
//
//	var dial = dialtest.Of(mydriver.Dial)
//
//	func TestConformance(t *testing.T) { dialtest.RunDial(t, dial) }
//	func TestConformanceMembers(t *testing.T) {
//		dialtest.RunMembers(t, dialtest.MembersOf(mydriver.DialMembers))
//	}
//
// RunDial runs conformance.RunDriver too.
package dialtest

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers"
	"github.com/redlock-go/redlock/drivers/conformance"
	"github.com/redlock-go/redlock/internal/contract"
	"github.com/redlock-go/redlock/internal/latproxy"
	"github.com/redlock-go/redlock/internal/redistest"
)

// Endpoint is how a driver reaches one Redis master.
type Endpoint struct {
	// Addr is "127.0.0.1:port". Drivers should use it as the node's name,
	// so that errors name the failed nodes' addresses; the suite checks.
	Addr string
	// Username is empty unless the server uses an ACL user; Password is
	// empty when the server requires none.
	Username, Password string
	// TLS is non-nil when the server speaks TLS only.
	TLS *tls.Config
}

// DialValidation checks that a driver's Dial refuses bad addresses and
// options with core.ErrInvalidConfig, before connecting. dial calls the
// driver's Dial and closes the driver it may return.
func DialValidation(t *testing.T, dial func(addrs []string, opts drivers.Options) error) {
	for _, tc := range []struct {
		name  string
		addrs []string
		opts  drivers.Options
		want  string // in the message
	}{
		{"nil list", nil, drivers.Options{}, "no node addresses"},
		{"not host:port", []string{"a:1", "b"}, drivers.Options{}, `address 1 "b" is not host:port`},
		{"no port", []string{"a:0"}, drivers.Options{}, `address 0 "a:0" has an invalid port`},
		{"duplicate", []string{"a:1", "b:1", "A:01"}, drivers.Options{}, `address 2 "A:01" repeats address 0 "a:1"`},
		{"negative dial timeout", []string{"a:1"}, drivers.Options{DialTimeout: -time.Second}, "DialTimeout -1s is negative"},
		{"negative db", []string{"a:1"}, drivers.Options{DB: -1}, "DB -1 is negative"},
		{"user without password", []string{"a:1"}, drivers.Options{Username: "u"}, `Username "u" has no Password`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := dial(tc.addrs, tc.opts)
			require.ErrorIs(t, err, core.ErrInvalidConfig)
			assert.ErrorContains(t, err, tc.want)
		})
	}
}

// DialFunc is a driver's Dial.
type DialFunc func(addrs []string, opts drivers.Options) (conformance.Closer, error)

// Of adapts a driver's Dial, such as redigo.Dial, to DialFunc.
func Of[D conformance.Closer](dial func([]string, drivers.Options) (D, error)) DialFunc {
	return func(addrs []string, opts drivers.Options) (conformance.Closer, error) {
		d, err := dial(addrs, opts)
		if err != nil {
			return nil, err // not a typed nil in an interface
		}
		return d, nil
	}
}

// Defaults returns dial with zero Options but a one-second DialTimeout: a
// Dialer for conformance.RunDriver, and for internal/systest's allocation
// counts and benchmarks.
func (dial DialFunc) Defaults() conformance.Dialer {
	return func(addrs []string) (conformance.Closer, error) {
		return dial(addrs, drivers.Options{DialTimeout: time.Second})
	}
}

// RunDial runs every contract suite a driver's Dial must pass:
// DialValidation, conformance.RunDriver, credentials and TLS given in
// Options, the case of Options.Clock (the driver's Clock method, and
// deadlines read on that clock), and one server under two names (two
// addresses, or an address and a proxy's) refused; and the commands of
// the kinds beyond the mutex (contract.Kinds).
func RunDial(t *testing.T, dial DialFunc) {
	t.Run("dial-validation", func(t *testing.T) {
		DialValidation(t, func(addrs []string, opts drivers.Options) error {
			d, err := dial(addrs, opts)
			if d != nil {
				if cerr := d.Close(); cerr != nil {
					return errors.Join(err, fmt.Errorf("close after dial: %w", cerr))
				}
			}
			return err
		})
	})
	t.Run("driver", func(t *testing.T) { conformance.RunDriver(t, dial.Defaults()) })
	t.Run("auth", func(t *testing.T) { testAuth(t, dial) })
	t.Run("clock", func(t *testing.T) { testDialClock(t, dial) })
	t.Run("same-server-two-names-says-so", func(t *testing.T) { testSameServerTwoNames(t, dial.Defaults()) })
	t.Run("same-server-through-a-proxy", func(t *testing.T) { testSameServerThroughAProxy(t, dial.Defaults()) })
	t.Run("kinds", func(t *testing.T) { testKinds(t, dial.Defaults()) })
}

// testKinds runs contract.Kinds, the commands of the kinds beyond the
// mutex, on a standalone server; RunMembers runs it on every kind of
// member.
func testKinds(t *testing.T, dial conformance.Dialer) {
	srvs := contract.StartServers(t, 1, redistest.Options{})
	d, err := dial(contract.AddrsOf(srvs))
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, d.Close()) })
	contract.Kinds(t, contract.Target{D: d, Names: contract.AddrsOf(srvs), At: contract.Servers(srvs)})
}

// testSameServerTwoNames: the refusal of one server under two names that
// conformance.RunDriver checks says what it is, in this module's words.
func testSameServerTwoNames(t *testing.T, dial conformance.Dialer) {
	srv := contract.StartServers(t, 1, redistest.Options{})[0]
	_, err := dial([]string{srv.Addr, net.JoinHostPort("localhost", strconv.Itoa(srv.Port))})
	require.ErrorIs(t, err, core.ErrInvalidConfig, "one server under two names would vote twice")
	assert.ErrorContains(t, err, "same server")
}

// testSameServerThroughAProxy: no lookup relates a proxy's address to its
// server: the run_id each connection's server reports does, and the node
// that connects second is refused.
func testSameServerThroughAProxy(t *testing.T, dial conformance.Dialer) {
	srvs := contract.StartServers(t, 2, redistest.Options{})
	p, err := latproxy.Start(srvs[0].Addr, 0)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, p.Close()) })
	d, err := dial([]string{srvs[0].Addr, srvs[1].Addr, p.Addr()})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, d.Close()) })
	var refused []int
	for i := range 3 {
		r := contract.SendOne(d, i, contract.AcquireCmd("k"+strconv.Itoa(i)), time.Second)
		if r.Status != core.StatusOK {
			assert.ErrorIs(t, r.Err, drivers.ErrMisconfigured)
			assert.NotErrorIs(t, r.Err, core.ErrInvalidConfig, "a failed vote: its round's kind is its own")
			assert.ErrorContains(t, r.Err, "is the same server as node")
			refused = append(refused, i)
		}
	}
	if srvs[0].Embedded() {
		assert.Empty(t, refused, "miniredis reports no run_id: nothing to compare")
		return
	}
	require.Len(t, refused, 1, "one of the two names of server 0")
	assert.Contains(t, []int{0, 2}, refused[0])
}

// NewValidation checks that a driver's New refuses, with
// core.ErrInvalidConfig and no driver, an empty client list, a nil client,
// a client given twice, and bad names (repeated, empty, or not one per
// client). a and b are two distinct clients; New must not connect.
func NewValidation[C any, D comparable](t *testing.T, newDriver func(clients []C, names []string) (D, error), a, b C) {
	var none C
	for _, tc := range []struct {
		name    string
		clients []C
		names   []string
		want    string
	}{
		{"none", nil, nil, "no clients"},
		{"nil client", []C{a, none}, nil, "client 1 is nil"},
		{"same client", []C{a, b, a}, nil, "client 2 is client 0 again"},
		{"same client named", []C{a, b, a}, []string{"x", "y", "z"}, "client 2 is client 0 again"},
		{"same name", []C{a, b}, []string{"x", "x"}, `clients 0 and 1 have the same name "x"`},
		{"names length", []C{a, b}, []string{"x"}, "1 names for 2 clients"},
		{"empty name", []C{a, b}, []string{"x", ""}, "name 1 is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := newDriver(tc.clients, tc.names)
			var zero D
			assert.Equal(t, zero, d)
			require.ErrorIs(t, err, core.ErrInvalidConfig)
			assert.ErrorContains(t, err, tc.want)
		})
	}
}
