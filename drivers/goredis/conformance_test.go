package goredis_test

import (
	"testing"

	"github.com/redlock-go/redlock/drivers/conformance"
	"github.com/redlock-go/redlock/drivers/goredis"
)

var dial = conformance.Of(goredis.Dial)

func TestConformance(t *testing.T) { conformance.RunDial(t, dial) }

func BenchmarkAcquireRelease(b *testing.B) { conformance.BenchAcquireRelease(b, dial.Defaults()) }

func BenchmarkAcquireReleaseParallel(b *testing.B) {
	conformance.BenchAcquireReleaseParallel(b, dial.Defaults())
}

func TestSubscription(t *testing.T) { conformance.RunSubscription(t, goredis.Subscriber) }
