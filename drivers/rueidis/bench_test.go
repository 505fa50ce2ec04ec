package rueidis_test

import (
	"testing"

	"github.com/redlock-go/redlock/drivers/conformance"
	rueidis "github.com/redlock-go/redlock/drivers/rueidis"
)

func dialRueidis(addrs []string) (conformance.Closer, error) {
	return rueidis.Dial(addrs, rueidis.Options{})
}

func BenchmarkAcquireRelease(b *testing.B) { conformance.BenchAcquireRelease(b, dialRueidis) }

func BenchmarkAcquireReleaseParallel(b *testing.B) {
	conformance.BenchAcquireReleaseParallel(b, dialRueidis)
}
