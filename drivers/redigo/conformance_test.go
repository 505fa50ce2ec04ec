package redigo

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers/conformance"
)

func TestConformance(t *testing.T) {
	for _, mode := range []struct {
		name     string
		pooled   bool
		pipeline int
	}{{"pooled", true, 0}, {"pipelined", false, 2}} {
		t.Run(mode.name, func(t *testing.T) {
			conformance.Run(t, func(t *testing.T, eps []conformance.Endpoint) core.Driver {
				addrs := make([]string, len(eps))
				for i, ep := range eps {
					addrs[i] = ep.Addr
				}
				// The suite gives every endpoint the same credentials and TLS.
				d, err := Dial(addrs, Options{Username: eps[0].Username, Password: eps[0].Password, TLS: eps[0].TLS, Pooled: mode.pooled, Pipeline: mode.pipeline})
				require.NoError(t, err)
				t.Cleanup(func() { require.NoError(t, d.Close()) })
				return d
			})
		})
	}
}

func TestDriverConformance(t *testing.T) {
	t.Run("pooled", func(t *testing.T) {
		conformance.RunDriver(t, func(addrs []string) (conformance.Closer, error) {
			return Dial(addrs, Options{Pooled: true, DialTimeout: time.Second})
		})
	})
	t.Run("pipelined", func(t *testing.T) {
		conformance.RunDriver(t, func(addrs []string) (conformance.Closer, error) {
			return Dial(addrs, Options{DialTimeout: time.Second})
		})
	})
}
