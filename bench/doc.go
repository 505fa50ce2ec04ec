// Package bench is the benchmark suite of the redlock library. Its go test
// benchmarks measure acquire+release pairs through every driver against
// real redis-server processes that the suite starts on loopback. A pair is
// a redlock.Client's TryLock and the returned handle's Unlock (the Client
// is this library's one runner; core does no I/O):
//
//	go test -run '^$' -bench . ./bench
//	go test -run '^$' -bench 'AcquireRelease/driver=redigo/nodes=5' -count 10 ./bench | tee new.txt
//	benchstat old.txt new.txt
//
// Sub-benchmark names are benchstat dimensions:
// BenchmarkAcquireRelease/driver=redigo/nodes=5/fanout=multiplexed/clients=1.
// Besides ns/op, B/op and allocs/op, each reports p50-µs and p99-µs of a
// pair, and goroutines/op: goroutines created per pair, counted by the
// runtime (runtime/metrics /sched/goroutines-created:goroutines), not
// sampled. BenchmarkContended has every client on one key;
// BenchmarkProxy puts each server behind a delaying proxy (1 ms each way by
// default, REDLOCK_BENCH_PROXY_MS to change, 0 to skip). Driver "mem" is the
// in-memory reference node: the Client over it is the zero-cost floor of
// core and the Client.
//
// BenchmarkHandle is the handle's own cost: TryLock+Unlock (op=trylock)
// and Lock+Unlock (op=lock) of an uncontended key, without a lease, at N=5
// multiplexed, one goroutine, straight over each driver, with allocs/op
// and goroutines/op. TestHandleAllocatesOnce asserts 1 allocation (the
// *Lock) and no goroutine on mem, redigo and radix and logs the other
// drivers' figures.
//
// BenchmarkVariants is the fencing and lease table: at N=5, one client,
// each driver's TryLock+Unlock through the bare handle (variant=plain),
// with Options.Fencing and the handle's Fence read (fenced), with the
// handle's Context asked for, which starts its watcher goroutine
// (handle), and with Lease{Fraction: 1/3} (lease: no extension falls
// within a pair, so it measures the lease's setup and teardown). It adds
// rounds/op, the driver's rounds (core.Driver.Begin calls) per pair,
// counted exactly by a wrapper around the driver (target.RoundCounter).
// TestVariantRounds asserts them, 2 per pair and 3 fenced, on every
// driver; TestPlainAndFencedAllocateOnce asserts 1 allocation (the
// *Lock) for the plain and fenced pairs on mem.
//
// BenchmarkHandoff is the hot key: 2, 8 and 32 contenders on one key at
// N=5, each looping redlock.Client's Lock (waiting as long as it takes), a
// tiny critical section, Unlock, with one Client per sub-benchmark woken
// by release announcements (wait=wake) or polling Options.Backoff's delays
// (wait=poll, Options.Poll), over redigo and rueidis. b.N counts critical
// sections; it adds handoff-p50-µs and handoff-p99-µs (a release's
// call to the next holder's acquire returning), return-p50-µs (the same
// from the release's return, which counts a waiter whose attempt was
// already on the wire as nothing), sections/s and early-% (handoffs
// whose acquire returned before the release did). The loop is
// measure.RunHandoff's: every handoff goes to a contender that was
// waiting, and two sections inside at once fail the benchmark.
// TestHotKeyExclusive checks exclusion and the handoff count on every
// driver of it, woken and polling.
//
// BenchmarkMembers is the uncontended pair over goredis.DialMembers by
// kind of member (standalone masters, Sentinel groups, Clusters; the last
// two with and without WAIT for every replica), N=3, and N=5 with
// -members.n5; -members.rounds interleaves its cells and -members.out
// writes its table and plot. bench/peers' BenchmarkClusters runs redsync
// and rueidislock on Clusters beside it.
//
// Without redis-server on PATH the redis sub-benchmarks are skipped with a
// message, or fail when REDLOCK_REQUIRE_REDIS=1.
//
// The comparison with other libraries, percentiles from longer runs,
// plots and the committed results are the job of cmd/redlock-bench (its
// fencing and lease table: --variants, on by default; --variants-only for
// that table alone; the throughput curve at 1 to 64 clients: --curve; the
// hot key beside redsync and rueidislock: --handoff, --handoff-only); the
// subpackages hold what both share.
package bench
