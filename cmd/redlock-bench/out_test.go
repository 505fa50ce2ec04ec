package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/redlock-go/redlock/bench/matrix"
	"github.com/redlock-go/redlock/bench/measure"
	"github.com/redlock-go/redlock/bench/report"
)

func TestOutDir(t *testing.T) {
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	latest := filepath.Join(root, "results", "latest")
	for _, c := range []struct {
		cfg  config
		mode string
		want string
	}{
		{config{}, "redis-server", latest},
		{config{}, "miniredis", latest},
		{config{commit: true}, "redis-server", filepath.Join(root, "results", "redis-server")},
		{config{commit: true}, "miniredis-pinned", filepath.Join(root, "results", "miniredis-pinned")},
		{config{out: "elsewhere"}, "redis-server", "elsewhere"},
		{config{replot: "results/redis-server"}, "", latest},
		{config{replot: "results/redis-server", commit: true}, "", "results/redis-server"},
		{config{replot: "results/redis-server", out: "elsewhere"}, "", "elsewhere"},
	} {
		got, err := outDir(&c.cfg, c.mode)
		if err != nil || got != c.want {
			t.Errorf("%+v, %s: %q, %v; want %q", c.cfg, c.mode, got, err, c.want)
		}
	}
}

// TestLatestIsIgnored checks that the default results directory is one git
// ignores, so that a default run leaves the checkout clean.
func TestLatestIsIgnored(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not on PATH")
	}
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range append([]string{"run.json", "results.md"}, "latency_vs_nodes.png") {
		cmd := exec.Command(git, "check-ignore", "-q", filepath.Join(latestDir, f)) //nolint:gosec // G204: git from PATH on a fixed path
		cmd.Dir = root
		err := cmd.Run()
		var ee *exec.ExitError
		switch {
		case errors.As(err, &ee) && ee.ExitCode() == 1:
			t.Errorf("git does not ignore %s/%s: add %s/ to .gitignore", latestDir, f, latestDir)
		case errors.As(err, &ee):
			t.Skipf("git check-ignore: %v (not a git checkout?)", err)
		case err != nil:
			t.Fatal(err)
		}
	}
}

func TestWriteResultsRemovesStalePlots(t *testing.T) {
	dir := t.TempDir()
	stale := filepath.Join(dir, "proxy_latency.png")
	if err := os.WriteFile(stale, []byte("an earlier run's plot"), 0o600); err != nil {
		t.Fatal(err)
	}
	var recs []matrix.Record
	for _, n := range []int{1, 3} {
		recs = append(recs, matrix.Record{
			Cell:   matrix.Cell{Library: "redlock", Driver: "redigo", Scenario: matrix.Loopback, Nodes: n, FanOut: "multiplexed", Clients: 1},
			Result: measure.Result{Ops: 10, P50Us: 40, P99Us: 90, Throughput: 1000}})
	}
	files, err := writeResults(dir, report.Run{Records: recs})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(files, "proxy_latency.png") || !slices.Contains(files, "run.json") || !slices.Contains(files, "latency_vs_nodes.png") {
		t.Errorf("files = %v", files)
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale plot kept: %v", err)
	}
	for _, f := range files {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
}
