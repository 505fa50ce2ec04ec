package valkeygo_test

import (
	"testing"

	"github.com/redlock-go/redlock/drivers/conformance"
	"github.com/redlock-go/redlock/drivers/internal/systest"
	"github.com/redlock-go/redlock/drivers/valkeygo"
)

var dial = conformance.Of(valkeygo.Dial)

// TestConformance runs the driver contract.
func TestConformance(t *testing.T) { conformance.RunDial(t, dial) }

// TestSystem runs the root package's Client over the driver.
func TestSystem(t *testing.T) { systest.RunDial(t, dial) }

func BenchmarkAcquireRelease(b *testing.B) { systest.BenchAcquireRelease(b, dial.Defaults()) }

func BenchmarkAcquireReleaseParallel(b *testing.B) {
	systest.BenchAcquireReleaseParallel(b, dial.Defaults())
}

func TestSubscription(t *testing.T) { conformance.RunSubscription(t, valkeygo.Subscriber) }
