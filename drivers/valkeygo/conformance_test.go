package valkeygo_test

import (
	"testing"

	"github.com/redlock-go/redlock/drivers/conformance"
	"github.com/redlock-go/redlock/drivers/valkeygo"
	"github.com/redlock-go/redlock/internal/dialtest"
	"github.com/redlock-go/redlock/internal/subtest"
	"github.com/redlock-go/redlock/internal/systest"
)

var dial = dialtest.Of(valkeygo.Dial)

// TestConformance runs the driver contract (conformance.RunDriver) and
// this module's conventions for a Dial.
func TestConformance(t *testing.T) { dialtest.RunDial(t, dial) }

// TestAnnouncer runs the contract of release announcements.
func TestAnnouncer(t *testing.T) { conformance.RunAnnouncer(t, dial.Defaults()) }

// TestSystem runs the root package's Client over the driver.
func TestSystem(t *testing.T) { systest.RunDial(t, dial) }

func BenchmarkAcquireRelease(b *testing.B) { systest.BenchAcquireRelease(b, dial.Defaults()) }

func BenchmarkAcquireReleaseParallel(b *testing.B) {
	systest.BenchAcquireReleaseParallel(b, dial.Defaults())
}

// TestSubscription runs the subscriptions the driver gives the engine.
func TestSubscription(t *testing.T) { subtest.RunSubscription(t, valkeygo.Subscriber) }
