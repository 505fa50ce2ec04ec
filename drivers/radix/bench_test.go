package radix_test

import (
	"testing"

	"github.com/redlock-go/redlock/drivers/conformance"
	"github.com/redlock-go/redlock/drivers/radix"
)

func dialRadix(addrs []string) (conformance.Closer, error) { return radix.Dial(addrs, radix.Options{}) }

func BenchmarkAcquireRelease(b *testing.B) { conformance.BenchAcquireRelease(b, dialRadix) }

func BenchmarkAcquireReleaseParallel(b *testing.B) {
	conformance.BenchAcquireReleaseParallel(b, dialRadix)
}
