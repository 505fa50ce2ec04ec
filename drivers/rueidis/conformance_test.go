package rueidis_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers/conformance"
	rueidis "github.com/redlock-go/redlock/drivers/rueidis"
)

func TestConformance(t *testing.T) {
	conformance.Run(t, func(t *testing.T, eps []conformance.Endpoint) core.Driver {
		addrs := make([]string, len(eps))
		for i, ep := range eps {
			addrs[i] = ep.Addr
		}
		// Every endpoint of one cluster shares its credentials and TLS.
		d, err := rueidis.Dial(addrs, rueidis.Options{Username: eps[0].Username, Password: eps[0].Password, TLS: eps[0].TLS})
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, d.Close()) })
		return d
	})
}

func dialRueidis(addrs []string) (conformance.Closer, error) {
	return rueidis.Dial(addrs, rueidis.Options{DialTimeout: time.Second})
}

func TestDriverConformance(t *testing.T) { conformance.RunDriver(t, dialRueidis) }

func BenchmarkAcquireRelease(b *testing.B) { conformance.BenchAcquireRelease(b, dialRueidis) }

func BenchmarkAcquireReleaseParallel(b *testing.B) {
	conformance.BenchAcquireReleaseParallel(b, dialRueidis)
}
