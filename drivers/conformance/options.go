package conformance

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers"
)

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
type DialFunc func(addrs []string, opts drivers.Options) (Closer, error)

// Of adapts a driver's Dial, such as redigo.Dial, to DialFunc.
func Of[D Closer](dial func([]string, drivers.Options) (D, error)) DialFunc {
	return func(addrs []string, opts drivers.Options) (Closer, error) {
		d, err := dial(addrs, opts)
		if err != nil {
			return nil, err // not a typed nil in an interface
		}
		return d, nil
	}
}

// Defaults returns dial with zero Options but a one-second DialTimeout: a
// Dialer for RunDriver, and for internal/systest's allocation counts and
// benchmarks.
func (dial DialFunc) Defaults() Dialer {
	return func(addrs []string) (Closer, error) {
		return dial(addrs, drivers.Options{DialTimeout: time.Second})
	}
}

// RunDial runs every contract suite a driver's Dial must pass:
// DialValidation, RunDriver, credentials and TLS given in Options, and
// the case of Options.Clock (the driver's Clock method, and deadlines
// read on that clock).
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
	t.Run("driver", func(t *testing.T) { RunDriver(t, dial.Defaults()) })
	t.Run("auth", func(t *testing.T) { testAuth(t, dial) })
	t.Run("clock", func(t *testing.T) { testDialClock(t, dial) })
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
