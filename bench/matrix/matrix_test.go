package matrix

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redlock-go/redlock/bench/measure"
)

func TestParseInts(t *testing.T) {
	got, err := ParseInts(" 5,1, 3,1 ")
	if err != nil || !slices.Equal(got, []int{1, 3, 5}) {
		t.Fatalf("ParseInts = %v, %v", got, err)
	}
	for _, bad := range []string{"", "0", "1,x", "-2"} {
		if _, err := ParseInts(bad); err == nil {
			t.Errorf("ParseInts(%q) accepted", bad)
		}
	}
}

func TestParseNames(t *testing.T) {
	allowed := []string{"mem", "redigo", "rueidis", "radix"}
	got, err := ParseNames("radix,mem", allowed)
	if err != nil || !slices.Equal(got, []string{"mem", "radix"}) {
		t.Fatalf("ParseNames = %v, %v (want allowed order)", got, err)
	}
	if got, _ := ParseNames("all", allowed); !slices.Equal(got, allowed) {
		t.Errorf("all = %v", got)
	}
	if got, _ := ParseNames("none", allowed); got != nil {
		t.Errorf("none = %v", got)
	}
	if _, err := ParseNames("jedis", allowed); err == nil || !strings.Contains(err.Error(), "jedis") {
		t.Errorf("unknown name: %v", err)
	}
}

func TestPlanCells(t *testing.T) {
	p := Plan{
		Drivers:     []string{"mem", "redigo"},
		NodeCounts:  []int{1, 3, 5},
		FanOuts:     []string{"sequential", "multiplexed"},
		Concurrency: []int{1, 32},
		Proxy:       true,
		Contended:   true,
		Peers:       AllPeers,
	}
	cells := p.Cells()
	count := func(f func(Cell) bool) int {
		n := 0
		for _, c := range cells {
			if f(c) {
				n++
			}
		}
		return n
	}
	// 2 drivers × 3 N × 2 fan-outs × 2 concurrencies, plus 2 contended.
	if n := count(func(c Cell) bool { return !c.IsPeer() && c.Scenario == Loopback }); n != 26 {
		t.Errorf("loopback redlock cells = %d, want 26", n)
	}
	// Proxy: redigo only (mem has no network), 3 N × 2 fan-outs with one
	// client, and 32 clients at N=5 multiplexed.
	if n := count(func(c Cell) bool { return !c.IsPeer() && c.Scenario == Proxy }); n != 7 {
		t.Errorf("proxy cells = %d, want 7", n)
	}
	if n := count(func(c Cell) bool {
		return c.Scenario == Proxy && c.Clients == 32 && c.Nodes == 5 && c.FanOut == "multiplexed" && c.Driver == "redigo"
	}); n != 1 {
		t.Errorf("32-client proxy cells = %d, want 1", n)
	}
	if n := count(func(c Cell) bool { return c.Repeats != 0 }); n != 0 {
		t.Errorf("%d repeated cells without Plan.Repeats", n)
	}
	if n := count(func(c Cell) bool { return c.Library == Redislock }); n != 2 {
		t.Errorf("redislock cells = %d, want 2 (N=1 only)", n)
	}
	if count(func(c Cell) bool { return c.Driver == "mem" && c.Scenario == Proxy }) != 0 {
		t.Error("mem behind the proxy")
	}
	var shared *Cell
	for i := range cells {
		if cells[i].Matches(Cell{Library: Redlock, Driver: "redigo", SharedKey: true}) {
			shared = &cells[i]
		}
	}
	if shared == nil || shared.Nodes != 5 || shared.Clients != 32 || shared.FanOut != "multiplexed" {
		t.Errorf("contended cell = %+v", shared)
	}
	names := map[string]bool{}
	for _, c := range cells {
		if names[c.Name()] {
			t.Errorf("duplicate cell %s", c.Name())
		}
		names[c.Name()] = true
	}
	// Peers run after this library's cells.
	if !cells[len(cells)-1].IsPeer() || cells[0].IsPeer() {
		t.Error("run order")
	}
}

// Plan.Repeats repeats the one-client N=5 cells the p50 targets compare,
// and no other.
func TestPlanRepeats(t *testing.T) {
	p := Plan{
		Drivers:     []string{"mem", "redigo", "rueidis"},
		NodeCounts:  []int{1, 3, 5},
		FanOuts:     []string{"sequential", "multiplexed"},
		Concurrency: []int{1, 32},
		Proxy:       true,
		Peers:       AllPeers,
		Variants:    []string{"plain"},
		Repeats:     3,
	}
	var got []string
	for _, c := range p.Cells() {
		if c.Repeats != 0 {
			if c.Repeats != 3 {
				t.Errorf("%s: repeats %d, want 3", c.Name(), c.Repeats)
			}
			got = append(got, c.Subject()+" "+c.FanOut)
		}
	}
	want := []string{"redlock+redigo multiplexed", "redlock+rueidis multiplexed", "redsync+redigo concurrent"}
	if !slices.Equal(got, want) {
		t.Errorf("repeated cells = %q, want %q", got, want)
	}
	// A repeated cell is still found by its coordinates.
	recs := []Record{{Cell: Cell{Library: Redsync, Driver: "redigo", Scenario: Loopback, Nodes: 5, FanOut: FanConcurrent, Clients: 1, Repeats: 3}}}
	if Find(recs, Cell{Library: Redsync, Driver: "redigo", Scenario: Loopback, Nodes: 5, Clients: 1}) == nil {
		t.Error("Find ignores Repeats: not found")
	}
	p.Repeats = 1
	for _, c := range p.Cells() {
		if c.Repeats != 0 {
			t.Errorf("%s repeated with Repeats 1", c.Name())
		}
	}
}

func TestCellServers(t *testing.T) {
	for _, tc := range []struct {
		c    Cell
		want int
	}{
		{Cell{Library: Redlock, Driver: "redigo", Nodes: 5}, 5},
		{Cell{Library: Redlock, Driver: "mem", Nodes: 5}, 0},
		{Cell{Library: Redsync, Driver: "rueidis", Nodes: 3}, 3},
		{Cell{Library: Rueidislock, Driver: "rueidis", Nodes: 5}, 1},
		{Cell{Library: Redislock, Driver: "go-redis", Nodes: 1}, 1},
	} {
		if got := tc.c.Servers(); got != tc.want {
			t.Errorf("%s: Servers() = %d, want %d", tc.c.Subject(), got, tc.want)
		}
	}
}

func TestFind(t *testing.T) {
	cells := []Record{{Cell: Cell{Library: Redlock, Driver: "redigo", Nodes: 5, Clients: 1}}}
	if Find(cells, Cell{Library: Redlock, Nodes: 5}) == nil {
		t.Error("not found")
	}
	if Find(cells, Cell{Library: Redsync}) != nil {
		t.Error("found a peer")
	}
}

func TestRecordJSONIsFlat(t *testing.T) {
	r := Record{Cell: Cell{Library: Redsync, Driver: "redigo", Nodes: 5}, Result: measure.Result{P50Us: 12.5}}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if !strings.Contains(s, `"library":"redsync"`) || !strings.Contains(s, `"p50_us":12.5`) {
		t.Fatalf("json = %s", s)
	}
	var back Record
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, r) {
		t.Fatalf("round trip = %+v, %v", back, err)
	}
}

func TestName(t *testing.T) {
	c := Cell{Library: Redlock, Driver: "redigo", Scenario: Loopback, Nodes: 5, FanOut: "multiplexed", Clients: 1}
	if got := c.Name(); got != "lib=redlock/driver=redigo/scenario=loopback/nodes=5/fanout=multiplexed/clients=1" {
		t.Errorf("Name = %s", got)
	}
}

func TestVariantCells(t *testing.T) {
	variants := []string{"plain", "fenced", "handle", "lease"}
	p := Plan{
		Drivers:     []string{"mem", "redigo"},
		NodeCounts:  []int{1, 3, 5},
		FanOuts:     []string{"sequential", "multiplexed"},
		Concurrency: []int{1, 32},
		Proxy:       true,
		Contended:   true,
		Peers:       AllPeers,
		Variants:    variants,
	}
	var got []Cell
	all := p.Cells()
	for _, c := range all {
		if c.Scenario == Variants {
			got = append(got, c)
		}
	}
	// 2 drivers × 2 fan-outs × 4 variants, at N=5 with one client, a
	// driver's variants next to each other, before the peers.
	if len(got) != 16 {
		t.Fatalf("%d variant cells, want 16", len(got))
	}
	for i, c := range got {
		if c.Nodes != 5 || c.Clients != 1 || c.IsPeer() || c.Variant != variants[i%4] || c.SharedKey {
			t.Errorf("cell %d = %+v", i, c)
		}
	}
	if got[0].Driver != "mem" || got[8].Driver != "redigo" || got[4].FanOut != "multiplexed" {
		t.Errorf("order: %v", got)
	}
	if !strings.HasSuffix(got[1].Name(), "/variant=fenced") || ScenarioAddrs(got[1].Scenario) != Loopback {
		t.Errorf("name %s", got[1].Name())
	}
	// A variant cell is never found in place of the plain loopback cell,
	// nor the other way round.
	recs := []Record{{Cell: got[12]}}
	if Find(recs, Cell{Library: Redlock, Driver: "redigo", Nodes: 5, FanOut: "multiplexed", Clients: 1}) != nil {
		t.Error("a variant cell matched a cell without a variant")
	}
	if Find(recs, Cell{Driver: "redigo", Variant: "plain"}) == nil {
		t.Error("variant cell not found")
	}

	p.VariantsOnly = true
	if only := p.Cells(); len(only) != 16 || only[0] != got[0] {
		t.Errorf("VariantsOnly: %d cells", len(only))
	}
	p.NodeCounts = []int{1, 3}
	if c := p.Cells()[0]; c.Nodes != 3 {
		t.Errorf("without N=5 the variants run at N=%d, want the largest, 3", c.Nodes)
	}
	p.Variants = nil
	if n := len(p.Cells()); n != 0 {
		t.Errorf("VariantsOnly without variants: %d cells", n)
	}
}

func TestCurveAndHandoffCells(t *testing.T) {
	p := Plan{
		Drivers:           []string{"mem", "redigo", "rueidis"},
		NodeCounts:        []int{1, 3, 5},
		FanOuts:           []string{"sequential", "multiplexed"},
		Concurrency:       []int{1, 32},
		Contended:         true,
		Peers:             AllPeers,
		Curve:             []int{1, 2, 4, 8, 16, 32, 64},
		CurveDuration:     200 * time.Millisecond,
		HandoffContenders: []int{2, 8, 32},
		HandoffDrivers:    []string{"redigo"},
		HandoffDuration:   time.Second,
	}
	all := p.Cells()
	var curve, hot []Cell
	names := map[string]bool{}
	for _, c := range all {
		if names[c.Name()] {
			t.Errorf("duplicate cell %s", c.Name())
		}
		names[c.Name()] = true
		switch {
		case c.Duration == p.CurveDuration:
			curve = append(curve, c)
		case c.Scenario == Handoff:
			hot = append(hot, c)
		}
	}
	// The curve's points not in Concurrency (2, 4, 8, 16, 64) at N=5, for
	// redigo and rueidis (not mem), multiplexed, and for redsync over
	// redigo and rueidis and rueidislock (not redislock, N=1 only).
	if len(curve) != 5*(2+3) {
		t.Fatalf("%d curve cells, want 25", len(curve))
	}
	for _, c := range curve {
		if c.Nodes != 5 || c.Scenario != Loopback || c.SharedKey || c.Driver == "mem" || c.Library == Redislock ||
			slices.Contains(p.Concurrency, c.Clients) || (!c.IsPeer() && c.FanOut != "multiplexed") {
			t.Errorf("curve cell %s", c.Name())
		}
	}
	// A curve point is found as the matrix's cells are.
	if Find([]Record{{Cell: curve[0]}}, Cell{Library: Redlock, Driver: "redigo", Scenario: Loopback, Nodes: 5, FanOut: "multiplexed", Clients: 2}) == nil {
		t.Error("curve cell not found by its coordinates")
	}
	// The hot key: redigo woken, polling and fair, then the three peers at
	// N=5, each at 2, 8 and 32 contenders on one key.
	if len(hot) != (3+3)*3 {
		t.Fatalf("%d handoff cells, want 18", len(hot))
	}
	for i, c := range hot[:9] {
		if c.IsPeer() || c.Variant != WaitModes[i/3] || c.Clients != p.HandoffContenders[i%3] || !c.SharedKey || c.Nodes != 5 || c.Duration != time.Second {
			t.Errorf("handoff cell %d: %+v", i, c)
		}
	}
	if hot[9].HandoffName() != "redsync+redigo poll" || hot[17].HandoffName() != "rueidislock+rueidis invalidation" || hot[6].HandoffName() != "redlock+redigo fair" {
		t.Errorf("handoff names: %s, %s, %s", hot[6].HandoffName(), hot[9].HandoffName(), hot[17].HandoffName())
	}
	if ScenarioAddrs(Handoff) != Loopback {
		t.Error("handoff cells' servers")
	}
	// This library's cells run before the peers'.
	if last := slices.IndexFunc(all, Cell.IsPeer); slices.ContainsFunc(all[last:], func(c Cell) bool { return !c.IsPeer() }) {
		t.Error("run order")
	}

	p.HandoffOnly = true
	if only := p.Cells(); !slices.Equal(only, hot) {
		t.Errorf("HandoffOnly: %d cells, want the %d handoff cells", len(only), len(hot))
	}
	p.VariantsOnly, p.Variants = true, []string{"plain"}
	if both := p.Cells(); len(both) != len(hot)+3*2 || both[0].Scenario != Variants {
		t.Errorf("VariantsOnly and HandoffOnly: %d cells", len(both))
	}
}

func TestMeasureDuration(t *testing.T) {
	r := PeerRequest{Duration: time.Second}
	if r.duration(Cell{}) != time.Second || r.duration(Cell{Duration: time.Millisecond}) != time.Millisecond {
		t.Error("a cell's own duration")
	}
}

// Plan.Rounds picks the cells the throughput targets compare, and no
// other; none without repeats.
func TestPlanRounds(t *testing.T) {
	p := Plan{
		Drivers:     []string{"mem", "redigo", "rueidis"},
		NodeCounts:  []int{1, 3, 5},
		FanOuts:     []string{"sequential", "multiplexed"},
		Concurrency: []int{1, 32},
		Curve:       []int{2, 32, 64},
		Proxy:       true,
		Contended:   true,
		Peers:       AllPeers,
		Variants:    []string{"plain"},
		Repeats:     3,
	}
	var got []string
	for _, c := range p.Rounds(p.Cells()) {
		got = append(got, c.Name())
	}
	want := []string{
		"lib=redlock/driver=redigo/scenario=loopback/nodes=5/fanout=multiplexed/clients=1",
		"lib=redlock/driver=redigo/scenario=loopback/nodes=5/fanout=multiplexed/clients=32",
		"lib=redlock/driver=rueidis/scenario=loopback/nodes=5/fanout=multiplexed/clients=1",
		"lib=redlock/driver=rueidis/scenario=loopback/nodes=5/fanout=multiplexed/clients=32",
		"lib=redsync/driver=redigo/scenario=loopback/nodes=5/fanout=concurrent/clients=1",
		"lib=redsync/driver=redigo/scenario=loopback/nodes=5/fanout=concurrent/clients=32",
		"lib=redsync/driver=rueidis/scenario=loopback/nodes=5/fanout=concurrent/clients=32",
		"lib=rueidislock/driver=rueidis/scenario=loopback/nodes=5/fanout=sequential-keys/clients=32",
	}
	if !slices.Equal(got, want) {
		t.Errorf("rounds = %q,\nwant %q", got, want)
	}
	// One client only: the p50 targets' cells alone.
	p.Concurrency = []int{1}
	if r := p.Rounds(p.Cells()); len(r) != 3 || r[0].Clients != 1 || r[2].Clients != 1 {
		t.Errorf("rounds at one client: %v", r)
	}
	p.Repeats = 1
	if r := p.Rounds(p.Cells()); r != nil {
		t.Errorf("rounds without repeats: %v", r)
	}
}
