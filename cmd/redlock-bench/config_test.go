package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redlock-go/redlock/bench/matrix"
)

func TestDefaults(t *testing.T) {
	c, err := parseFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.plan.NodeCounts, []int{1, 3, 5}) || !slices.Equal(c.plan.Concurrency, []int{1, 32}) {
		t.Errorf("plan = %+v", c.plan)
	}
	if !slices.Contains(c.plan.Drivers, "mem") || len(c.plan.Peers) != 4 {
		t.Errorf("drivers %v, peers %v", c.plan.Drivers, c.plan.Peers)
	}
	if !c.plan.Proxy || c.proxyDelay != time.Millisecond || !c.plan.Contended {
		t.Errorf("proxy %v %v", c.plan.Proxy, c.proxyDelay)
	}
	if c.nodes != nil || c.pin {
		t.Error("external or pinned by default")
	}
}

func TestFlags(t *testing.T) {
	c, err := parseFlags([]string{
		"--nodes", "10.0.0.1:6379, 10.0.0.2:6379,10.0.0.3:6379",
		"--node-counts", "3,1", "--fanout", "multiplexed", "--concurrency", "8",
		"--drivers", "mem", "--peers", "none", "--proxy-latency", "0",
		"--tls-ca", "ca.pem", "--user", "u", "--password", "p",
	}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.nodes) != 3 || c.nodes[1] != "10.0.0.2:6379" {
		t.Errorf("nodes = %q", c.nodes)
	}
	if !c.tls || c.user != "u" || c.pass != "p" {
		t.Error("auth/tls flags")
	}
	if c.plan.Proxy || c.plan.Peers != nil || !slices.Equal(c.plan.NodeCounts, []int{1, 3}) || !slices.Equal(c.plan.FanOuts, []string{"multiplexed"}) {
		t.Errorf("plan = %+v", c.plan)
	}
}

func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--nodes", "a:1", "--node-counts", "1,3"},
		{"--password", "x"},
		{"--nodes", "nohost"},
		{"--drivers", "jedis"},
		{"--fanout", "parallel"},
		{"--concurrency", "0"},
		{"--duration", "0s"},
		{"--ttl", "1500us"},
		{"--drivers", "none", "--peers", "none"},
		{"--out", "x", "--commit-results"},
		{"extra"},
	} {
		if _, err := parseFlags(args, io.Discard); err == nil {
			t.Errorf("%q accepted", args)
		}
	}
}

func TestNodesGivenACount(t *testing.T) {
	for _, c := range []struct{ nodes, want string }{
		{"5", "did you mean --node-counts 5?"},
		{"1, 3,5", "did you mean --node-counts 1,3,5?"},
		{"a:1,3", "did you mean --node-counts 3?"},
	} {
		_, err := parseFlags([]string{"--nodes", c.nodes}, io.Discard)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "--nodes takes host:port") {
			t.Errorf("--nodes %s: error %v, want one with %q", c.nodes, err, c.want)
		}
	}
}

func TestUsageSaysNoIssue(t *testing.T) {
	var b strings.Builder
	if _, err := parseFlags([]string{"--help"}, &b); err == nil {
		t.Fatal("--help parsed")
	}
	for _, want := range []string{"the project's performance targets", "--commit-results", "results/latest"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("usage lacks %q", want)
		}
	}
	if strings.Contains(strings.ToLower(b.String()), "issue") {
		t.Errorf("usage mentions an issue:\n%s", b.String())
	}
	c, err := parseFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var matrixCells, curve, hot, kinds int
	for _, cell := range c.plan.Cells() {
		switch {
		case cell.Scenario == matrix.Handoff:
			hot++
		case cell.Scenario == matrix.Kinds:
			kinds++
		case cell.Duration > 0:
			curve++
		default:
			matrixCells++
		}
	}
	for _, n := range []string{
		fmt.Sprintf("runs %d cells", len(c.plan.Cells())),
		fmt.Sprintf("%d cells of 0.5 s", matrixCells),
		fmt.Sprintf("%d more points of the throughput curve", curve),
		fmt.Sprintf("%d hot-key cells (--handoff) of 1.5 s", hot),
		fmt.Sprintf("%d cells of the reader/writer lock, the semaphore and LockAll (--kinds)", kinds),
	} {
		if !strings.Contains(strings.Join(strings.Fields(usageText), " "), n) {
			t.Errorf("usage does not say the default run's %q", n)
		}
	}
	if c.duration+c.warmup != 500*time.Millisecond || c.plan.CurveDuration != 200*time.Millisecond || c.plan.HandoffDuration != 1500*time.Millisecond {
		t.Errorf("durations %v+%v, curve %v, hot key %v", c.duration, c.warmup, c.plan.CurveDuration, c.plan.HandoffDuration)
	}
}

func TestVariantsFlags(t *testing.T) {
	c, err := parseFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.plan.Variants, []string{"plain", "fenced", "handle", "lease"}) || c.plan.VariantsOnly {
		t.Errorf("default variants %v, only %v", c.plan.Variants, c.plan.VariantsOnly)
	}
	c, err = parseFlags([]string{"--variants-only", "--variants", "fenced,plain", "--fanout", "multiplexed"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	cells := c.plan.Cells()
	if len(cells) != 2*len(c.plan.Drivers) || c.plan.Proxy || c.plan.Peers != nil {
		t.Fatalf("--variants-only: %d cells for %d drivers, proxy %v, peers %v", len(cells), len(c.plan.Drivers), c.plan.Proxy, c.plan.Peers)
	}
	if cells[0].Variant != "plain" || cells[1].Variant != "fenced" || cells[0].Nodes != 5 || cells[0].Clients != 1 {
		t.Errorf("cells %+v", cells[:2])
	}
	if c, _ := parseFlags([]string{"--variants", "none"}, io.Discard); c.plan.Variants != nil {
		t.Errorf("--variants none: %v", c.plan.Variants)
	}
	for _, args := range [][]string{
		{"--variants", "unfenced"},
		{"--variants-only", "--variants", "none"},
		{"--variants-only", "--drivers", "none"},
	} {
		if _, err := parseFlags(args, io.Discard); err == nil {
			t.Errorf("%q accepted", args)
		}
	}
}

func TestCurveAndHandoffFlags(t *testing.T) {
	c, err := parseFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.plan.Curve, []int{1, 2, 4, 8, 16, 32, 64}) || !slices.Equal(c.plan.HandoffContenders, []int{2, 8, 32}) ||
		!slices.Equal(c.plan.HandoffDrivers, []string{"redigo"}) || c.plan.HandoffOnly || c.handoffHold != 0 {
		t.Errorf("defaults: curve %v, handoff %v %v, only %v, hold %v", c.plan.Curve, c.plan.HandoffContenders, c.plan.HandoffDrivers, c.plan.HandoffOnly, c.handoffHold)
	}
	c, err = parseFlags([]string{"--handoff-only", "--handoff", "4", "--handoff-drivers", "redigo,rueidis", "--handoff-hold", "200us"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	cells := c.plan.Cells()
	// redigo and rueidis, woken, polling and fair, and three peers: 9 cells.
	if len(cells) != 9 || c.plan.Proxy || c.handoffHold != 200*time.Microsecond {
		t.Fatalf("--handoff-only: %d cells, proxy %v, hold %v", len(cells), c.plan.Proxy, c.handoffHold)
	}
	for _, cell := range cells {
		if cell.Scenario != matrix.Handoff || cell.Clients != 4 {
			t.Errorf("cell %s", cell.Name())
		}
	}
	// --variants-only keeps the peers for the hot key.
	c, err = parseFlags([]string{"--handoff-only", "--variants-only", "--variants", "plain"}, io.Discard)
	if err != nil || c.plan.Peers == nil {
		t.Fatalf("both only flags: %v, peers %v", err, c)
	}
	c, err = parseFlags([]string{"--curve", "none", "--handoff", "none"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	for _, cell := range c.plan.Cells() {
		if cell.Scenario != matrix.Kinds && cell.Duration > 0 || cell.Scenario == matrix.Handoff {
			t.Errorf("--curve none --handoff none: cell %s", cell.Name())
		}
	}
	for _, args := range [][]string{
		{"--curve", "0"},
		{"--handoff", "x"},
		{"--handoff-drivers", "jedis"},
		{"--handoff-only", "--handoff", "none"},
		{"--handoff-only", "--handoff-drivers", "none", "--peers", "none"},
		{"--curve-duration", "0s"},
		{"--handoff-duration", "-1s"},
		{"--handoff-hold", "-1ms"},
	} {
		if _, err := parseFlags(args, io.Discard); err == nil {
			t.Errorf("%q accepted", args)
		}
	}
}

func TestKindsFlags(t *testing.T) {
	c, err := parseFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.plan.Kinds, matrix.KindCells) || !slices.Equal(c.plan.KindsDrivers, []string{"redigo"}) || c.plan.KindsOnly ||
		c.writerTTL != matrix.DefaultWriterTTL || c.plan.KindsDuration != 1500*time.Millisecond {
		t.Errorf("defaults: kinds %v over %v, only %v, writer TTL %v, duration %v", c.plan.Kinds, c.plan.KindsDrivers, c.plan.KindsOnly, c.writerTTL, c.plan.KindsDuration)
	}
	c, err = parseFlags([]string{"--kinds-only", "--kinds", "lock,rlock,writer-wait", "--kinds-drivers", "redigo,radix", "--kinds-writer-ttl", "50ms"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	cells := c.plan.Cells()
	var got []string
	for _, cell := range cells {
		if cell.Scenario != matrix.Kinds || cell.Nodes != 5 {
			t.Errorf("--kinds-only: cell %s", cell.Name())
		}
		got = append(got, cell.Driver+" "+cell.Variant)
	}
	// Each driver's cells in KindCells' order, whatever the flag's.
	want := []string{"redigo rlock", "redigo lock", "redigo writer-wait", "radix rlock", "radix lock", "radix writer-wait"}
	if !slices.Equal(got, want) || c.plan.Proxy || c.plan.Peers != nil || c.mp.on || c.writerTTL != 50*time.Millisecond {
		t.Fatalf("--kinds-only: cells %v, proxy %v, peers %v, multiproc %v, writer TTL %v", got, c.plan.Proxy, c.plan.Peers, c.mp.on, c.writerTTL)
	}
	if w := cells[2]; w.Clients != matrix.WriterWaitReaders || !w.SharedKey || w.Duration != matrix.KindsWriterRounds*1500*time.Millisecond {
		t.Errorf("writer cell %+v", w)
	}
	if c, _ := parseFlags([]string{"--kinds", "none"}, io.Discard); c.plan.Kinds != nil {
		t.Errorf("--kinds none: %v", c.plan.Kinds)
	}
	for _, args := range [][]string{
		{"--kinds", "rwlock"},
		{"--kinds-only", "--kinds", "none"},
		{"--kinds-only", "--kinds-drivers", "none"},
		{"--kinds-duration", "0s"},
		{"--kinds-writer-ttl", "1500us"},
	} {
		if _, err := parseFlags(args, io.Discard); err == nil {
			t.Errorf("%q accepted", args)
		}
	}
}
