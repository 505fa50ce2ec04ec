package goredis_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers/conformance"
	"github.com/redlock-go/redlock/drivers/goredis"
)

func TestConformance(t *testing.T) {
	conformance.Run(t, func(t *testing.T, eps []conformance.Endpoint) core.Driver {
		addrs := make([]string, len(eps))
		for i, ep := range eps {
			addrs[i] = ep.Addr
		}
		// Every endpoint of one cluster shares its credentials and TLS.
		d, err := goredis.Dial(addrs, goredis.Options{Username: eps[0].Username, Password: eps[0].Password, TLS: eps[0].TLS})
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, d.Close()) })
		return d
	})
}

func dialGoredis(addrs []string) (conformance.Closer, error) {
	return goredis.Dial(addrs, goredis.Options{DialTimeout: time.Second})
}

func TestDriverConformance(t *testing.T) { conformance.RunDriver(t, dialGoredis) }

func BenchmarkAcquireRelease(b *testing.B) { conformance.BenchAcquireRelease(b, dialGoredis) }

func BenchmarkAcquireReleaseParallel(b *testing.B) {
	conformance.BenchAcquireReleaseParallel(b, dialGoredis)
}
