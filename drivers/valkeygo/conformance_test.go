package valkeygo_test

import (
	"testing"

	"github.com/redlock-go/redlock/drivers/conformance"
	"github.com/redlock-go/redlock/drivers/valkeygo"
)

var dial = conformance.Of(valkeygo.Dial)

func TestConformance(t *testing.T) { conformance.RunDial(t, dial) }

func BenchmarkAcquireRelease(b *testing.B) { conformance.BenchAcquireRelease(b, dial.Defaults()) }

func BenchmarkAcquireReleaseParallel(b *testing.B) {
	conformance.BenchAcquireReleaseParallel(b, dial.Defaults())
}

func TestSubscription(t *testing.T) { conformance.RunSubscription(t, valkeygo.Subscriber) }
