package measure

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An INFO cpu reply of redis-server 7.
const infoCPU = "# CPU\r\nused_cpu_sys:1.250000\r\nused_cpu_user:0.750500\r\n" +
	"used_cpu_sys_children:9.000000\r\nused_cpu_user_children:9.000000\r\n" +
	"used_cpu_sys_main_thread:1.200000\r\nused_cpu_user_main_thread:0.700000\r\n"

func TestParseInfoCPUSumsSysAndUser(t *testing.T) {
	d, err := ParseInfoCPU(infoCPU)
	require.NoError(t, err)
	assert.Equal(t, 2000500*time.Microsecond, d, "children and main-thread lines are not added")
}

func TestParseInfoCPURefusesMissingOrBadFields(t *testing.T) {
	_, err := ParseInfoCPU("# CPU\r\nused_cpu_sys:1.0\r\n")
	assert.ErrorIs(t, err, ErrNoCPUInfo, "user missing")
	_, err = ParseInfoCPU("# Clients\r\nconnected_clients:1\r\n")
	assert.ErrorIs(t, err, ErrNoCPUInfo, "another section")
	_, err = ParseInfoCPU("used_cpu_sys:x\r\nused_cpu_user:1\r\n")
	assert.ErrorContains(t, err, "used_cpu_sys")
	_, err = ParseInfoCPU("used_cpu_sys:-1\r\nused_cpu_user:1\r\n")
	assert.Error(t, err, "negative")
}

func TestCPUPerOpUs(t *testing.T) {
	assert.Equal(t, 2.5, CPUPerOpUs(time.Second, time.Second+25*time.Millisecond, 10000))
	assert.Zero(t, CPUPerOpUs(time.Second, 2*time.Second, 0), "no pairs")
	assert.Zero(t, CPUPerOpUs(2*time.Second, time.Second, 10), "clock went back")
}

// spin burns CPU for d of wall time in this goroutine.
func spin(d time.Duration) int {
	n := 0
	for t0 := time.Now(); time.Since(t0) < d; n++ {
	}
	return n
}

func TestProcessCPUCountsThisProcess(t *testing.T) {
	before, ok := ProcessCPU()
	if !ok {
		t.Skip("no getrusage on this platform")
	}
	spin(30 * time.Millisecond)
	after, ok := ProcessCPU()
	require.True(t, ok)
	// Spinning for 30 ms of wall time costs CPU; a sleeping process would
	// not. (The lower bound is loose: the spinning goroutine may be
	// descheduled on a busy machine.)
	assert.Greater(t, after-before, time.Millisecond)
}

// The per-pair client CPU of a measurement is the rusage delta over the
// window divided by the pairs.
func TestPerOpDividesTheCPUDelta(t *testing.T) {
	var r Result
	r.PerOp(Counters{CPU: time.Second, HasCPU: true}, Counters{CPU: time.Second + 30*time.Millisecond, HasCPU: true}, 1000)
	assert.Equal(t, 30.0, r.ClientCPUUsPerOp)
	r = Result{}
	r.PerOp(Counters{CPU: time.Second}, Counters{CPU: 2 * time.Second}, 1000)
	assert.Zero(t, r.ClientCPUUsPerOp, "no rusage: no figure")
}

// busy is a Subject whose pair spins for d.
type busy struct{ d time.Duration }

func (b busy) Worker(string) Worker { return b }
func (b busy) Pair(context.Context) (bool, error) {
	spin(b.d)
	return true, nil
}

// fakeServers is a UsageReader whose servers use step of CPU per call
// and count no reads.
type fakeServers struct {
	now, step time.Duration
	calls     int
	failAt    int
}

func (f *fakeServers) Usage() (Usage, error) {
	f.calls++
	if f.calls == f.failAt {
		return Usage{}, errors.New("server down")
	}
	f.now += f.step
	return Usage{CPU: f.now, Reads: -1}, nil
}

// fakeUsage is fakeServers whose servers make step reads per call.
type fakeUsage struct {
	fakeServers
	reads, step int64
}

func (f *fakeUsage) Usage() (Usage, error) {
	u, err := f.fakeServers.Usage()
	f.reads += f.step
	u.Reads = f.reads
	return u, err
}

func TestRunReadsServersReads(t *testing.T) {
	srv := &fakeUsage{fakeServers: fakeServers{step: time.Millisecond}, step: 50}
	r := Run(context.Background(), busy{0}, Spec{Clients: 1, Ops: 100, Servers: srv})
	assert.Equal(t, 2, srv.calls, "Usage at the window's two edges, once each")
	assert.InDelta(t, 0.5, r.ServersReadsPerOp, 1e-9, "50 reads over 100 pairs")
	assert.InDelta(t, 10, r.ServersCPUUsPerOp, 1e-9, "1 ms over 100 pairs")

	r = Run(context.Background(), busy{0}, Spec{Clients: 1, Ops: 100, Servers: &fakeServers{step: time.Millisecond}})
	assert.Zero(t, r.ServersReadsPerOp, "servers that report no reads (Reads -1) count none")
	assert.Positive(t, r.ServersCPUUsPerOp)

	srv = &fakeUsage{fakeServers: fakeServers{step: time.Millisecond}, reads: -1}
	r = Run(context.Background(), busy{0}, Spec{Clients: 1, Ops: 100, Servers: srv})
	assert.Zero(t, r.ServersReadsPerOp, "servers that do not count their reads")
}

func TestParseInfoReads(t *testing.T) {
	n, ok := ParseInfoReads("# Stats\r\ntotal_commands_processed:99\r\ntotal_reads_processed:1234\r\ntotal_writes_processed:1200\r\n")
	assert.True(t, ok)
	assert.Equal(t, int64(1234), n)
	_, ok = ParseInfoReads("# CPU\r\nused_cpu_sys:0.1\r\n")
	assert.False(t, ok, "a server that does not count them")
	_, ok = ParseInfoReads("total_reads_processed:x\r\n")
	assert.False(t, ok)
}

func TestRunReadsClientAndServersCPU(t *testing.T) {
	if _, ok := ProcessCPU(); !ok {
		t.Skip("no getrusage on this platform")
	}
	srv := &fakeServers{step: 100 * time.Millisecond}
	r := Run(context.Background(), busy{200 * time.Microsecond}, Spec{Clients: 1, Ops: 100, Servers: srv})
	assert.Equal(t, 2, srv.calls, "read at the window's two edges")
	assert.InDelta(t, 1000, r.ServersCPUUsPerOp, 1e-9, "100 ms over 100 pairs")
	assert.Empty(t, r.ServersCPUError)
	assert.Positive(t, r.ClientCPUUsPerOp)

	srv = &fakeServers{step: time.Millisecond, failAt: 2}
	r = Run(context.Background(), busy{0}, Spec{Clients: 1, Ops: 10, Servers: srv})
	assert.Zero(t, r.ServersCPUUsPerOp)
	assert.Equal(t, "server down", r.ServersCPUError)
}

func TestMedianOfRepeats(t *testing.T) {
	rs := []Result{{Ops: 10, P50Us: 30, P90Us: 3}, {Ops: 10, P50Us: 900, P90Us: 9}, {Ops: 10, P50Us: 20, P90Us: 2}}
	m := Median(rs)
	assert.Equal(t, 30.0, m.P50Us, "the stalled repeat does not decide")
	assert.Equal(t, 3.0, m.P90Us, "the median repeat's other figures")
	assert.Equal(t, []float64{30, 900, 20}, m.RepeatP50Us, "every repeat, in run order")

	even := Median([]Result{{Ops: 1, P50Us: 40}, {Ops: 1, P50Us: 10}, {Ops: 1, P50Us: 20}, {Ops: 1, P50Us: 1000}})
	assert.Equal(t, 30.0, even.P50Us, "mean of the two middle p50s")

	failed := Median([]Result{{Ops: 0}, {Ops: 5, P50Us: 50}, {Ops: 5, P50Us: 70}, {Ops: 5, P50Us: 60}})
	assert.Equal(t, 60.0, failed.P50Us, "a repeat without pairs does not count")
	assert.Equal(t, []float64{0, 50, 70, 60}, failed.RepeatP50Us)

	one := Median([]Result{{Ops: 3, P50Us: 5}})
	assert.Nil(t, one.RepeatP50Us, "a single measurement is not a repeat")
	assert.Equal(t, Result{}, Median(nil))
}

func TestMedianOf(t *testing.T) {
	xs := []float64{10, 3, 10, 3}
	assert.Equal(t, 6.5, MedianOf(xs), "an even count: the mean of the middle two")
	assert.Equal(t, []float64{10, 3, 10, 3}, xs, "not modified")
	assert.Equal(t, 2.0, MedianOf([]float64{3, 1, 2}))
	assert.Equal(t, 0.0, MedianOf(nil))
}

func TestMedianLatencyOfRounds(t *testing.T) {
	rs := []Result{
		{Ops: 10, P50Us: 400, RepeatP50Us: []float64{400, 410, 390}},
		{Ops: 10, P50Us: 900, RepeatP50Us: []float64{900, 880, 950}},
		{Ops: 10, P50Us: 300, RepeatP50Us: []float64{300, 310, 305}, Throughput: 7},
	}
	m := MedianLatency(rs)
	assert.Equal(t, 400.0, m.P50Us, "the slow round does not decide")
	assert.Equal(t, []float64{400, 410, 390}, m.RepeatP50Us, "the median round's repeats")
	assert.Equal(t, []float64{400, 900, 300}, m.RoundP50Us, "every round, in run order")

	m = MedianLatency([]Result{{Ops: 10, P50Us: 300}, {P50Us: 0}, {Ops: 10, P50Us: 100}})
	assert.Equal(t, 100.0, m.P50Us, "a round without pairs does not count; even: the lower middle")
	assert.Equal(t, []float64{300, 0, 100}, m.RoundP50Us)

	one := Result{Ops: 1, P50Us: 5}
	assert.Equal(t, one, MedianLatency([]Result{one}), "one round is returned as it is")
}

func TestMedianThroughputOfRounds(t *testing.T) {
	rs := []Result{{Ops: 10, Throughput: 200, P50Us: 2}, {Ops: 10, Throughput: 90, P50Us: 9}, {Ops: 10, Throughput: 300, P50Us: 1}}
	m := MedianThroughput(rs)
	assert.Equal(t, 200.0, m.Throughput, "the slow round does not decide")
	assert.Equal(t, 2.0, m.P50Us, "the median round's other figures")
	assert.Equal(t, []float64{200, 90, 300}, m.RepeatThroughput, "every round, in run order")

	m = MedianThroughput([]Result{{Ops: 10, Throughput: 300}, {Throughput: 0}, {Ops: 10, Throughput: 100}})
	assert.Equal(t, 100.0, m.Throughput, "a round without pairs does not count; even: the lower middle")
	assert.Equal(t, []float64{300, 0, 100}, m.RepeatThroughput)

	one := Result{Ops: 1, Throughput: 5}
	assert.Equal(t, one, MedianThroughput([]Result{one}), "one round is returned as it is")
}

// Sub counts reads only where both readings did and the count went
// forward; a restarted server's count starts again.
func TestUsageSub(t *testing.T) {
	before := Usage{CPU: time.Second, Reads: 10}
	assert.Equal(t, Usage{CPU: time.Second, Reads: 5}, Usage{CPU: 2 * time.Second, Reads: 15}.Sub(before))
	assert.Equal(t, int64(-1), Usage{CPU: 2 * time.Second, Reads: 3}.Sub(before).Reads, "went back")
	assert.Equal(t, int64(-1), Usage{CPU: 2 * time.Second, Reads: -1}.Sub(before).Reads, "not counted")
}
