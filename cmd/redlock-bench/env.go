package main

import (
	"bufio"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/redlock-go/redlock/bench/report"
)

// pinnedEnv marks a process that --pin re-executed under taskset.
const pinnedEnv = "REDLOCK_BENCH_PINNED"

// environment describes this machine and process.
func environment() report.Env {
	cpus := affinity()
	e := report.Env{
		Date:       time.Now().UTC().Format(time.RFC3339),
		Command:    commandLine(os.Args),
		GoVersion:  runtime.Version(),
		OS:         runtime.GOOS,
		Arch:       runtime.GOARCH,
		CPUModel:   cpuModel(),
		NumCPU:     runtime.NumCPU(),
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		Affinity:   formatCPUs(cpus),
	}
	e.Pinned = len(cpus) == 1 && e.GOMAXPROCS == 1
	if os.Getenv(pinnedEnv) == "1" {
		e.Notes = append(e.Notes, "re-executed under taskset -c 0 with GOMAXPROCS=1 by --pin")
	}
	return e
}

// commandLine returns args as the user would type them: a binary that
// `go run` built in the build cache is shown as `go run ./cmd/redlock-bench`.
func commandLine(args []string) []string {
	if len(args) > 0 && strings.Contains(args[0], "go-build") {
		return append([]string{"go", "run", "./cmd/redlock-bench"}, args[1:]...)
	}
	return args
}

// cpuModel reads the first "model name" of /proc/cpuinfo.
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	defer func() { _ = f.Close() }() // read-only: a failed Close loses nothing
	s := bufio.NewScanner(f)
	for s.Scan() {
		if k, v, ok := strings.Cut(s.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

func formatCPUs(cpus []int) string {
	if cpus == nil {
		return "unknown"
	}
	var b strings.Builder
	for i, c := range cpus {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(c))
	}
	return b.String()
}
