// Package history replays the naive Redis locks of the project's seed
// (V1.0 to V3.1) as regression scenarios. Each variant is written here as
// the seed describes it, one method per Redis command, so that a test can
// interleave clients command by command. Each test runs a named schedule
// against real redis-server processes (internal/redistest), asserts that
// the variant violates safety or liveness under it, then runs the same
// schedule against Redlock (redlock.Client, redigo driver, three servers) and
// asserts that it does not, or fails with the documented error.
//
// Schedules are driven step by step from the test. Expiry is awaited as an
// event (PTTL -2 on the server), and client clocks in V1.1 and V3.0 are
// plain numbers the test sets, so no outcome depends on timing.
//
//	variant schedule                          flaw shown                       Redlock instead
//	V1.0    crash-between-setnx-and-expire    key left with no expiry          one SET NX PX per node: C2 wins
//	V1.0    loser-releases-in-finally         loser's DEL frees C1's lock      zero Lock: ErrUnlocked; C3: ErrTaken
//	V1.1    getset-loser-rewrites-expiry      loser's GETSET moves C1's        loser writes nothing: ErrTaken;
//	                                          expiry; C3 takes over            expiry is the servers' PX timer
//	V2.0    paused-holder-deletes-successor   stale DEL frees C2's lock        Extend: ErrNotHeld;
//	                                                                           stale release: ErrTaken
//	V3.0    timestamp-collision/same-second   equal timestamps: the stale      random tokens;
//	        timestamp-collision/clock-behind  release frees C2's lock          stale release: ErrTaken
//	V3.1    async-failover-before-replication unreplicated write lost in       failover costs one vote of N;
//	                                          failover; C2 granted it too      C2: ErrTaken
//
// The V3.1 test also runs paused-holder-deletes-successor on one server and
// shows V3.1 refusing the stale release. Redlock's own limits (a majority of
// nodes losing their keys at once, a holder paused past its validity that
// does not check it) are its documented assumptions, tested in core and
// internal/sim, not here.
package history
