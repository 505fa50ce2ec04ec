// Package conformance is the contract a core.Driver must keep, as a test
// suite that a driver's author runs, the author of a driver outside this
// module included. It checks the driver alone, through core's Driver,
// Batch and Announcer, against real servers, and asks nothing of how the
// driver is configured: a Dialer gives it a driver over a list of
// addresses.
//
// RunDriver checks the commands a Batch sends and the replies it returns
// (and what they did to the key on the server), the scripts after the
// server's script cache is flushed, a stopped node timing out, a Batch
// closed early and the cleanup it still sends, dialling with nodes down,
// one server under two names refused, and Close. RunAnnouncer checks the
// release announcements of a driver that implements core.Announcer:
// Watch's notifications for a release and for a node's subscription
// starting, stopping and restarting, Listening, and Stop.
//
// A driver's test calls them as
//
//	func dial(addrs []string) (conformance.Closer, error) {
//		return mydriver.Dial(addrs, mydriver.Options{DialTimeout: time.Second})
//	}
//
//	func TestConformance(t *testing.T) { conformance.RunDriver(t, dial) }
//	func TestAnnouncer(t *testing.T)   { conformance.RunAnnouncer(t, dial) }
//
// with a TestMain that checks for leaked goroutines (go.uber.org/goleak):
// the suites close every driver they open and stop every Watch, so that
// a goroutine left behind is the driver's.
//
// The suites start their own redis-server processes; without
// redis-server on PATH they run against an embedded miniredis, and the
// cases that need a real process (SIGSTOP) skip (with
// REDLOCK_REQUIRE_REDIS=1 a missing redis-server fails the test instead).
// The suites import neither the root package, nor this module's drivers
// and their engine, nor the benchmarks.
//
// This module's drivers run more: the conventions of their Options and
// New (internal/dialtest), the subscriptions they give their
// engine (internal/subtest), and the root package's Client over
// the driver (internal/systest).
package conformance
